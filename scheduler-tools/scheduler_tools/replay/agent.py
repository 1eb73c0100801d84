"""Simulated compute agents: what a compute service does for the scheduler.

For every compute node of the fleet, ``NodeUsage`` keeps the usage a
compute node's resource tracker would report, with Nova's arithmetic
(sizes in MiB for RAM, GiB for disk):

* ``vcpus_used``, ``memory_mb_used`` and ``local_gb_used`` add up the
  instances' vCPUs, RAM and root + ephemeral disk (no host reservation:
  an empty node reports 0 used);
* ``free_ram_mb = memory_mb - memory_mb_used`` and ``free_disk_gb =
  local_gb - local_gb_used`` (negative when overcommitted, as in Nova);
  ``disk_available_least`` follows ``free_disk_gb``;
* ``running_vms`` counts the instances, and the ``stats`` JSON holds
  ``num_instances``, ``num_vm_active``, ``num_task_None``,
  ``num_os_type_None``, ``num_proj_<project>`` and ``io_workload`` (0: a
  build is over by the time the row is written);
* ``pci_stats`` holds the node's PCI device pools with the free devices
  (``scheduler.resources.pci_pools``): an instance's PCI requests (its
  GPUs, ``gpus``) take devices from them as nova-compute's PCI tracker
  claims them, greedily in pool order, and give the same pools' devices
  back when it is deleted.  A node the scheduler chose without the
  devices is an AgentError, as the compute claim would fail.

``ComputeAgents`` does what the chosen compute services do after a
decision, in one database transaction for the whole request: it records
the instances (their ``instances`` rows, host and node set), writes each
chosen node's new ``compute_nodes`` row (``generation`` + 1 and
``updated_at`` bumped, as ``compute_node_update`` does, so the scheduler
takes the row over its own virtual consumption on its next request) and
drops the scheduler's claims for the new instances, which those rows now
count (what the scheduler's periodic reconciliation would do later; done
at once, in the same transaction, so that a replay's placements do not
depend on when it runs).  Once that is committed it casts
``update_instance_info`` to each chosen host with its new instances
(unless ``send_instance_updates`` is off, as Nova's compute sends no
instance casts without ``[filter_scheduler] track_instance_changes``).

Deletions are recorded in memory one by one (``remove``) and written
together (``commit_removals``): the instances soft-deleted and each
changed node's row written in one transaction, then one
``delete_instance_info`` cast per instance, as Nova's compute sends.  The
replay commits the deletions due before an arrival before it sends that
arrival's request, so the scheduler sees at each decision exactly the
rows the agents would have written one event at a time.  The agent's own
claims always succeed: it trusts the scheduler's choice and does not
check the limits.  The writes are SQLAlchemy Core statements run once per
batch (``executemany``), not ORM objects: per instance they cost a
parameter dict.
"""

import collections
import dataclasses
import functools
import os
import uuid

import sqlalchemy as sa
from oslo_serialization import jsonutils
from oslo_utils import timeutils

from scheduler.db import api as db
from scheduler.db import claims
from scheduler.objects import instance as instance_obj
from scheduler.resources import pci_pools
from scheduler.view.host_state import resolve_allocation_ratio
from scheduler_tools.replay import gpus as gpus_mod

ACTIVE = 'active'
RUNNING = 1  # Nova's power_state.RUNNING
REPLAY_USER = 'replay'
UUID_BYTES = 16
# What the scheduler reads of an instance (``scheduler.objects.instance``):
# the fields of the Instances an update_instance_info cast carries.  Nova's
# compute sends its whole Instance, whose sizes are always loaded; the
# MixedFitWeigher reads ``memory_mb``.
CAST_FIELDS = ('uuid', 'host', 'node', 'instance_type_id', 'project_id',
               'vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb')
# The compute_nodes columns a node reports (``NodeUsage.row_values``).
ROW_COLUMNS = ('vcpus_used', 'memory_mb_used', 'local_gb_used',
               'free_ram_mb', 'free_disk_gb', 'disk_available_least',
               'running_vms', 'current_workload', 'stats', 'pci_stats')


