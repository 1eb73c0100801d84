"""``scheduler-bench --mode placement --smoke``: Placement's allocation
candidates against ours, on a fresh Placement of the test's own
(openstack-placement under gunicorn, two workers, on a new PostgreSQL
database) that holds no provider at the start.

Each command runs as its own process, as from a shell, on the
``scheduler_tools`` this test imported (whatever the installed copy).
"""

import os
import subprocess
import sys

import pytest

import scheduler_tools
from scheduler_tools.bench import report

SMOKE_TIMEOUT = 60
SOURCE = os.path.dirname(os.path.dirname(scheduler_tools.__file__))


def _bench(workdir, *args, timeout=SMOKE_TIMEOUT):
    """Run ``scheduler-bench --noprogress --mode placement`` with
    ``args``; return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.bench', '--noprogress',
         '--mode', 'placement'] + list(args),
        cwd=workdir, capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
            SOURCE, os.environ.get('PYTHONPATH')]))))


@pytest.fixture
def placement(postgresql_url, fresh_database, private_server):
    """A Placement of the test's own on a new PostgreSQL database."""
    db_url = fresh_database(postgresql_url, prefix='placement')
    return private_server('placement', database_url=db_url)


@pytest.mark.timeout(SMOKE_TIMEOUT + 60)
def test_smoke_against_a_fresh_placement(tmp_path, placement):
    output = tmp_path / 'bench.json'
    given = ('--placement-url', placement.url, '--placement-database',
             placement.database_url)
    result = _bench(tmp_path, '--smoke', '--output', str(output), *given)
    assert result.returncode == 0, (result.stdout, result.stderr[-5000:])
    assert 'allocation_candidates' in result.stdout
    [row] = report.read_json_lines(output)
    # 200 compute nodes, some with GPU or bandwidth child providers.
    assert (row['mode'], row['hosts']) == ('placement', 200)
    assert 200 < row['providers'] < 400
    assert row['seeded'] == row['providers'] and row['seed_s'] > 0
    assert row['requests'] == 10 and not row['truncated']
    assert row['mismatches'] == 0
    assert row['candidates_mean'] > 0
    assert row['load_ms'] > 0
    for side in ('placement', 'ours', 'ours_unshaped', 'decision',
                 'decision_claim', 'trees_placement', 'trees_ours',
                 'trees_decision', 'decision_unwatched', 'usage_read',
                 'freed'):
        assert 0 < row[side + '_p50_ms'] <= row[side + '_p99_ms']
    # Every delete of an allocation was seen, within the bound.
    assert row['freed_requests'] == 10
    assert row['freed_meets_bound'] and row['freed_bound_ms'] == 1000
    assert 'without a generation bump' in result.stdout
    assert row['load_view_s'] > 0
    assert row['speedup'] > 0
    assert row['microversion'] == '1.36'
    # The tree queries: the same allocation requests, child providers
    # included.
    assert row['trees_requests'] == 10 and row['trees_mismatches'] == 0
    assert row['trees_candidates_mean'] > 0
    assert row['trees_speedup'] > 0
    assert 'provider trees' in result.stdout
    # One request for many instances, placed and claimed (in two chunks).
    assert row['multi_create'] == 150
    assert 0 < row['multi_create_s'] and 0 < row['multi_create_one_post_s']
    assert 'one request for many new instances' in result.stdout
    # The providers stay: a second run is refused, in one line.
    again = _bench(tmp_path, '--smoke', *given)
    assert again.returncode == 2, (again.stdout, again.stderr[-5000:])
    assert again.stderr.strip().splitlines() == [
        'scheduler-bench: error: the Placement at %s holds %d resource '
        'provider(s); --mode placement needs one without any (it writes '
        'its own)' % (placement.url, row['providers'])]


def test_placement_url_is_required(tmp_path):
    result = _bench(tmp_path, '--smoke', '--placement-database',
                    'sqlite://')
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        'scheduler-bench: error: --mode placement needs --placement-url '
        '(a noauth2 Placement holding no resource provider, and the '
        'SQLAlchemy URL of its database)']
    assert result.stdout == ''
