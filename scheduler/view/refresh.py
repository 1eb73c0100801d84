"""The HostStates and their HostTable, read from the database.

``Refresher`` owns the host view's HostStates (``host_state_map``) and
its ``HostTable`` (``table``) and brings them up to date through
``scheduler.db.source``: change reads, the sweep of late rows (with the
service rows whose heartbeat is about to look down,
``suspects.Suspects``), and full reads (docs/refresh.rst).  It
takes each host's aggregates and instances from the trackers of
``scheduler.view.tracking``.  Not thread-safe: the host manager's lock
guards it.  It records the time of each read and
the hosts and age of the view each decision uses
(``scheduler.observability.metrics``).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler.conf import CONF
from scheduler.observability import metrics
from scheduler.view import gc_freeze
from scheduler.view import suspects
from scheduler.view import tracking
from scheduler.view.host_state import HostState
from scheduler.view.host_table import HostTable

if TYPE_CHECKING:
    from scheduler.db.source import Row

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nova-compute'
# How much earlier than the previous sweep the next one starts: the
# commit delay and writer clock lag that a sweep forgives (a service's
# heartbeat later than that is read again by id before it can look
# down: ``suspects.Suspects``).
CLOCK_MARGIN = datetime.timedelta(seconds=1)
# Seconds between two sweeps (see ``Refresher.refresh_changes``).
SWEEP_INTERVAL = 1.0


class Refresher:
    """The HostStates, their table and what was read of them."""

    def __init__(self, source: Any, aggregates: tracking.AggregateTracker,
                 instances: tracking.InstanceTracker,
                 state_class: Callable[[Any], type[HostState]]) -> None:
        """``state_class(compute)``: the HostState class of a new node,
        from its ``compute_nodes`` row."""
        self.source = source
        self.state_class = state_class
        self.aggregates = aggregates
        self.instances = instances
        self.host_state_map: dict[tuple[str, str], HostState] = {}
        self.table = HostTable([])
        self._by_id: dict[int, HostState] = {}
        self._seen: dict[int, Any] = {}          # id -> row version
        self._skipped: dict[int, str] = {}       # id -> host, no service
        self._reread: set[int] = set()           # ids to copy again
        self._service_seen: dict[int, Any] = {}  # services.id -> version
        self.suspects = suspects.Suspects()  # heartbeats to re-read
        # Naive UTC starts of the last read and of the last sweep, and
        # monotonic times of the last sweep, full read and read: set by
        # the first (full) read, which comes before any other.
        self._last_read = datetime.datetime.min
        self._swept_from = datetime.datetime.min
        self._last_sweep = 0.0
        self._last_full: float | None = None
        self._last_delta = 0.0

    # -- the HostStates of hosts ---------------------------------------------

    def states_of(self, hosts: Iterable[str]) -> list[HostState]:
        """The HostStates of the nodes of service hosts ``hosts``."""
        table = self.table
        return [table.states[row] for host in hosts
                for row in table.rows_by_host.get(host, ())]

    def apply_aggregates(self, hosts: Iterable[str]) -> None:
        """Give the hosts' HostStates their aggregates; sync the table."""
        states = self.states_of(hosts)
        for state in states:
            state.update(aggregates=self.aggregates.aggregates_for(
                state.host))
        self.table.sync(states, part='aggregates')

    def apply_instances(self, hosts: Iterable[str]) -> None:
        """Give the hosts' HostStates their instances; sync the table."""
        self.table.sync(self.give_instances(hosts))

    def give_instances(self, hosts: Iterable[str]) -> list[HostState]:
        """Hand the hosts' instance dicts to their HostStates; returns
        those HostStates (to be synced)."""
        states = self.states_of(hosts)
        for state in states:
            state.update(instances=self.instances.info[state.host][
                'instances'])
        return states

    def reread(self, states: Iterable[HostState]) -> None:
        """Copy the nodes of ``states`` again at the next refresh."""
        for state in states:
            if state.compute_id is not None:
                self._reread.add(state.compute_id)

    # -- refresh -------------------------------------------------------------

    def refresh(self, context: Any) -> list[HostState]:
        """Bring the view up to date (a change read, else a full read);
        returns the HostStates in ``compute_nodes.id`` order."""
        if not self.refresh_changes(context):
            self.refresh_all(context)
        if metrics.view_due():
            self._record_view()
        return self.table.states

    def _record_view(self) -> None:
        """Record the view a decision uses: its nodes, those up and
        disabled, and its age."""
        table = self.table
        up = table.up_mask(timeutils.utcnow())
        metrics.host_view(len(table), int(np.count_nonzero(up)),
                          int(np.count_nonzero(table.columns['disabled'])),
                          time.monotonic() - self._last_delta)

    def _full_refresh_due(self) -> bool:
        if self._last_full is None:
            return True
        interval = CONF.scheduler.full_refresh_interval
        return time.monotonic() - self._last_full >= interval

    def refresh_all(self, context: Any) -> None:
        """Nova's per-request read: every node, service and the instances
        of every host not in sync."""
        started = timeutils.utcnow()
        began = time.monotonic()
        source = self.source
        services = {svc['host']: svc for svc in
                    source.service_get_all_by_binary(context, COMPUTE_BINARY)}
        hosts = source.compute_node_get_hosts(context)
        self.aggregates.set_hosts(hosts)
        self.instances.retain(hosts)
        self.instances.read(context, hosts)
        states = []
        self._by_id = {}
        self._skipped = {}
        for compute in source.compute_node_iter_all(context):
            state = self._refresh_one(compute, services)
            if state is not None:
                states.append(state)
        self._drop_dead_nodes({(s.host, s.nodename) for s in states})
        if self.table.matches(states):
            self.table.sync(states, part='aggregates')
        else:
            self.table = HostTable(states)
        self._reread.clear()
        self.suspects.clear()
        self._service_seen = {svc['id']: source.row_version('services', svc)
                              for svc in services.values()}
        self._last_read = self._swept_from = started
        self._last_full = self._last_delta = self._last_sweep = (
            time.monotonic())
        metrics.view_read(metrics.FULL_READ, self._last_full - began)
        gc_freeze.FREEZER.after_full_read(CONF.scheduler.freeze_host_view)

    def _refresh_one(self, compute: Row, services: dict[str, Row]
                     ) -> HostState | None:
        host = compute['host']
        service = services.get(host)
        if service is None:
            LOG.warning('No compute service record found for host %s', host)
            self._skipped[compute['id']] = host
            return None
        key = (host, compute['hypervisor_hostname'])
        cell_uuid = self.source.cell_uuid(compute)
        state = self.host_state_map.get(key)
        if state is None:
            state = self.state_class(compute)(host, key[1],
                                              cell_uuid=cell_uuid)
            self.host_state_map[key] = state
        state.cell_uuid = cell_uuid   # a node may move to another cell
        state.update(compute, service, self.aggregates.aggregates_for(host),
                     self.instances.instances_of(host))
        self._by_id[compute['id']] = state
        self._seen[compute['id']] = self.source.row_version('compute_nodes',
                                                            compute)
        return state

    def _drop_dead_nodes(self, seen: set[tuple[str, str]]) -> None:
        for key in set(self.host_state_map) - seen:
            LOG.info('Removing dead compute node %s:%s from scheduler', *key)
            del self.host_state_map[key]

    def refresh_changes(self, context: Any) -> bool:
        """Apply the rows changed since the last read; False when a full
        read is due or needed (nodes or services appeared or went).

        Each read asks for the rows stamped after the previous read began
        (less the database's ``timestamp_resolution``).  A row stamped
        before that but committed after it, or stamped by a writer whose
        clock lags ours, is caught by the sweep: at most every
        ``SWEEP_INTERVAL`` seconds, the versions of the rows stamped since
        ``CLOCK_MARGIN`` before the previous sweep are compared with ours,
        and the rows that differ are read in full, with the rows of the
        services whose heartbeat is about to look down
        (``suspects.Suspects``), however late they came.
        """
        if self._full_refresh_due():
            return False
        now = time.monotonic()
        if (now - self._last_delta < CONF.scheduler.host_state_max_age
                and not self._reread):
            return True
        started = timeutils.utcnow()
        changes = self.source.get_changes_since(
            context, self._last_read - self.source.timestamp_resolution(),
            COMPUTE_BINARY)
        sweeping = now - self._last_sweep >= SWEEP_INTERVAL
        reread: set[int] = set()
        if sweeping:
            reread = self._add_late_rows(context, changes, started)
        if not self._same_nodes(changes['compute_nodes'],
                                changes['deleted_compute_node_ids'],
                                changes['services']):
            return False
        changed = self._apply_compute_rows(context,
                                           changes['compute_nodes'])
        changed += self._apply_instance_rows(changes['instances'])
        self.table.sync(changed)
        self.suspects.read(reread, now)
        self.table.sync(self._apply_service_rows(changes['services']),
                        part='service')
        self._last_read = started
        self._last_delta = time.monotonic()
        metrics.view_read(metrics.CHANGES_READ, self._last_delta - now)
        if sweeping:
            self._swept_from = started
            self._last_sweep = self._last_delta
        return True

    def _add_late_rows(self, context: Any, changes: dict[str, Any],
                       now: datetime.datetime) -> set[int]:
        """Add to ``changes`` the compute node and service rows stamped
        since ``CLOCK_MARGIN`` before the previous sweep whose version is
        not the one we hold (nor in ``changes``), the rows of the
        services ``suspects`` names at ``now`` (naive UTC), and the
        instance rows of that window; returns the suspects' ids."""
        since = self._swept_from - CLOCK_MARGIN
        versions = self.source.get_change_versions_since(context, since,
                                                         COMPUTE_BINARY)
        late = _late_ids(versions, changes, {
            'compute_nodes': self._seen, 'services': self._service_seen})
        reread = set(self.suspects.due(self.table, now, time.monotonic())
                     ).difference(row['id'] for row in changes['services'])
        rows = _rows_by_ids(self.source, context, late['compute_nodes'],
                            late['services'] | reread)
        for name in ('compute_nodes', 'services'):
            changes[name] = changes[name] + rows[name]
        changes['deleted_compute_node_ids'] |= rows['deleted_compute_node_ids']
        known = {row['id'] for row in changes['instances']}
        changes['instances'] = changes['instances'] + [
            row for row in self.source.get_instance_changes_since(
                context, since)
            if row['id'] not in known]
        return reread

    def _same_nodes(self, computes: Iterable[Row], deleted: set[int],
                    services: Iterable[Row]) -> bool:
        if deleted & self._by_id.keys():
            return False
        for row in computes:
            state = self._by_id.get(row['id'])
            if state is None:
                if self._skipped.get(row['id']) != row['host']:
                    return False   # a new node, or one that moved
            elif (state.host, state.nodename) != (
                    row['host'], row['hypervisor_hostname']):
                return False
        known = self.table.rows_by_host
        skipped_hosts = set(self._skipped.values())
        return not any(
            (svc['deleted'] and svc['host'] in known) or
            (not svc['deleted'] and svc['host'] in skipped_hosts)
            for svc in services)

    def _apply_compute_rows(self, context: Any, computes: Iterable[Row]
                            ) -> list[HostState]:
        rows = {row['id']: row for row in computes
                if row['id'] in self._by_id and
                self._seen.get(row['id']) !=
                self.source.row_version('compute_nodes', row)}
        for compute_id in self._reread - rows.keys():
            if compute_id in self._by_id:
                rows[compute_id] = self.source.compute_node_get(context,
                                                                compute_id)
        self._reread.clear()
        changed = []
        for compute_id, row in rows.items():
            state = self._by_id[compute_id]
            state.update(compute=row)
            self._seen[compute_id] = self.source.row_version('compute_nodes',
                                                             row)
            changed.append(state)
        return changed

    def _apply_service_rows(self, services: Iterable[Row]
                            ) -> list[HostState]:
        changed = []
        for svc in services:
            version = self.source.row_version('services', svc)
            if self._service_seen.get(svc['id']) != version:
                self._service_seen[svc['id']] = version
                self.suspects.changed((svc['id'],))
            for state in self.states_of([svc['host']]):
                if state.service != svc:
                    state.update(service=svc)
                    changed.append(state)
        return changed

    def _apply_instance_rows(self, instances: Iterable[Row]
                             ) -> list[HostState]:
        """Apply the changed instance rows to the hosts not in sync that
        they were or are on (``InstanceTracker.apply_row``)."""
        table = self.table
        hosts: set[str] = set()
        for row in instances:
            hosts |= self.instances.apply_row(row, {
                table.states[r].host
                for r in table.rows_with_instance(row['uuid'])})
        return self.give_instances(hosts)


