"""Aggregates and per-host instances, as the casts keep them.

``AggregateTracker`` holds the aggregates read at start-up and kept by
the ``update_aggregates`` / ``delete_aggregate`` casts;
``InstanceTracker`` the instances of each host, from the database until
the host's compute service casts them (``update_instance_info``,
``delete_instance_info``, ``sync_instance_info``).  Both answer with the
hosts whose HostStates are to be updated; they touch no HostState.
Not thread-safe: the host manager's lock guards them.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from oslo_log import log as logging

from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj

LOG = logging.getLogger(__name__)


class AggregateTracker:
    """The aggregates by id and the aggregate ids of each host."""

    def __init__(self) -> None:
        self.aggs_by_id: dict[int, Any] = {}
        self.host_aggregates_map: dict[str, set[int]] = (
            collections.defaultdict(set))

    def load(self, context: Any, source: Any) -> set[str]:
        """Read every aggregate from ``source``; returns the hosts
        touched."""
        return self.update([aggregate_obj.Aggregate.from_db(row)
                            for row in source.aggregate_get_all(context)])

    def update(self, aggregates: Any) -> set[str]:
        """Add or replace aggregates (list, AggregateList or one
        Aggregate); hosts no longer listed leave the aggregate (as in
        Nova).  Returns the hosts whose aggregates may have changed."""
        if isinstance(aggregates, aggregate_obj.Aggregate):
            aggregates = [aggregates]
        elif isinstance(aggregates, aggregate_obj.AggregateList):
            aggregates = aggregates.objects
        touched = set()
        for agg in aggregates:
            self.aggs_by_id[agg.id] = agg
            hosts = set(agg.obj_get('hosts') or [])
            for host in hosts:
                self.host_aggregates_map[host].add(agg.id)
            for host, agg_ids in self.host_aggregates_map.items():
                if agg.id in agg_ids:
                    touched.add(host)
                    if host not in hosts:
                        agg_ids.discard(agg.id)
        return touched

    def delete(self, aggregate: Any) -> set[str]:
        """Forget ``aggregate`` and its memberships; returns the hosts
        that left it."""
        self.aggs_by_id.pop(aggregate.id, None)
        touched = set()
        for host, agg_ids in self.host_aggregates_map.items():
            if aggregate.id in agg_ids:
                agg_ids.discard(aggregate.id)
                touched.add(host)
        return touched

    def aggregates_for(self, host: str) -> list[Any]:
        """The Aggregate objects of a service host, ordered by id."""
        return [self.aggs_by_id[agg_id]
                for agg_id in sorted(self.host_aggregates_map.get(host, ()))
                if agg_id in self.aggs_by_id]


class InstanceTracker:
    """Each host's instances: ``info[host]`` is ``{'instances': {uuid:
    Instance}, 'updated': bool}``, ``updated`` meaning in sync with the
    host's casts (only with ``track`` set)."""

    def __init__(self, source: Any, track: bool) -> None:
        self.source = source
        self.track = track
        self.info: dict[str, dict[str, Any]] = {}

    def load(self, context: Any) -> None:
        """Read the instances of every compute host (not in sync)."""
        hosts = self.source.compute_node_get_hosts(context)
        by_host = self.source.instance_get_all_by_hosts(context,
                                                        sorted(hosts))
        for host in hosts:
            self._set(host, by_host.get(host, []), updated=False)

    def instances_of(self, host: str) -> dict[str, Any]:
        """The instance dict of ``host`` (empty when unknown)."""
        return self.info.get(host, {}).get('instances', {})

    def in_sync(self, host: str) -> bool:
        """Whether ``host``'s instances come from its casts."""
        info = self.info.get(host)
        return self.track and info is not None and info['updated']

    def _set(self, host: str, rows: Iterable[dict], updated: bool) -> None:
        instances = {row['uuid']: instance_obj.Instance.from_db(row)
                     for row in rows}
        self.info[host] = {'instances': instances, 'updated': updated}

    def _reread(self, context: Any, host: str) -> None:
        rows = self.source.instance_get_all_by_host(context, host)
        self._set(host, rows, updated=False)

    def update(self, context: Any, host_name: str,
               instance_info: Any) -> None:
        """Merge an InstanceList reported by ``host_name``.

        A known host merges by uuid and is marked in sync; an unknown host
        takes a list of more than one instance as its full list; otherwise
        the host is re-read from the database, not in sync.
        """
        instances = list(instance_info.objects)
        info = self.info.get(host_name)
        if info is not None:
            info['instances'].update({i.uuid: i for i in instances})
            info['updated'] = True
        elif len(instances) > 1:
            self.info[host_name] = {
                'instances': {i.uuid: i for i in instances},
                'updated': True}
        else:
            LOG.info('Received an update from an unknown host %s; '
                     'reading its instances from the database', host_name)
            self._reread(context, host_name)

    def delete(self, context: Any, host_name: str,
               instance_uuid: str) -> None:
        """Forget an instance deleted on ``host_name`` (an unknown host
        is read from the database)."""
        info = self.info.get(host_name)
        if info is not None:
            info['instances'].pop(instance_uuid, None)
            info['updated'] = True
        else:
            self._reread(context, host_name)

    def sync(self, context: Any, host_name: str,
             instance_uuids: Iterable[str]) -> bool:
        """Compare the host's full uuid list with ours; re-read on drift.
        Returns True when the host's instances changed (re-read)."""
        info = self.info.get(host_name)
        if info is not None and set(info['instances']) == set(
                instance_uuids):
            info['updated'] = True
            LOG.debug('Successfully synced instances from host %s',
                      host_name)
            return False
        LOG.info('The instance sync for host %s did not match; '
                 're-reading its instances from the database', host_name)
        self._reread(context, host_name)
        return True

    def read(self, context: Any, hosts: Iterable[str]) -> None:
        """Re-read from the database the instances of the ``hosts`` that
        are not in sync with their compute service's casts."""
        stale = sorted(host for host in hosts if not self.in_sync(host))
        if stale:
            rows = self.source.instance_get_all_by_hosts(context, stale)
            for host in stale:
                self._set(host, rows.get(host, []), updated=False)