class AgentError(RuntimeError):
    """The scheduler chose a node the agents do not know, or one without
    the PCI devices the instance asks for."""


@dataclasses.dataclass(slots=True)
class Placed:
    """An instance the replay created: its VM, uuid (None in a
    simulation), node key and node index in the fleet, and the PCI
    devices it holds: ``((pool index, count), ...)`` of its node."""

    vm: object
    uuid: str | None
    host: str
    nodename: str
    index: int = -1
    devices: tuple = ()

    @property
    def node_key(self):
        return (self.host, self.nodename)


class NodeUsage:
    """The resource tracker of one compute node.

    Capacities are physical (``vcpus`` CPUs, ``memory_mb`` MiB,
    ``local_gb`` GiB); ``*_limit`` are capacity times the allocation
    ratio that the scheduler applies to this node.  ``pci_stats`` is the
    row's value (None: no PCI device); ``gpus`` counts the GPUs of its
    pools, ``gpus_used`` those taken.
    """

    def __init__(self, compute_id, host, nodename, vcpus, memory_mb,
                 local_gb, cpu_allocation_ratio=None,
                 ram_allocation_ratio=None, disk_allocation_ratio=None,
                 index=-1, pci_stats=None):
        self.compute_id = compute_id
        self.index = index
        self.host = host
        self.nodename = nodename
        self.vcpus = vcpus
        self.memory_mb = memory_mb
        self.local_gb = local_gb
        self.cpu_allocation_ratio = resolve_allocation_ratio(
            'cpu_allocation_ratio', cpu_allocation_ratio)
        self.ram_allocation_ratio = resolve_allocation_ratio(
            'ram_allocation_ratio', ram_allocation_ratio)
        self.disk_allocation_ratio = resolve_allocation_ratio(
            'disk_allocation_ratio', disk_allocation_ratio)
        self.vcpus_used = 0
        self.memory_mb_used = 0
        self.local_gb_used = 0
        self.running_vms = 0
        self.projects = collections.Counter()
        self.pci_stats = pci_stats
        self.pools = pci_pools.parse_pools(pci_stats)
        self.gpus = gpus_mod.gpu_count(self.pools)
        self.gpus_used = 0

    @classmethod
    def from_row(cls, row, index=-1):
        """Start from a ``compute_nodes`` row dict and its reported usage
        (counting its ``running_vms`` as instances of no project);
        ``index`` is the node's position in the fleet."""
        node = cls(row['id'], row['host'], row['hypervisor_hostname'],
                   row['vcpus'], row['memory_mb'], row['local_gb'],
                   row.get('cpu_allocation_ratio'),
                   row.get('ram_allocation_ratio'),
                   row.get('disk_allocation_ratio'), index,
                   row.get('pci_stats'))
        node.vcpus_used = row.get('vcpus_used') or 0
        node.memory_mb_used = row.get('memory_mb_used') or 0
        node.local_gb_used = row.get('local_gb_used') or 0
        node.running_vms = row.get('running_vms') or 0
        return node

    @property
    def key(self):
        return (self.host, self.nodename)

    # -- arithmetic -------------------------------------------------------

    def _apply(self, vm, sign):
        self.vcpus_used += sign * vm.vcpus
        self.memory_mb_used += sign * vm.memory_mb
        self.local_gb_used += sign * vm.disk_gb
        self.running_vms += sign
        self.projects[vm.project_id] += sign
        if self.projects[vm.project_id] <= 0:
            del self.projects[vm.project_id]

    def add(self, vm):
        """Count a new instance of ``vm``'s size (a trace VM)."""
        self._apply(vm, +1)

    def remove(self, vm):
        """Stop counting an instance of ``vm``'s size."""
        self._apply(vm, -1)

    def take_devices(self, pci_requests):
        """Claim the devices of ``pci_requests`` (anything
        ``pci_pools.request_list`` accepts) from the pools, as Nova's PCI
        tracker does; returns ``((pool index, count), ...)`` taken.

        :raises AgentError: the pools cannot serve them.
        """
        requests = pci_pools.request_list(pci_requests)
        if not requests:
            return ()
        before = [pool.count for pool in self.pools]
        try:
            pci_pools.apply_requests(self.pools, requests)
        except pci_pools.PciDeviceRequestFailed:
            raise AgentError(
                'the scheduler chose %s:%s, which lacks the PCI devices '
                'asked for (is %s enabled?)'
                % (self.host, self.nodename, gpus_mod.FILTER_NAME)) from None
        taken = tuple((index, count - pool.count) for index, (pool, count)
                      in enumerate(zip(self.pools, before, strict=True))
                      if count != pool.count)
        self._count_gpus(taken, +1)
        return taken

    def return_devices(self, devices):
        """Give back ``devices`` (from ``take_devices``) to their pools."""
        for index, count in devices:
            self.pools[index].count += count
        self._count_gpus(devices, -1)

    def _count_gpus(self, devices, sign):
        self.gpus_used += sign * sum(
            count for index, count in devices
            if gpus_mod.is_gpu_pool(self.pools[index]))

    @property
    def usage(self):
        """``(vcpus_used, memory_mb_used, local_gb_used, gpus_used)``."""
        return (self.vcpus_used, self.memory_mb_used, self.local_gb_used,
                self.gpus_used)

    @property
    def free_ram_mb(self):
        """Physical RAM not used, MiB (negative when overcommitted)."""
        return self.memory_mb - self.memory_mb_used

    @property
    def free_disk_gb(self):
        """Physical disk not used, GiB (negative when overcommitted)."""
        return self.local_gb - self.local_gb_used

    @property
    def vcpu_limit(self):
        """vCPUs the scheduler allows in all: capacity times ratio."""
        return self.vcpus * self.cpu_allocation_ratio

    @property
    def ram_limit_mb(self):
        """RAM the scheduler allows in all, MiB: capacity times ratio."""
        return self.memory_mb * self.ram_allocation_ratio

    @property
    def in_use(self):
        """Whether the node runs at least one instance."""
        return self.running_vms > 0

    def stats(self):
        """The ``stats`` JSON of the row (Nova's resource tracker keys)."""
        stats = {'num_instances': self.running_vms,
                 'num_vm_%s' % ACTIVE: self.running_vms,
                 'num_task_None': self.running_vms,
                 'num_os_type_None': self.running_vms,
                 'io_workload': 0}
        for project, count in sorted(self.projects.items(),
                                     key=lambda item: str(item[0])):
            if project is not None:
                stats['num_proj_%s' % project] = count
        return stats

    def row_values(self):
        """The ``compute_nodes`` columns this node reports."""
        return {'vcpus_used': self.vcpus_used,
                'memory_mb_used': self.memory_mb_used,
                'local_gb_used': self.local_gb_used,
                'free_ram_mb': self.free_ram_mb,
                'free_disk_gb': self.free_disk_gb,
                'disk_available_least': self.free_disk_gb,
                'running_vms': self.running_vms,
                'current_workload': 0,
                'stats': self.stats(),
                'pci_stats': self._pci_stats()}

    def _pci_stats(self):
        """The ``pci_stats`` value: the row's, with the free counts."""
        if self.pci_stats is None:
            return None
        return pci_pools.pools_to_raw(self.pools, self.pci_stats)