def _late_ids(versions: dict[str, dict[int, Any]], changes: dict[str, Any],
              held: dict[str, dict[int, Any]]) -> dict[str, set[int]]:
    """``{table: ids}``: the compute node and service rows of
    ``versions`` (``get_change_versions_since``) that are not in
    ``changes`` and whose version is not the one ``held`` (``{table:
    {id: row_version}}``)."""
    read = {(name, row['id']) for name in ('compute_nodes', 'services')
            for row in changes[name]}
    read.update(('compute_nodes', node_id)
                for node_id in changes['deleted_compute_node_ids'])
    return {name: {row_id for row_id, version in found.items()
                   if (name, row_id) not in read and
                   version != held[name].get(row_id)}
            for name, found in versions.items()}


def _rows_by_ids(source: Any, context: Any, node_ids: set[int],
                 service_ids: set[int]) -> dict[str, Any]:
    """``source.get_rows_by_ids`` of the compute node and service rows of
    these ids, read again by the sweep (no read when there is none)."""
    if not (node_ids or service_ids):
        return {'compute_nodes': [], 'services': [],
                'deleted_compute_node_ids': set()}
    LOG.debug('Reading %d compute node and %d service row(s) committed '
              'after a read they predate, or whose heartbeat is old',
              len(node_ids), len(service_ids))
    rows: dict[str, Any] = source.get_rows_by_ids(context, node_ids,
                                                  service_ids)
    return rows
