"""The simulated compute agents: resource-tracker arithmetic, writes and
casts."""

import json

import fakes
import pytest

from scheduler import context
from scheduler import objects
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.db import migration
from scheduler.objects import instance as instance_obj
from scheduler.resources import pci_pools
from scheduler.view import host_state
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.replay import agent
from scheduler_tools.replay import fleet
from scheduler_tools.replay import gpus
from scheduler_tools.replay import trace


class RecordingAPI:
    """Records the casts a SchedulerAPI would send."""

    def __init__(self):
        self.casts = []
        self.instances = []

    def update_instance_info(self, ctxt, host_name, instance_info):
        assert isinstance(instance_info, instance_obj.InstanceList)
        self.instances.extend(instance_info.objects)
        self.casts.append(('update', host_name,
                           [i.uuid for i in instance_info.objects]))

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        self.casts.append(('delete', host_name, instance_uuid))


@pytest.fixture
def ctx(tmp_path):
    """An admin context on a fresh SQLite database synced to head."""
    objects.register_all()
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'agent.sqlite'))
    migration.db_sync(db.get_engine())
    yield context.get_admin_context()
    writers.reset_engine()


def _vm(vm_id='vm', vcpus=2, memory_mb=4096, disk_gb=20, project_id='p1'):
    return trace.VM(vm_id, 0.0, 60.0, vcpus, memory_mb, disk_gb=disk_gb,
                    project_id=project_id)


def _node(**ratios):
    return agent.NodeUsage(1, 'h1', 'n1', 16, 65536, 500, **ratios)


# -- arithmetic --------------------------------------------------------------

def test_add_and_remove_follow_the_resource_tracker():
    node = _node()
    node.add(_vm('a'))
    node.add(_vm('b', vcpus=1, memory_mb=1024, disk_gb=0, project_id='p2'))
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used) == (
        3, 5120, 20)
    assert (node.free_ram_mb, node.free_disk_gb) == (65536 - 5120, 480)
    assert node.running_vms == 2 and node.in_use
    node.remove(_vm('a'))
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used) == (
        1, 1024, 0)
    node.remove(_vm('b', vcpus=1, memory_mb=1024, disk_gb=0,
                    project_id='p2'))
    assert not node.in_use
    assert node.row_values()['stats'] == {
        'num_instances': 0, 'num_vm_active': 0, 'num_task_None': 0,
        'num_os_type_None': 0, 'io_workload': 0}


def test_overcommit_gives_negative_free_values():
    node = _node()
    for index in range(20):
        node.add(_vm(str(index), memory_mb=4096, disk_gb=30))
    assert node.free_ram_mb == 65536 - 20 * 4096 < 0
    assert node.free_disk_gb == 500 - 600


def test_row_values_and_stats():
    node = _node()
    node.add(_vm('a', project_id='p2'))
    node.add(_vm('b', project_id='p1'))
    node.add(_vm('c', project_id='p1'))
    values = node.row_values()
    assert values == {
        'vcpus_used': 6, 'memory_mb_used': 12288, 'local_gb_used': 60,
        'free_ram_mb': 65536 - 12288, 'free_disk_gb': 440,
        'disk_available_least': 440, 'running_vms': 3,
        'current_workload': 0,
        'stats': {'num_instances': 3, 'num_vm_active': 3,
                  'num_task_None': 3, 'num_os_type_None': 3,
                  'io_workload': 0, 'num_proj_p1': 2, 'num_proj_p2': 1},
        'pci_stats': None}
    assert list(values['stats'])[-2:] == ['num_proj_p1', 'num_proj_p2']


