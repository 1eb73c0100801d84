"""``scheduler-bench --mode versus-nova`` at a tiny size: 20 compute
nodes, one caller, 1- and 10-instance requests, a second per phase, on
the session's RabbitMQ and PostgreSQL and a Placement of this module's
own (``module_placement``: the fleet's providers stay in it).

The command runs as its own process, as from a shell, on the
``scheduler_tools`` this test imported; Nova 34's venv comes from
``tools/test-setup.sh`` (``nova_venv``).  The JSON rows must hold every
contestant's phases with decisions, each after settle calls all
answered NoValidHost, no overcommit, the Placement claims matching the
instances placed, the agreement of both schedulers, and the ratios; the
plot must be written.
"""

import os
import subprocess
import sys

import pytest
from nova_venv import nova_venv

import scheduler_tools
from scheduler_tools.bench import report
from scheduler_tools.bench import versus_nova

SOURCE = os.path.dirname(os.path.dirname(scheduler_tools.__file__))
RUN_TIMEOUT = 600
CONTESTANTS = {'nova', 'ours-placement', 'ours-sql'}


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_versus_nova_at_20_hosts(tmp_path, rabbit_url, postgresql_url,
                                 module_placement):
    venv = nova_venv()
    output, plot = tmp_path / 'versus.json', tmp_path / 'versus.png'
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.bench', '--noprogress',
         '--mode', 'versus-nova', '--hosts', '20', '--callers', '1',
         '--instances', '1,10', '--time-budget', '1', '--call-timeout',
         '60', '--nova-venv', venv, '--transport-url', rabbit_url,
         '--nova-database-server', postgresql_url,
         '--placement-url', module_placement.url,
         '--placement-database', module_placement.database_url,
         '--output', str(output), '--plot', str(plot)],
        cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
            SOURCE, os.environ.get('PYTHONPATH')]))))
    assert result.returncode == 0, (result.stdout, result.stderr[-5000:])
    rows = report.read_json_lines(output)
    phases = [row for row in rows if row['mode'] == 'versus-nova']
    assert {(row['contestant'], row['callers'], row['instances'])
            for row in phases} == {(name, callers, instances)
                                   for name in CONTESTANTS
                                   for callers in (1,)
                                   for instances in (1, 10)}
    for row in phases:
        assert row['hosts'] == 20
        assert row['decisions'] > 0 and row['errors'] == 0, row
        assert row['decisions_per_s'] > 0 and row['p50_ms'] <= row['p99_ms']
        assert row['placed'] >= row['decisions'] - row['no_valid_host']
        assert row['overcommitted'] == [] and row['verified'], row
        # Before it, every settle call was answered NoValidHost.
        assert row['settle_no_valid_host'] == versus_nova.SETTLE_CALLS, row
        assert row['settle_errors'] == 0, row
        if row['contestant'] == 'ours-sql':
            assert row['allocations_held'] is None
        else:
            # Every instance placed holds its allocation, and nothing
            # else does.
            assert row['allocations_held'] == row['allocations_expected']
            assert row['allocations_expected'] == row['placed']
    agreement = [row for row in rows if row['mode'] ==
                 'versus-nova-agreement']
    assert [row['instances'] for row in agreement] == [1, 10]
    for row in agreement:
        assert row['compared'] == row['requests'] > 0
        assert 0 <= row['same_hosts'] <= row['compared']
        assert row['agreement'] is not None
    ratios = [row for row in rows if row['mode'] == 'versus-nova-ratio']
    assert len(ratios) == 2
    assert all(row['placement_vs_nova_decisions'] > 0 and
               row['placement_vs_sql_decisions'] > 0 for row in ratios)
    assert plot.read_bytes()[:4] == b'\x89PNG'
    assert 'versus-nova' in result.stdout and 'agreement at 20 hosts' in \
        result.stdout
