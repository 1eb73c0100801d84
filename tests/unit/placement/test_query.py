"""scheduler.placement.query: a whole allocation-candidates query read
as Placement 16.0.0 reads it (1.36 to 1.39), and what it refuses."""

import pytest

from scheduler.placement.candidates import RequestGroup
from scheduler.placement.query import Request

AGG1 = '11111111-1111-4111-8111-111111111111'
AGG2 = '22222222-2222-4222-8222-222222222222'
RP = '33333333-3333-4333-8333-333333333333'


def test_groups_in_query_order_and_request_wide_parameters():
    request = Request.from_query([
        ('resources_NET', 'NET_BW_EGR_KILOBIT_PER_SEC:10'),
        ('required_NET', 'CUSTOM_PHYSNET_A,!CUSTOM_X'),
        ('resources', 'VCPU:2,MEMORY_MB:512'),
        ('required', 'in:CUSTOM_A,CUSTOM_B'),
        ('required', '!!CUSTOM_C'),
        ('member_of', 'in:%s,%s' % (AGG1, AGG2)),
        ('member_of', '!' + AGG2),
        ('in_tree', RP),
        ('resources1', 'VGPU:1'),
        ('group_policy', 'isolate'),
        ('root_required', 'COMPUTE_A,!COMPUTE_B'),
        ('same_subtree', '_NET,1'),
        ('limit', '5'),
    ])
    assert list(request.groups) == ['_NET', '', '1']
    assert request.groups[''] == RequestGroup(
        {'VCPU': 2, 'MEMORY_MB': 512},
        required=(frozenset({'CUSTOM_A', 'CUSTOM_B'}),),
        forbidden=frozenset({'CUSTOM_C'}),
        member_of=(frozenset({AGG1, AGG2}),),
        forbidden_aggregates=frozenset({AGG2}), in_tree=RP)
    assert request.groups['_NET'].forbidden == {'CUSTOM_X'}
    assert request.numbered == ['_NET', '1']
    assert request.group_policy == 'isolate'
    assert request.root_required == {'COMPUTE_A'}
    assert request.root_forbidden == {'COMPUTE_B'}
    assert request.same_subtree == (frozenset({'_NET', '1'}),)
    assert request.trait_names() == {
        'CUSTOM_PHYSNET_A', 'CUSTOM_X', 'CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C',
        'COMPUTE_A', 'COMPUTE_B'}


def test_a_mapping_and_the_last_resources_of_a_group():
    request = Request.from_query({'resources': ['VCPU:1', 'VCPU:3'],
                                  'resources2': 'DISK_GB:1',
                                  'group_policy': 'none'})
    assert request.groups[''].resources == {'VCPU': 3}
    # A group without resources in a same_subtree is allowed.
    request = Request.from_query({
        'resources1': 'VCPU:1', 'required2': 'CUSTOM_NUMA',
        'same_subtree': '1,2', 'group_policy': 'none'})
    assert request.groups['2'].resources == {}


@pytest.mark.parametrize('params', [
    {},
    {'resources': 'VCPU'},
    {'resources': 'VCPU:0'},
    {'resources': 'VCPU:x'},
    {'resources': ''},
    {'resources': 'VCPU:1', 'required': 'CUSTOM_A,!CUSTOM_A'},
    {'resources': 'VCPU:1', 'required': ['in:CUSTOM_A,CUSTOM_B',
                                         '!CUSTOM_A,!CUSTOM_B']},
    {'resources': 'VCPU:1', 'required': 'in:CUSTOM_A,!CUSTOM_B'},
    {'resources': 'VCPU:1', 'required': 'CUSTOM_A,,CUSTOM_B'},
    {'resources': 'VCPU:1', 'required': '!'},
    {'resources': 'VCPU:1', 'member_of': '%s,%s' % (AGG1, AGG2)},
    {'resources': 'VCPU:1', 'member_of': 'not-a-uuid'},
    {'resources': 'VCPU:1', 'in_tree': 'not-a-uuid'},
    {'resources': 'VCPU:1', 'group_policy': 'spread'},
    {'resources1': 'VCPU:1', 'resources2': 'VCPU:1'},
    {'resources': 'VCPU:1', 'root_required': ['A', 'B']},
    {'resources': 'VCPU:1', 'root_required': 'in:A,B'},
    {'resources': 'VCPU:1', 'root_required': 'A,!A'},
    {'required': 'CUSTOM_A'},
    {'resources': 'VCPU:1', 'required1': 'CUSTOM_A'},
    {'resources1': 'VCPU:1', 'same_subtree': '1,2'},
    {'resources1': 'VCPU:1', 'same_subtree': '1,'},
    {'resources': 'VCPU:1', 'limit': '0'},
    {'resources': 'VCPU:1', 'unknown': 'x'},
])
def test_what_placement_refuses_is_refused(params):
    with pytest.raises(ValueError):
        Request.from_query(params)
