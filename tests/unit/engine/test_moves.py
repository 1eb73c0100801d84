"""scheduler.engine.moves: move type, source lookup and source exclusion."""

import uuid

import fakes
import pytest

from scheduler.engine import moves
from scheduler.objects import instance as instance_obj

INSTANCE = str(uuid.uuid4())
OTHER = str(uuid.uuid4())


def _spec(check_type=None, source=None, instance_uuid=INSTANCE, **kwargs):
    hints = dict(kwargs.pop('scheduler_hints', {}))
    if check_type is not None:
        hints['_nova_check_type'] = check_type
    if source is not None:
        hints['_nova_source_host'] = source
    return fakes.fake_spec(instance_uuid=instance_uuid,
                           scheduler_hints=hints, **kwargs)


def _hosts(where=None):
    """host1..host3 (host2 has nodes node2a, node2b); the instance is on
    ``where`` when given."""
    states = []
    for host, node in (('host1', 'node1'), ('host2', 'node2a'),
                       ('host2', 'node2b'), ('host3', 'node3')):
        uuids = [OTHER]
        if host == where:
            uuids.append(INSTANCE)
        states.append(fakes.fake_host_state(
            host=host, node=node, instances=fakes.fake_instances(*uuids)))
    return states


def _names(states):
    return [(s.host, s.nodename) for s in states]


# -- move_type -------------------------------------------------------------

@pytest.mark.parametrize('value', ['resize', 'migrate', 'live_migrate',
                                   'evacuate'])
def test_move_type_reads_the_hint(value):
    assert moves.move_type(_spec(value)) == value


@pytest.mark.parametrize('value', [None, 'rebuild', 'bogus'])
def test_move_type_none_for_other_values(value):
    assert moves.move_type(_spec(value)) is None


def test_move_type_ignores_a_multi_value_hint():
    spec = _spec(scheduler_hints={'_nova_check_type': ['resize', 'migrate']})
    assert moves.move_type(spec) is None


# -- find_source -------------------------------------------------------------

def test_find_source_from_the_instances():
    assert moves.find_source(_hosts('host3'), _spec()) == ('host3', 'node3')


def test_find_source_none_for_a_new_instance():
    assert moves.find_source(_hosts(), _spec()) is None


def test_find_source_prefers_the_instance_node():
    states = _hosts()
    inst = instance_obj.Instance(uuid=INSTANCE, host='host2', node='node2b')
    for state in states:
        if state.host == 'host2':
            state.instances = {INSTANCE: inst}
    assert moves.find_source(states, _spec()) == ('host2', 'node2b')


def test_find_source_hint_overrides_lookup():
    states = _hosts('host1')
    assert moves.find_source(states, _spec(source='host3')) == (
        'host3', None)
    assert moves.find_source(states, _spec(source='host2:node2a')) == (
        'host2', 'node2a')


def test_find_source_empty_hint_falls_back():
    spec = _spec(source=':node')
    assert moves.find_source(_hosts('host1'), spec) == ('host1', 'node1')


def test_find_source_without_instance_uuid():
    spec = fakes.fake_spec()
    assert not spec.obj_attr_is_set('instance_uuid')
    assert moves.find_source(_hosts('host1'), spec) is None


# -- exclude_source ----------------------------------------------------------

@pytest.mark.parametrize('check_type', ['migrate', 'live_migrate',
                                        'evacuate'])
@pytest.mark.parametrize('allow', [False, True])
def test_migrations_always_leave_the_source(conf, check_type, allow):
    conf.set_override('allow_resize_to_same_host', allow)
    result = moves.exclude_source(_hosts('host2'), _spec(check_type))
    assert _names(result) == [('host1', 'node1'), ('host3', 'node3')]


def test_resize_leaves_the_source_by_default():
    result = moves.exclude_source(_hosts('host1'), _spec('resize'))
    assert [s.host for s in result] == ['host2', 'host2', 'host3']


def test_resize_may_stay_when_allowed(conf):
    conf.set_override('allow_resize_to_same_host', True)
    states = _hosts('host1')
    assert moves.exclude_source(states, _spec('resize')) == states


def test_rebuild_is_never_excluded():
    # Nova's rebuild: forced to the instance's host and node.
    states = _hosts('host1')
    assert moves.exclude_source(states, _spec(
        'rebuild', force_hosts=['host1'], force_nodes=['node1'])) == states


def test_boot_is_unaffected():
    states = _hosts()
    assert moves.exclude_source(states, _spec()) == states
    assert moves.exclude_source(states, fakes.fake_spec()) == states


def test_known_instance_without_hint_is_a_resize(conf):
    result = moves.exclude_source(_hosts('host3'), _spec())
    assert [s.host for s in result] == ['host1', 'host2', 'host2']
    conf.set_override('allow_resize_to_same_host', True)
    assert len(moves.exclude_source(_hosts('host3'), _spec())) == 4


def test_known_instance_without_hint_keeps_forced_hosts():
    states = _hosts('host1')
    spec = _spec(force_hosts=['host1'])
    assert moves.exclude_source(states, spec) == states
    spec = _spec(force_nodes=['node1'])
    assert moves.exclude_source(states, spec) == states


def test_hinted_move_with_unknown_source_is_unchanged():
    states = _hosts()
    assert moves.exclude_source(states, _spec('migrate')) == states


def test_source_hint_excludes_a_host_without_tracked_instances():
    result = moves.exclude_source(_hosts(), _spec('evacuate',
                                                  source='HOST2:node2a'))
    assert [s.host for s in result] == ['host1', 'host3']


def test_exclude_source_returns_a_new_list():
    states = _hosts()
    result = moves.exclude_source(iter(states), _spec())
    assert result == states and result is not states
