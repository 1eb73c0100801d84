"""NUMATopologyFilter: CPU policies, fitting, limits."""

import json
import logging

import fakes
import pytest

from scheduler.filters import numa_topology_filter
from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.resources import numa

SMALL = {'size_kb': 4, 'total': 262144, 'used': 0, 'reserved': 0}


def _cell(cell_id, cpus, memory=2048, siblings=(), mempages=(SMALL,),
          **usage):
    cell = {'id': cell_id, 'cpuset': list(cpus), 'memory': memory,
            'cpu_usage': 0, 'memory_usage': 0, 'pinned_cpus': [],
            'siblings': [list(s) for s in siblings],
            'mempages': list(mempages)}
    cell.update(usage)
    return cell


def _primitive(*cells):
    return json.dumps({
        'nova_object.name': 'NUMATopology', 'nova_object.namespace': 'nova',
        'nova_object.version': '1.2',
        'nova_object.data': {'cells': [
            {'nova_object.name': 'NUMACell', 'nova_object.namespace': 'nova',
             'nova_object.version': '1.2', 'nova_object.data': cell}
            for cell in cells]}})


# Two cells of 4 CPUs and 2048 MiB; NUMA_HT has 2 threads per core.
NUMA = _primitive(_cell(0, [0, 1, 2, 3]), _cell(1, [4, 5, 6, 7]))
NUMA_HT = _primitive(_cell(0, [0, 1, 2, 3], siblings=[[0, 1], [2, 3]]),
                     _cell(1, [4, 5, 6, 7], siblings=[[4, 5], [6, 7]]))


def _host(topology=NUMA, cpu_ratio=16.0, ram_ratio=1.5, **attrs):
    return fakes.fake_host_state(numa_topology=topology,
                                 cpu_allocation_ratio=cpu_ratio,
                                 ram_allocation_ratio=ram_ratio, **attrs)


def _topology(*cells):
    return numa_obj.InstanceNUMATopology(cells=[
        numa_obj.InstanceNUMACell(id=i, cpuset=set(cpus), memory=memory,
                                  **kwargs)
        for i, (cpus, memory, kwargs) in enumerate(cells)])


def _spec(*cells, extra_specs=None, image_props=None, **kwargs):
    topology = _topology(*cells) if cells else None
    return fakes.fake_spec(numa_topology=topology, extra_specs=extra_specs,
                           image_props=image_props, **kwargs)


def _passes(host, spec):
    return numa_topology_filter.NUMATopologyFilter().host_passes(host, spec)


def test_numa_topology_filter_pass():
    assert _passes(_host(), _spec(([0], 512, {}), ([1], 512, {})))


def test_numa_topology_filter_numa_instance_no_numa_host_fail():
    assert not _passes(_host(topology=None), _spec(([0], 512, {})))


def test_numa_topology_filter_numa_host_no_numa_instance_pass():
    assert _passes(_host(), _spec())
    assert _passes(_host(topology=None), _spec())


def test_numa_topology_filter_fail_fit():
    assert not _passes(_host(), _spec(([0], 512, {}), ([1], 512, {}),
                                      ([2], 512, {})))


def test_numa_topology_filter_fail_memory():
    host = _host(ram_ratio=1.0)
    assert not _passes(host, _spec(([0], 2049, {})))
    busy = _host(_primitive(_cell(0, [0, 1, 2, 3], memory_usage=1024)),
                 ram_ratio=1.0)
    assert not _passes(busy, _spec(([0], 1025, {})))
    assert _passes(busy, _spec(([0], 1024, {})))


def test_numa_topology_filter_fail_cpu():
    host = _host(cpu_ratio=1.0)
    assert not _passes(host, _spec(([0, 1, 2, 3, 4], 512, {})))
    busy = _host(_primitive(_cell(0, [0, 1, 2, 3], cpu_usage=3)),
                 cpu_ratio=1.0)
    assert not _passes(busy, _spec(([0, 1], 512, {})))
    busy.cpu_allocation_ratio = 2.0
    assert _passes(busy, _spec(([0, 1], 512, {})))


def test_numa_topology_filter_pass_set_limit():
    host = _host(cpu_ratio=21.0, ram_ratio=1.3)
    assert _passes(host, _spec(([0], 512, {})))
    limits = host.limits['numa_topology']
    assert isinstance(limits, numa_obj.NUMATopologyLimits)
    assert (limits.cpu_allocation_ratio, limits.ram_allocation_ratio) == \
        (21.0, 1.3)


def test_numa_topology_filter_failing_host_gets_no_limit():
    host = _host()
    assert not _passes(host, _spec(([0], 4096, {})))
    assert 'numa_topology' not in host.limits


