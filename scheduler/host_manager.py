"""HostManager: the scheduler's in-memory view of the compute nodes.

It follows Nova's Newton/Ocata HostManager on the "all compute nodes"
path, with the same answers but an incremental refresh: HostStates are
kept between requests and each decision reads, through
``scheduler.db.source``, only the rows changed since the previous read,
with a periodic sweep and full refresh.  It filters and weighs over its
``HostTable`` or over HostState lists, with the same answers.  How the
view is built and refreshed is described in docs/refresh.rst.

Every public method is thread-safe: the RPC server runs requests and casts
on a pool of threads.
"""

import collections
import datetime
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import filters
from scheduler import moves
from scheduler import weights
from scheduler.conf import CONF
from scheduler.db import source as db_source
from scheduler.filters import claim_capacity
from scheduler.host_state import HostState
from scheduler.host_table import HostTable
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nova-compute'
# How much earlier than the previous sweep the next one starts: the
# commit delay and writer clock lag that a sweep forgives.
CLOCK_MARGIN = datetime.timedelta(seconds=1)
# Seconds between two sweeps (see ``HostManager._refresh_changes``).
SWEEP_INTERVAL = 1.0


def _enabled_filter_names():
    fs = CONF.filter_scheduler
    if fs.use_baremetal_filters:
        return fs.baremetal_enabled_filters
    return fs.enabled_filters


