"""Capacity planning (``--find-fleet``, ``--fill-until-failure``) on small
synthetic traces, with the reference policies in memory; the options
that exclude each other."""

import json

import numpy as np
import pytest

from scheduler_tools.replay import capacity
from scheduler_tools.replay import options
from scheduler_tools.replay import planning
from scheduler_tools.replay import planning_report
from scheduler_tools.replay import planning_runs
from scheduler_tools.replay import policies
from scheduler_tools.replay import trace
from scheduler_tools.replay.replayer import ReplayError

# The reference policies only: the service is the functional test's.
REFERENCES = tuple(policies.POLICIES)


@pytest.fixture
def unit_ratios(conf):
    """Allocation ratios 1.0: a host's limits are its capacity."""
    for name in capacity.RATIO_NAMES:
        conf.set_override(name, 1.0)
    return conf


def _settings(path, **values):
    settings = object.__new__(options.Settings)
    settings.__dict__.update(
        trace=str(path), limit=None, group_window_s=0.0, fleet=None,
        no_seed=False, hosts=2, hosts_factor=None,
        host_shape=(4, 65536, 10), find_fleet=False, max_refused=None,
        fill_until_failure=False, fill_seed=None, reference_only=True)
    settings.__dict__.update(values)
    settings.host_shape = planning.fleet.HostShape(*settings.host_shape)
    return settings


def _write(tmp_path, sizes, lifetime_s=None):
    """A trace of one VM per ``(vcpus, memory_mb)``, a second apart."""
    path = tmp_path / 'trace.csv'
    trace.write_trace(path, [
        trace.VM('vm%02d' % number, float(number), lifetime_s, *size)
        for number, size in enumerate(sizes)])
    return path


def _planner(path, **values):
    """The trace at ``path`` read and grouped once (every VM alone)."""
    requests = trace.group_requests(trace.read_trace(path), 0)
    return planning.Planner(_settings(path, **values), requests)


def _row(*values):
    """``values`` with 0 for the RESOURCES after them (GPUs)."""
    return values + (0.0,) * (len(capacity.RESOURCES) - len(values))


# -- the search --------------------------------------------------------------

def _counting(threshold):
    """``passes`` true from ``threshold`` hosts on, and the counts it
    was called with."""
    calls = []

    def passes(hosts):
        calls.append(hosts)
        return hosts >= threshold
    return passes, calls


@pytest.mark.parametrize('threshold', [30, 31, 32, 37, 40, 45, 63, 64, 100])
def test_bisection_finds_the_smallest_passing_count_when_monotone(
        threshold):
    passes, calls = _counting(threshold)
    assert planning.smallest_passing(passes, 30, 1000) == threshold
    assert min(calls) == 30            # never below the lower bound
    assert len(calls) == len(set(calls))     # no count run twice
    assert len(calls) <= 14


def test_a_lower_bound_that_passes_is_the_answer_after_one_run():
    passes, calls = _counting(5)
    assert planning.smallest_passing(passes, 20, 1000) == 20
    assert calls == [20]


def test_no_passing_count_up_to_the_upper_end_gives_none():
    passes, calls = _counting(2000)
    assert planning.smallest_passing(passes, 30, 100) is None
    assert max(calls) == 100


def test_a_non_monotone_policy_gets_the_smallest_passing_count_found():
    # Passes at 33 and from 40 on, not at 34-39: the search may miss 33
    # but answers a count it saw pass, the smallest of them.
    calls = []

    def passes(hosts):
        calls.append(hosts)
        return hosts == 33 or hosts >= 40
    found = planning.smallest_passing(passes, 30, 1000)
    assert passes(found)
    assert found == min(count for count in calls[:-1] if passes(count))


# -- find-fleet --------------------------------------------------------------

# 40 VMs of 3 vCPUs that all run at once, on hosts of 4 vCPUs: the bound
# is ceil(120 / 4) = 30 hosts, but a host holds one VM, so 40 are needed.
THREE_VCPUS = [(3, 1024)] * 40


def test_find_fleet_searches_up_from_the_bound(tmp_path, unit_ratios):
    planner = _planner(_write(tmp_path, THREE_VCPUS))
    figures = planning.find_fleet(planner)
    assert figures['lower_bound'] == 30
    assert figures['instances'] == 40
    assert list(figures['policies']) == list(REFERENCES)
    for found in figures['policies'].values():
        assert found['hosts'] == 40
        assert found['over_bound'] == pytest.approx(40 / 30)
        assert found['refused_instances'] == 0
        hosts = [run['hosts'] for run in found['runs']]
        assert min(hosts) == 30 and 39 in hosts
        assert all(run['passed'] == (run['hosts'] >= 40)
                   for run in found['runs'])


@pytest.mark.parametrize('share, hosts', [(0.1, 36), (0.05, 38),
                                          (0.074, 38), (0.075, 37)])
