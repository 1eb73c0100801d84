"""``scheduler-bench --mode load --smoke``: two schedulers, one database.

The short load test (``scheduler_tools.bench.load.SMOKE``: 20 hosts, 15 s per
topology, 8 callers) runs in CI against the session's RabbitMQ and a
fresh PostgreSQL database passed by URL, as its own process, first with
one ``scheduler-service`` of 2 workers, then with 2 services.  Whatever
the interleaving, the claims in the database must fit every node, match
the claim rows and the instances placed, and every call must be
answered (a Selection or NoValidHost).  The fleet fills up, so there
are NoValidHosts and the schedulers lose races for the last room on a
node; the lost races are printed (``pytest -s``) and must have happened
in each topology: over 7 runs on 2 shared cores, 3 to 10 per topology
in 15 s.

The option handling and the callers' accounting are checked without
servers.
"""

import subprocess
import sys
import threading
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa
from oslo_config import cfg

from scheduler import exception
from scheduler_tools.bench import load
from scheduler_tools.bench import report
from scheduler_tools.bench import workload
from scheduler_tools.cmd import bench as bench_cmd

LOAD_TIMEOUT = 180
TOPOLOGIES = [('workers', 1, 2), ('services', 2, 1)]


def _bench(workdir, *args):
    """Run ``scheduler-bench --mode load --smoke --noprogress`` with
    ``args``; return the completed process."""
    return subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.bench', '--mode', 'load',
         '--smoke', '--noprogress'] + list(args),
        cwd=workdir, capture_output=True, text=True, timeout=LOAD_TIMEOUT)


def _table_counts(db_url, tables):
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return {table: connection.execute(sa.text(
                'SELECT COUNT(*) FROM %s' % table)).scalar()
                for table in tables}
    finally:
        engine.dispose()


@pytest.mark.timeout(LOAD_TIMEOUT + 60)
def test_load_smoke_on_given_servers(tmp_path, rabbit_url, postgresql_url,
                                     fresh_database):
    db_url = fresh_database(postgresql_url)
    output = tmp_path / 'load.json'
    result = _bench(tmp_path, '--output', str(output), '--transport-url',
                    rabbit_url, '--database-connection', db_url)
    assert result.returncode == 0, (
        'scheduler-bench --mode load failed (%d):\n%s\n%s' % (
            result.returncode, result.stdout, result.stderr[-5000:]))
    print(result.stdout)
    assert 'claims after the load' in result.stdout
    assert '% of no-op' in result.stdout
    rows = report.read_json_lines(output)
    assert [(row['topology'], row['processes'], row['workers'])
            for row in rows] == TOPOLOGIES
    for row in rows:
        name = row['topology']
        print('%s: %d calls, %d placed (the last after %.1f s), %d '
              'NoValidHost, %d lost races (%s), %.1f decisions/s' % (
                  name, row['requests'], row['placed'],
                  row['last_placement_s'], row['no_valid_host'],
                  row['lost_races'], row['lost_races_by_service'],
                  row['decisions_per_s']))
        assert (row['mode'], row['hosts'], row['instances'],
                row['callers']) == ('load', 20, 1, 8)
        # No overcommit, exact bookkeeping, one claim per placement.
        assert row['overcommitted'] == [], name
        assert row['unbalanced'] == [], name
        assert row['claims'] == row['placed'], name
        assert row['claims_match'] and row['verified'], name
        for resource in ('vcpus', 'memory_mb', 'disk_gb'):
            prefix = 'fleet_%s_' % resource
            assert (row[prefix + 'used'] + row[prefix + 'claimed'] <=
                    row[prefix + 'capacity']), (name, resource)
        # Every call answered: a Selection or NoValidHost.
        assert row['errors'] == 0 and row['timeouts'] == 0, (
            name, row['first_error'])
        assert row['requests'] == row['placed'] + row['no_valid_host']
        assert not row['services_died'] and row['service_errors'] == 0
        # The fleet filled up.
        assert row['placed'] > 0 and row['no_valid_host'] > 0, name
        assert row['fleet_memory_mb_claimed'] > 0
        assert row['decisions_per_s'] > 0
        # The floor, measured in the same run on the same broker.
        assert row['noop_calls_per_s'] > 0 and row['noop_errors'] == 0
        assert 0 < row['noop_p50_ms'] <= row['noop_p99_ms']
        assert row['share_of_noop'] == round(
            100.0 * row['decisions_per_s'] / row['noop_calls_per_s'], 1)
        assert 0 < row['p50_ms'] <= row['p95_ms'] <= row['p99_ms']
        assert row['rss_mb'] > 0
        # Lost races were counted, per process of the topology.
        assert len(row['lost_races_by_service']) == row['processes']
        assert row['lost_races'] == sum(row['lost_races_by_service'])
        assert row['lost_races'] > 0, name
    # The given database is left as it was found.
    counts = _table_counts(db_url, ('compute_nodes', 'services',
                                    'aggregates', 'aggregate_hosts',
                                    'scheduler_claims'))
    assert set(counts.values()) == {0}, counts


