"""The end-to-end mode's parts of one decision (``bench.floor``): the
in-process decision on the same fleet and requests, one claim
transaction timed alone, the budget and its verdict in the row, and
the table that sets them side by side.  Without servers: SQLite, and a
stand-in for the no-op call."""

import io
import uuid

import pytest
from oslo_config import cfg
from rich.console import Console

from scheduler.conf import CONF
from scheduler.db import claims
from scheduler_tools import bench
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import floor
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import workload
from scheduler_tools.cmd import bench as bench_cmd

pytestmark = pytest.mark.timeout(120)


def _settings(*args):
    conf = cfg.ConfigOpts()
    bench_cmd.register_opts(conf)
    conf(list(args), project='scheduler-bench-test')
    return bench_cmd.settings_from(conf)


@pytest.fixture
def ctx(tmp_path):
    yield seed.use_database('sqlite:///%s' % (tmp_path / 'parts.sqlite'))
    writers.reset_engine()


def _row(p50s, **extra):
    timings = inprocess.Timings(latencies_ms=list(p50s), busy_s=1.0)
    return report.make_row('endtoend', 10000, 1, timings, rss=100.0,
                           callers=1, **extra)


def test_parts_are_wanted_for_one_caller_and_one_instance():
    assert floor.wants_parts(_settings('--callers', '1,8',
                                       '--instances', '1,10'))
    assert not floor.wants_parts(_settings('--callers', '8'))
    assert not floor.wants_parts(_settings('--instances', '10'))


def test_the_budget_is_the_sum_of_the_parts():
    parts = {'inprocess_p50_ms': 2.5, 'noop_p50_ms': 1.5,
             'commit_p50_ms': 1.0}
    row = floor.with_budget(_row([4.0, 5.0, 6.0]), dict(parts))
    assert row['budget_p50_ms'] == 5.0
    assert row['p50_ms'] == 5.0 and row['within_budget'] is True
    row = floor.with_budget(_row([5.0, 6.0, 7.0]), dict(parts))
    assert row['p50_ms'] == 6.0 and row['within_budget'] is False
    assert {name: row[name] for name in report.PARTS} == parts


def test_a_missing_part_gives_no_verdict():
    row = floor.with_budget(_row([1.0]), {'inprocess_p50_ms': 2.5,
                                          'noop_p50_ms': None,
                                          'commit_p50_ms': 1.0})
    assert row['budget_p50_ms'] is None and row['within_budget'] is None


def test_per_decision_and_difference():
    timings = inprocess.Timings(latencies_ms=[1.0] * 4)
    assert floor.per_decision(0.01, timings) == 2.5
    assert floor.per_decision(None, timings) is None
    assert floor.per_decision(1.0, inprocess.Timings()) is None
    assert floor.difference(3.5, 1.0) == 2.5
    assert floor.difference(None, 1.0) is None


def test_commits_are_timed_and_released(ctx, monkeypatch):
    hosts = workload.generate_hosts(4, seed=3)
    seeded = workload.seed_hosts(ctx, hosts)
    node_ids = list(seeded.compute_node_ids)
    latencies = floor.time_commits(ctx, node_ids, 5, seed=3)
    assert len(latencies) == 5 and all(ms > 0 for ms in latencies)
    # Every claim was released: none left, nothing claimed on a node.
    assert claims.claims_count(ctx) == 0
    assert not claims.unbalanced_nodes(ctx)
    # The same seed picks the same nodes and instances again.
    claimed = []
    original = claims.claim

    def spy(context, node_id, instance, *amounts):
        claimed.append((node_id, instance, amounts))
        return original(context, node_id, instance, *amounts)

    monkeypatch.setattr(claims, 'claim', spy)
    for _ in range(2):
        floor.time_commits(ctx, node_ids, 3, seed=3)
    assert claimed[:3] == claimed[3:]
    assert {amounts for _, _, amounts in claimed} == {floor.COMMIT_AMOUNTS}
    assert all(uuid.UUID(instance).version == 4
               for _, instance, _ in claimed)


def test_noop_is_timed_after_one_untimed_call():
    calls = []
    latencies = floor.time_noop(lambda: calls.append(1), 4)
    assert len(calls) == 5 and len(latencies) == 4
    assert all(ms >= 0 for ms in latencies)


def test_inprocess_part_decides_the_phase_requests():
    settings = _settings('--hosts', '20', '--requests', '6', '--warmup',
                         '1', '--time-budget', '30', '--noprogress')
    try:
        part = floor.inprocess_part(20, settings)
    finally:
        # The part sets the benchmark's scheduler options on CONF, as the
        # in-process mode does: later tests must not see them.
        for group, name in bench.SCHEDULER_OPTIONS:
            CONF.clear_override(name, group)
    assert set(part) == {'inprocess_p50_ms', 'inprocess_cpu_ms'}
    assert part['inprocess_p50_ms'] > 0
    assert part['inprocess_cpu_ms'] > 0


def test_parts_table_shows_the_budget_and_its_verdict():
    row = floor.with_budget(_row([9.0, 10.0, 11.0], service_cpu_ms=3.25),
                            {'inprocess_p50_ms': 4.0, 'noop_p50_ms': 1.5,
                             'commit_p50_ms': 2.5, 'inprocess_cpu_ms': 3.0})
    console = Console(width=200, record=True, file=io.StringIO())
    report.print_table([row], console)
    text = console.export_text()
    assert 'against its parts' in text
    line = next(line for line in text.splitlines()
                if line.count('│') > 8 and '10,000' in line and
                '8.00' in line)
    cells = [cell.strip() for cell in line.split('│')[1:-1]]
    assert cells == ['endtoend', '10,000', '10.00', '10.98', '4.00', '1.50',
                     '2.50', '8.00', '1.25', 'no', '3.25', '3.00']
