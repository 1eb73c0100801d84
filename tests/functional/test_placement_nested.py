"""Differential test: ``scheduler.placement.trees``, over the providers
``scheduler.placement.database.read_trees`` reads back from Placement's
database, against a real Placement's ``GET /allocation_candidates``
(microversion 1.39, no ``limit``) on generated provider trees and
requests.

Each example writes compute-node roots (VCPU, MEMORY_MB, sometimes
DISK_GB; traits; aggregates) with child providers -- NUMA nodes (VCPU,
MEMORY_MB), PCI devices (a custom class), VGPUs, bandwidth
(NET_BW_EGR_KILOBIT_PER_SEC), each with traits, the devices sometimes
under a NUMA node -- and sharing providers (DISK_GB with
MISC_SHARES_VIA_AGGREGATE, in an aggregate with some roots), with some
use; then asks requests with an unsuffixed group and numbered groups
(resources, required, forbidden and ``in:`` traits, ``member_of``
including forbidden aggregates, resourceless groups in a
``same_subtree``), ``group_policy`` none or isolate (also on numbered
groups alone that several child providers can serve), ``root_required``
and ``in_tree``.  Both answers must be the same allocation requests
(allocations and mappings) and provider summaries -- so the same
candidate root providers -- or both refuse the request.  The example's
providers are deleted after it, so that whether any provider is nested
or shares (which switches Placement's code paths) is the example's.

Where Placement 16.0.0 itself errs (``scheduler.placement.trees`` says
how), the example records an event instead of comparing: its 500 on a
forbidden trait over nested providers; amounts it adds in place when
two groups take one class with ``group_policy`` other than none.  When
the unsuffixed group may take everything from sharing providers beside
numbered groups, Placement's answer must be a part of ours, what it
lacks being such candidates.
"""

import json
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from placement_api import PlacementAPI

from scheduler.placement import candidates
from scheduler.placement import database
from scheduler.placement import provider_trees
from scheduler.placement import query
from scheduler.placement import trees

MICROVERSION = '1.39'
ROOT_TRAITS = ('CUSTOM_HOST_A', 'CUSTOM_HOST_B')
CHILD_TRAITS = ('CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B', 'CUSTOM_GPU_FAST')
TRAITS = ROOT_TRAITS + CHILD_TRAITS
PCI = 'CUSTOM_PCI_NIC'
BANDWIDTH = 'NET_BW_EGR_KILOBIT_PER_SEC'
CHILD_KINDS = {'numa': ('VCPU', 'MEMORY_MB'), 'pci': (PCI,),
               'vgpu': ('VGPU',), 'bandwidth': (BANDWIDTH,)}
CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'VGPU', BANDWIDTH, PCI)


def _name():
    return 'nest-%s' % uuid.uuid4().hex[:12]


@st.composite
def inventories(draw, classes):
    """Small inventories of ``classes``: totals, reserved amounts,
    ratios, units and steps."""
    found = {}
    for rc in classes:
        total = draw(st.sampled_from([4, 6, 2, 1, 3]))
        max_unit = draw(st.sampled_from([total] * 5 + [1]))
        found[rc] = candidates.Inventory(
            total=total,
            reserved=draw(st.sampled_from([0, 0, 0, 1])) % total,
            min_unit=1, max_unit=max_unit,
            step_size=draw(st.sampled_from([1] * 7 + [2])),
            allocation_ratio=draw(st.sampled_from([1.0, 1.0, 1.5, 2.0])))
    return found


@st.composite
def usages(draw, inventory):
    used = {}
    for rc, inv in inventory.items():
        if draw(st.integers(0, 3)) == 3:
            room = int(inv.capacity)
            amounts = [n for n in range(inv.min_unit, inv.max_unit + 1)
                       if n % inv.step_size == 0 and n <= room]
            if amounts:
                used[rc] = draw(st.sampled_from(amounts))
    return used


@st.composite
def provider(draw, classes, traits, aggregates, parent=None, root=None):
    inventory = draw(inventories(classes))
    return candidates.Provider(
        uuid=str(uuid.uuid4()), name=_name(), inventories=inventory,
        usages=draw(usages(inventory)),
        traits=frozenset(draw(st.sets(st.sampled_from(traits),
                                      max_size=2))),
        aggregates=frozenset(draw(st.sets(st.sampled_from(aggregates),
                                          max_size=1)) if aggregates
                             else ()),
        parent_uuid=parent, root_uuid=root)


