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

from collections.abc import Iterable
from typing import Any

from oslo_log import log as logging

from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj

LOG = logging.getLogger(__name__)


# Separates the names of an aggregate's members that are not compute
# hosts of the view, kept as one string (see AggregateTracker).
_SEP = '\n'


class AggregateTracker:
    """The aggregates by id and the aggregate ids of each compute host.

    A cast costs what it carries and keeps no more than the fleet:

    * ``host_aggregates_map`` holds the compute hosts of the view only
      (``set_hosts``), each with a tuple of aggregate ids;
    * an aggregate's ``hosts`` lists only its members that are compute
      hosts of the view (no filter or weigher reads the others); the
      other members' names are kept as one string per aggregate, so that
      a host that gets a compute node later joins its aggregates, and a
      flood of casts naming unknown hosts leaves no small objects behind.

    Until ``set_hosts`` is called every member counts as a compute host.
    """

    def __init__(self) -> None:
        self.aggs_by_id: dict[int, Any] = {}
        self.host_aggregates_map: dict[str, tuple[int, ...]] = {}
        # Compute host name -> the same name (one string object per host,
        # kept for the life of the view), or None before set_hosts.
        self._hosts: dict[str, str] | None = None
        # Aggregate id -> the names of its other members, _SEP-joined.
        self._others: dict[int, str] = {}

    def load(self, context: Any, source: Any) -> set[str]:
        """Read every aggregate from ``source``; returns the hosts
        touched."""
        return self.update([aggregate_obj.Aggregate.from_db(row)
                            for row in source.aggregate_get_all(context)])

    def update(self, aggregates: Any) -> set[str]:
        """Add or replace aggregates (list, AggregateList or one
        Aggregate, which is kept); hosts no longer listed leave the
        aggregate (as in Nova).  Returns the compute hosts whose
        aggregates may have changed: those each aggregate lists now or
        listed before."""
        if isinstance(aggregates, aggregate_obj.Aggregate):
            aggregates = [aggregates]
        elif isinstance(aggregates, aggregate_obj.AggregateList):
            aggregates = aggregates.objects
        touched: set[str] = set()
        for agg in aggregates:
            before = self._known_members(self.aggs_by_id.get(agg.id))
            members = set(agg.obj_get('hosts') or ())
            known = self._canonical(members)
            others = sorted(members.difference(known))
            if others:
                self._others[agg.id] = _SEP.join(others)
            else:
                self._others.pop(agg.id, None)
            agg.hosts = sorted(known)
            self.aggs_by_id[agg.id] = agg
            touched |= self._move(agg.id, before, known)
        return touched

    def delete(self, aggregate: Any) -> set[str]:
        """Forget ``aggregate`` and its memberships; returns the compute
        hosts that left it."""
        self._others.pop(aggregate.id, None)
        before = self._known_members(self.aggs_by_id.pop(aggregate.id, None))
        return self._move(aggregate.id, before, set())

    def set_hosts(self, hosts: Iterable[str]) -> None:
        """Make ``hosts`` the compute hosts of the view: those new to it
        join the aggregates that list them, those gone from it leave
        theirs (their names are kept with the other members)."""
        hosts = set(hosts)
        if self._hosts is None:
            self._hosts = {}
            gone = set(self.host_aggregates_map) - hosts
        else:
            gone = self._hosts.keys() - hosts
        for host in hosts - self._hosts.keys():
            self._hosts[host] = host
            self._join(host)
        for host in gone:
            self._hosts.pop(host, None)
            self._leave(host)

    def _canonical(self, members: set[str]) -> set[str]:
        """The compute hosts among ``members``, as the view's own string
        objects (all of ``members`` before ``set_hosts``)."""
        if self._hosts is None:
            return members
        return {self._hosts[host] for host in members.intersection(
            self._hosts)}

    @staticmethod
    def _known_members(agg: Any) -> set[str]:
        return set(agg.obj_get('hosts') or ()) if agg is not None else set()

    def _join(self, host: str) -> None:
        """``host`` became a compute host: move it out of the other
        members of the aggregates that list it."""
        for agg_id, others in list(self._others.items()):
            if host not in others:      # a substring test first: cheap
                continue
            names = others.split(_SEP)
            if host in names:
                names.remove(host)
                if names:
                    self._others[agg_id] = _SEP.join(names)
                else:
                    del self._others[agg_id]
                agg = self.aggs_by_id[agg_id]
                before = self._known_members(agg)
                agg.hosts = sorted(before | {host})
                self._move(agg_id, before, before | {host})

    def _leave(self, host: str) -> None:
        """``host`` is no compute host any more: keep it with the other
        members of its aggregates."""
        for agg_id in self.host_aggregates_map.get(host, ()):
            agg = self.aggs_by_id[agg_id]
            before = self._known_members(agg)
            agg.hosts = sorted(before - {host})
            self._move(agg_id, before, before - {host})
            self._others[agg_id] = _SEP.join(sorted(
                ([host] + self._others[agg_id].split(_SEP))
                if agg_id in self._others else [host]))

    def _move(self, agg_id: int, before: set[str],
              after: set[str]) -> set[str]:
        """Aggregate ``agg_id``'s compute hosts went from ``before`` to
        ``after``: update the map; returns both."""
        host_map = self.host_aggregates_map
        for host in after - before:
            host_map[host] = tuple(sorted(host_map.get(host, ()) +
                                          (agg_id,)))
        for host in before - after:
            left = tuple(i for i in host_map.get(host, ()) if i != agg_id)
            if left:
                host_map[host] = left
            else:
                host_map.pop(host, None)
        return before | after

    def members(self, agg_id: int) -> set[str]:
        """Every member of aggregate ``agg_id`` (compute hosts or not)."""
        agg = self.aggs_by_id.get(agg_id)
        others = self._others.get(agg_id)
        return self._known_members(agg) | (
            set(others.split(_SEP)) if others else set())

    def aggregates_for(self, host: str) -> list[Any]:
        """The Aggregate objects of a service host, ordered by id."""
        return [self.aggs_by_id[agg_id]
                for agg_id in self.host_aggregates_map.get(host, ())
                if agg_id in self.aggs_by_id]


