"""``scheduler-replay --find-fleet`` and ``--fill-until-failure`` end to
end, as a user runs them: every service run is a real replay through an
embedded service (its own process, temporary SQLite, in-memory broker),
next to the reference policies.

The trace: 12 VMs of 3 vCPUs that never leave, on hosts of 4 vCPUs with
allocation ratios 1.0.  No host holds two of them, whatever the policy:
the lower bound is ceil(36 / 4) = 9 hosts, the smallest fleet 12, and a
fleet of 5 is full after 5 VMs with 1 vCPU and 63 GiB of RAM left on
each host that no VM of the trace can use (stranded).
"""

import json
import subprocess
import sys

from scheduler_tools.replay import trace

COMMAND_TIMEOUT = 300
SHAPE = ['--host-shape', '4:65536:10']
POLICIES = ['service', 'first-fit', 'best-fit']
UNIT_RATIOS = '''\
[DEFAULT]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
disk_allocation_ratio = 1.0
'''
PNG = b'\x89PNG\r\n\x1a\n'


def _plan(tmp_path, *args):
    """Run ``scheduler-replay`` on the 12-VM trace with ``args``; return
    its stdout and the JSON it wrote."""
    path = tmp_path / 'trace.csv'
    trace.write_trace(path, [trace.VM('vm%02d' % number, float(number),
                                      None, 3, 1024)
                             for number in range(12)])
    config = tmp_path / 'ratios.conf'
    config.write_text(UNIT_RATIOS)
    output = tmp_path / 'planning.json'
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.replay',
         '--config-file', str(config), '--trace', str(path), '--noprogress',
         '--output', str(output), *SHAPE, *args],
        cwd=tmp_path, capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT)
    assert result.returncode == 0, result.stderr[-5000:]
    return result.stdout, json.loads(output.read_text())


def test_find_fleet_runs_the_service_and_the_reference_policies(tmp_path):
    image = tmp_path / 'search.png'
    stdout, figures = _plan(tmp_path, '--find-fleet', '--plot', str(image))
    assert all(policy in stdout for policy in POLICIES)
    assert figures['mode'] == 'find-fleet'
    assert figures['lower_bound'] == 9
    assert sorted(figures['policies']) == sorted(POLICIES)
    for found in figures['policies'].values():
        assert found['hosts'] == 12
        assert found['refused_instances'] == 0
        assert found['over_bound'] == 12 / 9
        assert min(run['hosts'] for run in found['runs']) == 9
        assert [run['hosts'] for run in found['runs']
                if run['passed']] == [12]
    service_runs = figures['policies']['service']['runs']
    assert [run['refused_instances'] for run in service_runs] == [
        12 - run['hosts'] for run in service_runs]
    assert figures['settings']['mode'] == 'embedded'
    assert image.read_bytes()[:8] == PNG


def test_fill_until_failure_stops_the_service_at_its_first_refusal(
        tmp_path):
    image = tmp_path / 'fill.png'
    stdout, figures = _plan(tmp_path, '--fill-until-failure', '--hosts',
                            '5', '--plot', str(image))
    assert 'vCPUs stranded' in stdout
    assert figures['mode'] == 'fill-until-failure'
    assert figures['fleet_nodes'] == 5
    assert sorted(figures['policies']) == sorted(POLICIES)
    for filled in figures['policies'].values():
        assert filled['instances_placed'] == 5
        assert filled['refused']['index'] == 5
        assert filled['hosts_in_use'] == 5
        vcpus = filled['resources']['vcpus']
        ram = filled['resources']['memory_mb']
        assert (vcpus['used'], vcpus['free'], vcpus['stranded']) == (
            15, 5, 5)
        assert ram['stranded'] == ram['free'] == 5 * (65536 - 1024)
    assert image.read_bytes()[:8] == PNG
