"""Reference policies on tiny hand-made traces, and the event loop they
share with the service replay."""

import numpy as np
import pytest

from scheduler_tools.replay import capacity
from scheduler_tools.replay import policies
from scheduler_tools.replay import trace


def _fleet(*nodes, ratios=(1.0, 1.0, 1.0)):
    physical = np.asarray(nodes, dtype=float)
    return capacity.FleetCapacity(
        physical, np.tile(np.asarray(ratios, dtype=float),
                          (len(physical), 1)))


def _requests(*rows):
    """``(time_s, vcpus, memory_mb, lifetime_s[, count])`` rows, one
    request each."""
    requests = []
    for index, row in enumerate(rows):
        time_s, vcpus, memory_mb, lifetime_s = row[:4]
        count = row[4] if len(row) > 4 else 1
        vms = [trace.VM('r%d-%d' % (index, number), time_s, lifetime_s,
                        vcpus, memory_mb) for number in range(count)]
        requests.append(trace.Request(index, time_s, vms))
    return requests


def _run(requests, fleet, policy):
    simulation = policies.Simulation(
        requests, fleet, capacity.FlavorMix.from_requests(requests), policy)
    placed = []
    original = simulation.place

    def place(request):
        records = original(request)
        placed.append(None if records is None
                      else [record.index for record in records])
        return records

    simulation.place = place
    simulation.run()
    return simulation, placed


# -- the choices -------------------------------------------------------------

def test_first_fit_takes_the_first_node_with_room():
    fleet = _fleet((4, 4096, 0), (4, 4096, 0))
    requests = _requests((0, 2, 1024, None, 3), (1, 1, 1024, None))
    simulation, placed = _run(requests, fleet, policies.FIRST_FIT)
    assert placed == [[0, 0, 1], [1]]
    assert simulation.running.tolist() == [2, 2]


def test_best_fit_leaves_the_tightest_resource_smallest():
    # 3 vCPUs leave 5/8 of A's vCPUs and 1/4 of B's: best-fit takes B,
    # first-fit A.  RAM is plentiful on both.
    fleet = _fleet((8, 65536, 0), (4, 65536, 0))
    requests = _requests((0, 3, 1024, None))
    assert _run(requests, fleet, policies.FIRST_FIT)[1] == [[0]]
    assert _run(requests, fleet, policies.BEST_FIT)[1] == [[1]]


def test_best_fit_compares_fractions_of_each_node_and_ties_go_first():
    # A: 2 of 4 vCPUs and 3 of 4 GiB left -> tightest 0.5 (vCPUs);
    # B: 6 of 8 vCPUs, 1 of 2 GiB left -> tightest 0.5 (RAM): a tie.
    fleet = _fleet((4, 4096, 0), (8, 2048, 0))
    requests = _requests((0, 2, 1024, None))
    assert _run(requests, fleet, policies.BEST_FIT)[1] == [[0]]


def test_the_policy_functions_answer_none_when_nothing_fits():
    free = np.asarray([[1.0, 1024.0, 0.0]])
    size = np.asarray([2.0, 512.0, 0.0])
    everything = np.ones(1, dtype=bool)
    for choose in policies.POLICIES.values():
        assert choose(free, size, everything, free) is None


def test_an_instance_larger_than_a_node_never_goes_there():
    # Overcommitted limits would take 6 vCPUs on the 4-CPU node; its
    # physical size does not.
    fleet = _fleet((4, 4096, 0), (8, 4096, 0), ratios=(2.0, 1.0, 1.0))
    requests = _requests((0, 6, 1024, None))
    assert _run(requests, fleet, policies.FIRST_FIT)[1] == [[1]]


# -- requests, departures and figures ----------------------------------------

def test_a_request_that_does_not_fit_whole_leaves_nothing():
    fleet = _fleet((4, 4096, 0), (4, 4096, 0))
    requests = _requests((0, 3, 1024, None, 3), (1, 4, 4096, None))
    simulation, placed = _run(requests, fleet, policies.FIRST_FIT)
    assert placed == [None, [0]]
    summary = simulation.ledger.summary()
    assert summary['flavor_totals'] == {
        'requests': 2, 'instances_requested': 4, 'instances_placed': 1,
        'no_valid_host': 1, 'no_valid_host_instances': 3}
    (moment,) = summary['no_valid_host_moments']
    assert moment['free']['vcpus'] == 8 and moment['hosts_fitting_one'] == 2


