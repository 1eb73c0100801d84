"""Fleet capacity, the capacity lower bound and the flavor mix."""

import numpy as np
import pytest

from scheduler_tools.replay import capacity
from scheduler_tools.replay import fleet
from scheduler_tools.replay import trace

HOST = [[4.0, 8192.0, 100.0]]


def _request(time_s, vcpus, memory_mb, lifetime_s, count=1, disk_gb=0):
    return trace.Request(0, time_s, [
        trace.VM('vm', time_s, lifetime_s, vcpus, memory_mb, disk_gb)
        for _ in range(count)])


# -- lower bound -------------------------------------------------------------

def test_bound_on_identical_hosts_is_the_tightest_resource():
    limits = np.repeat(HOST, 10, axis=0)
    # ceil(max(10 / 4, 9000 / 8192, 0)) = 3; RAM decides the second.
    assert capacity.lower_bound([10, 9000, 0], limits) == 3
    assert capacity.lower_bound(
        [[10, 9000, 0], [1, 20000, 0], [0, 0, 0]], limits).tolist() == [
        3, 3, 0]


def test_bound_on_different_hosts_takes_the_largest_first():
    limits = np.asarray([[2, 1024, 0], [8, 1024, 0], [4, 1024, 0]],
                        dtype=float)
    assert capacity.lower_bound([8, 0, 0], limits) == 1
    assert capacity.lower_bound([9, 0, 0], limits) == 2
    assert capacity.lower_bound([13, 0, 0], limits) == 3


def test_bound_beyond_the_fleet_adds_hosts_like_the_largest():
    limits = np.asarray([[8, 1024, 0], [4, 1024, 0]], dtype=float)
    # 12 fit on both; 5 more need ceil(5 / 8) = 1 more.
    assert capacity.lower_bound([17, 0, 0], limits) == 3


def test_a_resource_no_host_has_is_not_counted():
    limits = np.asarray([[4, 1024, 0]], dtype=float)
    assert capacity.lower_bound([4, 1024, 50], limits) == 1


def test_bound_for_shape_and_fleet_size_for():
    assert capacity.bound_for_shape([160, 184320 * 3.5, 0],
                                    [80, 184320, 1]) == 4
    assert capacity.fleet_size_for(1.15, 974) == 1121
    assert capacity.fleet_size_for(1.15, 100) == 115
    assert capacity.fleet_size_for(1.15, 0) == 1


def test_trace_demand_counts_departures_first_at_equal_times():
    requests = [_request(0.0, 2, 1024, 10.0, count=2),
                _request(10.0, 1, 512, None),
                _request(10.0, 4, 4096, 5.0)]
    times, held = capacity.trace_demand(requests)
    assert times.tolist() == [0.0, 0.0, 10.0, 10.0, 10.0, 10.0, 15.0]
    assert held[:, 0].tolist() == [2, 4, 2, 0, 1, 5, 1]
    assert held[-1].tolist() == [1, 512, 0, 0]   # the VM never deleted


# -- fleet capacity ----------------------------------------------------------

def test_ratios_resolve_as_the_service_resolves_them(conf):
    # The Newton/Ocata fallback ratios (the defaults are Nova's 4.0/1.0).
    conf.set_override('initial_cpu_allocation_ratio', 16.0)
    conf.set_override('initial_ram_allocation_ratio', 1.5)
    conf.set_override('cpu_allocation_ratio', 2.0)
    specs = [fleet.HostSpec('a', 'a', 4, 8192, 100),
             fleet.HostSpec('b', 'b', 8, 8192, 100,
                            ram_allocation_ratio=1.0)]
    fleet_capacity = capacity.FleetCapacity.from_specs(specs)
    assert fleet_capacity.size == 2
    # GPUs: none here, and no ratio (1.0).
    assert fleet_capacity.ratios.tolist() == [[2.0, 1.5, 1.0, 1.0],
                                              [2.0, 1.0, 1.0, 1.0]]
    assert fleet_capacity.limits.tolist() == [[8, 12288, 100, 0],
                                              [16, 8192, 100, 0]]
    assert fleet_capacity.totals().tolist() == [24, 20480, 200, 0]
    assert fleet_capacity.effective_ratios() == {
        'cpu_allocation_ratio': 2.0,
        'ram_allocation_ratio': {'min': 1.0, 'max': 1.5},
        'disk_allocation_ratio': 1.0}


def test_capacity_from_agent_nodes():
    from scheduler_tools.replay import agent

    nodes = [agent.NodeUsage(1, 'a', 'a', 4, 8192, 100, 3.0, 1.0, 1.0)]
    fleet_capacity = capacity.FleetCapacity.from_nodes(nodes)
    assert fleet_capacity.limits.tolist() == [[12, 8192, 100, 0]]


# -- flavor mix --------------------------------------------------------------

def test_flavor_mix_shares_and_misfit():
    mix = capacity.FlavorMix.from_requests([
        _request(0, 1, 1024, None, count=3), _request(1, 4, 4096, None),
        _request(2, 1, 1024, None)])
    assert mix.sizes.tolist() == [[1, 1024, 0, 0], [4, 4096, 0, 0]]
    assert mix.shares.tolist() == [0.8, 0.2]
    assert mix.misfit(np.asarray([4, 4096, 0])) == (0.0, False)
    assert mix.misfit(np.asarray([2, 4096, 0])) == (pytest.approx(0.2),
                                                    False)
    assert mix.misfit(np.asarray([0, 4096, 0])) == (pytest.approx(1.0),
                                                    True)
    empty = capacity.FlavorMix.from_requests([])
    assert empty.misfit(np.asarray([1, 1, 1])) == (0.0, True)
