"""PCI pools with devices in Placement (Nova 34): an allocation
candidate's mappings decide the pools a flavor's PCI request uses; a
Neutron port's request, or none given, any matching pool; the keys
Placement matches are not compared with the pools; and the warning when
a request contradicts ``[filter_scheduler] pci_in_placement``."""

import logging

import fakes

from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.objects import request_group as group_obj
from scheduler.resources import numa
from scheduler.resources import pci_placement
from scheduler.resources import pci_pools

REQUEST_ID = '5f1c1b7e-0d5e-4a44-9f5e-6a7a3c0b9d11'
RP_A = 'aaaaaaaa-0000-4000-8000-000000000001'
RP_B = 'bbbbbbbb-0000-4000-8000-000000000002'
SMALL = {'size_kb': 4, 'total': 262144, 'used': 0, 'reserved': 0}


def _pools(count_a=1, count_b=1, numa_a=0, numa_b=0):
    return [{'vendor_id': '8086', 'product_id': '1520', 'numa_node': numa_a,
             'count': count_a, 'dev_type': 'type-VF', 'rp_uuid': RP_A},
            {'vendor_id': '8086', 'product_id': '1520', 'numa_node': numa_b,
             'count': count_b, 'dev_type': 'type-VF', 'rp_uuid': RP_B}]


def _request(count=1, alias='nic', **spec):
    spec.setdefault('vendor_id', '8086')
    return pci_obj.InstancePCIRequest(count=count, spec=[spec],
                                      alias_name=alias,
                                      request_id=REQUEST_ID)


def _mapping(*providers):
    mapping = {'': ['cn1']}
    for index, provider in enumerate(providers):
        mapping['%s-%d' % (REQUEST_ID, index)] = [provider]
    return mapping


def test_the_candidates_providers_decide_the_pools():
    pools = _pools(count_a=0)
    assert not pci_pools.support_requests(pools, [_request()],
                                          provider_mapping=_mapping(RP_A))
    assert pci_pools.support_requests(pools, [_request()],
                                      provider_mapping=_mapping(RP_B))
    # Without a mapping (not in Placement) any pool that matches.
    assert pci_pools.support_requests(pools, [_request()])
    # Two devices from one provider need two there.
    assert not pci_pools.support_requests(
        _pools(), [_request(count=2)], provider_mapping=_mapping(RP_A, RP_A))
    assert pci_pools.support_requests(
        _pools(), [_request(count=2)], provider_mapping=_mapping(RP_A, RP_B))


def test_consumption_takes_the_mapped_providers_devices():
    pools = pci_pools.parse_pools(_pools(count_a=2, count_b=2))
    pci_pools.apply_requests(pools, [_request()],
                             provider_mapping=_mapping(RP_B))
    assert [pool.count for pool in pools] == [2, 1]


def test_a_ports_request_and_no_mapping_take_any_pool():
    port = _request(alias=None)
    assert pci_placement.request_providers(port, _mapping(RP_A)) == []
    assert pci_pools.support_requests(_pools(count_b=0), [port],
                                      provider_mapping=_mapping(RP_B))
    # The providers a conductor lists after its claims are not read.
    listed = _request(rp_uuids=RP_B)
    assert pci_placement.request_providers(listed, None) == []
    assert pci_pools.support_requests(_pools(count_b=0), [listed])
    assert pci_placement.request_providers(_request(), {}) == []


def test_keys_placement_matches_are_not_compared_with_pools():
    request = _request(resource_class='CUSTOM_NIC', traits='CUSTOM_FAST',
                       rp_uuids=RP_A)
    assert pci_pools.support_requests(_pools(), [request])


def test_pools_without_the_tag_and_split_providers(caplog):
    untagged = [dict(pool) for pool in _pools()]
    for pool in untagged:
        del pool['rp_uuid']
    assert not pci_pools.support_requests(untagged, [_request()],
                                          provider_mapping=_mapping(RP_A))
    split = _pools()
    split[1]['rp_uuid'] = RP_A
    with caplog.at_level(logging.WARNING):
        assert not pci_pools.support_requests(
            split, [_request()], provider_mapping=_mapping(RP_A))
    assert 'split over one resource provider' in caplog.text


def test_numa_fit_follows_the_mapped_device():
    """The instance's cell (2 CPUs) fits cell 0 only (cell 1 has one
    CPU), PCI ``required`` on its cell: mapped to the device on cell 1,
    no fit; to the one on cell 0, a fit."""
    host = {'cells': [
        {'id': cell, 'cpuset': cpus, 'memory': 1024, 'cpu_usage': 0,
         'memory_usage': 0, 'pinned_cpus': [], 'siblings': [],
         'mempages': [SMALL]} for cell, cpus in ((0, [0, 1]), (1, [2]))]}
    topology = numa_obj.InstanceNUMATopology(cells=[
        numa_obj.InstanceNUMACell(id=0, cpuset={0, 1}, memory=512)])
    request = _request()
    request.numa_policy = 'required'
    pools = _pools(numa_a=1, numa_b=0)
    limits = {'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0}
    assert numa.fit_instance_to_host(host, topology, limits,
                                     pci_requests=[request],
                                     pci_stats=pools,
                                     provider_mapping=_mapping(RP_A)) is None
    fitted = numa.fit_instance_to_host(host, topology, limits,
                                       pci_requests=[request],
                                       pci_stats=pools,
                                       provider_mapping=_mapping(RP_B))
    assert fitted is not None and fitted.cells[0].id == 0


def test_a_request_contradicting_the_option_is_logged_once(caplog,
                                                           monkeypatch):
    monkeypatch.setattr(pci_placement, '_warned', set())
    grouped = fakes.fake_spec(
        pci_requests=pci_obj.InstancePCIRequests(requests=[_request()]),
        requested_resources=[group_obj.RequestGroup(
            requester_id='%s-0' % REQUEST_ID, resources={'CUSTOM_NIC': 1},
            use_same_provider=True)])
    plain = fakes.fake_spec(
        pci_requests=pci_obj.InstancePCIRequests(requests=[_request()]))
    assert pci_placement.pci_groups(grouped) == (1, 1)
    assert pci_placement.pci_groups(plain) == (1, 0)
    with caplog.at_level(logging.WARNING):
        pci_placement.check_option(grouped, True)
        pci_placement.check_option(plain, False)
        assert not caplog.records
        pci_placement.check_option(grouped, False)
        pci_placement.check_option(grouped, False)
        pci_placement.check_option(plain, True)
    assert len(caplog.records) == 2
    assert 'pci_in_placement is False' in caplog.records[0].getMessage()
    assert 'pci_in_placement is True' in caplog.records[1].getMessage()
