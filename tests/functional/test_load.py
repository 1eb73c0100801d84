"""``scheduler-bench --mode load --smoke``: two schedulers, one database.

The short load test (``scheduler_tools.bench.load.SMOKE``: 20 hosts, 2
then 8 callers, requests of 1 then 10 instances, 5 s per phase) runs in
CI against the session's RabbitMQ and a fresh PostgreSQL database
passed by URL, as its own process, first with one ``scheduler-service``
of 2 workers, then with 2 services: each topology's services are
started once and serve its 4 phases, each from the seeded fleet again.
Whatever the interleaving, after each phase the claims in the database
must fit every node, match the claim rows and the instances placed in
the phase, and every call must be answered (a Selection or
NoValidHost).  The fleet fills up in each phase, so there are
NoValidHosts and the schedulers lose races for the last room on a node;
the lost races are printed (``pytest -s``) and must have happened in
each topology: over 3 runs on 2 shared cores, 7 to 11 per phase.  Each
callers value has its own floor (the no-op call), the same in both
topologies.

The option handling, the rows and the tables are checked without servers
in ``tests/unit/bench/test_bench_load.py``.
"""

import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler_tools.bench import report

LOAD_TIMEOUT = 180
TOPOLOGIES = [('workers', 1, 2), ('services', 2, 1)]
# (callers, instances) of the phases, in order (load.SMOKE).
PHASES = [(2, 1), (2, 10), (8, 1), (8, 10)]


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
    assert 'the claims in the database after them' in result.stdout
    assert 'no-op/s' in result.stdout
    rows = report.read_json_lines(output)
    assert [(row['topology'], row['processes'], row['workers'],
             row['callers'], row['instances']) for row in rows] == [
        topology + phase for topology in TOPOLOGIES for phase in PHASES]
    floors = {}
    for row in rows:
        name = '%s %d callers x%d' % (row['topology'], row['callers'],
                                      row['instances'])
        print('%s: %d calls, %d placed (the last after %.1f s), %d '
              'NoValidHost, %d lost races (%s), %.1f decisions/s, %.1f '
              'instances/s' % (
                  name, row['requests'], row['placed'],
                  row['last_placement_s'], row['no_valid_host'],
                  row['lost_races'], row['lost_races_by_service'],
                  row['decisions_per_s'], row['instances_per_s']))
        assert (row['mode'], row['hosts']) == ('load', 20)
        # No overcommit, exact bookkeeping, one claim per placement of
        # the phase: the previous phases' claims were released.
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
        assert row['refused'] == 0, name
        assert (row['requests'] * row['instances'] ==
                row['placed'] + row['no_valid_host'] * row['instances'])
        assert not row['services_died'] and row['service_errors'] == 0
        assert row['placed'] > 0 and row['fleet_memory_mb_claimed'] > 0
        assert row['decisions_per_s'] > 0
        # Instances placed per second of the phase.
        assert row['instances_per_s'] == pytest.approx(
            row['placed'] / row['measure_s'], rel=0.01)
        # The floor of the row's callers value, measured in the same run
        # on the same broker: the same for both topologies.
        assert row['noop_calls_per_s'] > 0 and row['noop_errors'] == 0
        assert 0 < row['noop_p50_ms'] <= row['noop_p99_ms']
        noop = (row['noop_calls_per_s'], row['noop_p50_ms'])
        assert floors.setdefault(row['callers'], noop) == noop
        assert row['share_of_noop'] == round(
            100.0 * row['decisions_per_s'] / row['noop_calls_per_s'], 1)
        assert 0 < row['p50_ms'] <= row['p95_ms'] <= row['p99_ms']
        assert row['rss_mb'] > 0
        # Lost races were counted, per process of the topology.
        assert len(row['lost_races_by_service']) == row['processes']
        assert row['lost_races'] == sum(row['lost_races_by_service'])
    for topology, _, _ in TOPOLOGIES:
        mine = [row for row in rows if row['topology'] == topology]
        # The fleet filled up: requests of 10 instances fill 20 hosts in
        # about a second.
        assert all(row['no_valid_host'] > 0 for row in mine
                   if row['instances'] == 10), topology
        assert sum(row['lost_races'] for row in mine) > 0, topology
    assert len(floors) == 2
    # The given database is left as it was found.
    counts = _table_counts(db_url, ('compute_nodes', 'services',
                                    'aggregates', 'aggregate_hosts',
                                    'scheduler_claims'))
    assert set(counts.values()) == {0}, counts