class HostManager:
    """Owns the HostStates, their HostTable, the aggregates and the
    per-host instances."""

    def __init__(self, context):
        """Load plug-ins, aggregates and (when tracking) instance info.

        ``context`` is used for the start-up database reads.  Raises
        SchedulerHostFilterNotFound / ClassNotFound for a bad plug-in name.
        """
        self.lock = threading.RLock()
        self.filter_handler = filters.HostFilterHandler()
        self.enabled_filters = filters.load_filters(
            CONF.filter_scheduler.available_filters,
            _enabled_filter_names())
        # What runs: the claims' own check first when nodes are claimed.
        self.filters = list(self.enabled_filters)
        if CONF.scheduler.claim_resources:
            self.filters.insert(0, claim_capacity.ClaimCapacityFilter())
        self.weight_handler = weights.HostWeightHandler()
        self.weighers = weights.load_weighers(
            CONF.filter_scheduler.weight_classes)
        self.track_instance_changes = (
            CONF.filter_scheduler.track_instance_changes)
        # Where every read goes (scheduler.db.source).
        self.source = db_source.get_source()
        self.host_state_map = {}
        self.table = HostTable([])
        self.aggs_by_id = {}
        self.host_aggregates_map = collections.defaultdict(set)
        self._instance_info = {}
        self._by_id = {}           # compute_nodes.id -> HostState
        self._seen = {}            # compute_nodes.id -> row version
        self._skipped = {}         # compute_nodes.id -> host, no service
        self._reread = set()       # compute_nodes.id to copy again
        self._service_seen = {}    # services.id -> row version
        self._last_read = None     # naive UTC start of the last read
        self._swept_from = None    # naive UTC start of the last sweep
        self._last_sweep = None    # monotonic time of the last sweep
        self._last_full = None     # monotonic time of the last full read
        self._last_delta = None    # monotonic time of the last read
        self._load_aggregates(context)
        if self.track_instance_changes:
            self._init_instance_info(context)

    # -- aggregates ------------------------------------------------------

    def _load_aggregates(self, context):
        aggregates = [aggregate_obj.Aggregate.from_db(row)
                      for row in self.source.aggregate_get_all(context)]
        self.update_aggregates(aggregates)

    def update_aggregates(self, aggregates):
        """Add or replace aggregates (list, AggregateList or one Aggregate);
        hosts no longer listed leave the aggregate (as in Nova)."""
        if isinstance(aggregates, aggregate_obj.Aggregate):
            aggregates = [aggregates]
        elif isinstance(aggregates, aggregate_obj.AggregateList):
            aggregates = aggregates.objects
        with self.lock:
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
            self._apply_aggregates(touched)

    def delete_aggregate(self, aggregate):
        """Forget ``aggregate`` and its memberships."""
        with self.lock:
            self.aggs_by_id.pop(aggregate.id, None)
            touched = set()
            for host, agg_ids in self.host_aggregates_map.items():
                if aggregate.id in agg_ids:
                    agg_ids.discard(aggregate.id)
                    touched.add(host)
            self._apply_aggregates(touched)

    def aggregates_for(self, host):
        """The Aggregate objects of a service host, ordered by id."""
        return [self.aggs_by_id[agg_id]
                for agg_id in sorted(self.host_aggregates_map.get(host, ()))
                if agg_id in self.aggs_by_id]

    def _apply_aggregates(self, hosts):
        states = self._states_of(hosts)
        for state in states:
            state.update(aggregates=self.aggregates_for(state.host))
        self.table.sync(states, part='aggregates')

    def _states_of(self, hosts):
        table = self.table
        return [table.states[row] for host in hosts
                for row in table.rows_by_host.get(host, ())]

    # -- instance tracking -------------------------------------------------

    def _init_instance_info(self, context):
        hosts = self.source.compute_node_get_hosts(context)
        by_host = self.source.instance_get_all_by_hosts(context,
                                                        sorted(hosts))
        with self.lock:
            for host in hosts:
                self._set_host_instances(host, by_host.get(host, []),
                                         updated=False)

    def _set_host_instances(self, host, rows, updated):
        instances = {row['uuid']: instance_obj.Instance.from_db(row)
                     for row in rows}
        self._instance_info[host] = {'instances': instances,
                                     'updated': updated}

    def _rebuild_host_from_db(self, context, host):
        rows = self.source.instance_get_all_by_host(context, host)
        self._set_host_instances(host, rows, updated=False)

    def _apply_instances(self, hosts):
        self.table.sync(self._give_instances(hosts))

    def _give_instances(self, hosts):
        """Hand the hosts' instance dicts to their HostStates; returns
        those HostStates (to be synced)."""
        states = self._states_of(hosts)
        for state in states:
            state.update(
                instances=self._instance_info[state.host]['instances'])
        return states

    def _in_sync(self, host):
        info = self._instance_info.get(host)
        return (self.track_instance_changes and info is not None and
                info['updated'])

    def update_instance_info(self, context, host_name, instance_info):
        """Merge an InstanceList reported by ``host_name``.

        A known host merges by uuid and is marked in sync; an unknown host
        takes a list of more than one instance as its full list; otherwise
        the host is re-read from the database, not in sync.
        """
        instances = list(instance_info.objects)
        with self.lock:
            info = self._instance_info.get(host_name)
            if info is not None:
                info['instances'].update({i.uuid: i for i in instances})
                info['updated'] = True
            elif len(instances) > 1:
                self._instance_info[host_name] = {
                    'instances': {i.uuid: i for i in instances},
                    'updated': True}
            else:
                LOG.info('Received an update from an unknown host %s; '
                         'reading its instances from the database',
                         host_name)
                self._rebuild_host_from_db(context, host_name)
            self._apply_instances([host_name])

    def delete_instance_info(self, context, host_name, instance_uuid):
        """Forget an instance deleted on ``host_name``.

        The host's nodes are read again at the next refresh, dropping
        their virtual consumption: the instance's claim is released from
        their rows, and a release written within the second of our
        consumption would otherwise pass for older than it where the
        database keeps whole seconds (MySQL).
        """
        with self.lock:
            self.forget_consumption(self._states_of([host_name]))
            info = self._instance_info.get(host_name)
            if info is not None:
                info['instances'].pop(instance_uuid, None)
                info['updated'] = True
            else:
                self._rebuild_host_from_db(context, host_name)
            self._apply_instances([host_name])

    def sync_instance_info(self, context, host_name, instance_uuids):
        """Compare the host's full uuid list with ours; re-read on drift."""
        with self.lock:
            info = self._instance_info.get(host_name)
            if info is not None and set(info['instances']) == set(
                    instance_uuids):
                info['updated'] = True
                LOG.debug('Successfully synced instances from host %s',
                          host_name)
                return
            LOG.info('The instance sync for host %s did not match; '
                     're-reading its instances from the database',
                     host_name)
            self._rebuild_host_from_db(context, host_name)
            self._apply_instances([host_name])

    def _read_instances(self, context, hosts):
        """Re-read from the database the instances of the ``hosts`` that
        are not in sync with their compute service's casts."""
        stale = sorted(host for host in hosts if not self._in_sync(host))
        if stale:
            rows = self.source.instance_get_all_by_hosts(context, stale)
            for host in stale:
                self._set_host_instances(host, rows.get(host, []),
                                         updated=False)

    # -- host states -------------------------------------------------------

    def get_all_host_states(self, context):
        """Refresh and return the HostStates of every live compute node,
        in ``compute_nodes.id`` order (the rows of ``self.table``).  Down
        or disabled services are kept: only ComputeFilter removes them.
        """
        with self.lock:
            if not self._refresh_changes(context):
                self._refresh_all(context)
            return self.table.states

    def _full_refresh_due(self):
        if self._last_full is None:
            return True
        interval = CONF.scheduler.full_refresh_interval
        return time.monotonic() - self._last_full >= interval

    def _refresh_all(self, context):
        """Nova's per-request read: every node, service and the instances
        of every host not in sync."""
        started = timeutils.utcnow()
        source = self.source
        services = {svc['host']: svc for svc in
                    source.service_get_all_by_binary(context, COMPUTE_BINARY)}
        self._read_instances(context, source.compute_node_get_hosts(context))
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
        self._service_seen = {svc['id']: source.row_version('services', svc)
                              for svc in services.values()}
        self._last_read = self._swept_from = started
        self._last_full = self._last_delta = self._last_sweep = (
            time.monotonic())

    def _refresh_one(self, compute, services):
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
            state = HostState(host, key[1], cell_uuid=cell_uuid)
            self.host_state_map[key] = state
        state.cell_uuid = cell_uuid   # a node may move to another cell
        state.update(compute, service, self.aggregates_for(host),
                     self._instance_info.get(host, {}).get('instances', {}))
        self._by_id[compute['id']] = state
        self._seen[compute['id']] = self.source.row_version('compute_nodes',
                                                            compute)
        return state

    def _drop_dead_nodes(self, seen):
        for key in set(self.host_state_map) - seen:
            LOG.info('Removing dead compute node %s:%s from scheduler', *key)
            del self.host_state_map[key]

    def _refresh_changes(self, context):
        """Apply the rows changed since the last read; False when a full
        read is due or needed (nodes or services appeared or went).

        Each read asks for the rows stamped after the previous read began
        (less the database's ``timestamp_resolution``).  A row stamped
        before that but committed after it, or stamped by a writer whose
        clock lags ours, is caught by the sweep: at most every
        ``SWEEP_INTERVAL`` seconds, the versions of the rows stamped since
        ``CLOCK_MARGIN`` before the previous sweep are compared with ours,
        and the rows that differ are read in full.
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
        if sweeping:
            self._add_late_rows(context, changes)
        if not self._same_nodes(changes['compute_nodes'],
                                changes['deleted_compute_node_ids'],
                                changes['services']):
            return False
        changed = self._apply_compute_rows(context,
                                           changes['compute_nodes'])
        changed += self._apply_instance_rows(context, changes['instances'])
        self.table.sync(changed)
        self.table.sync(self._apply_service_rows(changes['services']),
                        part='service')
        self._last_read = started
        self._last_delta = time.monotonic()
        if sweeping:
            self._swept_from = started
            self._last_sweep = self._last_delta
        return True

    def _add_late_rows(self, context, changes):
        """Add to ``changes`` the compute node and service rows stamped
        since ``CLOCK_MARGIN`` before the previous sweep whose version is
        not the one we hold (nor in ``changes``), and the instance rows
        of that window."""
        since = self._swept_from - CLOCK_MARGIN
        versions = self.source.get_change_versions_since(context, since,
                                                         COMPUTE_BINARY)
        read = {(name, row['id']) for name in ('compute_nodes', 'services')
                for row in changes[name]}
        read.update(('compute_nodes', node_id)
                    for node_id in changes['deleted_compute_node_ids'])
        late = {name: [row_id for row_id, version in found.items()
                       if (name, row_id) not in read and
                       version != self._held_version(name, row_id)]
                for name, found in versions.items()}
        if late['compute_nodes'] or late['services']:
            LOG.debug('Reading %d compute node and %d service row(s) '
                      'committed after a read they predate',
                      len(late['compute_nodes']), len(late['services']))
            rows = self.source.get_rows_by_ids(
                context, late['compute_nodes'], late['services'])
            for name in ('compute_nodes', 'services'):
                changes[name] = changes[name] + rows[name]
            changes['deleted_compute_node_ids'] |= rows[
                'deleted_compute_node_ids']
        known = {row['id'] for row in changes['instances']}
        changes['instances'] = changes['instances'] + [
            row for row in self.source.get_instance_changes_since(
                context, since)
            if row['id'] not in known]

    def _held_version(self, name, row_id):
        """The ``row_version`` of the row we hold, or None."""
        seen = self._seen if name == 'compute_nodes' else self._service_seen
        return seen.get(row_id)

    def _same_nodes(self, computes, deleted, services):
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

    def _apply_compute_rows(self, context, computes):
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

    def _apply_service_rows(self, services):
        changed = []
        for svc in services:
            self._service_seen[svc['id']] = self.source.row_version(
                'services', svc)
            for state in self._states_of([svc['host']]):
                if state.service != svc:
                    state.update(service=svc)
                    changed.append(state)
        return changed

    def _apply_instance_rows(self, context, instances):
        """Re-read the instances of the hosts not in sync that the changed
        instance rows were or are on."""
        hosts = set()
        for row in instances:
            if row['host']:
                hosts.add(row['host'])
            hosts.update(self.table.states[r].host
                         for r in self.table.rows_with_instance(row['uuid']))
        hosts = {host for host in hosts
                 if host in self.table.rows_by_host and
                 not self._in_sync(host)}
        if not hosts:
            return []
        self._read_instances(context, hosts)
        return self._give_instances(hosts)

    # -- consumption -------------------------------------------------------

    def consume(self, state, spec_obj):
        """``state.consume_from_request(spec_obj)``, keeping the table
        current."""
        with self.lock:
            state.consume_from_request(spec_obj)
            self.table.sync([state])

    def keep_consumption(self, states):
        """Mark the consumption of ``states`` as newer than the claims just
        written on their nodes, so that the next refresh keeps it instead
        of taking our own claim write for the node's usage report (the
        claim of a request is written after its instances consumed)."""
        now = timeutils.utcnow()
        with self.lock:
            for state in states:
                state.updated = now

    def forget_consumption(self, states):
        """Drop the virtual consumption of ``states``: the next refresh
        copies their compute node rows again (Nova resets ``updated``)."""
        with self.lock:
            for state in states:
                state.updated = None
                if state.compute_id is not None:
                    self._reread.add(state.compute_id)

    # -- filtering and weighing --------------------------------------------

    def get_filtered_hosts(self, hosts, spec_obj, index=0):
        """Hosts that pass the pre-filters, the claims' capacity check
        (``ClaimCapacityFilter``, with ``[scheduler] claim_resources``)
        and the enabled filters.

        Forced hosts or nodes skip the filters (unless the request is a
        rebuild check); an ignored, forced-away or non-requested host is
        never returned.  The source host of a move (resize, migration,
        evacuation) is removed first by ``moves.exclude_source``.
        """
        hosts, forced = _prefilter(hosts, spec_obj)
        if forced or not hosts:
            return hosts
        return self.filter_handler.get_filtered_objects(
            self.filters, hosts, spec_obj, index)

    def get_weighed_hosts(self, hosts, spec_obj):
        """WeighedHost list, best first (see ``scheduler.weights``)."""
        return self.weight_handler.get_weighed_objects(
            self.weighers, hosts, spec_obj)

    def get_filtered_rows(self, rows, spec_obj, index=0):
        """``get_filtered_hosts`` over ``self.table``: ``rows`` is an intp
        array of candidate rows.  Returns ``(rows, ran)``: the passing
        rows and the filters whose ``apply_limits`` the hosts returned
        need (see ``HostFilterHandler.get_filtered_rows``)."""
        table = self.table
        if _needs_prefilter(table, spec_obj):
            hosts, forced = _prefilter(table.states_at(rows), spec_obj)
            rows = table.rows_of(hosts)
            if forced or not hosts:
                return rows, []
        return self.filter_handler.get_filtered_rows(
            self.filters, table, rows, spec_obj, index)

    def get_weighed_rows(self, rows, spec_obj, limit=None,
                         multipliers=None):
        """``(rows, weights)`` sorted best first, over ``self.table``; with
        ``limit``, only the best; ``multipliers`` from
        ``weight_multipliers`` (see ``get_weighed_rows`` of
        ``scheduler.weights.HostWeightHandler``)."""
        return self.weight_handler.get_weighed_rows(
            self.weighers, self.table, rows, spec_obj, limit, multipliers)

    def weight_multipliers(self):
        """The weighers' multipliers over ``self.table``, for the
        weighings of one request (aggregates do not change while it holds
        ``lock``)."""
        return self.weight_handler.table_multipliers(self.weighers,
                                                     self.table)


def _needs_prefilter(table, spec_obj):
    """Whether ``_prefilter`` may change anything for this request: one
    of its fields is set, or the instance already runs on a host of
    ``table`` (a move, see ``moves.exclude_source``)."""
    uuid = spec_obj.obj_get('instance_uuid')
    return bool(spec_obj.get('requested_destination') is not None or
                spec_obj.get('ignore_hosts') or
                spec_obj.get('force_hosts') or
                spec_obj.get('force_nodes') or
                spec_obj.get_scheduler_hint(moves.SOURCE_HOST_HINT) or
                (uuid and table.rows_with_instance(uuid)))


def _prefilter(hosts, spec_obj):
    """Apply requested_destination, the move source and ignore/force.
    Returns ``(hosts, forced)``; ``forced`` means the filters are skipped
    (forced hosts or nodes, unless the request is a rebuild check)."""
    hosts = _apply_requested_destination(hosts, spec_obj)
    hosts = moves.exclude_source(hosts, spec_obj)
    hosts, forced = _apply_ignore_and_force(hosts, spec_obj)
    return hosts, forced and not spec_obj.get_scheduler_hint(
        '_nova_check_type')


def _apply_requested_destination(hosts, spec_obj):
    """Keep the host (and node, when given) of ``requested_destination``;
    its ``aggregates`` entries (comma lists of aggregate uuids) must each
    match one of the host's aggregates; its ``cell``, when given, must be
    the host's cell (``HostState.cell_uuid``), as Nova (Pike and later)
    only looks at the requested cell's hosts."""
    dest = spec_obj.get('requested_destination')
    if dest is None:
        return hosts
    cell = dest.obj_get('cell')
    if cell is not None:
        wanted = cell.obj_get('uuid')
        hosts = [h for h in hosts if h.cell_uuid == wanted]
        if not hosts:
            LOG.info('Requested cell %s has no host here', wanted)
            return []
    result = [h for h in hosts if _matches_destination(h, dest)]
    LOG.info('Requested destination %s:%s matched %d node(s)',
             dest.obj_get('host'), dest.obj_get('node'), len(result))
    return result


