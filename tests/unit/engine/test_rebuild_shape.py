"""OSSA-2026-022: ``_nova_check_type`` is honoured only in the shape Nova
sends, confirmed by the view (``scheduler.view.rebuild``,
``scheduler.engine.moves.check_type``), one rule per test; then through
FilterScheduler on SQLite (database claims): a boot carrying the hint is
filtered and claimed, Nova's rebuild is neither."""

import uuid

import fakes
import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.engine import moves
from scheduler.engine import pipeline
from scheduler.objects import request_spec
from scheduler.placement import source as placement_source
from scheduler.view import rebuild
from scheduler_tools import seed
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(60)

INSTANCE = '3b0e8a44-1c3f-4c55-9d1e-000000000001'
LOGGER = 'scheduler.view.rebuild'


def _spec(check_type='rebuild', instance_uuid=INSTANCE, **kwargs):
    hints = {'_nova_check_type': check_type} if check_type else {}
    return fakes.fake_spec(instance_uuid=instance_uuid,
                           scheduler_hints=hints, **kwargs)


def _nova_rebuild(host='host1', node='node1', **kwargs):
    """What Nova's API and conductor send for a rebuild with a new
    image: the hint, force_hosts=[instance.host],
    force_nodes=[instance.node], the instance's cell as destination."""
    kwargs.setdefault('requested_destination', request_spec.Destination(
        cell=None))
    return _spec(force_hosts=[host], force_nodes=[node], **kwargs)


def _host(host='host1', node='node1', *uuids):
    return fakes.fake_host_state(host=host, node=node,
                                 instances=fakes.fake_instances(*uuids))


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelname == 'WARNING']


# -- the shape, confirmed by the host view ---------------------------------

def test_nova_rebuild_on_the_instance_host_and_node_is_a_rebuild(caplog):
    states = [_host('host2', 'node2'), _host('host1', 'node1', INSTANCE)]
    spec = _nova_rebuild()
    assert rebuild.rebuild_target(spec) == ('host1', 'node1')
    assert rebuild.is_rebuild(spec, states)
    assert moves.check_type(states, spec) == moves.REBUILD
    assert _warnings(caplog) == []


def test_forced_host_names_compare_in_any_case():
    assert rebuild.is_rebuild(_nova_rebuild(host='HOST1'),
                              [_host('host1', 'node1', INSTANCE)])


def test_a_boot_with_the_hint_is_not_a_rebuild_and_warns_once(caplog):
    spec = _spec()      # what an unpatched nova-api passes through
    states = [_host('host1', 'node1')]
    for _ in range(3):  # every reader asks; one line
        assert not rebuild.is_rebuild(spec, states)
        assert moves.check_type(states, spec) is None
    (line,) = _warnings(caplog)
    assert INSTANCE in line and '_nova_check_type=rebuild' in line
    assert 'not in the shape' in line


def test_each_request_object_is_warned_about_once(caplog):
    """A second request for the same instance warns again, even when it
    is given the memory (the id) of the first, freed one."""
    states = [_host('host1', 'node1')]
    spec = _spec()
    assert not rebuild.is_rebuild(spec, states)
    freed = id(spec)
    del spec
    for _ in range(1000):   # CPython gives a freed object's memory back
        spec = _spec()
        if id(spec) == freed:
            break
    assert not rebuild.is_rebuild(spec, states)
    assert not rebuild.is_rebuild(spec, states)
    assert len(_warnings(caplog)) == 2


def test_the_instance_must_be_on_the_forced_host_in_the_view(caplog):
    spec = _nova_rebuild(instance_uuid=str(uuid.uuid4()))
    assert not rebuild.is_rebuild(spec, [_host('host1', 'node1', INSTANCE)])
    (line,) = _warnings(caplog)
    assert 'not on host1:node1 in the host view' in line


