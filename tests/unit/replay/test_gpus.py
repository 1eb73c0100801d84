"""GPUs as PCI passthrough devices: the pools seeded, the alias and the
RequestSpec nova-api would build, the agents taking and giving back
devices (``test_agent`` writes them), the reference policies counting
GPUs, the figures."""

import json

import numpy as np
import pytest

from scheduler import objects
from scheduler.conf import CONF
from scheduler.resources import pci_pools
from scheduler_tools import seed
from scheduler_tools.replay import agent
from scheduler_tools.replay import capacity
from scheduler_tools.replay import gpu_figures
from scheduler_tools.replay import gpus
from scheduler_tools.replay import metrics
from scheduler_tools.replay import policies
from scheduler_tools.replay import replayer
from scheduler_tools.replay import report
from scheduler_tools.replay import trace

UUID = '9a7b3a07-8d63-4a57-8b9b-5a3ac7a6a1f0'


def _vm(vm_id='vm', gpus_=1, gpu_milli=None, vcpus=4, memory_mb=8192,
        lifetime_s=60.0):
    return trace.VM(vm_id, 0.0, lifetime_s, vcpus, memory_mb, gpus=gpus_,
                    gpu_milli=gpu_milli)


def _gpu_node(count=4, model='T4', index=0):
    return agent.NodeUsage(index + 1, 'g%d' % index, 'g%d' % index, 32,
                           131072, 0, index=index,
                           pci_stats=json.dumps(seed.gpu_pci_stats(
                               model, count)))


# -- pools and alias ---------------------------------------------------------

def test_seeded_pools_are_one_per_model():
    spec = seed.HostSpec('g', 'g', 32, 131072, 0, gpus=8, gpu_model='G2')
    pools = pci_pools.parse_pools(seed.compute_node_values(spec)[
        'pci_stats'])
    assert [(p.vendor_id, p.product_id, p.numa_node, p.count, p.tags)
            for p in pools] == [
        ('10de', seed.gpu_product_id('G2'), None, 8,
         {'dev_type': 'type-PCI', 'gpu_model': 'G2'})]
    assert seed.gpu_product_id('G2') != seed.gpu_product_id('T4')
    assert 'pci_stats' not in seed.compute_node_values(
        seed.HostSpec('c', 'c', 32, 131072, 0))
    with pytest.raises(seed.FleetError, match='no GPU model'):
        seed.check_fleet([seed.HostSpec('c', 'c', 1, 1, 0, gpus=1)])


def test_the_alias_matches_every_model_as_nova_api_builds_it():
    nodes = [_gpu_node(2, 'T4', 0), _gpu_node(8, 'G2', 1),
             _gpu_node(2, 'T4', 2)]
    alias = gpus.GpuAlias.from_pools(p for n in nodes for p in n.pools)
    assert alias.specs == [
        {'vendor_id': '10de', 'product_id': seed.gpu_product_id(model),
         'dev_type': 'type-PCI'} for model in ('T4', 'G2')]
    assert alias.extra_specs(2) == {'pci_passthrough:alias': 'gpu:2'}
    assert alias.extra_specs(0) == {} and alias.pci_requests(0, 'u') is None
    requests = alias.pci_requests(2, UUID)
    (request,) = requests.requests
    assert (request.count, request.alias_name, request.numa_policy) == (
        2, 'gpu', 'legacy')
    assert request.spec == alias.specs
    for node in nodes:      # any model serves it
        assert pci_pools.support_requests(node.pools, requests)
    # A fleet without GPUs: an alias no pool matches.
    assert gpus.GpuAlias.from_pools([]).specs[0]['product_id'] == '0000'


def test_the_request_spec_carries_the_gpus():
    objects.register_all()
    vm = _vm(gpus_=2)
    nodes = [_gpu_node(4)]
    alias = gpus.GpuAlias.from_pools(nodes[0].pools)
    flavor = replayer.FlavorCatalog().get(vm)
    assert flavor.extra_specs == {'pci_passthrough:alias': 'gpu:2'}
    assert flavor.name == '4vcpu-8192mb-0gb-2gpu'
    uuids = [UUID]
    spec = replayer.build_spec(trace.Request(0, 0.0, [vm]), flavor, uuids,
                               alias.pci_requests(2, uuids[0]))
    assert spec.pci_requests.requests[0].count == 2
    plain = replayer.build_spec(trace.Request(0, 0.0, [_vm(gpus_=0)]),
                                flavor, uuids)
    assert plain.pci_requests is None


