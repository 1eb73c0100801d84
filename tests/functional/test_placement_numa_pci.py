"""Per-allocation-candidate NUMA and PCI checks in Placement mode (Nova
34), against a real Placement.

A compute node reports its PCI devices in Placement (``[pci]
report_in_placement``): two child providers of one device each
(``CUSTOM_PCI_8086_1520``), and its PCI pools in the scheduler's
database tagged with those providers' uuids (``rp_uuid``), as
nova-compute writes them.  The request is what nova-conductor sends
with ``[filter_scheduler] pci_in_placement``: the flavor's PCI request
and one request group per device.  The host has two allocation
candidates, device A's first; when only device B's fits, the service
must claim B (read back from Placement), where the whole-host check
claimed A; when none fits, the request gets NoValidHost.
"""

from __future__ import annotations

import json
import uuid

import fakes
import pytest
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.drivers import filter_scheduler
from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.objects import request_group as group_obj
from scheduler_tools import seed

PROJECT = 'project-numa-pci'
USER = 'user-numa-pci'
PCI_RC = 'CUSTOM_PCI_8086_1520'
SMALL = {'size_kb': 4, 'total': 262144, 'used': 0, 'reserved': 0}
# Cell 0: two CPUs; cell 1: one.
TOPOLOGY = json.dumps({'cells': [
    {'id': cell, 'cpuset': cpus, 'memory': 2048, 'cpu_usage': 0,
     'memory_usage': 0, 'pinned_cpus': [], 'siblings': [],
     'mempages': [SMALL]} for cell, cpus in ((0, [0, 1]), (1, [2]))]})

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def api(placement_server, placement_conf):
    """``[scheduler] use_placement`` on the session's Placement
    (``placement_conf``), PCI in Placement; its API."""
    conf = placement_conf
    conf.set_override('pci_in_placement', True, 'filter_scheduler')
    conf.set_override('enabled_filters', [
        'NUMATopologyFilter', 'PciPassthroughFilter'], 'filter_scheduler')
    return PlacementAPI(placement_server.url)


@pytest.fixture
def node(tmp_path, api):
    """``node(pools)``: one compute node with two PCI providers (A then
    B) in Placement and ``pools(rp_a, rp_b)`` as its PCI pools in the
    scheduler's database; returns ``(ctx, node, rp_a, rp_b)``.  The
    providers and allocations are removed after the test."""
    made = []

    def make(pools, reserved_b=0):
        ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'own.sqlite'))
        compute = ComputeProvider(
            name='numa-pci-%s' % uuid.uuid4().hex[:8], vcpus=4,
            memory_mb=4096, reserved_host_memory_mb=0,
            cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0)
        api.add_compute(compute)
        made.append(compute.uuid)
        rp_a = api.add_child(compute.uuid, compute.name + '-pci-a',
                             {PCI_RC: 1})
        rp_b = api.add_child(compute.uuid, compute.name + '-pci-b',
                             {PCI_RC: 1})
        made[:0] = [rp_a, rp_b]
        if reserved_b:
            path = '/resource_providers/%s/inventories/%s' % (rp_b, PCI_RC)
            api._json('PUT', path, json={
                'resource_provider_generation':
                    api.provider(rp_b)['generation'],
                'total': 1, 'reserved': 1, 'max_unit': 1})
        seed.add_compute(ctx, compute.name, uuid=compute.uuid, vcpus=4,
                         memory_mb=4096, local_gb=100,
                         numa_topology=TOPOLOGY,
                         pci_stats=json.dumps(pools(rp_a, rp_b)),
                         cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0)
        return ctx, compute, rp_a, rp_b

    yield make
    for consumer in consumers:
        api._call('DELETE', '/allocations/%s' % consumer, (204, 404))
    for rp_uuid in made:
        api._call('DELETE', '/resource_providers/%s' % rp_uuid, (204, 404))


consumers: list[str] = []


def _pool(rp_uuid, numa_node, count):
    return {'vendor_id': '8086', 'product_id': '1520',
            'numa_node': numa_node, 'count': count, 'dev_type': 'type-VF',
            'rp_uuid': rp_uuid}