def test_the_instance_must_be_on_the_forced_node():
    spec = _nova_rebuild(node='node2')
    states = [_host('host1', 'node1', INSTANCE), _host('host1', 'node2')]
    assert not rebuild.is_rebuild(spec, states)
    # Its record names another node than the HostState it is filed under.
    state = _host('host1', 'node2', INSTANCE)
    state.instances[INSTANCE].node = 'node1'
    assert not rebuild.is_rebuild(spec, [state])


@pytest.mark.parametrize('fields', [
    {'force_hosts': ['host1'], 'force_nodes': []},
    {'force_hosts': [], 'force_nodes': ['node1']},
    {'force_hosts': ['host1', 'host2'], 'force_nodes': ['node1']},
    {'force_hosts': ['host1'], 'force_nodes': ['node1'],
     'ignore_hosts': ['host2']},
    {'force_hosts': ['host1'], 'force_nodes': ['node1'],
     'requested_destination': request_spec.Destination(host='host2')},
])
def test_any_other_shape_is_not_a_rebuild(fields):
    spec = _spec(**fields)
    assert rebuild.rebuild_target(spec) is None
    assert not rebuild.is_rebuild(spec, [_host('host1', 'node1', INSTANCE)])


def test_without_an_instance_uuid_it_is_not_a_rebuild():
    spec = _nova_rebuild()
    spec.obj_reset_changes()
    delattr(spec, 'instance_uuid')
    assert not spec.obj_attr_is_set('instance_uuid')
    assert not rebuild.is_rebuild(spec, [_host('host1', 'node1', INSTANCE)])


def test_nothing_to_confirm_with_is_no_rebuild():
    assert not rebuild.is_rebuild(_nova_rebuild())


# -- Placement: the instance's allocations on the node ---------------------

def _placement_engine(consumer, node):
    engine = sa.create_engine('sqlite://')
    with engine.begin() as connection:
        connection.exec_driver_sql(
            'CREATE TABLE resource_providers (id INTEGER PRIMARY KEY, '
            'name TEXT, root_provider_id INTEGER)')
        connection.exec_driver_sql(
            'CREATE TABLE allocations (resource_provider_id INTEGER, '
            'consumer_id TEXT)')
        connection.exec_driver_sql(
            "INSERT INTO resource_providers VALUES (1, ?, 1), "
            "(2, 'vgpu', 1)", (node,))
        connection.exec_driver_sql(
            'INSERT INTO allocations VALUES (2, ?)', (consumer,))
    return engine


def test_placement_confirms_by_the_allocations_in_the_node_tree(caplog):
    engine = _placement_engine(INSTANCE, 'node1')
    assert placement_source._holds_allocations(engine, INSTANCE, 'node1')
    assert not placement_source._holds_allocations(engine, INSTANCE, 'x')

    class View:
        pass
    view = View()
    view.engine = engine
    assert placement_source._rebuild(view, _nova_rebuild())
    assert not placement_source._rebuild(view, _nova_rebuild(node='node2'))
    assert 'no allocation on node node2 in Placement' in _warnings(caplog)[0]
    assert not placement_source._rebuild(view, _spec())
    assert not placement_source._rebuild(view, _spec(None))


# -- move hints -------------------------------------------------------------

def test_a_move_hint_for_an_instance_on_no_host_is_ignored(caplog):
    states = [_host('host1', 'node1'), _host('host2', 'node2')]
    spec = _spec('migrate')
    assert moves.check_type(states, spec) is None
    assert moves.exclude_source(states, spec) == states
    (line,) = _warnings(caplog)
    assert '_nova_check_type=migrate' in line and INSTANCE in line
    assert 'on no host' in line


def test_a_move_hint_for_an_instance_on_a_host_is_honoured(caplog):
    states = [_host('host1', 'node1', INSTANCE), _host('host2', 'node2')]
    assert moves.check_type(states, _spec('migrate')) == moves.MIGRATE
    assert _warnings(caplog) == []


def test_an_unknown_hint_value_is_ignored(caplog):
    states = [_host('host1', 'node1', INSTANCE)]
    assert moves.check_type(states, _spec('shelve')) is None
    assert 'not a value this service knows' in _warnings(caplog)[0]