@st.composite
def forests(draw):
    """``(providers, aggregates)``: roots, each followed by its
    children, then sharing providers; two aggregate uuids of this
    example's own."""
    aggregates = [str(uuid.uuid4()) for _ in range(2)]
    found = []
    # The kinds of child providers of this example's compute nodes: most
    # nodes have each, as a fleet of alike nodes would.
    kinds = sorted(draw(st.lists(st.sampled_from(sorted(CHILD_KINDS)),
                                 min_size=1, max_size=3, unique=True)),
                   key=lambda kind: kind != 'numa'
                   ) if draw(st.integers(0, 3)) != 1 else []
    for _ in range(draw(st.integers(1, 3))):
        classes = ['VCPU', 'MEMORY_MB'] + (
            ['DISK_GB'] if draw(st.booleans()) else [])
        root = draw(provider(classes, ROOT_TRAITS, aggregates))
        found.append(root)
        numa = []
        for kind in kinds:
            if draw(st.integers(0, 4)) == 4:
                continue
            parent = root.uuid
            if kind != 'numa' and numa and draw(st.integers(0, 2)):
                parent = draw(st.sampled_from(numa))
            child = draw(provider(CHILD_KINDS[kind], CHILD_TRAITS,
                                  aggregates[:1] if draw(st.integers(0, 4))
                                  == 4 else [], parent, root.uuid))
            if kind == 'numa':
                numa.append(child.uuid)
            found.append(child)
    for _ in range(draw(st.integers(0, 2))):
        sharing = draw(provider(['DISK_GB'], ROOT_TRAITS, aggregates))
        found.append(candidates.Provider(
            sharing.uuid, sharing.name, sharing.inventories,
            sharing.usages, sharing.traits | {provider_trees.SHARING_TRAIT},
            sharing.aggregates or frozenset(aggregates[:1])))
    return found, aggregates


@st.composite
def traits_param(draw):
    """A ``required`` value: a trait, a forbidden one or ``in:``."""
    kind = draw(st.integers(0, 3))
    if kind == 2:
        return 'in:' + ','.join(sorted(draw(st.sets(
            st.sampled_from(TRAITS), min_size=2, max_size=2))))
    return ('!' if kind == 1 else '') + draw(st.sampled_from(TRAITS))


AMOUNTS = st.sampled_from([1, 1, 1, 1, 2])


def _classes(providers):
    """The resource classes a request group of ``providers`` draws:
    ``(unsuffixed, numbered)`` strategies of sets -- mostly a compute
    node's classes and sometimes one more, or a (shared) disk alone, for
    the unsuffixed group; one class of a child provider (or a compute
    node's) for a numbered one; mostly classes some provider has."""
    held = sorted({rc for p in providers for rc in p.inventories})
    extra = sorted(set(held) - {'VCPU', 'MEMORY_MB'}) or ['VGPU']
    devices = sorted({rc for p in providers if p.parent_uuid
                      for rc in p.inventories}) or ['VCPU', 'MEMORY_MB']
    unsuffixed = st.one_of(st.builds(
        lambda base, more: base | more,
        st.sets(st.sampled_from(['VCPU', 'MEMORY_MB']), min_size=1),
        st.sets(st.sampled_from(extra), max_size=1)),
        st.just({'DISK_GB'}))
    numbered = st.one_of(
        st.sets(st.sampled_from(devices), min_size=1, max_size=1),
        st.sets(st.sampled_from(devices + ['VCPU', 'MEMORY_MB', 'DISK_GB']),
                min_size=1, max_size=2))
    return unsuffixed, numbered


@st.composite
def group_params(draw, suffix, classes, aggregates, uuids):
    """One group's parameters; ``classes`` None: no resources."""
    params = []
    if classes is not None:
        params.append(('resources' + suffix, ','.join(
            '%s:%d' % (rc, draw(AMOUNTS)) for rc in sorted(draw(classes)))))
    if classes is None or draw(st.integers(0, 3)) == 3:
        params.append(('required' + suffix, draw(traits_param())))
    if draw(st.integers(0, 4)) == 4:
        agg = draw(st.sampled_from(aggregates))
        params.append(('member_of' + suffix, draw(st.sampled_from(
            [agg, '!' + agg, 'in:' + ','.join(aggregates)]))))
    if draw(st.integers(0, 11)) == 11:
        params.append(('in_tree' + suffix, draw(st.sampled_from(uuids))))
    return params


