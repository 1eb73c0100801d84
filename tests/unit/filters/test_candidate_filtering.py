"""NUMATopologyFilter and PciPassthroughFilter over a host's allocation
candidates (Placement mode, Nova 34): each candidate is checked with its
mappings, only those that fit are kept (in order), the host fails when
none is left; without candidates the host is checked as a whole; and
the consumption follows the first candidate left."""

import fakes

from scheduler import filters
from scheduler.filters import numa_topology_filter
from scheduler.filters import pci_passthrough_filter
from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.resources import numa
from scheduler.resources import pci_pools

REQUEST_ID = '5f1c1b7e-0d5e-4a44-9f5e-6a7a3c0b9d11'
RP_A = 'aaaaaaaa-0000-4000-8000-000000000001'
RP_B = 'bbbbbbbb-0000-4000-8000-000000000002'
SMALL = {'size_kb': 4, 'total': 262144, 'used': 0, 'reserved': 0}
# Cell 0: two CPUs; cell 1: one.
TOPOLOGY = {'cells': [
    {'id': cell, 'cpuset': cpus, 'memory': 1024, 'cpu_usage': 0,
     'memory_usage': 0, 'pinned_cpus': [], 'siblings': [],
     'mempages': [SMALL]} for cell, cpus in ((0, [0, 1]), (1, [2]))]}


def _pools(count_a=1, count_b=1):
    return [{'vendor_id': '8086', 'product_id': '1520', 'numa_node': 1,
             'count': count_a, 'dev_type': 'type-VF', 'rp_uuid': RP_A},
            {'vendor_id': '8086', 'product_id': '1520', 'numa_node': 0,
             'count': count_b, 'dev_type': 'type-VF', 'rp_uuid': RP_B}]


def _candidate(device):
    return {'allocations': {'cn1': {'resources': {'VCPU': 2}},
                            device: {'resources': {'CUSTOM_NIC': 1}}},
            'mappings': {'': ['cn1'], REQUEST_ID + '-0': [device]}}


def _spec(numa_cells=False, policy=None):
    request = pci_obj.InstancePCIRequest(
        count=1, spec=[{'vendor_id': '8086'}], alias_name='nic',
        request_id=REQUEST_ID, numa_policy=policy)
    topology = numa_obj.InstanceNUMATopology(cells=[
        numa_obj.InstanceNUMACell(id=0, cpuset={0, 1}, memory=512)]
    ) if numa_cells else None
    return fakes.fake_spec(
        numa_topology=topology,
        pci_requests=pci_obj.InstancePCIRequests(requests=[request]))


def _host(pools, candidates, topology=None):
    host = fakes.fake_host_state(pci_stats=pools, numa_topology=topology,
                                 cpu_allocation_ratio=1.0,
                                 ram_allocation_ratio=1.0)
    host.allocation_candidates = candidates
    return host


def test_the_pci_filter_keeps_the_candidates_whose_devices_are_free():
    pci = pci_passthrough_filter.PciPassthroughFilter()
    host = _host(_pools(count_a=0), [_candidate(RP_A), _candidate(RP_B)])
    assert pci.host_passes(host, _spec())
    assert list(host.allocation_candidates) == [_candidate(RP_B)]
    none_left = _host(_pools(count_a=0), [_candidate(RP_A)])
    assert not pci.host_passes(none_left, _spec())
    assert list(none_left.allocation_candidates) == []
    # Not Placement mode: the host as a whole (pool B has a device).
    whole = _host(_pools(count_a=0), None)
    assert pci.host_passes(whole, _spec())
    assert whole.allocation_candidates is None


def test_the_numa_filter_keeps_the_candidates_whose_device_is_local():
    """The instance fits cell 0 only; the device of RP_A is on cell 1, so
    with the ``required`` PCI NUMA policy only RP_B's candidate fits."""
    numa_filter = numa_topology_filter.NUMATopologyFilter()
    host = _host(_pools(), [_candidate(RP_A), _candidate(RP_B)], TOPOLOGY)
    spec = _spec(numa_cells=True, policy='required')
    assert numa_filter.host_passes(host, spec)
    assert list(host.allocation_candidates) == [_candidate(RP_B)]
    assert host.limits['numa_topology'].cpu_allocation_ratio == 1.0
    remote = _host(_pools(), [_candidate(RP_A)], TOPOLOGY)
    assert not numa_filter.host_passes(remote, spec)
    assert list(remote.allocation_candidates) == []
    assert 'numa_topology' not in remote.limits
    # With the ``preferred`` policy the remote device does too.
    preferred = _host(_pools(), [_candidate(RP_A), _candidate(RP_B)],
                      TOPOLOGY)
    assert numa_filter.host_passes(preferred, _spec(numa_cells=True,
                                                    policy='preferred'))
    assert len(preferred.allocation_candidates) == 2


def test_filter_candidates_keeps_the_order_and_says_whether_any_is_left():
    host = _host(None, [{'mappings': {'': [str(n)]}} for n in range(4)])
    checked = []

    def odd(mapping):
        checked.append(mapping[''][0])
        return int(mapping[''][0]) % 2

    assert filters.filter_candidates(host, odd)
    assert checked == ['0', '1']        # decided at the first that fits
    assert list(host.allocation_candidates) == [{'mappings': {'': ['1']}},
                                                {'mappings': {'': ['3']}}]
    assert not filters.filter_candidates(host, lambda mapping: False)
    whole = _host(None, None)
    assert filters.filter_candidates(whole, lambda mapping: mapping is None)


def test_the_consumption_takes_the_first_surviving_candidates_devices():
    host = _host(_pools(), [_candidate(RP_B), _candidate(RP_A)])
    numa.consume_numa_and_pci(host, _spec())
    assert [pool.count for pool in pci_pools.parse_pools(
        host.pci_stats)] == [1, 0]
    # Without candidates, Nova's greedy order: the first pool.
    plain = _host(_pools(), None)
    numa.consume_numa_and_pci(plain, _spec())
    assert [pool.count for pool in pci_pools.parse_pools(
        plain.pci_stats)] == [0, 1]
