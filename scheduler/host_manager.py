"""HostManager: the scheduler's in-memory view of the compute nodes.

It follows Nova's Newton/Ocata HostManager on the "all compute nodes" path
(reference section 3):

* host states come from ``compute_nodes`` joined with the ``nova-compute``
  ``services`` rows; a node without a service row is skipped, and nodes no
  longer in the database are dropped ("dead nodes");
* HostStates are kept between requests, so a virtual consumption lasts
  until the node's row is newer (``HostState.update``);
* aggregates are read once at start-up and then kept current only by the
  ``update_aggregates`` / ``delete_aggregate`` casts;
* with ``track_instance_changes``, each host's instances are kept from the
  compute services' instance casts; a host not yet in sync is read from the
  database (in one query for all such hosts, where Nova made one per host);
* ``get_filtered_hosts`` applies ``requested_destination``,
  ``ignore_hosts``, ``force_hosts`` and ``force_nodes`` before the filters
  (reference 3.6), removing the source host of a move after
  ``requested_destination`` (``scheduler.moves``); ``get_weighed_hosts``
  ranks hosts with the weighers.

Every public method is thread-safe: the RPC server runs requests and casts
on a pool of threads.
"""

import collections
import threading

from oslo_log import log as logging

from scheduler import filters
from scheduler import moves
from scheduler import weights
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.host_state import HostState
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import cell_mapping
from scheduler.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nova-compute'


def _enabled_filter_names():
    fs = CONF.filter_scheduler
    if fs.use_baremetal_filters:
        return fs.baremetal_enabled_filters
    return fs.enabled_filters