@st.composite
def affinity_request(draw, forest):
    """A request shaped as Nova's NUMA affinity ones: a NUMA node's
    VCPU and memory in one numbered group, a device in another, both in
    a ``same_subtree``, maybe with a group without resources (a trait of
    theirs) in it too; the unsuffixed group sometimes; ``none`` or
    ``isolate``."""
    providers, aggregates = forest
    devices = sorted({rc for p in providers if p.parent_uuid
                      for rc in p.inventories} - {'VCPU', 'MEMORY_MB'})
    params = []
    if draw(st.booleans()):
        params.append(('resources', 'DISK_GB:1'))
    params.append(('resources1', 'MEMORY_MB:1,VCPU:1'))
    params.append(('resources2', '%s:1' % draw(st.sampled_from(
        devices or ['VGPU']))))
    subtree = ['1', '2']
    if draw(st.booleans()):
        params.append(('required3', draw(traits_param())))
        subtree.append('3')
    params.append(('same_subtree', ','.join(subtree)))
    params.append(('group_policy', draw(st.sampled_from(['none',
                                                         'isolate']))))
    return params


@st.composite
def isolate_request(draw, forest):
    """Two or three numbered groups each asking one unit of a class that
    child providers hold, ``isolate`` (or ``none``) deciding whether
    they may share a provider, the first sometimes ``in_tree`` a compute
    node; no unsuffixed group, so that Placement's in-place merge does
    not arise and the policy itself is compared."""
    providers, _ = forest
    classes = sorted({rc for p in providers if p.parent_uuid
                      for rc in p.inventories})
    rc = draw(st.sampled_from(classes or ['VCPU']))
    count = draw(st.integers(2, 3))
    params = [('resources%d' % index, '%s:1' % rc)
              for index in range(1, count + 1)]
    params.append(('group_policy', draw(st.sampled_from(
        ['isolate', 'isolate', 'none']))))
    if draw(st.booleans()):
        params.append(('in_tree1', draw(st.sampled_from(
            [p.uuid for p in providers if not p.parent_uuid]))))
    return params


@st.composite
def requests(draw, forest):
    """Query parameters (a list of pairs, in order) over ``forest``."""
    shape = draw(st.integers(0, 7))
    if shape >= 6:
        return draw(affinity_request(forest))
    if shape == 5:
        return draw(isolate_request(forest))
    providers, aggregates = forest
    uuids = [p.uuid for p in providers]
    unsuffixed, numbered_classes = _classes(providers)
    numbered = draw(st.lists(st.sampled_from(['1', '2', '3', '_NET']),
                             unique=True, max_size=3))
    params = []
    if not numbered or draw(st.integers(0, 4)) < 4:
        params += draw(group_params('', unsuffixed, aggregates, uuids))
    resourceless = set()
    for index, suffix in enumerate(numbered):
        empty = index > 0 and draw(st.integers(0, 5)) == 5
        if empty:
            resourceless.add(suffix)
        params += draw(group_params(suffix,
                                    None if empty else numbered_classes,
                                    aggregates, uuids))
    if numbered and draw(st.integers(0, 19)) < 19:
        params.append(('group_policy', draw(st.sampled_from(
            ['none', 'none', 'isolate']))))
    if len(numbered) > 1 and (resourceless or draw(st.integers(0, 2)) == 2):
        subtree = set(draw(st.sets(st.sampled_from(numbered), min_size=2)))
        params.append(('same_subtree', ','.join(sorted(
            subtree | resourceless))))
    if draw(st.integers(0, 5)) == 5:
        params.append(('root_required', draw(st.sampled_from(
            ['CUSTOM_HOST_A', '!CUSTOM_HOST_B', 'CUSTOM_HOST_B,!CUSTOM_HOST_A']
        ))))
    return params


@pytest.fixture(scope='module')
def placement(module_placement):
    """``(server, engine)``: this module's own Placement (each example
    deletes its providers, so that it alone decides whether any provider
    is nested or shares) and an engine on its database."""
    engine = sa.create_engine(module_placement.database_url)
    yield module_placement, engine
    engine.dispose()


def _canonical(request):
    """An allocation request as sorted JSON text (mapping lists
    sorted)."""
    return json.dumps({
        'allocations': request['allocations'],
        'mappings': {suffix: sorted(uuids) for suffix, uuids
                     in request['mappings'].items()}}, sort_keys=True)


def _mine(body, mine):
    """The allocation requests (canonical), candidate roots and provider
    summaries (traits sorted) of ``body`` within ``mine`` (uuids)."""
    summaries = body['provider_summaries']
    found = {_canonical(request) for request in body['allocation_requests']
             if set(request['allocations']) <= mine}
    roots = {summaries[rp]['root_provider_uuid']
             for request in body['allocation_requests']
             for rp in request['allocations'] if rp in mine}
    kept = {rp: dict(summary, traits=sorted(summary['traits']))
            for rp, summary in summaries.items() if rp in mine}
    return found, roots, json.dumps(kept, sort_keys=True)