# ------------------------------------------------------- without servers --

def _settings(*args):
    conf = cfg.ConfigOpts()
    bench_cmd.register_opts(conf)
    conf(list(args), project='scheduler-bench-test')
    return bench_cmd.settings_from(conf)


def test_load_defaults_apply_to_options_not_given():
    settings = _settings('--mode', 'load', '--callers', '4')
    assert settings.modes == ('load',)
    assert settings.callers == 4
    assert settings.hosts == [30]
    assert settings.instances == [1]
    assert settings.time_budget_s == 60.0
    assert settings.call_timeout == 30
    smoke = _settings('--mode', 'load', '--smoke', '--hosts', '40')
    assert (smoke.hosts, smoke.time_budget_s, smoke.callers) == (
        [20], 15.0, 8)
    # The other modes keep their own defaults.
    other = _settings('--mode', 'endtoend')
    assert (other.hosts, other.callers) == ([1000, 10000], 1)


def test_load_hosts_have_a_quarter_of_the_ram():
    hosts = load.load_hosts(10, seed=3)
    full = workload.generate_hosts(10, seed=3)
    for small, big in zip(hosts, full, strict=True):
        assert small.spec.memory_mb == big.spec.memory_mb // 4
        assert small.memory_mb_used == big.memory_mb_used // 4
        assert small.spec.vcpus == big.spec.vcpus
        assert small.spec.local_gb == big.spec.local_gb


class _Feed:
    def __init__(self, items):
        self.items = list(items)
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            return self.items.pop(0) if self.items else None


def test_drive_counts_every_outcome():
    outcomes = (['place'] * 6 + ['nvh'] * 3 + ['timeout'] * 2 +
                ['boom'])

    def decide(outcome):
        if outcome == 'nvh':
            raise exception.NoValidHost(reason='full')
        if outcome == 'timeout':
            raise messaging.MessagingTimeout('no answer')
        if outcome == 'boom':
            raise RuntimeError('boom')
        return 2

    result = load.drive(decide, _Feed(outcomes), 3,
                        time.monotonic() + 60, threading.Event())
    timings = result.timings
    assert result.placed == 12
    assert timings.no_valid_host == 3
    assert len(timings.latencies_ms) == 9
    assert timings.errors == 3 and result.timeouts == 2
    assert result.first_error is not None
    assert 0 < result.last_placement_s <= timings.busy_s
    assert not timings.truncated


def test_drive_stops_at_the_deadline():
    stop = threading.Event()
    result = load.drive(lambda request: 1, _Feed(range(10)), 2,
                        time.monotonic() - 1, stop)
    assert (result.placed, result.timings.latencies_ms,
            result.timings.truncated, result.last_placement_s) == (
        0, [], True, None)
