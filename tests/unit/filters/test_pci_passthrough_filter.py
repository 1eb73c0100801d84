"""PciPassthroughFilter: the host's PCI pools can serve the request."""

import json
import logging

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler.filters import pci_passthrough_filter
from scheduler.objects import pci as pci_obj
from scheduler.resources import pci_pools

POOLS = [{'vendor_id': '8086', 'product_id': '1520', 'numa_node': 0,
          'count': 2, 'dev_type': 'type-VF'},
         {'vendor_id': '10de', 'product_id': '1eb8', 'numa_node': 1,
          'count': 1, 'dev_type': 'type-PCI'}]


def _requests(*pairs):
    return pci_obj.InstancePCIRequests(requests=[
        pci_obj.InstancePCIRequest(count=count, spec=list(specs))
        for count, specs in pairs])


def _passes(pci_stats, requests):
    host = fakes.fake_host_state(pci_stats=pci_stats)
    spec = fakes.fake_spec(pci_requests=requests)
    return pci_passthrough_filter.PciPassthroughFilter().host_passes(host,
                                                                      spec)


def test_pci_passthrough_pass():
    assert _passes(POOLS, _requests((2, [{'vendor_id': '8086'}])))


def test_pci_passthrough_pass_several_requests():
    assert _passes(POOLS, _requests((2, [{'vendor_id': '8086'}]),
                                    (1, [{'product_id': '1EB8'}])))


def test_pci_passthrough_fail():
    assert not _passes(POOLS, _requests((3, [{'vendor_id': '8086'}])))
    assert not _passes(POOLS, _requests((1, [{'vendor_id': '15b3'}])))


def test_pci_passthrough_no_pci_request():
    assert _passes(None, None)


def test_pci_passthrough_empty_pci_request_obj():
    assert _passes(None, _requests())


def test_pci_passthrough_no_pci_stats():
    assert not _passes([], _requests((1, [{'vendor_id': '8086'}])))


def test_pci_passthrough_with_pci_stats_none():
    assert not _passes(None, _requests((1, [{'vendor_id': '8086'}])))


def test_pci_passthrough_reads_the_primitive_form():
    primitive = {'nova_object.name': 'PciDevicePoolList',
                 'nova_object.data': {'objects': [
                     {'nova_object.name': 'PciDevicePool',
                      'nova_object.data': {'vendor_id': '8086',
                                           'product_id': '1520',
                                           'numa_node': 0, 'count': 1,
                                           'tags': {'physical_network':
                                                    'net1'}}}]}}
    request = _requests((1, [{'physical_network': 'net1'}]))
    assert _passes(primitive, request)
    assert _passes(json.dumps(primitive), request)
    assert not _passes(primitive, _requests((1, [{'physical_network':
                                                  'net2'}])))


def test_pci_passthrough_does_not_consume():
    pools = json.loads(json.dumps(POOLS))
    assert _passes(pools, _requests((2, [{'vendor_id': '8086'}])))
    assert pools == POOLS


def test_pci_passthrough_ignores_numa_affinity():
    # NUMA affinity is the NUMATopologyFilter's business.
    request = pci_obj.InstancePCIRequest(count=1, spec=[{'vendor_id':
                                                         '10de'}],
                                         numa_policy='required')
    assert _passes(POOLS, pci_obj.InstancePCIRequests(requests=[request]))


def test_pci_passthrough_unreadable_pools_fail(caplog):
    with caplog.at_level(logging.WARNING):
        assert not _passes({'bogus': 1},
                           _requests((1, [{'vendor_id': '8086'}])))
    assert 'unreadable PCI pools' in caplog.text


def test_pci_passthrough_is_run_for_every_instance():
    assert not pci_passthrough_filter.PciPassthroughFilter \
        .run_filter_once_per_request


# -- property: a passing host has the devices ------------------------------

_pool_lists = st.lists(st.fixed_dictionaries({
    'vendor_id': st.sampled_from(['8086', '10DE', '0x15b3']),
    'product_id': st.sampled_from(['1', '2']),
    'numa_node': st.sampled_from([None, 0, 1]),
    'count': st.integers(0, 3),
    'physical_network': st.sampled_from(['net1', 'net2']),
}), max_size=5)
_spec_lists = st.lists(st.dictionaries(
    st.sampled_from(['vendor_id', 'product_id', 'physical_network']),
    st.sampled_from(['8086', '10de', '15B3', '1', '2', 'net1']),
    max_size=2), min_size=1, max_size=3)
_request_lists = st.lists(st.tuples(st.integers(0, 4), _spec_lists),
                          min_size=1, max_size=3)


@given(_pool_lists, _request_lists)
def test_a_passing_host_has_enough_matching_devices(pools, pairs):
    if not _passes(pools, _requests(*pairs)):
        return
    parsed = pci_pools.parse_pools(pools)
    for count, specs in pairs:
        matching = sum(pool.count for pool in parsed
                       if any(pci_pools.spec_matches_pool(spec, pool)
                              for spec in specs))
        assert matching >= count
    # And all the requests together fit in the devices there are.
    assert sum(count for count, _ in pairs) <= sum(p.count for p in parsed)
