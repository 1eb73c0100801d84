"""Replay figures: decisions, flavors, the fleet gauge, time series,
summaries and the comparison."""

import numpy as np
import pytest

from scheduler_tools.replay import capacity
from scheduler_tools.replay import metrics
from scheduler_tools.replay import trace


def _fleet(*nodes):
    """A FleetCapacity of ``(vcpus, memory_mb, local_gb)`` nodes, every
    ratio 1.0."""
    physical = np.asarray(nodes, dtype=float)
    return capacity.FleetCapacity(physical, np.ones_like(physical))


def _mix(*sizes_and_counts):
    sizes = np.asarray([size for size, _ in sizes_and_counts], dtype=float)
    counts = np.asarray([count for _, count in sizes_and_counts],
                        dtype=float)
    return capacity.FlavorMix(sizes, counts / counts.sum())


SMALL, LARGE = (1, 1024, 0), (4, 4096, 0)
MIX = _mix((SMALL, 3), (LARGE, 1))   # shares 0.75 and 0.25


def _request(time_s, size=SMALL, count=1):
    vms = [trace.VM('vm%d' % i, time_s, None, size[0], size[1], size[2])
           for i in range(count)]
    return trace.Request(0, time_s, vms)


# -- helpers -----------------------------------------------------------------

def test_percentile_and_ratio():
    assert metrics.percentile([1, 2, 3, 4], 50) == 2.5
    assert metrics.percentile([5.0], 99) == 5.0
    assert metrics.percentile([], 50) is None
    assert metrics.ratio(1, 4) == 0.25
    assert metrics.ratio(3, 0) == 0.0


def test_time_weights_and_weighted_mean():
    weights = metrics.time_weights([0.0, 10.0, 40.0])
    assert weights.tolist() == [10.0, 30.0, 0.0]
    assert metrics.weighted_mean([1.0, 3.0, 0.0], weights) == 2.5
    # Samples at a single instant weigh the same.
    assert metrics.time_weights([5.0, 5.0]).tolist() == [1.0, 1.0]
    assert metrics.weighted_mean([], []) == 0.0


def test_time_weights_are_cut_to_the_window():
    # Held 0-10, 10-40, 40-100, 100-: the window is 5-50.
    weights = metrics.time_weights([0.0, 10.0, 40.0, 100.0], (5.0, 50.0))
    assert weights.tolist() == [5.0, 30.0, 10.0, 0.0]
    # A window of no length: its samples weigh the same.
    assert metrics.time_weights([0.0, 7.0, 9.0], (7.0, 7.0)).tolist() == [
        0.0, 1.0, 0.0]


def test_arrival_window():
    assert metrics.arrival_window([_request(3.0), _request(8.0)]) == (
        3.0, 8.0)
    assert metrics.arrival_window([]) is None


# -- decisions and flavors ---------------------------------------------------

def test_decision_stats():
    stats = metrics.DecisionStats()
    stats.record(0.010, requested=3, placed=3)
    stats.record(0.020, requested=2, placed=0)
    stats.record(0.030, requested=1, placed=1)
    stats.record_error(0.040, requested=4)
    summary = stats.summary()
    assert (summary['requests'], summary['instances_requested'],
            summary['instances_placed'], summary['instances_rejected'],
            summary['no_valid_host'], summary['errors']) == (4, 10, 4, 6, 1,
                                                             1)
    assert summary['no_valid_host_rate'] == 0.25
    assert summary['latency_ms']['p50'] == pytest.approx(25.0)
    assert summary['latency_ms']['max'] == pytest.approx(40.0)
    assert summary['decisions_per_second'] == pytest.approx(4 / 0.1)


def test_no_decision():
    summary = metrics.DecisionStats().summary()
    assert summary['latency_ms']['p99'] is None
    assert summary['decisions_per_second'] == 0.0
    assert summary['no_valid_host_rate'] == 0.0


def test_flavor_stats_count_per_size():
    stats = metrics.FlavorStats()
    stats.record(SMALL, 3, 3, no_valid_host=False)
    stats.record(LARGE, 2, 0, no_valid_host=True)
    stats.record(SMALL, 1, 0, no_valid_host=True)
    stats.record(LARGE, 1, 0, no_valid_host=False)  # another error
    assert stats.summary() == [
        {'vcpus': 1, 'memory_mb': 1024, 'disk_gb': 0, 'requests': 2,
         'instances_requested': 4, 'instances_placed': 3,
         'no_valid_host': 1, 'no_valid_host_instances': 1},
        {'vcpus': 4, 'memory_mb': 4096, 'disk_gb': 0, 'requests': 2,
         'instances_requested': 3, 'instances_placed': 0,
         'no_valid_host': 1, 'no_valid_host_instances': 2}]
    assert stats.totals() == {
        'requests': 4, 'instances_requested': 7, 'instances_placed': 3,
        'no_valid_host': 2, 'no_valid_host_instances': 3}
    assert metrics.FlavorStats().totals()['requests'] == 0


# -- fleet gauge -------------------------------------------------------------

def _totals(gauge):
    return dict(zip(metrics.GAUGE_FIELDS, gauge.totals().tolist(),
                    strict=True))