def test_a_stored_rebuild_hint_on_a_resize_is_a_resize(caplog):
    """A server booted with the hint keeps it in its RequestSpec: its
    resize (no force) is a resize, which leaves the source host."""
    states = [_host('host1', 'node1', INSTANCE), _host('host2', 'node2')]
    result = moves.exclude_source(states, _spec())
    assert [s.host for s in result] == ['host2']


def test_forced_hosts_run_the_filters_only_for_an_honoured_hint():
    states = [_host('host1', 'node1', INSTANCE), _host('host2', 'node2')]
    hosts, skip_filters = pipeline.prefilter(states, _nova_rebuild())
    assert [s.host for s in hosts] == ['host1'] and not skip_filters
    forged = _nova_rebuild(instance_uuid=str(uuid.uuid4()))
    hosts, skip_filters = pipeline.prefilter(states, forged)
    assert [s.host for s in hosts] == ['host1'] and skip_filters


# -- through FilterScheduler, database claims ------------------------------

@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters', ['RamFilter', 'ComputeFilter'],
                      group='filter_scheduler')
    conf.set_override('initial_ram_allocation_ratio', 1.0)
    return seed.use_database('sqlite:///%s' % (tmp_path / 'shape.sqlite'))


def _select(ctx, spec):
    driver = filter_scheduler.FilterScheduler(ctx)
    return [picks[0].service_host
            for picks in driver.select_destinations(
                ctx, spec, [spec.instance_uuid])]


def test_a_boot_with_the_hint_is_filtered_and_claimed(ctx):
    # The RAM weigher prefers the disabled host, which ComputeFilter
    # refuses; a boot taken for a rebuild would skip ComputeFilter.
    seed.add_compute(ctx, 'disabled', memory_mb=16384, disabled=True)
    seed.add_compute(ctx, 'small', memory_mb=1024)
    seed.add_compute(ctx, 'big', memory_mb=8192)
    boot = uuid.uuid4()
    spec = seed.make_spec(memory_mb=2048, instance_uuid=str(boot),
                          scheduler_hints={'_nova_check_type': ['rebuild']})
    assert _select(ctx, spec) == ['big']
    claimed = [row for row in claims.get_claims(ctx)
               if row['instance_uuid'] == str(boot)]
    assert [(row['host'], row['memory_mb']) for row in claimed] == [
        ('big', 2048)]
    # Too big for any host: refused, not placed unfiltered.
    spec = seed.make_spec(memory_mb=16384, instance_uuid=str(uuid.uuid4()),
                          scheduler_hints={'_nova_check_type': ['rebuild']})
    with pytest.raises(exception.NoValidHost):
        _select(ctx, spec)


def test_nova_rebuild_is_neither_filtered_nor_claimed(ctx, conf):
    seed.add_compute(ctx, 'full', memory_mb=1024, memory_mb_used=1024)
    writers.instance_create(ctx, {'uuid': INSTANCE, 'host': 'full',
                                  'node': 'full', 'memory_mb': 1024,
                                  'vcpus': 1, 'root_gb': 1})
    spec = seed.make_spec(memory_mb=1024, instance_uuid=INSTANCE,
                          force_hosts=['full'], force_nodes=['full'],
                          scheduler_hints={'_nova_check_type': ['rebuild']})
    assert _select(ctx, spec) == ['full']
    assert [row for row in claims.get_claims(ctx)
            if row['instance_uuid'] == INSTANCE] == []


def test_a_boot_with_a_move_hint_is_a_boot_logged_once(ctx, caplog):
    seed.add_compute(ctx, 'big', memory_mb=8192)
    instance = str(uuid.uuid4())
    spec = seed.make_spec(memory_mb=1024, instance_uuid=instance,
                          scheduler_hints={'_nova_check_type': ['evacuate']})
    assert _select(ctx, spec) == ['big']
    assert [row['host'] for row in claims.get_claims(ctx)
            if row['instance_uuid'] == instance] == ['big']
    (line,) = _warnings(caplog)
    assert '_nova_check_type=evacuate' in line and instance in line