def test_departures_come_before_arrivals_at_the_same_time():
    fleet = _fleet((4, 4096, 0))
    requests = _requests((0, 4, 4096, 10.0), (10, 4, 4096, None))
    _, placed = _run(requests, fleet, policies.FIRST_FIT)
    assert placed == [[0], [0]]


def test_departures_after_the_last_arrival_are_replayed():
    fleet = _fleet((4, 4096, 0), (4, 4096, 0))
    requests = _requests((0, 4, 4096, 100.0), (10, 2, 1024, 500.0),
                         (20, 1, 1024, None))
    simulation, _ = _run(requests, fleet, policies.FIRST_FIT)
    series = simulation.ledger.series.arrays()
    assert series['time_s'].tolist() == [0.0, 10.0, 20.0, 100.0, 510.0]
    assert series['hosts_in_use'].tolist() == [1, 2, 2, 1, 1]
    # The end state: only the VM the trace never deletes.
    assert simulation.running.tolist() == [0, 1]
    fleet_summary = simulation.ledger.summary()['fleet']
    assert fleet_summary['trace_time_s'] == 510.0
    assert fleet_summary['arrival_window_s'] == 20.0
    # Means over the arrival window: 1 host for 10 s, 2 for 10 s.
    assert fleet_summary['hosts_in_use']['mean'] == 1.5
    assert fleet_summary['hosts_in_use']['end'] == 1


def test_deletions_between_two_arrivals_are_committed_together():
    fleet = _fleet((4, 4096, 0), (4, 4096, 0))
    requests = _requests((0, 1, 1024, 5.0, 2), (1, 1, 1024, 5.0),
                         (100, 1, 1024, None))
    simulation = policies.Simulation(
        requests, fleet, capacity.FlavorMix.from_requests(requests),
        policies.FIRST_FIT)
    batches = []
    simulation.commit = lambda records: batches.append(
        [record.vm.vm_id for record in records])
    simulation.run()
    assert batches == [['r0-0', 'r0-1', 'r1-0']]
    # Every departure was sampled at its own time.
    times = simulation.ledger.series.arrays()['time_s'].tolist()
    assert times == [0.0, 1.0, 5.0, 6.0, 100.0]


def test_paced_deletions_are_committed_one_time_at_a_time():
    fleet = _fleet((4, 4096, 0))
    requests = _requests((0, 1, 1024, 1e-6, 2), (0, 1, 1024, 2e-6),
                         (1e-5, 1, 1024, None))
    simulation = policies.Simulation(
        requests, fleet, capacity.FlavorMix.from_requests(requests),
        policies.FIRST_FIT)
    simulation.speed = 1.0
    batches = []
    simulation.commit = lambda records: batches.append(len(records))
    simulation.run()
    assert batches == [2, 1]


def test_simulate_all_runs_each_policy():
    fleet = _fleet((8, 65536, 0), (4, 65536, 0))
    requests = _requests((0, 3, 1024, 60.0), (30, 4, 1024, None))
    results = policies.simulate_all(
        requests, fleet, capacity.FlavorMix.from_requests(requests))
    assert list(results) == [policies.FIRST_FIT, policies.BEST_FIT]
    first, best = (results[name]['summary'] for name in results)
    # First-fit puts both on A; best-fit puts 3 vCPUs on B, then 4 on A.
    assert first['fleet']['hosts_in_use']['peak'] == 1
    assert best['fleet']['hosts_in_use']['peak'] == 2
    assert set(results[policies.BEST_FIT]['series']) == {'time_s',
                                                         'hosts_in_use'}
    assert first['fleet']['lower_bound']['peak'] == 1


@pytest.mark.parametrize('policy', sorted(policies.POLICIES))
def test_the_shipped_slice_places_deterministically(policy):
    from scheduler_tools.replay import cli_options

    vms = trace.read_trace(cli_options.DEFAULT_TRACE, limit=300)
    requests = trace.group_requests(vms)
    fleet = _fleet(*[(64, 262144, 2000)] * 4, ratios=(16.0, 1.5, 1.0))
    mix = capacity.FlavorMix.from_requests(requests)
    once = policies.simulate(requests, fleet, mix, policy)['summary']
    again = policies.simulate(requests, fleet, mix, policy)['summary']
    assert once == again
    assert once['fleet']['hosts_over_bound']['peak'] >= 1.0