class HostManager:
    """Owns the HostStates, the aggregates and the per-host instances."""

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
        self.weight_handler = weights.HostWeightHandler()
        self.weighers = weights.load_weighers(
            CONF.filter_scheduler.weight_classes)
        self.track_instance_changes = (
            CONF.filter_scheduler.track_instance_changes)
        self.host_state_map = {}
        self.aggs_by_id = {}
        self.host_aggregates_map = collections.defaultdict(set)
        self._instance_info = {}
        self._load_aggregates(context)
        if self.track_instance_changes:
            self._init_instance_info(context)

    # -- aggregates ------------------------------------------------------

    def _load_aggregates(self, context):
        aggregates = [aggregate_obj.Aggregate.from_db(row)
                      for row in db.aggregate_get_all(context)]
        self.update_aggregates(aggregates)

    def update_aggregates(self, aggregates):
        """Add or replace aggregates (list, AggregateList or one Aggregate);
        hosts no longer listed leave the aggregate (reference 3.7)."""
        if isinstance(aggregates, aggregate_obj.Aggregate):
            aggregates = [aggregates]
        elif isinstance(aggregates, aggregate_obj.AggregateList):
            aggregates = aggregates.objects
        with self.lock:
            for agg in aggregates:
                self.aggs_by_id[agg.id] = agg
                hosts = set(agg.obj_get('hosts') or [])
                for host in hosts:
                    self.host_aggregates_map[host].add(agg.id)
                for host, agg_ids in self.host_aggregates_map.items():
                    if agg.id in agg_ids and host not in hosts:
                        agg_ids.discard(agg.id)

    def delete_aggregate(self, aggregate):
        """Forget ``aggregate`` and its memberships."""
        with self.lock:
            self.aggs_by_id.pop(aggregate.id, None)
            for agg_ids in self.host_aggregates_map.values():
                agg_ids.discard(aggregate.id)

    def aggregates_for(self, host):
        """The Aggregate objects of a service host, ordered by id."""
        return [self.aggs_by_id[agg_id]
                for agg_id in sorted(self.host_aggregates_map.get(host, ()))
                if agg_id in self.aggs_by_id]

    # -- instance tracking (reference 3.8) --------------------------------

    def _init_instance_info(self, context):
        hosts = {row['host'] for row in db.compute_node_get_all(context)
                 if row.get('host')}
        by_host = db.instance_get_all_by_hosts(context, sorted(hosts))
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
        rows = db.instance_get_all_by_host(context, host)
        self._set_host_instances(host, rows, updated=False)

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

    def delete_instance_info(self, context, host_name, instance_uuid):
        """Forget an instance deleted on ``host_name``."""
        with self.lock:
            info = self._instance_info.get(host_name)
            if info is not None:
                info['instances'].pop(instance_uuid, None)
                info['updated'] = True
            else:
                self._rebuild_host_from_db(context, host_name)

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

    def _instances_by_host(self, context, hosts):
        """``{host: {uuid: Instance}}``: cached where in sync, else read
        from the database in one query (and, when tracking, cached as
        not yet in sync)."""
        result = {}
        stale = []
        for host in hosts:
            info = self._instance_info.get(host)
            if (self.track_instance_changes and info is not None and
                    info['updated']):
                result[host] = info['instances']
            else:
                stale.append(host)
        if stale:
            rows = db.instance_get_all_by_hosts(context, stale)
            for host in stale:
                if self.track_instance_changes:
                    self._set_host_instances(host, rows.get(host, []),
                                             updated=False)
                    result[host] = self._instance_info[host]['instances']
                else:
                    result[host] = {
                        row['uuid']: instance_obj.Instance.from_db(row)
                        for row in rows.get(host, [])}
        return result

    # -- host states (reference 3.5) ----------------------------------------

    def get_all_host_states(self, context):
        """Refresh and return the HostStates of every live compute node,
        in ``compute_nodes.id`` order.  Down or disabled services are
        kept: only ComputeFilter removes them."""
        computes = db.compute_node_get_all(context)
        services = {svc['host']: svc for svc in
                    db.service_get_all_by_binary(context, COMPUTE_BINARY)}
        with self.lock:
            instances = self._instances_by_host(
                context, {c['host'] for c in computes if c['host']})
            states = []
            for compute in computes:
                state = self._refresh_one(compute, services, instances)
                if state is not None:
                    states.append(state)
            self._drop_dead_nodes({(s.host, s.nodename) for s in states})
            return states

    def _refresh_one(self, compute, services, instances):
        host = compute['host']
        service = services.get(host)
        if service is None:
            LOG.warning('No compute service record found for host %s', host)
            return None
        key = (host, compute['hypervisor_hostname'])
        state = self.host_state_map.get(key)
        if state is None:
            state = HostState(host, key[1],
                              cell_uuid=cell_mapping.SINGLE_CELL_UUID)
            self.host_state_map[key] = state
        state.update(compute, service, self.aggregates_for(host),
                     instances.get(host, {}))
        return state

    def _drop_dead_nodes(self, seen):
        for key in set(self.host_state_map) - seen:
            LOG.info('Removing dead compute node %s:%s from scheduler', *key)
            del self.host_state_map[key]

    # -- filtering and weighing (reference 3.6) ---------------------------

    def get_filtered_hosts(self, hosts, spec_obj, index=0):
        """Hosts that pass the pre-filters and the enabled filters.

        Forced hosts or nodes skip the filters (unless the request is a
        rebuild check); an ignored, forced-away or non-requested host is
        never returned.  The source host of a move (resize, migration,
        evacuation) is removed first by ``moves.exclude_source``.
        """
        hosts = _apply_requested_destination(hosts, spec_obj)
        hosts = moves.exclude_source(hosts, spec_obj)
        hosts, forced = _apply_ignore_and_force(hosts, spec_obj)
        if forced and not spec_obj.get_scheduler_hint('_nova_check_type'):
            return hosts
        if not hosts:
            return []
        return self.filter_handler.get_filtered_objects(
            self.enabled_filters, hosts, spec_obj, index)

    def get_weighed_hosts(self, hosts, spec_obj):
        """WeighedHost list, best first (see ``scheduler.weights``)."""
        return self.weight_handler.get_weighed_objects(
            self.weighers, hosts, spec_obj)


def _apply_requested_destination(hosts, spec_obj):
    """Keep the host (and node, when given) of ``requested_destination``;
    its ``aggregates`` entries (comma lists of aggregate uuids) must each
    match one of the host's aggregates; another cell matches nothing."""
    dest = spec_obj.get('requested_destination')
    if dest is None:
        return hosts
    cell = dest.obj_get('cell')
    if cell is not None and cell.obj_get('uuid') != \
            cell_mapping.SINGLE_CELL_UUID:
        LOG.info('Requested cell %s is not served here',
                 cell.obj_get('uuid'))
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
