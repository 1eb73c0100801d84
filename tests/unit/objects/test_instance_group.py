"""InstanceGroup: Newton-to-Queens ``policies`` and Rocky+ ``policy``."""

import fakes
import pytest

from scheduler import exception
from scheduler.objects import instance_group as group_obj

GROUP_UUID = '1b5c7e0c-8a2b-4d38-9b1f-7f2f4c2b6f0e'
MEMBER_UUID = '0c9f0d87-6c8e-4f7e-b2b6-5f0f6e0c1b2a'


def _nova_group(version, **data):
    values = {'id': 3, 'uuid': GROUP_UUID, 'name': 'web', 'user_id': 'u1',
              'project_id': 'p1', 'members': [MEMBER_UUID],
              'hosts': ['host5'], 'created_at': '2017-02-22T10:30:05Z',
              'updated_at': None, 'deleted_at': None, 'deleted': False}
    values.update(data)
    return {'nova_object.name': 'InstanceGroup',
            'nova_object.namespace': 'nova',
            'nova_object.version': version, 'nova_object.data': values}


@pytest.mark.parametrize('policy', group_obj.POLICIES)
def test_policy_name_from_policies(policy):
    group = group_obj.InstanceGroup(policies=[policy])
    assert group.policy_name == policy


@pytest.mark.parametrize('policy', group_obj.POLICIES)
def test_policy_name_from_policy(policy):
    group = group_obj.InstanceGroup(policy=policy)
    assert group.policy_name == policy


def test_policy_wins_over_policies():
    group = group_obj.InstanceGroup(policy='affinity',
                                    policies=['anti-affinity'])
    assert group.policy_name == 'affinity'


@pytest.mark.parametrize('kwargs', [{}, {'policies': []}, {'policy': None},
                                    {'policies': None, 'policy': ''}])
def test_policy_name_is_none_without_policy(kwargs):
    assert group_obj.InstanceGroup(**kwargs).policy_name is None


def test_known_policies():
    assert set(group_obj.POLICIES) == {'affinity', 'anti-affinity',
                                       'soft-affinity', 'soft-anti-affinity'}


def test_rules():
    group = fakes.fake_group('anti-affinity',
                             rules={'max_server_per_host': 2})
    assert group.rules == {'max_server_per_host': '2'}
    assert group_obj.InstanceGroup().rules == {}


def test_rules_is_a_copy():
    group = fakes.fake_group(rules={'max_server_per_host': 2})
    group.rules['max_server_per_host'] = '9'
    assert group.rules == {'max_server_per_host': '2'}


def test_host_list():
    assert group_obj.InstanceGroup().host_list() == []
    assert group_obj.InstanceGroup(hosts=None).host_list() == []
    group = group_obj.InstanceGroup(hosts=['h1', 'h2'])
    hosts = group.host_list()
    hosts.append('h3')
    assert group.hosts == ['h1', 'h2']


def test_add_host_is_not_a_change_to_save():
    group = fakes.fake_group(hosts=['h1'])
    group.obj_reset_changes()
    group.add_host('h2')
    group.add_host('h2')
    assert group.host_list() == ['h1', 'h2', 'h2']
    assert 'hosts' not in group.obj_what_changed()


def test_add_host_to_a_group_without_hosts():
    group = group_obj.InstanceGroup()
    group.add_host('h1')
    assert group.hosts == ['h1']


def test_fake_group_legacy_and_current_forms():
    legacy = fakes.fake_group('affinity', legacy=True)
    current = fakes.fake_group('affinity')
    assert legacy.policies == ['affinity']
    assert current.policy == 'affinity'
    assert legacy.policy_name == current.policy_name == 'affinity'


def test_nova_newton_to_queens_group_1_10_is_read(serializer):
    group = serializer.deserialize_entity(
        None, _nova_group('1.10', policies=['soft-anti-affinity']))
    assert group.VERSION == '1.10'
    assert group.uuid == GROUP_UUID
    assert group.policy_name == 'soft-anti-affinity'
    assert group.members == [MEMBER_UUID]
    assert group.host_list() == ['host5']
    assert group.rules == {}


def test_nova_rocky_group_1_11_is_read(serializer):
    group = serializer.deserialize_entity(
        None, _nova_group('1.11', policy='anti-affinity',
                          policies=['anti-affinity'],
                          _rules={'max_server_per_host': '3'}))
    assert group.VERSION == '1.11'
    assert group.policy_name == 'anti-affinity'
    assert group.rules == {'max_server_per_host': '3'}


def test_group_round_trip(roundtrip, to_wire):
    group = fakes.fake_group('anti-affinity', members=[MEMBER_UUID],
                             hosts=['h1'], rules={'max_server_per_host': 1},
                             legacy=True)
    wire = to_wire(group)
    assert wire['nova_object.version'] == '1.11'
    assert wire['nova_object.data']['policies'] == ['anti-affinity']
    back = roundtrip(group)
    assert back.policy_name == 'anti-affinity'
    assert back.members == [MEMBER_UUID]
    assert back.host_list() == ['h1']
    assert back.rules == {'max_server_per_host': '1'}


def test_group_with_unknown_future_version_is_refused(serializer):
    with pytest.raises(exception.InvalidObjectPrimitive):
        serializer.deserialize_entity(
            None, _nova_group('1.12', policy='affinity'))
