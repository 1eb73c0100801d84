"""scheduler.placement.trees without a Placement: the rules of
allocation candidates over provider trees and sharing providers
(Placement 16.0.0's; the differential test against a real Placement is
tests/functional/test_placement_nested.py), and that the vectorised
``Plan.hosts`` agrees with the enumeration."""

import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.placement import candidates as pc
from scheduler.placement import provider_trees
from scheduler.placement import query
from scheduler.placement import trees

AGG = '11111111-1111-4111-8111-111111111111'
# Providers that an ``in_tree`` names (uuid-like).
CN1 = '44444444-4444-4444-8444-444444444444'
GPU1 = '55555555-5555-4555-8555-555555555555'
SHARES = provider_trees.SHARING_TRAIT


def provider(name, parent=None, root=None, traits=(), aggregates=(),
             used=None, **inventories):
    """A provider ``name`` (its uuid too) with ``inventories`` (class:
    total, or class: Inventory)."""
    return pc.Provider(
        name, name,
        {rc: inv if isinstance(inv, pc.Inventory) else pc.Inventory(inv)
         for rc, inv in inventories.items()},
        usages=used or {}, traits=frozenset(traits),
        aggregates=frozenset(aggregates), parent_uuid=parent,
        root_uuid=root or parent)


def forest(*providers):
    return provider_trees.Forest(
        pc.ProviderTable([p for p in providers if not p.parent_uuid]),
        pc.ProviderTable([p for p in providers if p.parent_uuid]))


def answer(found, **params):
    """The allocation requests of ``params`` over forest ``found``: a set
    of canonical JSON texts of ``(allocations, mappings)``."""
    body = trees.allocation_candidates(found, query.Request.from_query(
        params))
    return {_canonical(request['allocations'], request['mappings'])
            for request in body['allocation_requests']}


def _canonical(allocations, mappings):
    return json.dumps([{rp: alloc.get('resources', alloc)
                        for rp, alloc in allocations.items()},
                       {suffix: sorted(rps)
                        for suffix, rps in mappings.items()}],
                      sort_keys=True)


def one(allocations, **mappings):
    """One expected allocation request: ``allocations`` {rp: {rc: n}},
    mappings by suffix (``_`` for the unsuffixed group)."""
    return _canonical(allocations, {('' if suffix == '_' else suffix): rps
                                    for suffix, rps in mappings.items()})


def gpu_host():
    """cn1 (VCPU, a host trait) with two VGPU children."""
    return forest(
        provider('cn1', traits=['CUSTOM_HOST'], VCPU=4, MEMORY_MB=8),
        provider('gpu1', 'cn1', traits=['CUSTOM_GPU'], VGPU=2),
        provider('gpu2', 'cn1', VGPU=1))


def test_the_unsuffixed_group_spreads_over_a_tree():
    found = gpu_host()
    assert answer(found, resources='VCPU:1,VGPU:1') == {
        one({'cn1': {'VCPU': 1}, 'gpu1': {'VGPU': 1}}, _=['cn1', 'gpu1']),
        one({'cn1': {'VCPU': 1}, 'gpu2': {'VGPU': 1}}, _=['cn1', 'gpu2'])}
    # The traits of the providers used, together; a forbidden trait on
    # none of them.
    assert answer(found, resources='VCPU:1,VGPU:1',
                  required='CUSTOM_GPU,CUSTOM_HOST') == {
        one({'cn1': {'VCPU': 1}, 'gpu1': {'VGPU': 1}}, _=['cn1', 'gpu1'])}
    assert answer(found, resources='VCPU:1,VGPU:1',
                  required='!CUSTOM_GPU') == {
        one({'cn1': {'VCPU': 1}, 'gpu2': {'VGPU': 1}}, _=['cn1', 'gpu2'])}
    # The root gives nothing: its trait does not count, unless asked of
    # the root (root_required).
    assert answer(found, resources='VGPU:1', required='CUSTOM_HOST') == set()
    assert len(answer(found, resources='VGPU:1',
                      root_required='CUSTOM_HOST')) == 2
    assert answer(found, resources='VGPU:1',
                  root_required='!CUSTOM_HOST') == set()