def test_numa_topology_filter_unset_ratios_use_nova_defaults():
    host = _host(cpu_ratio=None, ram_ratio=None)
    assert _passes(host, _spec(([0], 512, {})))
    limits = host.limits['numa_topology']
    assert (limits.cpu_allocation_ratio, limits.ram_allocation_ratio) == \
        (4.0, 1.0)


def test_numa_topology_filter_fail_cpu_thread_policy_require():
    spec = _spec(([0, 1], 512, {'cpu_policy': 'dedicated',
                                'cpu_thread_policy': 'require'}),
                 extra_specs={'hw:cpu_policy': 'dedicated',
                              'hw:cpu_thread_policy': 'require'})
    assert not _passes(_host(NUMA), spec)


def test_numa_topology_filter_pass_cpu_thread_policy_require():
    spec = _spec(([0, 1], 512, {'cpu_policy': 'dedicated',
                                'cpu_thread_policy': 'require'}),
                 extra_specs={'hw:cpu_policy': 'dedicated',
                              'hw:cpu_thread_policy': 'require'})
    assert _passes(_host(NUMA_HT), spec)


def test_require_from_the_image_needs_hyperthreading():
    spec = _spec(([0, 1], 512, {}),
                 image_props={'hw_cpu_policy': 'dedicated',
                              'hw_cpu_thread_policy': 'require'})
    assert not _passes(_host(NUMA), spec)
    assert _passes(_host(NUMA_HT), spec)


def test_require_without_a_requested_topology_still_checks_the_host():
    spec = _spec(extra_specs={'hw:cpu_policy': 'dedicated',
                              'hw:cpu_thread_policy': 'require'})
    assert not _passes(_host(NUMA), spec)
    assert _passes(_host(NUMA_HT), spec)
    assert _passes(_host(topology=None), spec)


@pytest.mark.parametrize('thread_policy', ['prefer', 'isolate', None])
def test_numa_topology_filter_pass_cpu_thread_policy_others(thread_policy):
    extra_specs = {'hw:cpu_policy': 'dedicated'}
    kwargs = {'cpu_policy': 'dedicated'}
    if thread_policy:
        extra_specs['hw:cpu_thread_policy'] = thread_policy
        kwargs['cpu_thread_policy'] = thread_policy
    spec = _spec(([0, 1], 512, kwargs), extra_specs=extra_specs)
    assert _passes(_host(NUMA), spec)
    assert _passes(_host(NUMA_HT), spec)


def test_numa_topology_filter_pass_mempages():
    host = _host(_primitive(_cell(0, [0, 1], mempages=(
        SMALL, {'size_kb': 2048, 'total': 512, 'used': 0, 'reserved': 0}))))
    assert _passes(host, _spec(([0], 1024, {'pagesize': 2048})))
    assert _passes(host, _spec(([0], 1024,
                                {'pagesize': numa.MEMPAGES_LARGE})))


def test_numa_topology_filter_fail_mempages():
    host = _host(_primitive(_cell(0, [0, 1], mempages=(
        SMALL, {'size_kb': 2048, 'total': 512, 'used': 256,
                'reserved': 0}))))
    assert not _passes(host, _spec(([0], 1024, {'pagesize': 2048})))
    assert not _passes(host, _spec(([0], 512, {'pagesize': 1048576})))


def test_numa_topology_filter_pinned_cpus_are_not_overcommitted():
    host = _host(_primitive(_cell(0, [0, 1, 2, 3], pinned_cpus=[0, 1, 2])))
    dedicated = {'cpu_policy': 'dedicated'}
    assert _passes(host, _spec(([0], 512, dedicated)))
    assert not _passes(host, _spec(([0, 1], 512, dedicated)))
    # Unpinned guests are only held to the ratio (Ocata).
    assert _passes(host, _spec(([0, 1], 512, {})))


def test_numa_topology_filter_policy_from_the_flavor_fills_the_cells():
    host = _host(_primitive(_cell(0, [0, 1, 2, 3], pinned_cpus=[0, 1, 2])))
    spec = _spec(([0, 1], 512, {}),
                 extra_specs={'hw:cpu_policy': 'dedicated'})
    assert not _passes(host, spec)
    # The request itself is not changed.
    assert spec.numa_topology.cells[0].obj_get('cpu_policy') is None
    assert _passes(host, _spec(([0, 1], 512, {})))


def test_numa_topology_filter_cells_keep_their_own_policy():
    host = _host(_primitive(_cell(0, [0, 1, 2, 3], pinned_cpus=[0, 1, 2])))
    spec = _spec(([0, 1], 512, {'cpu_policy': 'shared'}),
                 extra_specs={'hw:cpu_policy': 'dedicated'})
    assert _passes(host, spec)