def test_find_fleet_lets_max_refused_of_the_instances_be_refused(
        tmp_path, unit_ratios, share, hosts):
    planner = _planner(_write(tmp_path, THREE_VCPUS), max_refused=share)
    figures = planning.find_fleet(planner)
    assert figures['allowed_refused_instances'] == 40 - hosts
    for found in figures['policies'].values():
        assert found['hosts'] == hosts
        assert found['refused_instances'] == 40 - hosts


def test_find_fleet_never_goes_below_the_bound(tmp_path, unit_ratios):
    # Half may be refused, but the search starts at the bound all the same.
    planner = _planner(_write(tmp_path, THREE_VCPUS), max_refused=0.5)
    for found in planning.find_fleet(planner)['policies'].values():
        assert found['hosts'] == 30
        assert [run['hosts'] for run in found['runs']] == [30]


def test_instances_larger_than_a_host_make_every_fleet_fail(
        tmp_path, unit_ratios):
    planner = _planner(_write(tmp_path, [(2, 1024)] * 9 + [(8, 1024)]))
    figures = planning.find_fleet(planner)
    assert figures['unplaceable_instances'] == 1
    for found in figures['policies'].values():
        assert found['hosts'] is None and found['runs'] == []
    # One in ten may be refused: the large one is; the bound is that of
    # the others (2 per host).
    planner = _planner(_write(tmp_path, [(2, 1024)] * 9 + [(8, 1024)]),
                       max_refused=0.1)
    figures = planning.find_fleet(planner)
    assert figures['lower_bound'] == 5
    for found in figures['policies'].values():
        assert found['hosts'] == 5 and found['refused_instances'] == 1


def _gpu_trace(tmp_path, count):
    """``count`` VMs of 1 vCPU, 1 GiB and one GPU, running together."""
    path = tmp_path / 'gpus.csv'
    trace.write_trace(path, [
        trace.VM('gpu%02d' % number, float(number), None, 1, 1024,
                 gpus=1) for number in range(count)])
    return path


def test_find_fleet_sizes_a_fleet_of_gpu_hosts(tmp_path, unit_ratios):
    # Ten one-GPU VMs on hosts of 4 GPUs: 3 hosts.  Hosts without GPUs
    # can take none of them.
    shape = planning.fleet.parse_host_shape('16:65536:10:4:T4')
    planner = _planner(_gpu_trace(tmp_path, 10), host_shape=shape)
    figures = planning.find_fleet(planner)
    assert figures['host_shape'] == '16:65536:10:4:T4'
    assert figures['lower_bound'] == 3
    for found in figures['policies'].values():
        assert found['hosts'] == 3 and found['refused_instances'] == 0
    planner = _planner(_gpu_trace(tmp_path, 10), host_shape=(16, 65536, 10))
    figures = planning.find_fleet(planner)
    assert figures['unplaceable_instances'] == 10
    for found in figures['policies'].values():
        assert found['hosts'] is None
    assert planning_report.find_fleet_caption(figures) == (
        'none: 10 instances fit no host of 16:65536:10 (a larger shape, or '
        '--max-refused, lets a fleet pass)')


# -- fill-until-failure ------------------------------------------------------

# A = 2 vCPUs 1 GiB, B = 1 vCPU 2 GiB on two hosts of 4 vCPUs and 4 GiB.
# First-fit: A, A on host 0 (free 0 vCPUs, 2 GiB), B, B on host 1 (free
# 2 vCPUs, 0 GiB); the next A fits nowhere.  Neither host can take A or
# B any more: all that is free is stranded.
A, B = (2, 1024), (1, 2048)


def _fill(tmp_path, sizes, **values):
    planner = _planner(_write(tmp_path, sizes), host_shape=(4, 4096, 10),
                       **values)
    return planning.fill_until_failure(planner)


def test_fill_stops_at_the_first_refusal_with_the_stranded_capacity(
        tmp_path, unit_ratios):
    figures = _fill(tmp_path, [A, A, B, B])
    assert figures['fleet_nodes'] == 2
    assert figures['asked_resources'] == ['vcpus', 'memory_mb']
    first_fit = figures['policies']['first-fit']
    assert first_fit['instances_placed'] == 4
    assert first_fit['requests_placed'] == 4
    # The trace's order, repeated: the fifth request is the first A again.
    refused = first_fit['refused']
    assert (refused['index'], refused['instances']) == (4, 1)
    assert (refused['flavor']['vcpus'], refused['flavor']['memory_mb'],
            refused['flavor']['disk_gb']) == (2, 1024, 0)
    assert first_fit['hosts_in_use'] == 2 and first_fit['lower_bound'] == 2
    vcpus = first_fit['resources']['vcpus']
    ram = first_fit['resources']['memory_mb']
    assert (vcpus['capacity'], vcpus['used'], vcpus['free']) == (8, 6, 2)
    assert (ram['capacity'], ram['used'], ram['free']) == (8192, 6144, 2048)
    assert vcpus['stranded'] == vcpus['mix_stranded'] == 2
    assert ram['stranded'] == ram['mix_stranded'] == 2048


