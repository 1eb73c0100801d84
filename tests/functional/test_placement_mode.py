"""The Placement mode against a real Placement: candidates, claims and
Selections.

The scheduler's own database (standalone schema, SQLite) holds the
compute nodes and services; the session's Placement (openstack-placement
under gunicorn, on PostgreSQL) holds their resource providers, written as
nova-compute writes them, under the nodes' uuids.  The driver runs in
process with ``[scheduler] use_placement``; its claims are read back
from Placement itself.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import fakes
import pytest
import sqlalchemy as sa
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.drivers import filter_scheduler
from scheduler.placement import candidates
from scheduler_tools import seed

PROJECT = 'project-placement-mode'
USER = 'user-placement-mode'


@pytest.fixture
def placement_db_url(placement_server):
    return placement_server.database_url


@pytest.fixture
def api(placement_server):
    return PlacementAPI(placement_server.url)


@pytest.fixture
def fleet(tmp_path, api, placement_conf):
    """``fleet(*providers)``: compute nodes in the scheduler's database
    and their providers in Placement (same uuid, name = node); returns
    the admin context."""
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'own.sqlite'))

    def make(*providers):
        for provider in providers:
            seed.add_compute(ctx, provider.name, uuid=provider.uuid,
                             vcpus=provider.vcpus,
                             memory_mb=provider.memory_mb,
                             local_gb=provider.disk_gb)
            api.add_compute(provider)
        return ctx
    return make


def _node(name, **fields):
    """A provider named ``name`` plus a random suffix (the session's
    Placement is shared)."""
    fields.setdefault('memory_mb', 4096)
    fields.setdefault('reserved_host_memory_mb', 0)
    fields.setdefault('ram_allocation_ratio', 1.0)
    return ComputeProvider(name='%s-%s' % (name, uuid.uuid4().hex[:8]),
                           **fields)


def _spec(**kwargs):
    kwargs.setdefault('project_id', PROJECT)
    kwargs.setdefault('user_id', USER)
    return fakes.fake_spec(**kwargs)


def _select(driver, ctx, spec, num=1, alternates=False):
    uuids = [str(uuid.uuid4()) for _ in range(num)]
    spec.num_instances = num
    return uuids, driver.select_destinations(ctx, spec, uuids, alternates)


def _allocated(api, instance_uuid):
    return {rp: alloc['resources'] for rp, alloc
            in api.allocations(instance_uuid)['allocations'].items()}


def test_one_then_three_instances_are_claimed_in_placement(fleet, api):
    nodes = [_node('pm-a'), _node('pm-b'), _node('pm-c'), _node('pm-d')]
    ctx = fleet(*nodes)
    by_uuid = {node.uuid: node for node in nodes}
    driver = filter_scheduler.FilterScheduler(ctx)

    (one,), [[selection]] = _select(
        driver, ctx, _spec(memory_mb=1024, vcpus=2, root_gb=10))
    assert selection.compute_node_uuid in by_uuid
    assert _allocated(api, one) == {selection.compute_node_uuid: {
        'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}}
    assert selection.allocation_request_version == '1.36'
    assert json.loads(selection.allocation_request) == {
        'allocations': {selection.compute_node_uuid: {'resources': {
            'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}}},
        'mappings': {'': [selection.compute_node_uuid]}}

    three, lists = _select(driver, ctx, _spec(memory_mb=2048), num=3,
                           alternates=True)
    assert len(lists) == 3
    for instance_uuid, picks in zip(three, lists, strict=True):
        chosen = picks[0].compute_node_uuid
        assert _allocated(api, instance_uuid) == {chosen: {
            'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 1}}
        for pick in picks:
            request = json.loads(pick.allocation_request)
            assert list(request['allocations']) == [pick.compute_node_uuid]
    # Placement's usages are what was claimed: never over a node's RAM.
    for node in nodes:
        assert api.usages(node.uuid).get('MEMORY_MB', 0) <= node.memory_mb


def test_a_trait_a_custom_resource_and_boot_from_volume(fleet, api):
    plain = _node('pm-plain', disk_gb=20, custom=(('CUSTOM_PM_X', 1),))
    fast = _node('pm-fast', disk_gb=20,
                 traits=('COMPUTE_NET_ATTACH_INTERFACE', 'CUSTOM_PM_FAST'))
    ctx = fleet(plain, fast)
    driver = filter_scheduler.FilterScheduler(ctx)

    _, [[picked]] = _select(driver, ctx, _spec(
        extra_specs={'trait:CUSTOM_PM_FAST': 'required'}))
    assert picked.compute_node_uuid == fast.uuid

    (custom,), [[picked]] = _select(driver, ctx, _spec(
        extra_specs={'resources:CUSTOM_PM_X': '1'}))
    assert picked.compute_node_uuid == plain.uuid
    assert _allocated(api, custom)[plain.uuid]['CUSTOM_PM_X'] == 1
    # Its one unit is taken: a second one has nowhere to go.
    with pytest.raises(exception.NoValidHost):
        _select(driver, ctx, _spec(
            extra_specs={'resources:CUSTOM_PM_X': '1'}))

    # A 500 GiB root disk fits nowhere, unless it is a volume.
    with pytest.raises(exception.NoValidHost):
        _select(driver, ctx, _spec(root_gb=500))
    (bfv,), [[picked]] = _select(driver, ctx, _spec(root_gb=500,
                                                    is_bfv=True))
    assert 'DISK_GB' not in _allocated(api, bfv)[picked.compute_node_uuid]


def test_a_burst_places_exactly_the_room_there_is(fleet, api):
    """Two drivers (two services' views), two threads each, boot 1 GiB
    instances on three 3 GiB nodes until NoValidHost: exactly nine are
    placed, and Placement never holds more than a node's RAM."""
    nodes = [_node('pm-burst', memory_mb=3072) for _ in range(3)]
    ctx = fleet(*nodes)
    drivers = [filter_scheduler.FilterScheduler(ctx) for _ in range(2)]
    placed, refused, errors = [], [], []

    def boot(driver):
        while True:
            try:
                uuids, _ = _select(driver, ctx, _spec(memory_mb=1024))
            except exception.NoValidHost:
                refused.append(1)
                return
            except Exception as exc:     # reported below
                errors.append(exc)
                return
            placed.extend(uuids)

    threads = [threading.Thread(target=boot, args=(driver,))
               for driver in drivers for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert len(placed) == 9, (
        [api.usages(node.uuid) for node in nodes],
        [(uuid_, api.allocations(uuid_)) for uuid_ in placed])
    assert sorted(api.usages(node.uuid)['MEMORY_MB']
                  for node in nodes) == [3072] * 3


def test_request_filters_availability_zone_and_disabled_computes(
        fleet, api, conf):
    """Nova's always-on request filters: the zone's aggregates become
    ``member_of``, and a provider with COMPUTE_STATUS_DISABLED is never
    a candidate.  The RAM weigher prefers the big node, and the only
    enabled filter is the ComputeFilter (as Nova 34 has no
    AvailabilityZoneFilter), so each rule has to be what keeps it
    away."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    small, big = _node('pm-az-small'), _node('pm-az-big', memory_mb=16384)
    ctx = fleet(small, big)
    zone = seed.add_aggregate(ctx, 'pm-az1', [small.name],
                              {'availability_zone': 'pm-az1'})
    api.in_aggregate(small.uuid, zone['uuid'])
    driver = filter_scheduler.FilterScheduler(ctx)
    _, [[picked]] = _select(driver, ctx, _spec())
    assert picked.compute_node_uuid == big.uuid
    _, [[picked]] = _select(driver, ctx, _spec(availability_zone='pm-az1'))
    assert picked.compute_node_uuid == small.uuid

    api.add_traits(big.uuid, 'COMPUTE_STATUS_DISABLED')
    _, [[picked]] = _select(driver, ctx, _spec())
    assert picked.compute_node_uuid == small.uuid


def test_an_evacuation_doubles_up_the_source_allocation(fleet, api):
    """An evacuated instance keeps its allocation on the source host: the
    claim on the destination is made on top of it (with the consumer's
    generation), as Nova's report client does."""
    source, destination = _node('pm-evac-src'), _node('pm-evac-dst')
    ctx = fleet(source, destination)
    instance_uuid = str(uuid.uuid4())
    held = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    assert api.claim(instance_uuid, {'allocations': {
        source.uuid: {'resources': held}}}, PROJECT, USER) == 204
    driver = filter_scheduler.FilterScheduler(ctx)
    spec = _spec(ignore_hosts=[source.name], instance_uuid=instance_uuid)
    [[picked]] = driver.select_destinations(ctx, spec, [instance_uuid],
                                            False)
    assert picked.compute_node_uuid == destination.uuid
    assert _allocated(api, instance_uuid) == {source.uuid: held,
                                              destination.uuid: held}


def _freed_within_bound(driver, ctx, node, conf):
    """The next decision, once ``[placement_database]
    usage_check_interval`` plus one read (bounded by a second here) has
    passed, places a 3 GiB instance on ``node``, freed in Placement
    without a generation bump; returns the seconds until then."""
    started = time.monotonic()
    bound = conf.placement_database.usage_check_interval + 1.0
    time.sleep(bound)
    _, [[picked]] = _select(driver, ctx, _spec(memory_mb=3072))
    assert picked.compute_node_uuid == node.uuid
    return time.monotonic() - started


@pytest.mark.parametrize('how', ['delete', 'moved off'])
def test_usage_freed_without_a_generation_bump_is_seen(fleet, api, conf,
                                                       how):
    """Two 3 GiB nodes, each full; one instance's allocation leaves its
    node as Nova frees it: ``DELETE /allocations/{consumer}`` (server
    delete, shelve-offload, failed build) or a ``PUT`` that moves the
    consumer to another provider.  Placement does not bump the freed
    provider's generation; the next decision after the usage watch's
    interval places on that node anyway.  Only Placement says where the
    instance fits (Nova 34 has no RAM filter)."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    nodes = [_node('pm-freed', memory_mb=3072) for _ in range(2)]
    spare = _node('pm-freed-spare', memory_mb=3072)
    ctx = fleet(*nodes)
    api.add_compute(spare)      # a provider with no compute node here
    driver = filter_scheduler.FilterScheduler(ctx)
    (first,), [[picked]] = _select(driver, ctx, _spec(memory_mb=3072))
    _select(driver, ctx, _spec(memory_mb=3072))
    with pytest.raises(exception.NoValidHost):
        _select(driver, ctx, _spec(memory_mb=3072))
    freed = next(node for node in nodes
                 if node.uuid == picked.compute_node_uuid)
    generation = api.provider(freed.uuid)['generation']
    if how == 'delete':
        api._call('DELETE', '/allocations/%s' % first, (204,))
    else:
        held = api.allocations(first)
        assert api.claim(first, {'allocations': {spare.uuid: {
            'resources': held['allocations'][freed.uuid]['resources']}}},
            PROJECT, USER, held['consumer_generation']) == 204
    assert api.usages(freed.uuid)['MEMORY_MB'] == 0
    assert api.provider(freed.uuid)['generation'] == generation
    _freed_within_bound(driver, ctx, freed, conf)
    driver.stop()
    _remove(api, [first], spare.uuid)


def test_the_usage_watch_stops_with_the_driver(fleet, api):
    ctx = fleet(_node('pm-watch'))
    driver = filter_scheduler.FilterScheduler(ctx)
    thread = driver.candidates.view.watch._thread
    assert thread.is_alive()
    driver.stop()
    assert not thread.is_alive()
    assert driver.candidates.view.watch is None


def test_bare_metal_nodes_by_their_custom_resource_class(fleet, api, conf):
    """Ironic nodes as Nova schedules them since Pike: each node's
    provider has one unit of its custom resource class and nothing
    else; a flavor asking ``resources:CUSTOM_BAREMETAL_GOLD=1`` with
    VCPU, MEMORY_MB and DISK_GB overridden to 0 gets a whole node, one
    instance per node, then NoValidHost."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    ctx = fleet()
    host = 'ironic-%s' % uuid.uuid4().hex[:8]
    nodes = []
    for index in range(2):
        provider = candidates.Provider(
            uuid=str(uuid.uuid4()), name='%s-node%d' % (host, index),
            inventories={'CUSTOM_BAREMETAL_GOLD': candidates.Inventory(
                total=1)})
        seed.add_compute(ctx, host, node=provider.name, uuid=provider.uuid,
                         vcpus=0, memory_mb=0, local_gb=0,
                         service=index == 0, hypervisor_type='ironic')
        api.add_provider(provider)
        nodes.append(provider.uuid)
    driver = filter_scheduler.FilterScheduler(ctx)
    gold = {'resources:CUSTOM_BAREMETAL_GOLD': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}
    placed = []
    for _ in range(2):
        (instance_uuid,), [[picked]] = _select(driver, ctx, _spec(
            vcpus=8, memory_mb=65536, root_gb=500, extra_specs=gold))
        assert _allocated(api, instance_uuid) == {picked.compute_node_uuid: {
            'CUSTOM_BAREMETAL_GOLD': 1}}
        placed.append(picked.compute_node_uuid)
    assert sorted(placed) == sorted(nodes)
    with pytest.raises(exception.NoValidHost):
        _select(driver, ctx, _spec(extra_specs=gold))


def test_the_view_reads_only_what_changed(fleet, api, placement_db_url,
                                          monkeypatch):
    """After the first load, a refresh reads the generations of the
    providers stamped since the last read only; a changed inventory is
    read again, and a provider that went makes a full check."""
    from scheduler.placement import database
    from scheduler.placement import view as view_lib

    monkeypatch.setattr(view_lib, 'FULL_CHECK_INTERVAL', 3600.0)
    node = _node('pm-incr', memory_mb=4096)
    fleet(node)
    engine = sa.create_engine(placement_db_url)
    placement_view = view_lib.PlacementView(engine)
    placement_view.refresh()
    full_reads = []
    real = database.read_generations
    monkeypatch.setattr(database, 'read_generations', lambda connection: (
        full_reads.append(1), real(connection))[1])
    assert placement_view.refresh() == 0
    path = '/resource_providers/%s/inventories/MEMORY_MB' % node.uuid
    api._json('PUT', path, json={
        'resource_provider_generation':
            api.provider(node.uuid)['generation'], 'total': 8192})
    assert placement_view.refresh() == 1
    row = placement_view.table.row_of[node.uuid]
    assert placement_view.table.providers[row].inventories[
        'MEMORY_MB'].total == 8192
    assert full_reads == []
    api._call('DELETE', '/resource_providers/%s' % node.uuid, (204,))
    placement_view.refresh()
    assert full_reads == [1]
    assert node.uuid not in placement_view.table.row_of
    engine.dispose()


def _remove(api, instance_uuids, *providers):
    """Delete instances' allocations, then providers (children first),
    so that later tests of the session's Placement see no trees."""
    for instance_uuid in instance_uuids:
        api._call('DELETE', '/allocations/%s' % instance_uuid, (204, 404))
    for rp_uuid in providers:
        api._call('DELETE', '/resource_providers/%s' % rp_uuid, (204, 404))


def test_vgpus_of_child_providers_are_claimed_one_each(fleet, api, conf):
    """Two instances asking a VGPU each: only the node with VGPU child
    providers can take them, each instance claims a different child,
    and a third finds none left (computed in memory, claimed in
    Placement)."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    node, plain = _node('pm-vgpu'), _node('pm-novgpu', memory_mb=16384)
    ctx = fleet(node, plain)
    gpus = [api.add_child(node.uuid, '%s-gpu%d' % (node.name, index),
                          {'VGPU': 1}) for index in range(2)]
    driver = filter_scheduler.FilterScheduler(ctx)
    vgpu = {'resources:VGPU': '1'}
    placed = []
    try:
        placed, lists = _select(driver, ctx, _spec(extra_specs=vgpu), num=2)
        assert [picks[0].compute_node_uuid for picks in lists] == [
            node.uuid, node.uuid]
        taken = []
        for instance_uuid in placed:
            allocated = _allocated(api, instance_uuid)
            assert allocated[node.uuid] == {'VCPU': 1, 'MEMORY_MB': 512,
                                            'DISK_GB': 1}
            (gpu,) = set(allocated) - {node.uuid}
            assert allocated[gpu] == {'VGPU': 1}
            taken.append(gpu)
        assert sorted(taken) == sorted(gpus)
        request = json.loads(lists[0][0].allocation_request)
        assert set(request['allocations']) <= {node.uuid, *gpus}
        with pytest.raises(exception.NoValidHost):
            _select(driver, ctx, _spec(extra_specs=vgpu))
    finally:
        _remove(api, placed, *gpus, node.uuid, plain.uuid)


def test_a_disk_from_a_sharing_provider(fleet, api, conf):
    """A compute node without local disk in an aggregate with a sharing
    provider of DISK_GB: the root disk is claimed from the sharing
    provider, the rest from the node."""
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    ctx = fleet()
    aggregate = str(uuid.uuid4())
    node = candidates.Provider(
        uuid=str(uuid.uuid4()), name='pm-diskless-%s' % uuid.uuid4().hex[:8],
        inventories={'VCPU': candidates.Inventory(total=4, max_unit=4),
                     'MEMORY_MB': candidates.Inventory(total=4096,
                                                       max_unit=4096)},
        aggregates=frozenset([aggregate]))
    shared = candidates.Provider(
        uuid=str(uuid.uuid4()), name='pm-nfs-%s' % uuid.uuid4().hex[:8],
        inventories={'DISK_GB': candidates.Inventory(total=100,
                                                     max_unit=100)},
        traits=frozenset(['MISC_SHARES_VIA_AGGREGATE']),
        aggregates=frozenset([aggregate]))
    seed.add_compute(ctx, node.name, uuid=node.uuid, vcpus=4,
                     memory_mb=4096, local_gb=0)
    api.add_tree_provider(node)
    api.add_tree_provider(shared)
    driver = filter_scheduler.FilterScheduler(ctx)
    placed = []
    try:
        placed, [[picked]] = _select(driver, ctx, _spec(root_gb=10))
        assert picked.compute_node_uuid == node.uuid
        assert _allocated(api, placed[0]) == {
            node.uuid: {'VCPU': 1, 'MEMORY_MB': 512},
            shared.uuid: {'DISK_GB': 10}}
    finally:
        _remove(api, placed, node.uuid, shared.uuid)


def test_the_view_reads_a_changed_child_provider_only(fleet, api,
                                                      placement_db_url,
                                                      monkeypatch):
    """A child provider whose inventory changes is read again alone, in
    the forest the trees' candidates use; one that goes makes a full
    read."""
    from scheduler.placement import view as view_lib

    monkeypatch.setattr(view_lib, 'FULL_CHECK_INTERVAL', 3600.0)
    node = _node('pm-incr-tree')
    fleet(node)
    gpu = api.add_child(node.uuid, node.name + '-gpu', {'VGPU': 1})
    engine = sa.create_engine(placement_db_url)
    try:
        placement_view = view_lib.PlacementView(engine)
        placement_view.refresh()
        assert placement_view.refresh() == 0
        api._json('PUT', '/resource_providers/%s/inventories/VGPU' % gpu,
                  json={'resource_provider_generation':
                        api.provider(gpu)['generation'], 'total': 4})
        assert placement_view.refresh() == 1
        forest = placement_view.forest
        child = forest.provider(forest.index_of(gpu))
        assert child.inventories['VGPU'].total == 4
        assert child.root_uuid == node.uuid
        api._call('DELETE', '/resource_providers/%s' % gpu, (204,))
        placement_view.refresh()
        assert placement_view.forest.index_of(gpu) == -1
    finally:
        api._call('DELETE', '/resource_providers/%s' % node.uuid, (204,))
        engine.dispose()
