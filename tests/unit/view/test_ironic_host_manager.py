"""``[scheduler] host_manager = ironic_host_manager``: bare-metal nodes
consumed and claimed whole, on SQLite and PostgreSQL."""

import uuid

import pytest

from scheduler import exception
from scheduler.db import api as db
from scheduler.drivers import filter_scheduler
from scheduler.engine import pipeline
from scheduler.filters import claim_capacity
from scheduler.view import host_manager
from scheduler.view import ironic_host_manager
from scheduler.view import loading
from scheduler.view.host_state import HostState
from scheduler_tools import seed
from scheduler_tools import writers

# One nova-compute (Ironic driver) serving three nodes of one size.
CONDUCTOR = 'ironic-compute'
NODE = {'vcpus': 24, 'memory_mb': 131072, 'local_gb': 800}
EXACT = {'vcpus': 24, 'memory_mb': 131072, 'root_gb': 800}


@pytest.fixture(params=['sqlite', 'postgresql'])
def ctx(request, tmp_path, conf):
    conf.set_override('host_manager', 'ironic_host_manager', 'scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'], 'filter_scheduler')
    if request.param == 'sqlite':
        url = 'sqlite:///%s' % (tmp_path / 'ironic.sqlite')
    else:
        url = request.getfixturevalue('postgresql_db_url')
    context = seed.use_database(url)
    for index in range(3):
        seed.add_compute(context, CONDUCTOR, node='node-%d' % index,
                         service=index == 0, hypervisor_type='ironic',
                         **NODE)
    seed.add_compute(context, 'kvm-1', vcpus=64, memory_mb=262144,
                     local_gb=2000)
    yield context
    writers.reset_engine()


def _states(manager, ctx):
    return {s.nodename: s for s in manager.get_all_host_states(ctx)}


def test_bare_metal_nodes_get_their_own_state(ctx):
    instance_uuid = str(uuid.uuid4())
    writers.instance_create(ctx, {'uuid': instance_uuid,
                                  'host': CONDUCTOR, 'node': 'node-0',
                                  'instance_type_id': 1})
    manager = loading.load_host_manager(ctx)
    assert isinstance(manager, ironic_host_manager.IronicHostManager)
    states = _states(manager, ctx)
    assert type(states['kvm-1']) is HostState
    for index in range(3):
        state = states['node-%d' % index]
        assert type(state) is ironic_host_manager.IronicNodeState
        # The conductor host's instances are no node's.
        assert state.instances == {}
    assert instance_uuid in manager.instances.instances_of(CONDUCTOR)


def test_one_instance_takes_the_whole_node(ctx):
    state = _states(loading.load_host_manager(ctx), ctx)['node-0']
    spec = seed.make_spec(vcpus=1, memory_mb=512, root_gb=10)
    assert tuple(state.claim_amounts(spec)) == (24, 131072, 800)
    state.consume_from_request(spec)
    assert (state.free_ram_mb, state.free_disk_mb) == (0, 0)
    assert state.vcpus_used == state.vcpus_total == 24
    assert (state.memory_mb_used, state.local_gb_used) == (131072, 800)


def test_small_flavors_still_get_a_node_each(ctx, conf):
    """Stacking by RAM would put both instances on one node of a
    virtual host; a bare-metal node holds one."""
    conf.set_override('enabled_filters', ['ComputeFilter', 'RamFilter'],
                      'filter_scheduler')
    conf.set_override('ram_weight_multiplier', -1.0, 'filter_scheduler')
    driver = filter_scheduler.FilterScheduler(ctx)
    spec = seed.make_spec(vcpus=1, memory_mb=512, root_gb=10,
                          num_instances=2)
    chosen = [s[0].nodename for s in driver.select_destinations(ctx, spec)]
    assert len(set(chosen)) == 2
    assert set(chosen) <= {'node-0', 'node-1', 'node-2'}


def test_baremetal_filters_place_exact_flavors_one_per_node(ctx, conf):
    conf.set_override('use_baremetal_filters', True, 'filter_scheduler')
    assert pipeline.enabled_filter_names() == (
        conf.filter_scheduler.baremetal_enabled_filters)
    driver = filter_scheduler.FilterScheduler(ctx)
    spec = seed.make_spec(num_instances=3, **EXACT)
    chosen = sorted(s[0].nodename for s in
                    driver.select_destinations(ctx, spec))
    assert chosen == ['node-0', 'node-1', 'node-2']
    # Each claim holds its node's whole size.
    for node in db.compute_node_get_all(ctx):
        if node['hypervisor_type'] == 'ironic':
            assert (node['claimed_vcpus'], node['claimed_memory_mb'],
                    node['claimed_disk_gb']) == (24, 131072, 800)
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(ctx, seed.make_spec(**EXACT))
    # A second scheduler, with a view of its own, finds none free either.
    with pytest.raises(exception.NoValidHost):
        filter_scheduler.FilterScheduler(ctx).select_destinations(
            ctx, seed.make_spec(**EXACT))


def test_the_default_host_manager_ignores_baremetal_filters(ctx, conf):
    conf.set_override('use_baremetal_filters', True, 'filter_scheduler')
    conf.set_override('host_manager', 'host_manager', 'scheduler')
    assert pipeline.enabled_filter_names() == (
        conf.filter_scheduler.enabled_filters)
    manager = loading.load_host_manager(ctx)
    assert type(manager) is host_manager.HostManager
    assert {type(s) for s in manager.get_all_host_states(ctx)} == {HostState}


def test_claim_check_per_host_and_per_table_agree(ctx):
    manager = loading.load_host_manager(ctx)
    states = manager.get_all_host_states(ctx)
    states[1].consume_from_request(seed.make_spec(vcpus=1, memory_mb=512))
    manager.table.sync([states[1]])
    check = claim_capacity.ClaimCapacityFilter()
    spec = seed.make_spec(vcpus=2, memory_mb=1024, root_gb=20)
    per_host = [check.host_passes(s, spec) for s in states]
    mask = check.host_mask(manager.table, manager.table.all_rows, spec)
    assert per_host == mask.tolist() == [True, False, True, True]
    assert check.explain(states[1], spec).startswith('claim refused: ')