def test_numbered_groups_policies_and_merged_amounts():
    found = gpu_host()
    isolated = answer(found, resources1='VGPU:1', resources2='VGPU:1',
                      group_policy='isolate')
    assert isolated == {
        one({'gpu1': {'VGPU': 1}, 'gpu2': {'VGPU': 1}},
            **{'1': ['gpu1'], '2': ['gpu2']}),
        one({'gpu1': {'VGPU': 1}, 'gpu2': {'VGPU': 1}},
            **{'1': ['gpu2'], '2': ['gpu1']})}
    # ``none``: both groups may take gpu1 (2 VGPUs), not gpu2 (1).
    assert answer(found, resources1='VGPU:1', resources2='VGPU:1',
                  group_policy='none') == isolated | {
        one({'gpu1': {'VGPU': 2}}, **{'1': ['gpu1'], '2': ['gpu1']})}
    # The unsuffixed group may share a numbered group's provider.
    assert one({'cn1': {'VCPU': 2}}, _=['cn1'], **{'1': ['cn1']}) in answer(
        found, resources='VCPU:1', resources1='VCPU:1',
        group_policy='isolate')
    # A merged amount is checked against max_unit again.
    capped = forest(provider('cn1', VCPU=pc.Inventory(8, max_unit=1)))
    assert answer(capped, resources1='VCPU:1', resources2='VCPU:1',
                  group_policy='none') == set()


def test_aggregates_of_a_root_span_its_tree_for_the_unsuffixed_group():
    found = forest(provider('cn1', aggregates=[AGG], VCPU=4),
                   provider('gpu1', 'cn1', VGPU=1))
    assert answer(found, resources='VGPU:1', member_of=AGG) == {
        one({'gpu1': {'VGPU': 1}}, _=['gpu1'])}
    assert answer(found, resources='VGPU:1', member_of='!' + AGG) == set()
    # A numbered group's provider must be in the aggregate itself.
    assert answer(found, resources1='VGPU:1', member_of1=AGG) == set()


def sharing_fleet():
    """cn1 and cn2 in AGG with a shared disk, cn3 outside."""
    return forest(provider(CN1, aggregates=[AGG], VCPU=4),
                  provider('cn2', aggregates=[AGG], VCPU=4),
                  provider('cn3', VCPU=4),
                  provider('ss', traits=[SHARES], aggregates=[AGG],
                           DISK_GB=10))


def test_a_sharing_provider_serves_the_trees_of_its_aggregates():
    found = sharing_fleet()
    assert answer(found, resources='VCPU:1,DISK_GB:5') == {
        one({CN1: {'VCPU': 1}, 'ss': {'DISK_GB': 5}}, _=[CN1, 'ss']),
        one({'cn2': {'VCPU': 1}, 'ss': {'DISK_GB': 5}}, _=['cn2', 'ss'])}
    # Its own tree's request, one for all anchors.
    assert answer(found, resources='DISK_GB:5') == {
        one({'ss': {'DISK_GB': 5}}, _=['ss'])}
    # Not with in_tree.
    assert answer(found, resources='VCPU:1,DISK_GB:5', in_tree=CN1) == set()
    # Numbered groups on both anchors (Placement 16.0.0 keeps one).
    assert answer(found, resources='DISK_GB:5', resources1='VCPU:1',
                  group_policy='none') == {
        one({CN1: {'VCPU': 1}, 'ss': {'DISK_GB': 5}}, _=['ss'],
            **{'1': [CN1]}),
        one({'cn2': {'VCPU': 1}, 'ss': {'DISK_GB': 5}}, _=['ss'],
            **{'1': ['cn2']})}
    plan = trees.Plan(found, query.Request.from_query(
        {'resources': 'VCPU:1,DISK_GB:5'}))
    assert plan.hosts().tolist() == [True, True, False, False]