def test_numa_topology_filter_pci_affinity():
    pools = [{'vendor_id': '8086', 'product_id': '1', 'numa_node': 1,
              'count': 1}]
    requests = pci_obj.InstancePCIRequests(requests=[
        pci_obj.InstancePCIRequest(count=1, spec=[{'vendor_id': '8086'}])])
    host = _host(pci_stats=pools)
    assert _passes(host, _spec(([0, 1, 2, 3], 1024, {}),
                               pci_requests=requests))
    # The guest fits on either cell and goes next to its device; there
    # is no second device.
    requests.requests[0].count = 2
    assert not _passes(host, _spec(([0], 512, {}), pci_requests=requests))
    assert not _passes(_host(), _spec(([0], 512, {}), pci_requests=requests))


def test_numa_topology_filter_unreadable_topology(caplog):
    with caplog.at_level(logging.WARNING):
        assert not _passes(_host('{oops'), _spec(([0], 512, {})))
    assert 'unreadable NUMA topology' in caplog.text
    assert _passes(_host('{oops'), _spec())


def test_numa_topology_filter_unreadable_pools(caplog):
    requests = pci_obj.InstancePCIRequests(requests=[
        pci_obj.InstancePCIRequest(count=1, spec=[{'vendor_id': '8086'}])])
    with caplog.at_level(logging.WARNING):
        assert not _passes(_host(pci_stats={'bad': 1}),
                           _spec(([0], 512, {}), pci_requests=requests))
    assert 'unreadable PCI pools' in caplog.text


# -- CPU policy resolution -------------------------------------------------

def _resolve(extra_specs=None, image_props=None):
    spec = fakes.fake_spec(extra_specs=extra_specs, image_props=image_props)
    return numa_topology_filter.resolve_cpu_policies(spec)


@pytest.mark.parametrize('flavor, image, expected', [
    (None, None, None),
    ('dedicated', None, 'dedicated'),
    ('dedicated', 'shared', 'dedicated'),
    ('shared', None, 'shared'),
    ('shared', 'shared', 'shared'),
    (None, 'dedicated', 'dedicated'),
    (None, 'shared', 'shared'),
])
def test_cpu_policy_resolution(flavor, image, expected):
    extra_specs = {'hw:cpu_policy': flavor} if flavor else {}
    image_props = {'hw_cpu_policy': image} if image else {}
    assert _resolve(extra_specs, image_props)[0] == expected


@pytest.mark.parametrize('flavor, image, expected', [
    (None, None, None),
    (None, 'isolate', 'isolate'),
    ('prefer', 'require', 'require'),
    ('prefer', None, 'prefer'),
    ('isolate', None, 'isolate'),
    ('isolate', 'isolate', 'isolate'),
    ('require', None, 'require'),
])
def test_cpu_thread_policy_resolution(flavor, image, expected):
    extra_specs = {'hw:cpu_policy': 'dedicated'}
    if flavor:
        extra_specs['hw:cpu_thread_policy'] = flavor
    image_props = {'hw_cpu_thread_policy': image} if image else {}
    assert _resolve(extra_specs, image_props) == ('dedicated', expected)


def test_thread_policy_is_ignored_without_dedicated_cpus():
    assert _resolve({'hw:cpu_thread_policy': 'require'}) == (None, None)
    assert _resolve({'hw:cpu_policy': 'shared'},
                    {'hw_cpu_thread_policy': 'isolate'}) == ('shared', None)


def test_policies_without_an_image():
    spec = fakes.fake_spec(extra_specs={'hw:cpu_policy': 'dedicated'})
    spec.image = None
    assert numa_topology_filter.resolve_cpu_policies(spec) == \
        ('dedicated', None)


@pytest.mark.parametrize('extra_specs, image_props', [
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'dedicated'}),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
     {'hw_cpu_thread_policy': 'require'}),
    ({'hw:cpu_policy': 'pinned'}, {}),
    ({}, {'hw_cpu_policy': 'whatever'}),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'never'}, {}),
])
def test_policy_conflicts_fail_every_host_with_one_warning(
        caplog, extra_specs, image_props):
    with pytest.raises(numa_topology_filter.CPUPolicyConflict):
        _resolve(extra_specs, image_props)
    spec = _spec(([0], 512, {}), extra_specs=extra_specs,
                 image_props=image_props)
    host_filter = numa_topology_filter.NUMATopologyFilter()
    with caplog.at_level(logging.WARNING):
        assert list(host_filter.filter_all([_host(), _host(NUMA_HT)],
                                           spec)) == []
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1


def test_numa_topology_filter_does_not_run_on_rebuild():
    assert numa_topology_filter.NUMATopologyFilter.RUN_ON_REBUILD is False
    assert not numa_topology_filter.NUMATopologyFilter \
        .run_filter_once_per_request
