"""scheduler.placement.candidates without a Placement: the query
parameters read as Placement reads them, and the capacity rule.  (The
differential test against a real Placement is in tests/functional.)"""

import uuid

from scheduler.placement import candidates as pc
from scheduler.placement import query

AGG = {name: str(uuid.uuid5(uuid.NAMESPACE_URL, name))
       for name in ('agg1', 'agg2', 'agg3', 'agg4', 'agg5', 'agg-a', 'agg-b',
                    'agg-c', 'agg-d')}


def _group(params):
    """The unsuffixed group of a query, as ``query`` reads it."""
    return query.Request.from_query(params).groups['']


def test_query_parameters():
    group = _group({
        'resources': 'VCPU:2,MEMORY_MB:512',
        'required': ['CUSTOM_A,!CUSTOM_B', 'in:CUSTOM_C,CUSTOM_D'],
        'member_of': ['in:%(agg1)s,%(agg2)s' % AGG, '!' + AGG['agg3'],
                      '!in:%(agg4)s,%(agg5)s' % AGG]})
    assert group == pc.RequestGroup(
        {'VCPU': 2, 'MEMORY_MB': 512},
        required=(frozenset({'CUSTOM_A'}),
                  frozenset({'CUSTOM_C', 'CUSTOM_D'})),
        forbidden=frozenset({'CUSTOM_B'}),
        member_of=(frozenset({AGG['agg1'], AGG['agg2']}),),
        forbidden_aggregates=frozenset({AGG['agg3'], AGG['agg4'],
                                        AGG['agg5']}))


def test_capacity_units_steps_traits_and_aggregates():
    def provider(name, used=0, **inventory):
        return pc.Provider(name, name, {'VCPU': pc.Inventory(**inventory)},
                           usages={'VCPU': used},
                           traits=frozenset({'CUSTOM_' + name.upper()}),
                           aggregates=frozenset({AGG['agg-' + name]}))

    table = pc.ProviderTable([
        provider('a', total=4, reserved=1, allocation_ratio=2.0, used=4),
        provider('b', total=8, max_unit=2),
        provider('c', total=8, step_size=4),
        provider('d', total=8, min_unit=3)])

    def names(query):
        return [p.name for p in table.candidates(_group(query))]

    # a: (4 - 1) x 2 = 6, 4 used: room for 2.
    assert names({'resources': 'VCPU:2'}) == ['a', 'b']
    assert names({'resources': 'VCPU:3'}) == ['d']
    assert names({'resources': 'VCPU:4'}) == ['c', 'd']
    assert names({'resources': 'VCPU:2', 'required': '!CUSTOM_A'}) == ['b']
    assert names({'resources': 'VCPU:2',
                  'required': 'in:CUSTOM_A,CUSTOM_C'}) == ['a']
    assert names({'resources': 'VCPU:4',
                  'member_of': 'in:%(agg-c)s,%(agg-b)s' % AGG}) == ['c']
    assert names({'resources': 'VCPU:4',
                  'member_of': '!' + AGG['agg-c']}) == ['d']
    assert names({'resources': 'MEMORY_MB:1'}) == []
    body = pc.allocation_candidates(table, _group({'resources': 'VCPU:3'}))
    assert body['allocation_requests'] == [
        {'allocations': {'d': {'resources': {'VCPU': 3}}},
         'mappings': {'': ['d']}}]
    assert body['provider_summaries']['d']['resources'] == {
        'VCPU': {'capacity': 8, 'used': 0}}