def test_limits_use_the_scheduler_ratios(conf):
    # The Newton/Ocata fallback ratios (the defaults are Nova's 4.0/1.0).
    conf.set_override('initial_cpu_allocation_ratio', 16.0)
    conf.set_override('initial_ram_allocation_ratio', 1.5)
    default = _node()
    assert (default.vcpu_limit, default.ram_limit_mb) == (16 * 16.0,
                                                          65536 * 1.5)
    own = _node(cpu_allocation_ratio=2.0, ram_allocation_ratio=1.0)
    assert (own.vcpu_limit, own.ram_limit_mb) == (32.0, 65536.0)
    conf.set_override('ram_allocation_ratio', 1.25)
    assert _node().ram_limit_mb == 65536 * 1.25
    assert _node(ram_allocation_ratio=0.0).ram_limit_mb == 65536 * 1.25


def test_from_row_starts_from_the_reported_usage(conf):
    # The Newton/Ocata fallback ratios (the defaults are Nova's 4.0/1.0).
    conf.set_override('initial_cpu_allocation_ratio', 16.0)
    conf.set_override('initial_ram_allocation_ratio', 1.5)
    row = dict(seed.compute_node_values(
        fleet.HostSpec('h1', 'n1', 16, 65536, 500,
                       cpu_allocation_ratio=4.0)),
        id=7, vcpus_used=3, memory_mb_used=2048, local_gb_used=10,
        running_vms=2)
    node = agent.NodeUsage.from_row(row, index=3)
    assert (node.compute_id, node.key, node.index) == (7, ('h1', 'n1'), 3)
    assert node.usage == (3, 2048, 10, 0)
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used,
            node.running_vms) == (3, 2048, 10, 2)
    assert node.cpu_allocation_ratio == 4.0
    assert node.ram_allocation_ratio == 1.5


def test_instance_values():
    values = agent.instance_values(_vm('a'), 'u-1', 'h1', 'n1', flavor_id=3)
    assert values['uuid'] == 'u-1'
    assert (values['host'], values['node'], values['launched_on']) == (
        'h1', 'n1', 'h1')
    assert (values['vcpus'], values['memory_mb'], values['root_gb'],
            values['ephemeral_gb']) == (2, 4096, 20, 0)
    assert values['instance_type_id'] == 3
    assert values['vm_state'] == 'active'


# -- writes and casts --------------------------------------------------------

def _agents(ctx, count=2):
    seed.seed_fleet(ctx, fleet.generate_fleet(count, (16, 65536, 500)))
    api = RecordingAPI()
    return agent.ComputeAgents(ctx, api, fleet.load_nodes(ctx)), api


def _dest(host):
    return {'host': host, 'nodename': host, 'limits': {}}


def test_spawn_records_instances_writes_rows_and_casts(ctx):
    agents, api = _agents(ctx)
    vms = [_vm('a'), _vm('b'), _vm('c')]
    uuids = [agents.new_uuid() for _ in vms]
    placed, nodes = agents.spawn(
        vms, uuids, [_dest('compute-0002'), _dest('compute-0001'),
                     _dest('compute-0002')], flavor_id=5)
    assert [(p.vm.vm_id, p.host) for p in placed] == [
        ('a', 'compute-0002'), ('b', 'compute-0001'), ('c', 'compute-0002')]
    assert [n.host for n in nodes] == ['compute-0002', 'compute-0001']
    # One cast per node, in order of first choice, with its instances.
    assert api.casts == [('update', 'compute-0002', [uuids[0], uuids[2]]),
                         ('update', 'compute-0001', [uuids[1]])]
    on_two = db.instance_get_all_by_host(ctx, 'compute-0002')
    assert [i['uuid'] for i in on_two] == [uuids[0], uuids[2]]
    assert {i['node'] for i in on_two} == {'compute-0002'}
    assert {i['instance_type_id'] for i in on_two} == {5}
    rows = {r['host']: r for r in db.compute_node_get_all(ctx)}
    two = rows['compute-0002']
    assert (two['vcpus_used'], two['memory_mb_used'], two['free_ram_mb'],
            two['local_gb_used'], two['free_disk_gb'], two['running_vms']) \
        == (4, 8192, 65536 - 8192, 40, 460, 2)
    assert json.loads(two['stats'])['num_instances'] == 2
    assert two['generation'] == 1  # written once for both instances
    assert rows['compute-0001']['vcpus_used'] == 2