def test_in_tree_naming_a_child_is_its_roots_tree():
    uuid = '22222222-2222-4222-8222-222222222222'
    found = forest(provider('cn1', VCPU=4),
                   provider(uuid, 'cn1', VGPU=1),
                   provider('cn2', VCPU=4))
    assert answer(found, resources='VCPU:1', in_tree=uuid) == {
        one({'cn1': {'VCPU': 1}}, _=['cn1'])}
    assert answer(found, resources='VCPU:1',
                  in_tree='33333333-3333-4333-8333-333333333333') == set()


def numa_host():
    """cn1 with two NUMA nodes (the first with a trait), each with a
    PCI device."""
    return forest(
        provider(CN1, VCPU=1),
        provider('numa0', CN1, traits=['CUSTOM_NUMA'], VCPU=4),
        provider('numa1', CN1, VCPU=4),
        provider('pci0', 'numa0', CN1, CUSTOM_PCI=1),
        provider('pci1', 'numa1', CN1, CUSTOM_PCI=1))


def test_same_subtree_and_a_group_without_resources():
    found = numa_host()
    params = {'resources1': 'VCPU:2', 'resources2': 'CUSTOM_PCI:1',
              'group_policy': 'none'}
    assert answer(found, same_subtree='1,2', **params) == {
        one({'numa0': {'VCPU': 2}, 'pci0': {'CUSTOM_PCI': 1}},
            **{'1': ['numa0'], '2': ['pci0']}),
        one({'numa1': {'VCPU': 2}, 'pci1': {'CUSTOM_PCI': 1}},
            **{'1': ['numa1'], '2': ['pci1']})}
    assert len(answer(found, **params)) == 4
    assert answer(found, same_subtree='1,2,3', required3='CUSTOM_NUMA',
                  **params) == {
        one({'numa0': {'VCPU': 2}, 'pci0': {'CUSTOM_PCI': 1}},
            **{'1': ['numa0'], '2': ['pci0'], '3': ['numa0']})}
    # A group without resources that names no trait nor aggregate
    # matches no provider (Placement's rule).
    assert answer(found, same_subtree='1,2,3', in_tree3=CN1,
                  **params) == set()


def test_provider_summaries_cover_the_trees_used():
    found = gpu_host()
    body = trees.allocation_candidates(found, query.Request.from_query(
        {'resources': 'VGPU:2'}))
    assert len(body['allocation_requests']) == 1
    summaries = body['provider_summaries']
    assert sorted(summaries) == ['cn1', 'gpu1', 'gpu2']
    assert summaries['gpu2'] == {
        'resources': {'VGPU': {'capacity': 1, 'used': 0}}, 'traits': [],
        'parent_provider_uuid': 'cn1', 'root_provider_uuid': 'cn1'}


def test_the_root_group_is_the_fast_path_when_no_child_is_asked():
    found = forest(provider('cn1', VCPU=4, DISK_GB=10),
                   provider(GPU1, 'cn1', traits=['CUSTOM_GPU'], VGPU=1),
                   provider('ss', traits=[SHARES], IPV4_ADDRESS=8))

    def group(**params):
        return provider_trees.root_group(
            query.Request.from_query(params), found)

    assert group(resources='VCPU:1', root_required='A,!B') == pc.RequestGroup(
        {'VCPU': 1}, required=(frozenset({'A'}),),
        forbidden=frozenset({'B'}))
    assert group(resources='VGPU:1') is None
    assert group(resources='VCPU:1', required='CUSTOM_GPU') is None
    assert group(resources='VCPU:1,IPV4_ADDRESS:1') is None
    assert group(resources='VCPU:1', resources1='VCPU:1') is None
    assert group(resources='VCPU:1', in_tree=GPU1) is None