def test_the_filter_is_enabled_for_a_gpu_trace(conf, capsys):
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    assert not gpus.require_filter(CONF, [_vm(gpus_=0)], embedded=True)
    assert not gpus.require_filter(CONF, [_vm()], embedded=False)
    assert 'warning' in capsys.readouterr().err
    assert CONF.filter_scheduler.enabled_filters == ['ComputeFilter']
    assert gpus.require_filter(CONF, [_vm()], embedded=True)
    assert CONF.filter_scheduler.enabled_filters == [
        'ComputeFilter', 'PciPassthroughFilter']


# -- fractional GPUs ---------------------------------------------------------

def test_sharing_counts_what_nova_cannot_express():
    vms = [_vm('a', 1, 460), _vm('b', 1, 250), _vm('c', 1, 1000),
           _vm('d', 2), _vm('e', 0)]
    figures = gpu_figures.sharing(vms)
    assert figures == {
        'gpu_vms': 4, 'gpus_asked': 5, 'shared_vms': 2,
        'shared_gpu_milli_wanted': 710, 'gpu_milli_overstated': 1290,
        'overstated_fraction': pytest.approx(1290 / 5000)}
    rows = dict(report._gpu_rows({
        'total': 8, 'requested': 5, 'placed': 4, 'refused': 1,
        'in_use': {'peak': 4, 'mean': 2.0, 'end': 0}, 'sharing': figures}))
    assert rows['GPUs requested / placed / refused'] == '5 / 4 / 1'
    shared = [value for label, value in rows.items() if 'Shared' in label]
    assert shared == ['2 of 4 / 710 / 1,290 (25.8% of GPU-milli asked)']


# -- the agents --------------------------------------------------------------

def test_the_agent_takes_and_gives_back_devices():
    node = _gpu_node(4)
    alias = gpus.GpuAlias.from_pools(node.pools)
    taken = node.take_devices(alias.pci_requests(3, UUID))
    assert taken == ((0, 3),)
    assert (node.gpus, node.gpus_used) == (4, 3)
    assert node.usage[3] == 3
    row = pci_pools.parse_pools(node.row_values()['pci_stats'])
    assert row[0].count == 1
    with pytest.raises(agent.AgentError, match='PciPassthroughFilter'):
        node.take_devices(alias.pci_requests(2, UUID))
    assert node.pools[0].count == 1      # all or nothing
    node.return_devices(taken)
    assert (node.pools[0].count, node.gpus_used) == (4, 0)


# -- the reference policies --------------------------------------------------

def _fleet():
    """A CPU node first (fleet order), then two nodes of 2 GPUs."""
    physical = np.asarray([[64, 262144, 0, 0], [32, 131072, 0, 2],
                           [32, 131072, 0, 2]], dtype=float)
    return capacity.FleetCapacity(physical, np.ones_like(physical))


@pytest.mark.parametrize('policy', sorted(policies.POLICIES))
def test_policies_honour_gpus(policy):
    requests = [trace.Request(0, 0.0, [_vm('a', 2, lifetime_s=None)]),
                trace.Request(1, 1.0, [_vm('b', 1, lifetime_s=None),
                                       _vm('c', 1, lifetime_s=None)]),
                trace.Request(2, 2.0, [_vm('d', 1, lifetime_s=None)]),
                trace.Request(3, 3.0, [_vm('e', 0, lifetime_s=None)])]
    mix = capacity.FlavorMix.from_requests(requests)
    simulation = policies.Simulation(requests, _fleet(), mix, policy)
    simulation.run()
    # GPUs only on GPU nodes, never more than they have; the fourth GPU
    # request finds none left; the CPU-only VM goes anywhere.
    assert simulation.used[:, capacity.GPU].tolist() == [0, 2, 2]
    summary = policies.simulate(requests, _fleet(), mix, policy)['summary']
    assert summary['gpus'] == {
        'total': 4, 'requested': 5, 'placed': 4, 'refused': 1,
        'in_use': {'peak': 4, 'mean': pytest.approx((2 + 4 + 4) / 3),
                   'end': 4}}
    assert summary['flavor_totals']['no_valid_host'] == 1
    assert metrics.comparison(summary)['gpus_placed'] == 4


def test_figures_without_gpus_have_no_gpu_keys():
    requests = [trace.Request(0, 0.0, [_vm('a', 0)])]
    physical = np.asarray([[8, 16384, 10]], dtype=float)
    summary = policies.simulate(
        requests, capacity.FleetCapacity(physical, np.ones_like(physical)),
        capacity.FlavorMix.from_requests(requests),
        policies.BEST_FIT)['summary']
    assert 'gpus' not in summary
    assert 'gpus' not in summary['flavors'][0]
    assert 'gpus_placed' not in metrics.comparison(summary)
