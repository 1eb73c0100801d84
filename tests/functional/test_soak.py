"""``scheduler-soak``, short: a minute of mixed load on 500 hosts.

The one-hour soak at 10,000 hosts runs on demand (docs/tools.rst); this
is its short version, on the session's RabbitMQ and a fresh PostgreSQL
database, as its own process: 60 s of boots, deletes, instance and
aggregate casts and heartbeats against one ``scheduler-service`` of two
workers, sampled every 10 s.  The samples must be there with their
figures, the database must show no overcommit, balanced claims and no
lost or leaked claim, every call must be answered, the staleness probe
must have measured changes, the plot must be a PNG and the given
database must be left as it was found.  The RSS growth is printed
(``pytest -s``) but not asserted: a minute is too short for a trend.
"""

import json
import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler_tools.bench import report
from scheduler_tools.bench import soak_settings

SOAK_TIMEOUT = 150
HOSTS = 500
DURATION_S = 60
INTERVAL_S = 10
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def _table_counts(db_url, tables):
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return {table: connection.execute(sa.text(
                'SELECT COUNT(*) FROM %s' % table)).scalar()
                for table in tables}
    finally:
        engine.dispose()


@pytest.mark.timeout(SOAK_TIMEOUT + 60)
def test_short_soak_on_given_servers(tmp_path, rabbit_url, postgresql_url,
                                     fresh_database):
    db_url = fresh_database(postgresql_url)
    output = tmp_path / 'soak'
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.soak',
         '--hosts', str(HOSTS), '--duration', str(DURATION_S),
         '--sample-interval', str(INTERVAL_S), '--callers', '4',
         '--transport-url', rabbit_url, '--database-connection', db_url,
         '--output-dir', str(output), '--drain-timeout', '30'],
        cwd=tmp_path, capture_output=True, text=True, timeout=SOAK_TIMEOUT)
    print(result.stdout)
    assert result.returncode in (0, 1), (
        'scheduler-soak could not run (%d):\n%s\n%s' % (
            result.returncode, result.stdout, result.stderr[-5000:]))
    with open(output / soak_settings.SUMMARY_FILE) as stream:
        summary = json.load(stream)
    failed = {name: check for name, check in summary['checks'].items()
              if not check['passed']}
    assert set(failed) <= {'rss_growth', 'connections_stable'}, (
        failed, result.stdout, result.stderr[-5000:])
    assert (result.returncode == 0) == summary['verified']

    # Samples: one before the load, one per interval, one at the end.
    samples = report.read_json_lines(output / soak_settings.SAMPLES_FILE)
    assert len(samples) == DURATION_S // INTERVAL_S + 1
    assert samples[0]['t_s'] == 0
    assert samples[-1]['t_s'] == pytest.approx(DURATION_S, abs=3)
    for sample in samples:
        assert sample['rss_mb'] > 50
        # The parent and its two workers.
        assert sample['service_processes'] == 3
        assert sample['rss_mb'] == pytest.approx(sample['rss_report_mb'],
                                                 rel=0.05)
        assert sample['db_connections'] >= 1
        assert sample['service_db_connections'] >= 1
        assert sample['service_broker_connections'] >= 1
        assert sample['fds'] >= sample['sockets'] > 0
    for sample in samples[1:]:
        assert sample['calls'] > 0 and sample['decisions_per_s'] > 0
        assert 0 < sample['p50_ms'] <= sample['p99_ms']
        assert sample['errors'] == 0
        assert sample['boots'] > 0 and sample['casts'] > 0
        assert sample['server_decisions'] > 0
        assert sample['view_age_s'] is not None
    assert any(sample['probes'] for sample in samples)
    assert any(sample['deletes'] for sample in samples)
    staleness = [s['staleness_s'] for s in samples
                 if s['staleness_s'] is not None]
    assert staleness and all(0 <= value < 30 for value in staleness)

    # The mix: boots balanced by deletes, every kind of cast.
    assert summary['boots'] > HOSTS and summary['deletes'] > 0
    assert summary['live_instances'] <= summary['live_target'] + 10
    assert summary['filled_at_s'] is not None
    for name, count in summary['casts'].items():
        assert count > 0, name
    assert summary['errors'] == 0 and summary['timeouts'] == 0
    assert summary['cast_errors'] == 0

    # The claims: no overcommit, balanced, none lost, none leaked.
    assert summary['overcommitted'] == [] and summary['unbalanced'] == []
    assert summary['lost_claims_count'] == 0
    assert summary['leaked_claims_count'] == 0
    assert summary['misplaced_claims'] == []
    assert summary['instances_match'] and summary['claims_match']
    assert summary['claims'] == summary['live_instances']
    assert not summary['services_died'] and summary['service_errors'] == 0
    for resource in ('vcpus', 'memory_mb', 'disk_gb'):
        prefix = 'fleet_%s_' % resource
        assert (summary[prefix + 'used'] + summary[prefix + 'claimed'] <=
                summary[prefix + 'capacity'])

    # The staleness probe and the RSS verdict's figures.
    assert summary['staleness']['measured'] >= 4
    assert summary['staleness']['timeouts'] == 0
    rss = summary['rss']
    assert rss['samples'] >= 4 and rss['growth_pct'] is not None
    print('RSS growth after the warm-up: %s %% (%s -> %s MiB); staleness '
          'p50 %s s, max %s s' % (
              rss['growth_pct'], rss['baseline_mb'], rss['end_mb'],
              summary['staleness']['p50_s'], summary['staleness']['max_s']))

    with open(output / soak_settings.PLOT_FILE, 'rb') as stream:
        assert stream.read(8) == PNG_MAGIC
    assert 'verdict: ' in result.stdout

    # The given database is left as it was found.
    counts = _table_counts(db_url, ('compute_nodes', 'services',
                                    'aggregates', 'aggregate_hosts',
                                    'instances', 'scheduler_claims'))
    assert set(counts.values()) == {0}, counts