def _merged_in_place(request):
    """Whether Placement 16.0.0 may add one group's amount into
    another's record in place: ``group_policy`` not none and a resource
    class asked by the unsuffixed group and a numbered one (numbered
    groups are on distinct providers with ``isolate``)."""
    if request.group_policy == 'none' or '' not in request.groups:
        return False
    unsuffixed = request.groups[''].resources.keys()
    return any(unsuffixed & request.groups[suffix].resources.keys()
               for suffix in request.numbered)


def _sharing_only(request, body, sharing):
    """Our allocation requests whose unsuffixed part comes from sharing
    providers only, beside numbered groups (Placement keeps those for
    one anchor only)."""
    if not request.numbered or '' not in request.groups:
        return set()
    return {_canonical(found) for found in body['allocation_requests']
            if set(found['mappings']['']) <= sharing}


def _compare(api, forest, params, mine, sharing):
    """One request: our answer against Placement's (see the module)."""
    reply = api.client.get('/allocation_candidates', params=params)
    try:
        request = query.Request.from_query(params)
    except ValueError:
        assert reply.status_code == 400, (params, reply.text[:300])
        event('both refuse')
        return
    if reply.status_code == 500:
        # Placement 16.0.0 looks forbidden traits up by name where it
        # needs their ids (research_context._get_trees_with_traits).
        assert 'invalid input syntax for type integer' in reply.text
        event('Placement 500: forbidden trait over trees')
        return
    assert reply.status_code == 200, (params, reply.text[:300])
    if _merged_in_place(request):
        event('Placement adds amounts in place: not compared')
        return
    ours_body = trees.allocation_candidates(forest, request)
    ours, ours_roots, ours_summaries = _mine(ours_body, mine)
    theirs, their_roots, their_summaries = _mine(reply.json(), mine)
    lost = _sharing_only(request, ours_body, sharing) - theirs
    if lost:
        assert theirs <= ours and ours - theirs <= lost, params
        event('Placement loses sharing-only candidates')
        return
    assert ours == theirs, params
    assert ours_roots == their_roots, params
    assert ours_summaries == their_summaries, params
    event('equal, %s candidates' % ('some' if ours else 'no'))
    event('numbered groups' if request.numbered else 'unsuffixed only')
    if ours:
        for feature in _features(request, params):
            event('equal with candidates: ' + feature)


def _features(request, params):
    """What ``request`` uses, for the test's statistics."""
    names = {name.rstrip('0123456789_NET') for name, _ in params}
    groups = request.groups.values()
    return [feature for feature, used in (
        ('group_policy=isolate', request.group_policy == 'isolate'),
        ('same_subtree', bool(request.same_subtree)),
        ('root_required', 'root_required' in names),
        ('in_tree', 'in_tree' in names),
        ('member_of', 'member_of' in names),
        ('forbidden trait', any(group.forbidden for group in groups)),
        ('in: traits', any(len(any_of) > 1 for group in groups
                           for any_of in group.required)),
        ('group without resources',
         any(not group.resources for group in groups)),
    ) if used]


@settings(max_examples=75, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(st.data())
def test_nested_candidates_equal_placements(placement, data):
    server, engine = placement
    providers, _ = forest_ = data.draw(forests())
    api = PlacementAPI(server.url, microversion=MICROVERSION)
    api.ensure(TRAITS, [PCI])
    consumers = []
    try:
        for provider_ in providers:
            consumer = api.add_tree_provider(provider_)
            if consumer:
                consumers.append(consumer)
        mine = {provider_.uuid for provider_ in providers}
        with engine.connect() as connection:
            roots, children = database.read_trees(connection)
        read = {p.uuid: p for p in [*roots.values(), *children.values()]}
        for provider_ in providers:
            assert read[provider_.uuid] == provider_
        forest = provider_trees.Forest(
            candidates.ProviderTable(roots.values()),
            candidates.ProviderTable(children.values()))
        sharing = {p.uuid for p in providers
                   if provider_trees.SHARING_TRAIT in p.traits}
        event('nested' if forest.has_trees else 'flat')
        event('sharing' if sharing else 'no sharing')
        for params in data.draw(st.lists(requests(forest_), min_size=2,
                                         max_size=6)):
            _compare(api, forest, params, mine, sharing)
    finally:
        api.delete(providers, consumers)