def test_consumption_moves_the_next_instance_to_the_next_device():
    found = forest(provider('cn1', VCPU=4), provider('gpu1', 'cn1', VGPU=1),
                   provider('gpu2', 'cn1', VGPU=1))
    plan = trees.Plan(found, query.Request.from_query(
        {'resources': 'VCPU:1', 'resources1': 'VGPU:1'}))
    taken = []
    while plan.hosts()[0]:
        first = plan.first(0)
        assert first is not None
        body = first.body(found)
        taken.append(body['mappings']['1'])
        for rp, allocation in body['allocations'].items():
            found.consume(rp, allocation['resources'])
    assert taken == [['gpu1'], ['gpu2']]
    assert plan.first(0) is None


# -- the vectorised hosts agree with the enumeration ----------------------

CLASSES = ('VCPU', 'VGPU', 'DISK_GB')
TRAITS = ('CUSTOM_A', 'CUSTOM_B')


@st.composite
def forests(draw):
    providers = []
    for index in range(draw(st.integers(1, 3))):
        root = 'cn%d' % index
        providers.append(draw(_provider(root, None, None)))
        for child in range(draw(st.integers(0, 3))):
            parent = draw(st.sampled_from(
                [p.uuid for p in providers if p.root == root]))
            providers.append(draw(_provider('%s-%d' % (root, child),
                                            parent, root)))
    if draw(st.booleans()):
        providers.append(pc.Provider(
            'ss', 'ss', {'DISK_GB': pc.Inventory(draw(st.integers(1, 4)))},
            traits=frozenset([SHARES]), aggregates=frozenset([AGG])))
    return forest(*providers)


@st.composite
def _provider(draw, name, parent, root):
    classes = draw(st.sets(st.sampled_from(CLASSES), max_size=2))
    return pc.Provider(
        name, name, {rc: pc.Inventory(draw(st.integers(1, 3)))
                     for rc in classes},
        traits=frozenset(draw(st.sets(st.sampled_from(TRAITS)))),
        aggregates=frozenset(draw(st.sets(st.just(AGG)))),
        parent_uuid=parent, root_uuid=root)


@st.composite
def requests(draw):
    params = []
    for suffix in draw(st.sets(st.sampled_from(['', '1', '2']),
                               min_size=1)):
        classes = draw(st.sets(st.sampled_from(CLASSES), min_size=1,
                               max_size=2))
        params.append(('resources' + suffix, ','.join(
            '%s:%d' % (rc, draw(st.integers(1, 2))) for rc in classes)))
        if draw(st.integers(0, 2)) == 0:
            params.append(('required' + suffix, draw(st.sampled_from(
                ['CUSTOM_A', '!CUSTOM_B', 'in:CUSTOM_A,CUSTOM_B']))))
    if any(name[-1:] in '12' for name, _ in params):
        params.append(('group_policy', draw(st.sampled_from(
            ['none', 'isolate']))))
    if draw(st.integers(0, 3)) == 0 and sum(
            name[-1:] in '12' for name, _ in params
            if name.startswith('resources')) == 2:
        params.append(('same_subtree', '1,2'))
    return params


@settings(max_examples=300, deadline=None)
@given(forests(), requests())
def test_hosts_are_the_anchors_of_the_first_candidates(found, params):
    """``Plan.hosts`` (vectorised when no group couples another) says a
    compute node can host the request exactly when an allocation request
    anchored there takes something from its tree."""
    plan = trees.Plan(found, query.Request.from_query(params))
    hosts = plan.hosts().tolist()
    firsts = [plan.first(tree) for tree in range(len(hosts))]
    assert hosts == [first is not None for first in firsts]
    anchored = {request.anchor for request in plan.allocation_requests()
                if any(found.tree_of[index] == request.anchor
                       for index in request.allocations)}
    assert anchored <= {tree for tree, host in enumerate(hosts) if host}