def _matches_destination(host_state, dest):
    host = dest.obj_get('host')
    node = dest.obj_get('node')
    if host and host_state.host != host:
        return False
    if node and host_state.nodename != node:
        return False
    wanted = dest.obj_get('aggregates') or []
    if wanted:
        have = {agg.obj_get('uuid') for agg in host_state.aggregates}
        return all(have & set(entry.split(',')) for entry in wanted)
    return True


def _apply_ignore_and_force(hosts, spec_obj):
    """Apply ignore_hosts, force_hosts (case-insensitive host names) and
    force_nodes (exact node names).  Returns ``(hosts, forced)``."""
    ignore = {h.lower() for h in spec_obj.get('ignore_hosts', [])}
    force_hosts = {h.lower() for h in spec_obj.get('force_hosts', [])}
    force_nodes = set(spec_obj.get('force_nodes', []))
    if ignore:
        hosts = [h for h in hosts if h.host.lower() not in ignore]
        LOG.debug('Host filter ignoring hosts: %s', ', '.join(sorted(ignore)))
    if force_hosts:
        hosts = [h for h in hosts if h.host.lower() in force_hosts]
    if force_nodes:
        hosts = [h for h in hosts if h.nodename in force_nodes]
    return hosts, bool(force_hosts or force_nodes)