def _statements(ctx):
    """SQL statement verbs run on the engine, and COMMITs, from now on."""
    import sqlalchemy as sa

    seen = []
    engine = db.get_engine()
    sa.event.listen(engine, 'before_cursor_execute',
                    lambda *args: seen.append(args[2].split()[0]))
    sa.event.listen(engine, 'commit', lambda *args: seen.append('COMMIT'))
    return seen


def test_spawn_releases_the_claims_in_its_one_transaction(ctx):
    agents, api = _agents(ctx)
    uuids = agents.new_uuids(2)
    for uuid, node_id in zip(uuids, (1, 2), strict=True):
        assert claims.claim(ctx, node_id, uuid, 2, 4096, 20)
    seen = _statements(ctx)
    agents.spawn([_vm('a'), _vm('b')], uuids,
                 [_dest('compute-0001'), _dest('compute-0002')])
    assert seen.count('COMMIT') == 1
    assert seen.index('COMMIT') == len(seen) - 1
    assert claims.claims_count(ctx) == 0
    for row in db.compute_node_get_all(ctx):
        assert (row['claimed_vcpus'], row['claimed_memory_mb'],
                row['vcpus_used']) == (0, 0, 2)
    # The cast carries what the scheduler reads of an instance.
    instance = api.instances[0]
    assert instance.uuid == uuids[0] and instance.host == 'compute-0001'
    assert set(instance.obj_what_changed()) <= set(agent.CAST_FIELDS)
    # Its sizes, as Nova's compute sends them (the MixedFitWeigher reads
    # ``memory_mb``).
    assert (instance.vcpus, instance.memory_mb) == (
        _vm('a').vcpus, _vm('a').memory_mb)


def test_removals_are_written_together_and_cast_one_by_one(ctx):
    agents, api = _agents(ctx)
    uuids = agents.new_uuids(3)
    placed, _ = agents.spawn(
        [_vm('a'), _vm('b'), _vm('c')], uuids,
        [_dest('compute-0001'), _dest('compute-0001'),
         _dest('compute-0002')])
    left = [agents.remove(record).running_vms for record in placed]
    assert left == [1, 0, 0]
    seen = _statements(ctx)
    agents.commit_removals(placed)
    assert seen.count('COMMIT') == 1
    assert api.casts[-3:] == [('delete', 'compute-0001', uuids[0]),
                              ('delete', 'compute-0001', uuids[1]),
                              ('delete', 'compute-0002', uuids[2])]
    assert db.instance_get_all_by_host(ctx, 'compute-0001') == []
    rows = db.compute_node_get_all(ctx)
    assert [(r['vcpus_used'], r['running_vms'], r['generation'])
            for r in rows] == [(0, 0, 2), (0, 0, 2)]
    agents.commit_removals([])  # nothing to write


def test_without_instance_tracking_the_agents_write_but_do_not_cast(ctx):
    # Nova's compute manager sends no instance casts when
    # [filter_scheduler] track_instance_changes is off.
    seed.seed_fleet(ctx, fleet.generate_fleet(2, (16, 65536, 500)))
    api = RecordingAPI()
    agents = agent.ComputeAgents(ctx, api, fleet.load_nodes(ctx),
                                 send_instance_updates=False)
    uuids = agents.new_uuids(2)
    placed, _ = agents.spawn([_vm('a'), _vm('b')], uuids,
                             [_dest('compute-0001'), _dest('compute-0002')])
    assert len(db.instance_get_all_by_host(ctx, 'compute-0001')) == 1
    for record in placed:
        agents.remove(record)
    agents.commit_removals(placed)
    assert db.instance_get_all_by_host(ctx, 'compute-0001') == []
    assert [r['running_vms'] for r in db.compute_node_get_all(ctx)] == [0, 0]
    assert api.casts == []