def _spec(numa_cells=False):
    """One device of alias ``nic`` (``required`` NUMA policy), with its
    Placement request group as nova-conductor builds it (the resource
    class Nova derives from the vendor and product ids); with
    ``numa_cells``, one instance cell of two CPUs."""
    request_id = str(uuid.uuid4())
    pci = pci_obj.InstancePCIRequest(
        count=1, alias_name='nic', request_id=request_id,
        numa_policy='required',
        spec=[{'vendor_id': '8086', 'product_id': '1520'}])
    topology = numa_obj.InstanceNUMATopology(cells=[
        numa_obj.InstanceNUMACell(id=0, cpuset={0, 1}, memory=512)]
    ) if numa_cells else None
    return fakes.fake_spec(
        project_id=PROJECT, user_id=USER, memory_mb=512, vcpus=2,
        root_gb=1, numa_topology=topology,
        pci_requests=pci_obj.InstancePCIRequests(requests=[pci]),
        requested_resources=[group_obj.RequestGroup(
            requester_id='%s-0' % request_id, resources={PCI_RC: 1},
            use_same_provider=True)])


def _select(ctx, spec, num=1):
    """``(instance, Selection)`` of each of ``num`` instances."""
    driver = filter_scheduler.FilterScheduler(ctx)
    instances = [str(uuid.uuid4()) for _ in range(num)]
    consumers.extend(instances)
    spec.num_instances = num
    try:
        lists = driver.select_destinations(ctx, spec, instances, False)
    finally:
        driver.stop()
    placed = [(instance, picks[0])
              for instance, picks in zip(instances, lists, strict=True)]
    return placed[0] if num == 1 else placed


def _devices(api, instance):
    return {rp for rp, alloc in api.allocations(instance)[
        'allocations'].items() if PCI_RC in alloc['resources']}


def test_the_pci_filter_makes_the_second_candidate_claimed(node, api):
    """Device A is taken outside Placement (its pool has none free):
    only B's candidate passes PciPassthroughFilter, and B is claimed."""
    ctx, compute, rp_a, rp_b = node(lambda a, b: [_pool(a, 0, 0),
                                                  _pool(b, 0, 1)])
    instance, selection = _select(ctx, _spec())
    assert selection.compute_node_uuid == compute.uuid
    assert _devices(api, instance) == {rp_b}
    request = json.loads(selection.allocation_request)
    assert set(request['allocations']) == {compute.uuid, rp_b}


def test_the_numa_filter_makes_the_second_candidate_claimed(node, api):
    """Both devices are free, A on cell 1 (one CPU), B on cell 0: the
    two-CPU instance cell with the ``required`` policy fits with B only,
    and B is claimed."""
    ctx, compute, rp_a, rp_b = node(lambda a, b: [_pool(a, 1, 1),
                                                  _pool(b, 0, 1)])
    instance, selection = _select(ctx, _spec(numa_cells=True))
    assert selection.compute_node_uuid == compute.uuid
    assert _devices(api, instance) == {rp_b}


def test_two_instances_take_the_devices_in_turn(node, api):
    """Both devices free: the first instance takes A's candidate, and
    its consumption (pool and provider) leaves B's to the second."""
    ctx, compute, rp_a, rp_b = node(lambda a, b: [_pool(a, 0, 1),
                                                  _pool(b, 0, 1)])
    placed = _select(ctx, _spec(), num=2)
    assert [_devices(api, instance) for instance, _ in placed] == [
        {rp_a}, {rp_b}]
    assert [set(json.loads(selection.allocation_request)['allocations'])
            for _, selection in placed] == [{compute.uuid, rp_a},
                                            {compute.uuid, rp_b}]


def test_no_candidate_fits_no_valid_host(node, api):
    """B's device is reserved in Placement (its only candidate is A's)
    and A's is taken outside it: the pools have B's free, but no
    candidate fits, so the host fails."""
    ctx, compute, rp_a, rp_b = node(lambda a, b: [_pool(a, 0, 0),
                                                  _pool(b, 0, 1)],
                                    reserved_b=1)
    with pytest.raises(exception.NoValidHost):
        _select(ctx, _spec())
    # Nothing was claimed on either device.
    assert [api.usages(rp).get(PCI_RC, 0) for rp in (rp_a, rp_b)] == [0, 0]
