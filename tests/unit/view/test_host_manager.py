"""HostManager against a real SQLite database (reference section 3)."""

import datetime
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_utils import timeutils

from scheduler import exception
from scheduler.db import api
from scheduler.db import changes as db_changes
from scheduler.engine import pipeline
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import cell_mapping
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec
from scheduler.view import host_manager
from scheduler.view import refresh
from scheduler_tools import seed
from scheduler_tools import writers


@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters',
                      ['ComputeFilter', 'AvailabilityZoneFilter'],
                      'filter_scheduler')
    conf.set_override('weight_classes', [], 'filter_scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'hm.sqlite'))


def _keys(states):
    return [(s.host, s.nodename) for s in states]


def test_host_states_join_services_and_skip_orphans(ctx):
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2', node='h2-a')
    seed.add_compute(ctx, 'h2', node='h2-b', service=False)
    seed.add_compute(ctx, 'orphan', service=False)
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    assert _keys(states) == [('h1', 'h1'), ('h2', 'h2-a'), ('h2', 'h2-b')]
    assert states[0].service['binary'] == 'nova-compute'
    assert states[0].cell_uuid == cell_mapping.SINGLE_CELL_UUID


def test_dead_nodes_are_dropped(ctx):
    seed.add_compute(ctx, 'h1')
    node = seed.add_compute(ctx, 'h2')
    manager = host_manager.HostManager(ctx)
    assert len(manager.get_all_host_states(ctx)) == 2
    writers.compute_node_delete(ctx, node['id'])
    assert _keys(manager.get_all_host_states(ctx)) == [('h1', 'h1')]
    assert ('h2', 'h2') not in manager.host_state_map


def test_resources_and_units(ctx):
    seed.add_compute(ctx, 'h1', vcpus=16, vcpus_used=4, memory_mb=32768,
                     memory_mb_used=2048, local_gb=500, local_gb_used=100,
                     disk_available_least=300,
                     stats='{"num_instances": "3", "io_workload": "2"}')
    state = host_manager.HostManager(ctx).get_all_host_states(ctx)[0]
    assert state.total_usable_ram_mb == 32768
    assert state.free_ram_mb == 30720
    assert state.free_disk_mb == 300 * 1024  # min(free 400, least 300)
    assert state.disk_mb_used == 100 * 1024
    assert (state.vcpus_total, state.vcpus_used) == (16, 4)
    assert (state.num_instances, state.num_io_ops) == (3, 2)
    assert state.supported_instances == [['x86_64', 'kvm', 'hvm']]


def test_allocation_ratios_row_then_config_then_default(ctx, conf):
    seed.add_compute(ctx, 'h1', cpu_allocation_ratio=4.0,
                     ram_allocation_ratio=0.0)
    conf.set_override('ram_allocation_ratio', 2.0)
    state = host_manager.HostManager(ctx).get_all_host_states(ctx)[0]
    assert state.cpu_allocation_ratio == 4.0
    assert state.ram_allocation_ratio == 2.0
    assert state.disk_allocation_ratio == 1.0


def test_unreported_node_keeps_zero_resources(ctx):
    seed.add_compute(ctx, 'h1', free_disk_gb=None)
    state = host_manager.HostManager(ctx).get_all_host_states(ctx)[0]
    assert (state.free_ram_mb, state.vcpus_total) == (0, 0)


def test_consumption_survives_until_the_node_reports(ctx):
    node = seed.add_compute(ctx, 'h1', memory_mb=4096)
    manager = host_manager.HostManager(ctx)
    state = manager.get_all_host_states(ctx)[0]
    state.consume_from_request(seed.make_spec(memory_mb=1024))
    assert manager.get_all_host_states(ctx)[0].free_ram_mb == 3072
    writers.compute_node_update(ctx, node['id'], {'free_ram_mb': 2048,
                                                  'memory_mb_used': 2048})
    assert manager.get_all_host_states(ctx)[0].free_ram_mb == 2048


def test_aggregates_loaded_at_start_and_updated_by_casts(ctx):
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2')
    row = seed.add_aggregate(ctx, 'agg1', hosts=['h1'],
                             metadata={'availability_zone': 'az1'})
    manager = host_manager.HostManager(ctx)
    states = {s.host: s for s in manager.get_all_host_states(ctx)}
    assert [a.name for a in states['h1'].aggregates] == ['agg1']
    assert states['h1'].availability_zone == 'az1'
    assert states['h2'].availability_zone == 'nova'

    moved = aggregate_obj.Aggregate.from_db(dict(row, hosts=['h2']))
    manager.update_aggregates([moved])
    states = {s.host: s for s in manager.get_all_host_states(ctx)}
    assert states['h1'].aggregates == []
    assert [a.name for a in states['h2'].aggregates] == ['agg1']

    manager.delete_aggregate(moved)
    states = {s.host: s for s in manager.get_all_host_states(ctx)}
    assert states['h2'].aggregates == []


def test_aggregates_are_not_reread_from_the_database(ctx):
    seed.add_compute(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    seed.add_aggregate(ctx, 'late', hosts=['h1'])
    assert manager.get_all_host_states(ctx)[0].aggregates == []


def _instance(ctx, host, inst_uuid=None):
    inst_uuid = inst_uuid or str(uuid.uuid4())
    writers.instance_create(ctx, {'uuid': inst_uuid, 'host': host,
                                  'node': host, 'instance_type_id': 1})
    return inst_uuid


def _instance_list(*uuids):
    return instance_obj.InstanceList(
        objects=[instance_obj.Instance(uuid=u) for u in uuids])


def test_instance_info_from_db_until_synced(ctx):
    seed.add_compute(ctx, 'h1')
    first = _instance(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    assert set(manager.get_all_host_states(ctx)[0].instances) == {first}
    assert manager.instances.info['h1']['updated'] is False
    later = _instance(ctx, 'h1')  # seen: the host is not in sync yet
    assert set(manager.get_all_host_states(ctx)[0].instances) == {
        first, later}
    manager.sync_instance_info(ctx, 'h1', [first, later])
    assert manager.instances.info['h1']['updated'] is True
    hidden = _instance(ctx, 'h1')  # in sync: the cache is used
    assert hidden not in manager.get_all_host_states(ctx)[0].instances


def test_update_and_delete_instance_info(ctx):
    seed.add_compute(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    new = str(uuid.uuid4())
    manager.update_instance_info(ctx, 'h1', _instance_list(new))
    assert manager.instances.info['h1']['updated'] is True
    assert new in manager.get_all_host_states(ctx)[0].instances
    manager.delete_instance_info(ctx, 'h1', new)
    assert new not in manager.get_all_host_states(ctx)[0].instances


def test_casts_from_a_host_without_compute_node_keep_nothing(ctx):
    """A host with no compute node is not kept, whatever it casts; once
    its node appears, the refresh reads its instances from the
    database."""
    seed.add_compute(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    stored = _instance(ctx, 'new-host')
    manager.update_instance_info(ctx, 'new-host', _instance_list(
        str(uuid.uuid4()), str(uuid.uuid4())))
    manager.delete_instance_info(ctx, 'new-host', str(uuid.uuid4()))
    manager.sync_instance_info(ctx, 'new-host', [str(uuid.uuid4())])
    assert set(manager.instances.info) == {'h1'}
    seed.add_compute(ctx, 'new-host')
    states = {s.host: s for s in manager.get_all_host_states(ctx)}
    assert set(states['new-host'].instances) == {stored}
    assert manager.instances.info['new-host']['updated'] is False


def test_a_deleted_compute_node_takes_its_instances_along(ctx):
    seed.add_compute(ctx, 'h1')
    node = seed.add_compute(ctx, 'h2')
    _instance(ctx, 'h2')
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    assert set(manager.instances.info) == {'h1', 'h2'}
    writers.compute_node_delete(ctx, node['id'])
    assert [s.host for s in manager.get_all_host_states(ctx)] == ['h1']
    assert set(manager.instances.info) == {'h1'}


def _move_instance(ctx, inst_uuid, host):
    """Nova's update of an instance's host (a migration's), stamped now."""
    with api.context_manager.writer.using(ctx) as session:
        session.execute(sa.update(api.INSTANCES).where(
            api.INSTANCES.c.uuid == inst_uuid).values(
            host=host, node=host, updated_at=timeutils.utcnow()))


def test_changed_instance_rows_are_applied_without_reading_hosts(
        ctx, monkeypatch, no_full_read):
    """A change read applies the instance rows it returns to the hosts
    they were and are on, with the result re-reading those hosts would
    give, and reads no host's instances again."""
    for host in ('h1', 'h2', 'h3'):
        seed.add_compute(ctx, host)
    staying, moving, going = (_instance(ctx, 'h1'), _instance(ctx, 'h1'),
                              _instance(ctx, 'h2'))
    tracked = _instance(ctx, 'h3')
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    manager.sync_instance_info(ctx, 'h3', [tracked])   # in sync: casts
    no_full_read(manager)

    def refuse(context, hosts):
        raise AssertionError('re-read the instances of %s' % sorted(hosts))

    monkeypatch.setattr(manager.refresher.source,
                        'instance_get_all_by_hosts', refuse)
    new = _instance(ctx, 'h2')
    _move_instance(ctx, moving, 'h2')
    writers.instance_destroy(ctx, going)
    hidden = _instance(ctx, 'h3')
    _move_instance(ctx, staying, 'h1')   # updated where it is
    states = {s.host: s for s in manager.get_all_host_states(ctx)}
    assert set(states['h1'].instances) == {staying}
    assert set(states['h2'].instances) == {moving, new}
    assert set(states['h3'].instances) == {tracked}
    assert hidden not in manager.instances.info['h3']['instances']
    assert states['h2'].instances[moving].host == 'h2'
    table = manager.table
    assert {table.states[r].host
            for r in table.rows_with_instance(moving)} == {'h2'}
    assert not table.rows_with_instance(going)


_HOSTS = ('h1', 'h2', 'h3')
_INSTANCE_OPS = st.lists(st.one_of(
    st.tuples(st.just('create'), st.sampled_from(_HOSTS + (None,))),
    st.tuples(st.just('move'), st.integers(0, 20),
              st.sampled_from(_HOSTS + (None,))),
    st.tuples(st.just('delete'), st.integers(0, 20)),
    st.tuples(st.just('refresh'))), max_size=12)


# ``conf`` is shared by the examples: they make the same overrides.
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_INSTANCE_OPS)
def test_instances_kept_by_change_reads_are_those_a_full_read_finds(
        conf, tmp_path_factory, ops):
    """Whatever instances are created, moved and deleted between
    decisions, each host's instances after the change reads are the
    live rows a full read of the database finds."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    conf.set_override('weight_classes', [], 'filter_scheduler')
    path = tmp_path_factory.mktemp('instances') / 'hm.sqlite'
    ctx = seed.use_database('sqlite:///%s' % path)
    for host in _HOSTS:
        seed.add_compute(ctx, host)
    live = [_instance(ctx, 'h1'), _instance(ctx, 'h2')]
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    for op in ops:
        if op[0] == 'create':
            live.append(_instance(ctx, op[1]))
        elif op[0] == 'move' and live:
            _move_instance(ctx, live[op[1] % len(live)], op[2])
        elif op[0] == 'delete' and live:
            writers.instance_destroy(ctx, live.pop(op[1] % len(live)))
        elif op[0] == 'refresh':
            manager.get_all_host_states(ctx)

    def instances(states):
        return {s.host: {u: i.host for u, i in s.instances.items()}
                for s in states}
    kept = instances(manager.get_all_host_states(ctx))
    assert kept == instances(
        host_manager.HostManager(ctx).get_all_host_states(ctx))


def test_sync_mismatch_rereads_the_database(ctx):
    seed.add_compute(ctx, 'h1')
    real = _instance(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    manager.sync_instance_info(ctx, 'h1', [real, str(uuid.uuid4())])
    info = manager.instances.info['h1']
    assert (set(info['instances']), info['updated']) == ({real}, False)


def test_tracking_off_reads_the_database_every_time(ctx, conf):
    conf.set_override('track_instance_changes', False, 'filter_scheduler')
    seed.add_compute(ctx, 'h1')
    manager = host_manager.HostManager(ctx)
    assert manager.instances.info == {}
    inst = _instance(ctx, 'h1')
    assert set(manager.get_all_host_states(ctx)[0].instances) == {inst}
    # The casts change nothing (Nova ignores them too).
    manager.update_instance_info(ctx, 'h1', _instance_list(
        str(uuid.uuid4())))
    manager.delete_instance_info(ctx, 'h1', inst)
    assert set(manager.get_all_host_states(ctx)[0].instances) == {inst}


@pytest.fixture
def three_hosts(ctx):
    for name in ('Host1', 'host2', 'host3'):
        seed.add_compute(ctx, name, node=name.lower() + '-node')
    manager = host_manager.HostManager(ctx)
    return manager, manager.get_all_host_states(ctx)


def _filtered(manager, states, **spec_kwargs):
    spec = seed.make_spec(**spec_kwargs)
    return [s.host for s in pipeline.Pipeline(manager).get_filtered_hosts(
        states, spec)]


def test_ignore_hosts_is_case_insensitive(three_hosts):
    manager, states = three_hosts
    assert _filtered(manager, states, ignore_hosts=['HOST1', 'host3']) == [
        'host2']


def test_force_hosts_and_nodes(three_hosts, ctx):
    manager, states = three_hosts
    writers.service_update(ctx, 2, {'disabled': True})  # host2's service
    states = manager.get_all_host_states(ctx)
    # Forced hosts skip the filters: disabled host2 is returned.
    assert _filtered(manager, states, force_hosts=['HOST2']) == ['host2']
    assert _filtered(manager, states, force_nodes=['host3-node']) == [
        'host3']
    assert _filtered(manager, states, force_nodes=['HOST3-NODE']) == []
    assert _filtered(manager, states, force_hosts=['host1'],
                     force_nodes=['host3-node']) == []
    # Without forcing, ComputeFilter drops the disabled host.
    assert _filtered(manager, states) == ['Host1', 'host3']


def test_requested_destination(three_hosts):
    manager, states = three_hosts
    dest = request_spec.Destination(host='host2', node='host2-node')
    assert _filtered(manager, states, requested_destination=dest) == [
        'host2']
    dest = request_spec.Destination(host='host2', node=None)
    assert _filtered(manager, states, requested_destination=dest) == [
        'host2']
    dest = request_spec.Destination(host='host2', node='host3-node')
    assert _filtered(manager, states, requested_destination=dest) == []


def test_requested_destination_aggregates_and_cell(ctx):
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2')
    agg = seed.add_aggregate(ctx, 'a', hosts=['h2'])
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    dest = request_spec.Destination(host='', aggregates=[
        'unknown,%s' % agg['uuid']])
    assert _filtered(manager, states, requested_destination=dest) == ['h2']
    other = cell_mapping.CellMapping(uuid=str(uuid.uuid4()))
    dest = request_spec.Destination(host='h1', cell=other)
    assert _filtered(manager, states, requested_destination=dest) == []


def test_down_host_is_kept_until_compute_filter(ctx):
    old = timeutils.utcnow() - datetime.timedelta(seconds=3600)
    seed.add_compute(ctx, 'h1', last_seen_up=old)
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    assert len(states) == 1
    assert _filtered(manager, states) == []


def test_unknown_filter_fails_at_start(ctx, conf):
    conf.set_override('enabled_filters', ['ComputeFilter', 'NoSuchFilter',
                                 'AlsoMissing'], 'filter_scheduler')
    with pytest.raises(exception.SchedulerHostFilterNotFound) as err:
        pipeline.Pipeline(host_manager.HostManager(ctx))
    assert 'NoSuchFilter, AlsoMissing' in str(err.value)


# -- incremental refresh and the sweep ----------------------------------


@pytest.fixture
def no_full_read(monkeypatch):
    """Make a full re-read after the first one fail the test."""
    def arm(manager):
        def refuse(context):
            raise AssertionError('unexpected full read')
        monkeypatch.setattr(manager.refresher, 'refresh_all', refuse)
    return arm


def test_changes_are_read_without_a_full_read(ctx, no_full_read):
    node = seed.add_compute(ctx, 'h1', memory_mb=4096)
    manager = host_manager.HostManager(ctx)
    state = manager.get_all_host_states(ctx)[0]
    no_full_read(manager)
    writers.compute_node_update(ctx, node['id'], {'free_ram_mb': 1024,
                                                  'memory_mb_used': 3072})
    service = writers.service_update(ctx, state.service['id'],
                                     {'disabled': True})
    assert manager.get_all_host_states(ctx)[0] is state
    assert state.free_ram_mb == 1024
    assert state.service['disabled'] and state.service == service
    assert manager.table.columns['disabled'][0]


def _late(minutes=0, seconds=0.5, before=None):
    """A stamp ``seconds`` before ``before`` (default: now): a row
    written then whose commit comes only now (or a writer whose clock
    lags by that much).  Tests that need the stamp to fall before a read
    pass the time taken just before that read, so that a slow machine
    does not move the stamp past the read's start."""
    base = before if before is not None else timeutils.utcnow()
    return base - datetime.timedelta(minutes=minutes, seconds=seconds)


def test_late_rows_wait_for_the_sweep(ctx, monkeypatch, no_full_read):
    node = seed.add_compute(ctx, 'h1', memory_mb=4096,
                            created_at=_late(minutes=10))
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 3600.0)
    manager = host_manager.HostManager(ctx)
    before = timeutils.utcnow()
    state = manager.get_all_host_states(ctx)[0]
    no_full_read(manager)
    writers.compute_node_update(ctx, node['id'], {
        'free_ram_mb': 1024, 'memory_mb_used': 3072,
        'updated_at': _late(before=before)})
    writers.service_update(ctx, state.service['id'],
                           {'disabled': True,
                            'updated_at': _late(before=before)})
    manager.get_all_host_states(ctx)
    assert state.free_ram_mb == 4096   # stamped before the last read
    assert not state.service['disabled']

    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)
    manager.get_all_host_states(ctx)
    assert state.free_ram_mb == 1024
    assert state.service['disabled']
    assert manager.table.columns['free_ram_mb'][0] == 1024
    assert manager.table.columns['disabled'][0]


def test_sweep_reads_only_rows_it_does_not_hold(ctx, monkeypatch,
                                                no_full_read):
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2')
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    no_full_read(manager)
    asked = []
    real = db_changes.get_rows_by_ids

    def spy(context, compute_node_ids=(), service_ids=()):
        asked.append((sorted(compute_node_ids), sorted(service_ids)))
        return real(context, compute_node_ids, service_ids)

    monkeypatch.setattr(db_changes, 'get_rows_by_ids', spy)
    before = timeutils.utcnow()
    manager.get_all_host_states(ctx)   # every row is held already
    assert asked == []
    service_id = states[1].service['id']
    writers.service_update(ctx, service_id, {
        'report_count': 5, 'updated_at': _late(before=before)})
    manager.get_all_host_states(ctx)
    assert asked == [([], [service_id])]
    assert states[1].service['report_count'] == 5


def test_rows_stamped_before_the_margin_wait_for_the_full_read(
        ctx, monkeypatch, conf):
    node = seed.add_compute(ctx, 'h1', memory_mb=4096,
                            created_at=_late(minutes=10))
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)
    manager = host_manager.HostManager(ctx)
    state = manager.get_all_host_states(ctx)[0]
    writers.compute_node_update(ctx, node['id'], {
        'free_ram_mb': 1024, 'memory_mb_used': 3072,
        'updated_at': _late(minutes=1)})
    manager.get_all_host_states(ctx)
    assert state.free_ram_mb == 4096
    conf.set_override('full_refresh_interval', 0, 'scheduler')
    manager.get_all_host_states(ctx)
    assert state.free_ram_mb == 1024


def test_a_late_new_node_makes_a_full_read(ctx, monkeypatch):
    seed.add_compute(ctx, 'h1')
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    seed.add_compute(ctx, 'h2', created_at=_late())
    assert _keys(manager.get_all_host_states(ctx)) == [('h1', 'h1'),
                                                       ('h2', 'h2')]