def test_an_unused_node_counts_for_nothing():
    gauge = metrics.FleetGauge(_fleet((4, 8192, 10)), MIX)
    gauge.set_node(0, (0, 0, 0), 0)
    assert not gauge.totals().any()


def test_stranded_capacity_is_measured_against_the_flavor_mix():
    gauge = metrics.FleetGauge(_fleet((4, 8192, 10), (8, 8192, 10)), MIX)
    # 2 vCPUs and 4096 MiB free: SMALL fits, LARGE does not, so a quarter
    # of the mix cannot use them.
    gauge.set_node(0, (2, 4096, 0), 2)
    totals = _totals(gauge)
    assert (totals['hosts_in_use'], totals['vcpus_limit'],
            totals['memory_mb_limit']) == (1, 4, 8192)
    assert (totals['stranded_vcpus'], totals['stranded_memory_mb']) == (
        0.5, 1024.0)
    assert (totals['unusable_vcpus'], totals['unusable_memory_mb']) == (
        0.0, 0.0)
    # 512 MiB free: no size fits, all of it is stranded and unusable.
    gauge.set_node(1, (1, 8192 - 512, 5), 3)
    totals = _totals(gauge)
    assert totals['hosts_in_use'] == 2
    assert (totals['vcpus_used'], totals['memory_mb_used'],
            totals['disk_gb_used']) == (3, 4096 + 7680, 5)
    assert (totals['stranded_vcpus'], totals['stranded_memory_mb']) == (
        0.5 + 7, 1024.0 + 512)
    assert (totals['unusable_vcpus'], totals['unusable_memory_mb']) == (
        7.0, 512.0)
    # Emptied, the node counts for nothing again.
    gauge.set_node(1, (0, 0, 0), 0)
    assert _totals(gauge)['hosts_in_use'] == 1
    assert _totals(gauge)['stranded_vcpus'] == 0.5


def test_free_capacity_is_counted_against_capacity_times_ratio():
    fleet = capacity.FleetCapacity(np.asarray([[4.0, 8192.0, 0.0]]),
                                   np.asarray([[1.0, 1.5, 1.0]]))
    gauge = metrics.FleetGauge(fleet, MIX)
    gauge.set_node(0, (1, 8192, 0), 4)  # 4096 MiB left of 12288
    assert _totals(gauge)['stranded_memory_mb'] == 0.25 * 4096
    gauge.set_node(0, (5, 13000, 0), 5)  # overcommitted: nothing free
    totals = _totals(gauge)
    assert totals['stranded_vcpus'] == totals['stranded_memory_mb'] == 0.0


def test_free_capacity_of_the_fleet_at_a_no_valid_host():
    gauge = metrics.FleetGauge(_fleet((4, 8192, 0), (4, 8192, 0),
                                      (4, 8192, 0)), MIX)
    gauge.set_node(0, (4, 4096, 0), 1)
    gauge.set_node(1, (1, 6144, 0), 1)
    assert gauge.free_capacity(LARGE) == {
        'free': {'vcpus': 0 + 3 + 4, 'memory_mb': 4096 + 2048 + 8192,
                 'disk_gb': 0},
        'largest_free': {'vcpus': 4, 'memory_mb': 8192, 'disk_gb': 0},
        'hosts_fitting_one': 1}


# -- time series -------------------------------------------------------------

def test_series_keeps_the_last_sample_of_a_time_and_grows():
    series = metrics.TimeSeries()
    row = np.arange(len(metrics.GAUGE_FIELDS), dtype=float)
    series.sample(0.0, row)
    series.sample(0.0, row + 1)
    for step in range(1, 3000):
        series.sample(float(step), row)
    arrays = series.arrays()
    assert len(series) == 3000 == len(arrays['time_s'])
    assert arrays['hosts_in_use'][0] == 1.0
    assert arrays['time_s'][-1] == 2999.0


def test_arrays_of_an_empty_series():
    arrays = metrics.TimeSeries().arrays()
    assert set(arrays) == set(metrics.SAMPLE_FIELDS)
    assert all(isinstance(a, np.ndarray) and len(a) == 0
               for a in arrays.values())


def _series(samples):
    """``(time_s, hosts, vcpus_used, memory_mb_used, stranded_mb)`` on
    hosts of 4 vCPUs and 8192 MiB."""
    series = metrics.TimeSeries()
    for time_s, hosts, vcpus, memory_mb, stranded_mb in samples:
        values = dict.fromkeys(metrics.GAUGE_FIELDS, 0.0)
        values.update(hosts_in_use=hosts, vcpus_limit=4 * hosts,
                      memory_mb_limit=8192 * hosts, vcpus_used=vcpus,
                      memory_mb_used=memory_mb,
                      stranded_memory_mb=stranded_mb)
        series.sample(time_s, [values[name]
                               for name in metrics.GAUGE_FIELDS])
    return series


def test_peak_is_the_most_hosts_then_the_most_ram():
    series = _series([(0, 1, 1, 1000, 0), (10, 2, 1, 4000, 0),
                      (20, 2, 1, 9000, 0), (30, 2, 1, 2000, 0),
                      (40, 1, 1, 100, 0)]).arrays()
    assert metrics.peak_index(series) == 2