def instance_values(vm, instance_uuid, host, nodename, flavor_id=None,
                    now=None):
    """The ``instances`` row of ``vm`` built on ``host``/``nodename`` at
    ``now`` (naive UTC, default the current time)."""
    return {'uuid': instance_uuid, 'project_id': vm.project_id,
            'user_id': REPLAY_USER, 'vcpus': vm.vcpus,
            'memory_mb': vm.memory_mb, 'root_gb': vm.disk_gb,
            'ephemeral_gb': 0, 'host': host, 'node': nodename,
            'launched_on': host, 'instance_type_id': flavor_id,
            'availability_zone': vm.availability_zone,
            'vm_state': ACTIVE, 'power_state': RUNNING,
            'created_at': now or timeutils.utcnow()}


def _node_statement():
    """UPDATE of a live node's reported usage by id: the ``row_values``
    columns from ``new_<column>`` parameters, ``generation`` + 1 and
    ``updated_at = :now`` (what ``writers.compute_node_update`` writes)."""
    nodes = db.COMPUTE_NODES
    values = {name: sa.bindparam('new_' + name) for name in ROW_COLUMNS}
    return (sa.update(nodes)
            .where(nodes.c.id == sa.bindparam('node_id'), nodes.c.deleted == 0)
            .values(generation=nodes.c.generation + 1,
                    updated_at=sa.bindparam('now'), **values))