def test_a_removal_of_an_unknown_instance_is_an_error(ctx):
    agents, _ = _agents(ctx)
    ghost = agent.Placed(_vm(), agents.new_uuid(), 'compute-0001',
                         'compute-0001', 0)
    agents.node('compute-0001', 'compute-0001').add(_vm())
    with pytest.raises(agent.AgentError, match='1 of 1 instances'):
        agents.commit_removals([ghost])


def test_new_uuids_are_random_version_4_uuids():
    import uuid

    values = agent.ComputeAgents.new_uuids(50)
    assert len(set(values)) == 50
    assert {uuid.UUID(value).version for value in values} == {4}


def test_destroy_deletes_writes_and_casts(ctx):
    agents, api = _agents(ctx)
    uuid = agents.new_uuid()
    (record,), _ = agents.spawn([_vm('a')], [uuid], [_dest('compute-0001')])
    node = agents.destroy(record)
    assert node.key == ('compute-0001', 'compute-0001')
    assert api.casts[-1] == ('delete', 'compute-0001', uuid)
    assert db.instance_get_all_by_host(ctx, 'compute-0001') == []
    row = db.compute_node_get_all(ctx)[0]
    assert (row['vcpus_used'], row['memory_mb_used'], row['free_ram_mb'],
            row['running_vms']) == (0, 0, 65536, 0)


def test_unknown_node_is_an_error(ctx):
    agents, _ = _agents(ctx)
    with pytest.raises(agent.AgentError, match='nowhere:nowhere'):
        agents.spawn([_vm()], ['u'], [_dest('nowhere')])


def test_the_scheduler_takes_the_agent_row_over_its_consumption(ctx):
    """What makes replays deterministic: a row written after the
    scheduler's virtual consumption replaces that consumption."""
    agents, _ = _agents(ctx, count=1)
    state = host_state.HostState('compute-0001', 'compute-0001')
    state.update(db.compute_node_get_all(ctx)[0])
    spec = fakes.fake_spec(vcpus=2, memory_mb=4096, root_gb=20)
    state.consume_from_request(spec)
    state.consume_from_request(spec)  # an instance the agent never built
    agents.spawn([_vm('a')], [agents.new_uuid()], [_dest('compute-0001')])
    state.update(db.compute_node_get_all(ctx)[0])
    assert (state.vcpus_used, state.free_ram_mb) == (2, 65536 - 4096)
    assert state.num_instances == 1


# -- PCI devices (GPUs) ------------------------------------------------------

def _gpu_vm(vm_id):
    return trace.VM(vm_id, 0.0, 60.0, 4, 8192, gpus=2)


def test_spawn_and_removal_write_the_pools(ctx):
    seed.seed_fleet(ctx, [
        seed.HostSpec('cpu', 'cpu', 32, 131072, 0),
        seed.HostSpec('gpu', 'gpu', 32, 131072, 0, gpus=4,
                      gpu_model='T4')])
    agents = agent.ComputeAgents(ctx, None, fleet.load_nodes(ctx), False)
    assert [node.gpus for node in agents.ordered] == [0, 4]
    alias = gpus.GpuAlias.from_rows(fleet.load_nodes(ctx))
    vms = [_gpu_vm('a'), _gpu_vm('b')]
    uuids = agents.new_uuids(2)
    dest = {'host': 'gpu', 'nodename': 'gpu'}
    placed, _ = agents.spawn(vms, uuids, [dest, dest],
                             pci_requests=alias.pci_requests(2, uuids[0]))
    assert [record.devices for record in placed] == [((0, 2),), ((0, 2),)]

    def free_gpus():
        rows = {row['host']: row for row in db.compute_node_get_all(ctx)}
        assert rows['cpu']['pci_stats'] is None
        return pci_pools.parse_pools(rows['gpu']['pci_stats'])[0].count

    assert free_gpus() == 0
    agents.remove(placed[0])
    agents.commit_removals([placed[0]])
    assert free_gpus() == 2
    assert agents.ordered[1].usage == (4, 8192, 0, 2)
