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
  build is over by the time the row is written).

``ComputeAgents`` does what the chosen compute service does after a
decision: it records the instances (``instance_create`` with host and
node), writes the node's new ``compute_nodes`` row (``compute_node_update``
also bumps ``updated_at``, so the scheduler takes the row over its own
virtual consumption on its next request), drops the scheduler's claims for
the new instances, which that row now counts (what the scheduler's
periodic reconciliation would do later; done at once, so that a replay's
placements do not depend on when it runs), and casts
``update_instance_info`` with the new instances.  On a deletion it
soft-deletes the instance, writes the row and casts
``delete_instance_info``.  The agent's own claims always succeed: it
trusts the scheduler's choice and does not check the limits.
"""

import collections
import dataclasses
import uuid

from scheduler.db import api as db
from scheduler.db import claims
from scheduler.host_state import resolve_allocation_ratio
from scheduler.objects import instance as instance_obj

ACTIVE = 'active'
RUNNING = 1  # Nova's power_state.RUNNING
REPLAY_USER = 'replay'


class AgentError(RuntimeError):
    """The scheduler chose a node the agents do not know."""


@dataclasses.dataclass(slots=True)
class Placed:
    """An instance the replay created: its VM, uuid and node key."""

    vm: object
    uuid: str
    host: str
    nodename: str

    @property
    def node_key(self):
        return (self.host, self.nodename)


class NodeUsage:
    """The resource tracker of one compute node.

    Capacities are physical (``vcpus`` CPUs, ``memory_mb`` MiB,
    ``local_gb`` GiB); ``*_limit`` are capacity times the allocation
    ratio that the scheduler applies to this node.
    """

    def __init__(self, compute_id, host, nodename, vcpus, memory_mb,
                 local_gb, cpu_allocation_ratio=None,
                 ram_allocation_ratio=None, disk_allocation_ratio=None):
        self.compute_id = compute_id
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

    @classmethod
    def from_row(cls, row):
        """Start from a ``compute_nodes`` row dict and its reported usage
        (counting its ``running_vms`` as instances of no project)."""
        node = cls(row['id'], row['host'], row['hypervisor_hostname'],
                   row['vcpus'], row['memory_mb'], row['local_gb'],
                   row.get('cpu_allocation_ratio'),
                   row.get('ram_allocation_ratio'),
                   row.get('disk_allocation_ratio'))
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
                'stats': self.stats()}


def instance_values(vm, instance_uuid, host, nodename, flavor_id=None):
    """The ``instances`` row of ``vm`` built on ``host``/``nodename``."""
    return {'uuid': instance_uuid, 'project_id': vm.project_id,
            'user_id': REPLAY_USER, 'vcpus': vm.vcpus,
            'memory_mb': vm.memory_mb, 'root_gb': vm.disk_gb,
            'ephemeral_gb': 0, 'host': host, 'node': nodename,
            'launched_on': host, 'instance_type_id': flavor_id,
            'availability_zone': vm.availability_zone,
            'vm_state': ACTIVE, 'power_state': RUNNING}


class ComputeAgents:
    """The compute services of every node: database writes and casts.

    ``ctx`` is the database (and RPC) context, ``api`` a SchedulerAPI (or
    anything with its ``update_instance_info`` / ``delete_instance_info``)
    and ``rows`` the ``compute_nodes`` row dicts of the fleet.
    """

    def __init__(self, ctx, api, rows):
        self.ctx = ctx
        self.api = api
        self.nodes = {}
        for row in rows:
            node = NodeUsage.from_row(row)
            self.nodes[node.key] = node

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
        return str(uuid.uuid4())

    def spawn(self, vms, uuids, destinations, flavor_id=None):
        """Build ``vms[i]`` (uuid ``uuids[i]``) on ``destinations[i]``
        (``{'host', 'nodename', ...}`` dicts from select_destinations).

        Per node, in order of first choice: create its instances and
        write its row in one transaction (committed before anything else
        happens), then cast its new instances.  Returns ``(placed, nodes)``:
        the Placed list in ``vms`` order and the NodeUsages changed.
        """
        by_node = collections.OrderedDict()
        placed = []
        for vm, instance_uuid, dest in zip(vms, uuids, destinations,
                                           strict=True):
            node = self.node(dest['host'], dest['nodename'])
            record = Placed(vm, instance_uuid, node.host, node.nodename)
            placed.append(record)
            by_node.setdefault(node.key, []).append(record)
        for key, records in by_node.items():
            self._build_on(self.nodes[key], records, flavor_id)
        return placed, [self.nodes[key] for key in by_node]

    def _build_on(self, node, records, flavor_id):
        instances = []
        with db.context_manager.writer.using(self.ctx):
            for record in records:
                row = db.instance_create(self.ctx, instance_values(
                    record.vm, record.uuid, node.host, node.nodename,
                    flavor_id))
                instances.append(instance_obj.Instance.from_db(row))
                node.add(record.vm)
            db.compute_node_update(self.ctx, node.compute_id,
                                   node.row_values())
        claims.release_many(self.ctx, [record.uuid for record in records])
        self.api.update_instance_info(
            self.ctx, node.host,
            instance_obj.InstanceList(objects=instances))

    def destroy(self, record):
        """Delete the instance of a Placed record: soft-delete its row,
        write its node's row, cast ``delete_instance_info``.  Returns the
        NodeUsage changed."""
        node = self.node(record.host, record.nodename)
        with db.context_manager.writer.using(self.ctx):
            db.instance_destroy(self.ctx, record.uuid)
            node.remove(record.vm)
            db.compute_node_update(self.ctx, node.compute_id,
                                   node.row_values())
        self.api.delete_instance_info(self.ctx, node.host, record.uuid)
        return node