def _detached(instance: Any) -> Any:
    """``instance`` without the RequestContext it came with.

    oslo.versionedobjects gives every object it deserialises the
    context of its message.  No filter or weigher reads it, but kept for
    the life of the instance it kept the cast's whole context (about
    2 KB with its roles and ids; one per cast, shared by the instances
    it carried): under the soak at 10,000 live instances, some 6,000
    contexts per worker (docs/soak.rst).
    """
    instance._context = None
    return instance


class InstanceTracker:
    """Each host's instances: ``info[host]`` is ``{'instances': {uuid:
    Instance}, 'updated': bool}``, ``updated`` meaning in sync with the
    host's casts.

    Only hosts with a compute node are kept (those read at start-up and
    by each full refresh, ``read`` and ``retain``); a cast from any other
    host changes nothing: its instances are read from the database when
    its compute node appears.  With ``track`` off (Nova's
    ``track_instance_changes = False``) the casts change nothing at all
    and every refresh reads the database, as in Nova.
    """

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

    def _tracked(self, host_name: str, method: str) -> Any:
        """The info of ``host_name`` a cast may change, or None (logged)
        when it is to be dropped."""
        if not self.track:
            return None
        info = self.info.get(host_name)
        if info is None:
            LOG.info('Ignoring %s from %s, which has no compute node yet',
                     method, host_name)
        return info

    def update(self, context: Any, host_name: str,
               instance_info: Any) -> None:
        """Merge an InstanceList reported by ``host_name`` by uuid and
        mark the host in sync.  The instances are kept without the
        cast's RequestContext (``_detached``)."""
        info = self._tracked(host_name, 'update_instance_info')
        if info is not None:
            info['instances'].update(
                {i.uuid: _detached(i) for i in instance_info.objects})
            info['updated'] = True

    def delete(self, context: Any, host_name: str,
               instance_uuid: str) -> None:
        """Forget an instance deleted on ``host_name``."""
        info = self._tracked(host_name, 'delete_instance_info')
        if info is not None:
            info['instances'].pop(instance_uuid, None)
            info['updated'] = True

    def sync(self, context: Any, host_name: str,
             instance_uuids: Iterable[str]) -> bool:
        """Compare the host's full uuid list with ours; re-read the host
        from the database on drift.  Returns True when the host's
        instances changed (re-read)."""
        info = self._tracked(host_name, 'sync_instance_info')
        if info is None:
            return False
        if set(info['instances']) == set(instance_uuids):
            info['updated'] = True
            LOG.debug('Successfully synced instances from host %s',
                      host_name)
            return False
        LOG.info('The instance sync for host %s did not match; '
                 're-reading its instances from the database', host_name)
        self._set(host_name,
                  self.source.instance_get_all_by_host(context, host_name),
                  updated=False)
        return True

    def apply_row(self, row: dict, was_on: Iterable[str]) -> set[str]:
        """Apply one changed ``instances`` row (created, updated or
        soft-deleted; as a change read returns it) to the hosts not in
        sync that it was on (``was_on``) or is on now: it leaves those
        it is no longer live on and is the current Instance of the one
        it is live on.  Returns those hosts.

        The result is what re-reading those hosts would give (a host's
        instances are its live rows, as Nova's
        ``InstanceList.get_by_host``), at the cost of this row alone.
        """
        uuid = row['uuid']
        live_on: str | None = None if row['deleted'] else row['host']
        hosts = set(was_on)
        if live_on:
            hosts.add(live_on)
        changed = set()
        for host in hosts:
            info = self.info.get(host)
            if info is None or self.in_sync(host):
                continue
            if host == live_on:
                info['instances'][uuid] = instance_obj.Instance.from_db(row)
            elif info['instances'].pop(uuid, None) is None:
                continue
            changed.add(host)
        return changed

    def retain(self, hosts: Iterable[str]) -> None:
        """Forget the hosts not in ``hosts`` (those with a compute
        node)."""
        for host in self.info.keys() - set(hosts):
            del self.info[host]

    def read(self, context: Any, hosts: Iterable[str]) -> None:
        """Re-read from the database the instances of the ``hosts`` that
        are not in sync with their compute service's casts."""
        stale = sorted(host for host in hosts if not self.in_sync(host))
        if stale:
            rows = self.source.instance_get_all_by_hosts(context, stale)
            for host in stale:
                self._set(host, rows.get(host, []), updated=False)
