"""``scheduler-bench --smoke``: the benchmark runs and writes its rows.

The full benchmark is not part of the test run; its smoke mode (50 hosts,
a few requests) is, in-process and end-to-end against the session's
RabbitMQ and a fresh PostgreSQL database passed by URL.  Each command
runs as its own process, as from a shell, within ``SMOKE_TIMEOUT``.
"""

import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler_tools.bench import report

SMOKE_TIMEOUT = 60
ROW_KEYS = {'mode', 'hosts', 'instances', 'p50_ms', 'p95_ms', 'p99_ms',
            'decisions_per_s', 'rss_mb', 'target_p50_ms', 'target_p99_ms',
            'meets_target'}


def _bench(workdir, *args):
    """Run ``scheduler-bench --smoke --noprogress`` with ``args``; return
    its stdout."""
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.bench', '--smoke',
         '--noprogress'] + list(args),
        cwd=workdir, capture_output=True, text=True, timeout=SMOKE_TIMEOUT)
    assert result.returncode == 0, (
        'scheduler-bench %s failed (%d):\n%s\n%s' % (
            ' '.join(args), result.returncode, result.stdout,
            result.stderr[-5000:]))
    return result.stdout


def _check_rows(rows, mode):
    assert [(row['mode'], row['hosts'], row['instances'])
            for row in rows] == [(mode, 50, 1), (mode, 50, 10)]
    for row in rows:
        assert set(row) >= ROW_KEYS
        assert row['errors'] == 0
        assert row['requests'] >= 3
        assert 0 < row['p50_ms'] <= row['p95_ms'] <= row['p99_ms']
        assert row['decisions_per_s'] > 0
        assert row['rss_mb'] > 0
        assert row['meets_target'] in (True, False, None)
    single = rows[0]
    # 50 hosts are held to the 1,000-host targets.
    assert single['target_hosts'] == 1000
    assert single['target_p50_ms'] is not None
    assert isinstance(single['meets_target'], bool)
    assert single['node_update_rounds'] >= 1
    assert single['node_write_ms'] > 0


@pytest.mark.timeout(SMOKE_TIMEOUT + 30)
def test_inprocess_smoke(tmp_path):
    output = tmp_path / 'bench.json'
    stdout = _bench(tmp_path, '--mode', 'inprocess', '--output',
                    str(output))
    assert 'select_destinations' in stdout
    rows = report.read_json_lines(output)
    _check_rows(rows, 'inprocess')


@pytest.mark.timeout(SMOKE_TIMEOUT + 60)
def test_endtoend_smoke_on_given_servers(tmp_path, rabbit_url,
                                         postgresql_url, fresh_database):
    db_url = fresh_database(postgresql_url)
    output = tmp_path / 'bench.json'
    stdout = _bench(tmp_path, '--mode', 'endtoend', '--output',
                    str(output), '--transport-url', rabbit_url,
                    '--database-connection', db_url)
    assert 'endtoend' in stdout
    rows = report.read_json_lines(output)
    _check_rows(rows, 'endtoend')
    assert rows[0]['target_decisions_per_s'] == 150
    # The given database is left as it was found: no compute node.
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            for table in ('compute_nodes', 'services', 'aggregates',
                          'aggregate_hosts'):
                count = connection.execute(
                    sa.text('SELECT COUNT(*) FROM %s' % table)).scalar()
                assert count == 0, table
    finally:
        engine.dispose()


def test_targets_and_verdicts():
    assert report.target_for('inprocess', 1000, 1) == (
        1000, report.Target(1, 3))
    assert report.target_for('endtoend', 5000, 1)[0] == 10000
    assert report.target_for('endtoend', 200000, 1) == (None, None)
    assert report.target_for('endtoend', 1000, 10) == (None, None)
    row = {'p50_ms': 5.0, 'p99_ms': 19.0, 'decisions_per_s': 160.0,
           'rss_mb': 250.0, 'target_p50_ms': 6, 'target_p99_ms': 20,
           'target_decisions_per_s': 150, 'target_rss_mb': 300}
    assert report.meets_target(row)
    assert not report.meets_target(dict(row, decisions_per_s=100.0))
    assert not report.meets_target(dict(row, rss_mb=None))