def _destroy_statement():
    """Nova's soft delete of a live instance by uuid (``deleted = id``,
    ``deleted_at = :now``, ``updated_at`` kept), as
    ``writers.instance_destroy`` does."""
    instances = db.INSTANCES
    return (sa.update(instances)
            .where(instances.c.uuid == sa.bindparam('instance_uuid'),
                   instances.c.deleted == 0)
            .values(deleted=instances.c.id, deleted_at=sa.bindparam('now'),
                    updated_at=instances.c.updated_at))


@functools.cache
def _statements():
    """The agents' statements, built once (building one costs more than
    running it)."""
    return {'insert': sa.insert(db.INSTANCES), 'node': _node_statement(),
            'destroy': _destroy_statement()}


def _node_params(node, now):
    """The ``_node_statement`` parameters of ``node``'s current usage."""
    params = {'new_' + name: value
              for name, value in node.row_values().items()}
    params['new_stats'] = jsonutils.dumps(params['new_stats'])
    if not isinstance(params['new_pci_stats'], (str, type(None))):
        params['new_pci_stats'] = jsonutils.dumps(params['new_pci_stats'])
    params.update(node_id=node.compute_id, now=now)
    return params


def _cast_instance(values):
    """The Instance an ``update_instance_info`` cast carries for the
    ``instance_values`` dict ``values``: its ``CAST_FIELDS``."""
    return instance_obj.Instance.from_db(
        {name: values[name] for name in CAST_FIELDS})


def _execute_all(session, name, params, what):
    """Run the statement ``name`` once per parameter dict (one
    executemany); AgentError unless each matched one row (checked where
    the driver sums an executemany's row counts)."""
    if not params:
        return
    result = session.execute(_statements()[name], params)
    dialect = session.get_bind().dialect
    if len(params) > 1 and not dialect.supports_sane_multi_rowcount:
        return
    if result.rowcount != len(params):
        raise AgentError('%d of %d %s were not found in the database'
                         % (len(params) - result.rowcount, len(params),
                            what))