def test_nothing_is_placed_after_the_first_refusal(tmp_path, unit_ratios):
    # C (1 vCPU, no RAM) would fit host 1 after the refused A.
    requests = trace.group_requests([
        trace.VM('vm%d' % number, float(number), None, *size)
        for number, size in enumerate([A, A, B, B, A, (1, 0)])], 0)
    fleet = capacity.FleetCapacity.from_specs(
        planning.fleet.generate_fleet(2, (4, 4096, 10)))
    mix = capacity.FlavorMix.from_requests(requests)
    for policy in REFERENCES:
        run = planning.run_reference(policy, requests, fleet, mix, stop=True)
        assert (run.tally.instances, run.tally.placed) == (5, 4)
        assert run.tally.refused_request['index'] == 4
        assert run.tally.running.tolist() == [2, 2]
        whole = planning.run_reference(policy, requests, fleet, mix,
                                       stop=False)
        assert (whole.tally.instances, whole.tally.placed) == (6, 5)


def test_free_capacity_where_a_size_still_fits_is_not_stranded():
    mix = capacity.FlavorMix(np.asarray([_row(2, 1024), _row(1, 2048)]),
                             np.asarray([0.75, 0.25]))
    limits = np.asarray([_row(4, 4096, 10)] * 3)
    used = np.asarray([_row(4, 2048),      # nothing fits
                       _row(2, 3072),      # A fits, B does not
                       _row(0, 0)])        # empty: both fit
    figures = planning.stranded_figures(used, limits, mix)
    assert figures['vcpus']['free'] == 6
    assert figures['vcpus']['stranded'] == 0
    assert figures['memory_mb']['stranded'] == 2048
    # Mix-weighted: host 1's free times B's share, host 0's in full.
    assert figures['vcpus']['mix_stranded'] == pytest.approx(0.25 * 2)
    assert figures['memory_mb']['mix_stranded'] == pytest.approx(
        2048 + 0.25 * 1024)


def test_the_fill_asks_for_more_than_the_fleet_holds_without_departures():
    requests = trace.group_requests([
        trace.VM('vm%d' % number, float(number), 60.0, *size)
        for number, size in enumerate([A, B])], 0)
    totals = np.asarray(_row(8, 8192, 10))
    sequence = planning.fill_sequence(requests, totals)
    assert [request.first.size[:2] for request in sequence] == [
        A, B, A, B, A, B]   # 9 vCPUs > 8 once the sixth is in
    assert [request.time_s for request in sequence] == list(range(6))
    assert all(vm.lifetime_s is None for request in sequence
               for vm in request.vms)


def test_a_random_fill_is_the_same_for_the_same_seed():
    requests = trace.group_requests([
        trace.VM('vm%d' % number, float(number), None, number + 1, 1024)
        for number in range(5)], 0)
    totals = np.asarray(_row(60, 1e9, 10))

    def drawn(seed):
        return [request.first.vcpus for request in
                planning.fill_sequence(requests, totals, seed)]
    assert drawn(7) == drawn(7)
    assert drawn(7) != drawn(8)
    assert drawn(None)[:6] == [1, 2, 3, 4, 5, 1]


def test_a_generated_disk_holds_every_vm_of_the_fill(tmp_path, unit_ratios):
    path = tmp_path / 'disks.csv'
    trace.write_trace(path, [trace.VM('vm0', 0.0, 10.0, 2, 1024, 5)])
    planner = _planner(path, host_shape=(4, 4096, None))
    specs, sequence = planning.fill_fleet(planner.settings, planner.requests)
    assert len(sequence) == 5    # 10 vCPUs > 8
    assert {spec.local_gb for spec in specs} == {25}


# -- the process each service run gets ---------------------------------------

def _boom(text):
    raise ValueError(text)


def test_a_run_in_a_child_process_returns_its_result_or_its_error():
    assert planning_runs.in_child(sum, [1, 2, 3]) == 6
    with pytest.raises(ReplayError, match='ValueError: no fleet'):
        planning_runs.in_child(_boom, 'no fleet')


# -- outputs -----------------------------------------------------------------

def test_tables_json_and_plots_of_both_modes(tmp_path, unit_ratios):
    found = planning.find_fleet(_planner(_write(tmp_path, THREE_VCPUS)))
    filled = _fill(tmp_path, [A, A, B, B])
    for name, figures in (('found', found), ('filled', filled)):
        tables = planning_report.render_tables(figures)
        assert tables and tables[0].row_count == (
            len(REFERENCES) if name == 'found' else 4 + 2 * 4)
        planning_report.write_json(tmp_path / (name + '.json'), figures)
        assert json.loads((tmp_path / (name + '.json')).read_text())[
            'mode'] == figures['mode']
        image = tmp_path / (name + '.png')
        planning_report.plot(image, figures)
        assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert planning_report.find_fleet_rows(found)[0][:3] == (
        'first-fit', '40', '1.333')
