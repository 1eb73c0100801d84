"""Replay figures: decisions, fleet gauge, time series and outputs."""

import json

import numpy as np
import pytest
from rich.console import Console

from scheduler.replay import agent
from scheduler.replay import metrics
from scheduler.replay import trace

FLAVOR = (1, 1792, 0)


def _node(name='h1', vcpus=4, memory_mb=8192, **ratios):
    ratios.setdefault('cpu_allocation_ratio', 1.0)
    ratios.setdefault('ram_allocation_ratio', 1.0)
    return agent.NodeUsage(1, name, name, vcpus, memory_mb, 100, **ratios)


def _vm(vcpus=1, memory_mb=1792):
    return trace.VM('vm', 0.0, None, vcpus, memory_mb)


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


# -- decisions ---------------------------------------------------------------

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


# -- fleet gauge -------------------------------------------------------------

def test_an_unused_node_counts_for_nothing():
    assert metrics.node_contribution(_node(), 1, 1792) == (
        0, 0, 0, 0, 0, 0.0, 0.0)


def test_a_node_that_still_fits_the_flavor_strands_nothing():
    node = _node()
    node.add(_vm())
    assert metrics.node_contribution(node, 1, 1792) == (
        1, 4, 8192, 1, 1792, 0.0, 0.0)


def test_a_node_short_of_ram_strands_its_free_vcpus_and_ram():
    node = _node()
    for _ in range(4):
        node.add(_vm(vcpus=0, memory_mb=1792))  # 1024 MiB left
    assert metrics.node_contribution(node, 1, 1792) == (
        1, 4, 8192, 0, 7168, 4.0, 1024.0)


def test_a_node_short_of_vcpus_strands_its_free_ram():
    node = _node()
    node.add(_vm(vcpus=4, memory_mb=1024))
    assert metrics.node_contribution(node, 1, 1792)[5:] == (0.0, 7168.0)


def test_free_capacity_counts_against_the_allocation_ratio():
    node = _node(ram_allocation_ratio=1.5)
    for _ in range(5):
        node.add(_vm(vcpus=0, memory_mb=1792))  # 8960 MiB of 12288 allowed
    assert metrics.node_contribution(node, 1, 1792)[5:] == (0.0, 0.0)
    node.add(_vm(vcpus=0, memory_mb=2048))      # 1280 MiB left
    assert metrics.node_contribution(node, 1, 1792)[5:] == (4.0, 1280.0)


def test_overcommitted_nodes_strand_nothing_negative():
    node = _node()
    node.add(_vm(vcpus=6, memory_mb=9000))
    assert metrics.node_contribution(node, 1, 1792)[5:] == (0.0, 0.0)


def test_gauge_keeps_totals_node_by_node():
    one, two = _node('h1'), _node('h2', vcpus=8, memory_mb=16384)
    gauge = metrics.FleetGauge(FLAVOR, [one, two])
    assert gauge.totals()['hosts_in_use'] == 0
    one.add(_vm())
    gauge.update(one)
    two.add(_vm(vcpus=2, memory_mb=15000))  # 1384 MiB left: stranded
    gauge.update(two)
    totals = gauge.totals()
    assert totals == {'hosts_in_use': 2, 'vcpus': 12, 'memory_mb': 24576,
                      'vcpus_used': 3, 'memory_mb_used': 16792,
                      'stranded_vcpus': 6.0, 'stranded_memory_mb': 1384.0}
    one.remove(_vm())
    gauge.update(one)
    assert gauge.totals()['hosts_in_use'] == 1
    assert gauge.totals()['vcpus'] == 8


# -- time series and summary -------------------------------------------------

def _series(samples):
    series = metrics.TimeSeries()
    for time_s, hosts, used_mb, stranded_mb in samples:
        series.sample(time_s, {
            'hosts_in_use': hosts, 'vcpus': 4 * hosts,
            'memory_mb': 8192 * hosts, 'vcpus_used': hosts,
            'memory_mb_used': used_mb, 'stranded_vcpus': 0.0,
            'stranded_memory_mb': stranded_mb})
    return series


def test_peak_is_the_most_hosts_then_the_most_ram():
    series = _series([(0, 1, 1000, 0), (10, 2, 4000, 0), (20, 2, 9000, 0),
                      (30, 2, 2000, 0), (40, 1, 100, 0)]).arrays()
    assert metrics.peak_index(series) == 2


def test_fleet_summary():
    series = _series([(0.0, 1, 4096, 0.0), (100.0, 2, 8192, 512.0),
                      (400.0, 2, 16384, 1024.0)])
    summary = metrics.fleet_summary(series.arrays(), FLAVOR)
    assert summary['trace_time_s'] == 400.0
    assert summary['hosts_in_use'] == {'peak': 2, 'mean': 1.75, 'end': 2,
                                       'peak_time_s': 400.0}
    assert summary['ram_utilisation']['mean'] == pytest.approx(
        (100 * 0.5 + 300 * 0.5) / 400)
    assert summary['ram_utilisation']['at_peak'] == 1.0
    assert summary['cpu_utilisation']['at_peak'] == 0.25
    stranded = summary['stranded']
    assert stranded['flavor'] == {'vcpus': 1, 'memory_mb': 1792,
                                  'disk_gb': 0}
    assert stranded['memory_mb_end'] == 1024.0
    assert stranded['memory_mb_mean'] == pytest.approx(300 * 512 / 400)
    assert stranded['memory_end_fraction'] == pytest.approx(1024 / 16384)
    assert metrics.fleet_summary(metrics.TimeSeries().arrays(),
                                 FLAVOR) is None


def _summary():
    decisions = metrics.DecisionStats()
    decisions.record(0.005, 2, 2)
    decisions.record(0.007, 1, 0)
    series = _series([(0.0, 1, 4096, 0.0), (3600.0, 2, 12000, 100.0)])
    return metrics.summarize(decisions, series, FLAVOR, {'seed': 3}, 1.5)


def test_summary_has_every_figure():
    summary = _summary()
    assert set(summary) >= {
        'settings', 'wall_time_s', 'requests', 'instances_requested',
        'instances_placed', 'no_valid_host', 'no_valid_host_rate',
        'latency_ms', 'decisions_per_second', 'fleet'}
    assert set(summary['fleet']) == {'trace_time_s', 'hosts_in_use',
                                     'cpu_utilisation', 'ram_utilisation',
                                     'stranded'}
    assert summary['settings'] == {'seed': 3}


def test_table_json_and_plot(tmp_path):
    summary = _summary()
    labels = [label for label, _ in metrics.table_rows(summary)]
    assert 'NoValidHost rate (of requests)' in labels
    assert 'Hosts in use: peak / mean' in labels
    console = Console(record=True, width=120)
    metrics.print_table(summary, console)
    text = console.export_text()
    assert '50.0%' in text          # NoValidHost rate
    assert '2 / 1.0' in text        # hosts in use, peak / mean
    path = tmp_path / 'out.json'
    metrics.write_json(path, summary)
    assert json.loads(path.read_text()) == json.loads(json.dumps(summary))
    image = tmp_path / 'out.png'
    metrics.plot(image, _series([(0.0, 1, 10, 0.0), (60.0, 1, 20, 5.0)]))
    assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_arrays_of_an_empty_series():
    arrays = metrics.TimeSeries().arrays()
    assert set(arrays) == set(metrics.SAMPLE_FIELDS)
    assert all(isinstance(a, np.ndarray) and len(a) == 0
               for a in arrays.values())
