"""``scheduler-replay`` end to end, as a user runs it.

(a) The embedded replay (service in the replay's process, SQLite, the
    in-memory transport) of the first 200 VMs of the shipped slice on a
    small generated fleet places instances and writes every output,
    with the reference policies (``--compare``) next to the service.
(b) The same replay against a separately started ``scheduler-service``
    over a real RabbitMQ and a real PostgreSQL (seed with ``--seed-only``,
    start the service, replay with ``--no-seed``) gives the same
    placements CSV as the embedded run, byte for byte.

Each command runs as its own process, as it would from a shell.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

LIMIT = 200
SEED = 7
# 6 hosts of 32 vCPUs, 128 GiB and 1000 GiB: the first 200 VMs ask for
# up to 1,243 GiB of RAM, a little more than the 1,152 GiB allowed, so
# the run meets NoValidHost near its end.
FLEET_ARGS = ['--hosts', '6', '--host-shape', '32:131072:1000']
COMMON_ARGS = ['--noprogress', '--limit', str(LIMIT), '--seed', str(SEED)]
COMMAND_TIMEOUT = 120
READY_TIMEOUT = 60
SUMMARY_KEYS = {
    'settings', 'wall_time_s', 'vms_per_second', 'requests',
    'instances_requested', 'instances_placed', 'instances_rejected',
    'no_valid_host', 'no_valid_host_rate', 'errors', 'latency_ms',
    'decisions_per_second', 'fleet', 'flavors', 'flavor_totals',
    'no_valid_host_moments', 'trace_bound', 'compare', 'reference_runs'}
POLICIES = ['service', 'first-fit', 'best-fit']
# The replay is about the replay, not the defaults: the Newton/Ocata
# filters, ratios and single process it was written against, pinned now
# that the defaults are Nova 34's.
OCATA_DEFAULTS = '''\
[DEFAULT]
initial_cpu_allocation_ratio = 16.0
initial_ram_allocation_ratio = 1.5
[filter_scheduler]
enabled_filters = RetryFilter,AvailabilityZoneFilter,RamFilter,DiskFilter,\
ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,\
ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
[scheduler]
workers = 1
'''


def _replay(workdir, *args):
    """Run ``scheduler-replay`` with ``args``; return its stdout."""
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.replay'] + list(args),
        cwd=workdir, capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT)
    assert result.returncode == 0, (
        'scheduler-replay %s failed (%d):\n%s\n%s' % (
            ' '.join(args), result.returncode, result.stdout,
            result.stderr[-5000:]))
    return result.stdout


def _embedded(tmp_path, *extra):
    placements = tmp_path / 'embedded.csv'
    pinned = tmp_path / 'ocata-defaults.conf'
    pinned.write_text(OCATA_DEFAULTS)
    stdout = _replay(tmp_path, '--config-file', str(pinned), *COMMON_ARGS,
                     *FLEET_ARGS, '--placements', str(placements), *extra)
    return placements, stdout


def _rows(path):
    return path.read_text().splitlines()


def test_embedded_replay_places_instances_and_writes_outputs(tmp_path):
    output, image = tmp_path / 'replay.json', tmp_path / 'replay.png'
    placements, stdout = _embedded(tmp_path, '--output', str(output),
                                   '--plot', str(image), '--compare')
    assert 'Instances placed' in stdout and 'NoValidHost' in stdout
    assert 'Per flavor' in stdout
    assert all(name in stdout for name in POLICIES)
    summary = json.loads(output.read_text())
    assert set(summary) >= SUMMARY_KEYS
    assert summary['instances_requested'] == LIMIT
    assert 0 < summary['instances_placed'] <= LIMIT
    assert summary['errors'] == 0
    assert summary['settings']['mode'] == 'embedded'
    assert summary['settings']['random_seed'] == SEED
    assert summary['settings']['fleet_nodes'] == 6
    assert summary['settings']['allocation_ratios'] == {
        'cpu_allocation_ratio': 16.0, 'ram_allocation_ratio': 1.5,
        'disk_allocation_ratio': 1.0}
    assert 'RamFilter' in summary['settings']['scheduler'][
        'enabled_filters']
    fleet = summary['fleet']
    assert set(fleet) >= {'trace_time_s', 'hosts_in_use', 'lower_bound',
                          'hosts_over_bound', 'cpu_utilisation',
                          'ram_utilisation', 'stranded'}
    assert 0 < fleet['hosts_in_use']['peak'] <= 6
    assert 0 < fleet['lower_bound']['peak'] <= fleet['hosts_in_use']['peak']
    assert fleet['ram_utilisation']['at_peak'] > 0
    # Every departure is replayed: the fleet ends with the VMs the trace
    # never deletes.
    assert fleet['trace_time_s'] > fleet['arrival_window_s']
    assert sum(f['instances_requested'] for f in summary['flavors']) == LIMIT
    assert len(summary['no_valid_host_moments']) == summary['no_valid_host']
    assert set(summary['compare']) == set(POLICIES)
    for figures in summary['compare'].values():
        assert figures['hosts_over_bound']['peak'] >= 1.0
        assert figures['no_valid_host']['requests'] >= 0
    for key in ('p50', 'p95', 'p99'):
        assert summary['latency_ms'][key] > 0
    assert image.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    rows = _rows(placements)
    assert rows[0] == 'vm_id,host,nodename'
    assert len(rows) == LIMIT + 1
    placed = [row for row in rows[1:] if not row.endswith(',,')]
    assert len(placed) == summary['instances_placed']
    assert all(row.split(',')[1].startswith('compute-') for row in placed)


class Service:
    """A ``scheduler-service`` process with its config file and log."""

    def __init__(self, workdir, config_path):
        self.log_path = workdir / 'service.log'
        self._log = open(self.log_path, 'w')
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'scheduler.cmd.service',
             '--config-file', str(config_path)],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir)

    def log(self):
        return self.log_path.read_text()[-5000:]

    def wait_ready(self):
        """Until the service logs that its RPC server listens (its queues
        exist from then on, so no request is lost)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while 'serving topic' not in self.log_path.read_text():
            if self.process.poll() is not None:
                pytest.fail('scheduler-service exited:\n%s' % self.log())
            if time.monotonic() > deadline:
                pytest.fail('scheduler-service not ready in %ds:\n%s'
                            % (READY_TIMEOUT, self.log()))
            time.sleep(0.2)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def _config(tmp_path, rabbit_url, db_url):
    """The config file of the service and the external replay: its own
    control exchange keeps this test's messages apart on the shared
    broker; the seed is the embedded run's."""
    name = 'replay-%s' % uuid.uuid4().hex[:8]
    path = tmp_path / 'scheduler.conf'
    path.write_text(textwrap.dedent('''\
        [DEFAULT]
        host = %s
        transport_url = %s
        control_exchange = %s
        [database]
        connection = %s
        [oslo_messaging_rabbit]
        heartbeat_timeout_threshold = 0
        [scheduler]
        random_seed = %d
        periodic_task_interval = -1
        ''') % (name, rabbit_url, name, db_url, SEED) + OCATA_DEFAULTS)
    return path


def test_external_service_gives_the_embedded_placements(
        tmp_path, rabbit_url, postgresql_url, fresh_database):
    embedded, _ = _embedded(tmp_path)
    db_url = fresh_database(postgresql_url)
    config = _config(tmp_path, rabbit_url, db_url)
    seeded = _replay(tmp_path, '--config-file', str(config), '--seed-only',
                     '--database-connection', db_url, *FLEET_ARGS)
    assert 'Seeded 6 compute node(s).' in seeded
    service = Service(tmp_path, config)
    try:
        service.wait_ready()
        external = tmp_path / 'external.csv'
        output = tmp_path / 'external.json'
        _replay(tmp_path, '--config-file', str(config), *COMMON_ARGS,
                '--no-seed', '--transport-url', rabbit_url,
                '--database-connection', db_url,
                '--placements', str(external), '--output', str(output))
    finally:
        service.stop()
    summary = json.loads(output.read_text())
    assert summary['settings']['mode'] == 'external'
    assert summary['settings']['fleet'] == 'database'
    assert summary['errors'] == 0
    assert summary['instances_placed'] > 0
    assert os.path.getsize(embedded) > 0
    assert _rows(external) == _rows(embedded)