FOUR = _fleet(*[(4, 8192, 0)] * 4)


def test_fleet_summary_over_the_arrival_window():
    # Hosts in use / bound: 1/1 for 100 s, 3/2 for 300 s, then a drain
    # after the last arrival (t=400) that the means leave out.
    series = _series([(0.0, 1, 2, 4096, 0.0), (100.0, 3, 5, 12288, 512.0),
                      (400.0, 3, 4, 16384, 1024.0),
                      (1000.0, 0, 0, 0, 0.0)])
    summary = metrics.fleet_summary(series.arrays(), FOUR, (0.0, 400.0))
    assert summary['trace_time_s'] == 1000.0
    assert summary['arrival_window_s'] == 400.0
    assert summary['fleet_size'] == 4
    assert summary['hosts_in_use'] == {'peak': 3, 'mean': 2.5, 'end': 0,
                                       'peak_time_s': 400.0}
    # Bound: ceil(max(5/4, 12288/8192)) = 2, then ceil(16384/8192) = 2.
    assert summary['lower_bound'] == {'peak': 2, 'mean': 1.75, 'end': 0}
    assert summary['hosts_over_bound'] == {'peak': 1.5,
                                           'mean': 2.5 / 1.75}
    ram = summary['ram_utilisation']
    assert ram['mean'] == pytest.approx((100 * 0.5 + 300 * 0.5) / 400)
    assert ram['at_peak'] == pytest.approx(16384 / 24576)
    assert ram['fleet_mean'] == pytest.approx(
        (100 * 4096 + 300 * 12288) / 400 / 32768)
    assert summary['cpu_utilisation']['at_peak'] == pytest.approx(4 / 12)
    stranded = summary['stranded']['stranded_memory_mb']
    assert stranded == {'peak': 1024.0, 'mean': 300 * 512 / 400,
                        'at_peak': 1024.0}
    assert metrics.fleet_summary(metrics.TimeSeries().arrays(),
                                 FOUR) is None


def test_bound_figures():
    held = np.asarray([[0, 0, 0], [9, 100, 0], [4, 100, 0]], dtype=float)
    figures = metrics.bound_figures([0.0, 10.0, 30.0], held, FOUR)
    assert figures == {'peak': 3, 'mean': (0 * 10 + 3 * 20) / 30,
                       'end': 1}
    assert metrics.bound_figures([], np.zeros((0, 3)), FOUR) == {
        'peak': 0, 'mean': 0.0, 'end': 0}


# -- ledger, summary, comparison ---------------------------------------------

def _ledger():
    ledger = metrics.Ledger(FOUR, MIX, (0.0, 60.0))
    ledger.node_changed(0, (4, 4096, 0), 4)
    ledger.requested(_request(0.0, count=4), 4, 0.0, no_valid_host=False)
    ledger.sample(0.0)
    ledger.requested(_request(60.0, LARGE, 2), 0, 60.0, no_valid_host=True)
    ledger.sample(60.0)
    return ledger


def test_ledger_records_no_valid_host_moments():
    (moment,) = _ledger().moments
    assert moment['time_s'] == 60.0
    assert moment['flavor'] == {'vcpus': 4, 'memory_mb': 4096,
                                'disk_gb': 0}
    assert moment['instances'] == 2
    assert moment['free'] == {'vcpus': 12, 'memory_mb': 4 * 8192 - 4096,
                              'disk_gb': 0}
    assert moment['hosts_fitting_one'] == 3


def _summary():
    decisions = metrics.DecisionStats()
    decisions.record(0.005, 4, 4)
    decisions.record(0.007, 2, 0)
    return metrics.summarize(decisions, _ledger(), {'seed': 3}, 2.0)


def test_summary_has_every_figure():
    summary = _summary()
    assert set(summary) >= {
        'settings', 'wall_time_s', 'vms_per_second', 'requests',
        'instances_requested', 'instances_placed', 'no_valid_host',
        'no_valid_host_rate', 'latency_ms', 'decisions_per_second', 'fleet',
        'flavors', 'flavor_totals', 'no_valid_host_moments'}
    assert summary['vms_per_second'] == 3.0
    assert set(summary['fleet']) >= {
        'hosts_in_use', 'lower_bound', 'hosts_over_bound',
        'cpu_utilisation', 'ram_utilisation', 'stranded', 'fleet_size'}
    assert summary['settings'] == {'seed': 3}
    assert [f['vcpus'] for f in summary['flavors']] == [1, 4]


def test_comparison_picks_the_compared_figures():
    figures = metrics.comparison(_summary())
    assert figures['hosts_in_use'] == {'peak': 1, 'mean': 1.0}
    assert figures['lower_bound'] == {'peak': 1, 'mean': 1.0}
    assert figures['hosts_over_bound'] == {'peak': 1.0, 'mean': 1.0}
    assert figures['no_valid_host'] == {'requests': 1, 'instances': 2}
    assert figures['cpu_utilisation'] == 1.0
    assert figures['ram_utilisation'] == 0.5