class ComputeAgents:
    """The compute services of every node: database writes and casts.

    ``ctx`` is the database (and RPC) context, ``api`` a SchedulerAPI (or
    anything with its ``update_instance_info`` / ``delete_instance_info``)
    and ``rows`` the ``compute_nodes`` row dicts of the fleet; a node's
    ``index`` is its position in ``rows``.  With ``send_instance_updates``
    False the agents write the database but cast nothing, as Nova's
    compute manager does when ``[filter_scheduler]
    track_instance_changes`` is off.
    """

    def __init__(self, ctx, api, rows, send_instance_updates=True):
        self.ctx = ctx
        self.api = api
        self.send_instance_updates = send_instance_updates
        self.ordered = [NodeUsage.from_row(row, index)
                        for index, row in enumerate(rows)]
        self.nodes = {node.key: node for node in self.ordered}

    def node(self, host, nodename):
        """The NodeUsage of a node; AgentError when it is unknown."""
        try:
            return self.nodes[(host, nodename)]
        except KeyError:
            raise AgentError('the scheduler chose %s:%s, which is not in '
                             'the fleet' % (host, nodename)) from None

    @staticmethod
    def new_uuid():
        """A fresh instance uuid (not from ``random``: the scheduler's
        seeded choices must not depend on the replay)."""
        return ComputeAgents.new_uuids(1)[0]

    @staticmethod
    def new_uuids(count):
        """``count`` fresh random (version 4) instance uuids from one
        read of ``os.urandom``."""
        data = os.urandom(UUID_BYTES * count)
        return [str(uuid.UUID(bytes=data[start:start + UUID_BYTES],
                              version=4))
                for start in range(0, len(data), UUID_BYTES)]

    def spawn(self, vms, uuids, destinations, flavor_id=None,
              pci_requests=None):
        """Build ``vms[i]`` (uuid ``uuids[i]``) on ``destinations[i]``
        (``{'host', 'nodename', ...}`` dicts from select_destinations),
        each instance claiming the devices of ``pci_requests`` (the
        request's, the same for each instance; None: no device).

        In one transaction: create the instances, write every chosen
        node's row and release the instances' claims; once committed,
        cast each node's new instances, nodes in order of first choice.
        Returns ``(placed, nodes)``: the Placed list in ``vms`` order and
        the NodeUsages changed.

        :raises AgentError: an unknown node, or one without the devices.
        """
        by_node = collections.OrderedDict()
        placed = []
        for vm, instance_uuid, dest in zip(vms, uuids, destinations,
                                           strict=True):
            node = self.node(dest['host'], dest['nodename'])
            record = Placed(vm, instance_uuid, node.host, node.nodename,
                            node.index, node.take_devices(pci_requests))
            placed.append(record)
            by_node.setdefault(node.key, []).append(record)
        now = timeutils.utcnow()
        values = [instance_values(record.vm, record.uuid, record.host,
                                  record.nodename, flavor_id, now)
                  for record in placed]
        nodes = [self.nodes[key] for key in by_node]
        for record in placed:
            self.nodes[record.node_key].add(record.vm)
        with db.context_manager.writer.using(self.ctx) as session:
            session.execute(_statements()['insert'], values)
            _execute_all(session, 'node',
                         [_node_params(node, now) for node in nodes],
                         'compute nodes')
            claims.release_many(self.ctx, uuids)
        if self.send_instance_updates:
            self._cast_updates(values, nodes, by_node.values())
        return placed, nodes

    def _cast_updates(self, values, nodes, records_by_node):
        instances = {row['uuid']: _cast_instance(row) for row in values}
        for node, records in zip(nodes, records_by_node, strict=True):
            self.api.update_instance_info(
                self.ctx, node.host, instance_obj.InstanceList(
                    objects=[instances[record.uuid] for record in records]))

    def remove(self, record):
        """Stop counting the instance of a Placed record on its node (in
        memory only: ``commit_removals`` writes it).  Returns the
        NodeUsage changed."""
        node = self.node(record.host, record.nodename)
        node.remove(record.vm)
        node.return_devices(record.devices)
        return node

    def commit_removals(self, records):
        """Write the deletions of ``records`` (Placed, already
        ``remove``d): soft-delete their instances and write their nodes'
        rows in one transaction, then cast ``delete_instance_info`` for
        each, in order."""
        if not records:
            return
        now = timeutils.utcnow()
        keys = dict.fromkeys(record.node_key for record in records)
        with db.context_manager.writer.using(self.ctx) as session:
            _execute_all(session, 'destroy',
                         [{'instance_uuid': record.uuid, 'now': now}
                          for record in records], 'instances')
            _execute_all(session, 'node',
                         [_node_params(self.nodes[key], now)
                          for key in keys], 'compute nodes')
        if not self.send_instance_updates:
            return
        for record in records:
            self.api.delete_instance_info(self.ctx, record.host, record.uuid)

    def destroy(self, record):
        """Delete the instance of a Placed record at once (``remove`` then
        ``commit_removals``).  Returns the NodeUsage changed."""
        node = self.remove(record)
        self.commit_removals([record])
        return node
