"""Tables, JSON and the plot of a replay's figures."""

import json

import numpy as np
from rich.console import Console

from scheduler_tools.replay import capacity
from scheduler_tools.replay import metrics
from scheduler_tools.replay import report
from scheduler_tools.replay import trace

FLEET = capacity.FleetCapacity(np.asarray([[4.0, 8192.0, 0.0]] * 3),
                               np.ones((3, 3)))
SIZE = (2, 2048, 0)


def _request(time_s, count=1):
    return trace.Request(0, time_s, [trace.VM('vm', time_s, None, *SIZE)
                                     for _ in range(count)])


def _ledger():
    mix = capacity.FlavorMix.from_requests([_request(0.0)])
    ledger = metrics.Ledger(FLEET, mix, (0.0, 3600.0))
    ledger.node_changed(0, (2, 2048, 0), 1)
    ledger.requested(_request(0.0), 1, 0.0, no_valid_host=False)
    ledger.sample(0.0)
    ledger.requested(_request(1800.0, 9), 0, 1800.0, no_valid_host=True)
    ledger.sample(1800.0)
    ledger.node_changed(1, (4, 4096, 0), 2)
    ledger.sample(3600.0)
    ledger.node_changed(0, (0, 0, 0), 0)
    ledger.sample(7200.0)
    return ledger


def _summary(compare=False):
    decisions = metrics.DecisionStats()
    decisions.record(0.005, 1, 1)
    decisions.record(0.007, 9, 0)
    summary = metrics.summarize(
        decisions, _ledger(),
        {'allocation_ratios': {'cpu_allocation_ratio': 16.0,
                               'ram_allocation_ratio': 1.5,
                               'disk_allocation_ratio': 1.0}}, 1.5)
    summary['trace_bound'] = {'peak': 2, 'mean': 1.5, 'end': 0}
    if compare:
        figures = metrics.comparison(summary)
        summary['compare'] = {'service': figures, 'first-fit': figures,
                              'best-fit': figures}
    return summary


def test_table_rows_show_the_new_figures():
    rows = dict(report.table_rows(_summary()))
    assert rows['NoValidHost: requests / instances'] == '1 / 9'
    assert rows['VMs per second (wall clock)'] == '6.7'
    assert rows['Allocation ratios cpu / ram / disk (effective)'] == (
        '16 / 1.5 / 1')
    # One bound: the placed VMs'; the trace's is printed before the run.
    assert not any('every VM placed' in label for label in rows)
    # 1 host for the first hour, 2 from its end on: the window's mean is 1.
    assert rows['Hosts in use: peak / mean'] == '2 / 1.0'
    assert rows['Lower bound: peak / mean'] == '2 / 1.0'
    assert rows['Hosts in use / bound: peak / mean'] == '1.000 / 1.000'
    assert rows['Trace time replayed / arrival window (h)'] == '2.00 / 1.00'
    assert rows['Fleet free at NoValidHost (median): vCPUs / RAM GiB'] == (
        '10.0 / 22.0')


def test_flavor_rows_add_up_the_others():
    flavors = [dict(vcpus=n, memory_mb=1024 * n, disk_gb=0, requests=1,
                    instances_requested=n, instances_placed=n,
                    no_valid_host=0, no_valid_host_instances=0)
               for n in (3, 2, 1)]
    rows = report.flavor_rows(flavors, limit=1)
    assert rows == [('3 / 3072 / 0', '1', '3', '3', '0', '0'),
                    ('2 other sizes', '2', '3', '3', '0', '0')]


def test_tables_with_the_comparison():
    console = Console(record=True, width=160)
    report.print_tables(_summary(compare=True), console)
    text = console.export_text()
    assert 'Per flavor' in text and '2 / 2048 / 0' in text
    assert 'Service against reference policies' in text
    assert 'first-fit' in text and 'best-fit' in text
    # the caption says what the columns are
    assert 'reference policies simulated in memory' in ' '.join(text.split())
    rows = dict(report.comparison_rows(_summary(compare=True)['compare']))
    assert rows['NoValidHost: instances'] == ('9', '9', '9')
    assert rows['Hosts in use / bound: peak'] == ('1.000',) * 3


def test_json_and_plot(tmp_path):
    summary = _summary(compare=True)
    path = tmp_path / 'out.json'
    report.write_json(path, summary)
    assert json.loads(path.read_text()) == json.loads(json.dumps(summary))
    ledger = _ledger()
    image = tmp_path / 'out.png'
    others = {'first-fit': {'time_s': np.asarray([0.0, 3600.0]),
                            'hosts_in_use': np.asarray([1.0, 1.0])}}
    report.plot(image, ledger.series.arrays(), FLEET, ledger.moments,
                others, ledger.window)
    assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    empty = tmp_path / 'empty.png'
    report.plot(empty, ledger.series.arrays(), FLEET)
    assert empty.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
