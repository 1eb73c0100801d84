"""``scheduler-manage host`` and ``aggregate`` against a running
``scheduler-service`` on RabbitMQ.

Hosts are registered and a zone made with the command line (subprocesses
on the service's own config file); the running service learns of the
zone from the ``update_aggregates`` cast, places into it, keeps it
across a restart (read from the database at start-up), and ``host
list`` shows the claims of its placements.
"""

import json
import socket
import subprocess
import sys
import time

from deployment import Deployment
from deployment import service_environment

from scheduler import exception
from scheduler_tools import seed

# Seconds a placement may wait for the zone's cast to be handled.
CAST_WAIT = 20


def _manage(conf_path, *argv):
    """Run ``scheduler-manage --config-file conf_path argv``; returns the
    CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, '-m', 'scheduler.cmd.manage',
         '--config-file', str(conf_path)] + list(argv),
        capture_output=True, text=True, timeout=60, env=service_environment())


def _ok(conf_path, *argv):
    result = _manage(conf_path, *argv)
    assert result.returncode == 0, result.stderr
    return result


def _nodes(conf_path):
    listed = json.loads(_ok(conf_path, 'host', 'list', '-f', 'json').stdout)
    return {row['Node']: row for row in listed}


def _place_in_zone(dep, zone, **flavor):
    """select_destinations in ``zone``, again while the service has not
    handled the zone's cast yet (NoValidHost, nothing claimed)."""
    deadline = time.monotonic() + CAST_WAIT
    while True:
        try:
            (chosen,) = dep.api.select_destinations(
                dep.ctx, seed.make_spec(availability_zone=zone, **flavor))
            return chosen['host']
        except exception.NoValidHost:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_hosts_and_a_zone_from_the_command_line(tmp_path, rabbit_url):
    db_url = 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    dep = Deployment(db_url, 'process', rabbit_url, str(tmp_path)).start()
    conf_path = tmp_path / 'scheduler.conf'   # the service's own file
    try:
        _ok(conf_path, 'host', 'add', 'cmp-a', '--vcpus', '8',
            '--memory-mb', '8192', '--disk-gb', '100')
        # More RAM: the RAMWeigher's choice outside the zone.
        _ok(conf_path, 'host', 'add', 'cmp-b', '--vcpus', '8',
            '--memory-mb', '32768', '--disk-gb', '100')
        _ok(conf_path, 'host', 'heartbeat', '--all')
        created = _ok(conf_path, 'aggregate', 'create', 'zone-1', '--zone',
                      'az1', '-f', 'json')
        assert json.loads(created.stdout)['availability_zone'] == 'az1'
        added = _ok(conf_path, 'aggregate', 'add-host', 'zone-1', 'cmp-a')
        assert added.stderr == ''   # the cast was sent

        assert _place_in_zone(dep, 'az1', vcpus=2, memory_mb=1024,
                              root_gb=10) == 'cmp-a'
        nodes = _nodes(conf_path)
        assert (nodes['cmp-a']['Zone'], nodes['cmp-b']['Zone']) == (
            'az1', 'nova')
        assert nodes['cmp-a']['Aggregates'] == ['zone-1']
        assert nodes['cmp-a']['State'] == 'up'
        assert nodes['cmp-a']['Claims'] == 1
        assert nodes['cmp-a']['vCPUs'] == {
            'used': 0, 'claimed': 2, 'total': 8, 'allocation_ratio': 16.0,
            'capacity': 128.0}
        assert nodes['cmp-a']['RAM MiB']['claimed'] == 1024
        assert nodes['cmp-a']['Disk GiB']['claimed'] == 10
        assert nodes['cmp-b']['Claims'] == 0
    finally:
        assert dep.stop() == 0

    # Restarted: the zone comes from the database.
    dep = Deployment(db_url, 'process', rabbit_url, str(tmp_path)).start()
    try:
        (chosen,) = dep.api.select_destinations(
            dep.ctx, seed.make_spec(availability_zone='az1', vcpus=1))
        assert chosen['host'] == 'cmp-a'
        assert _nodes(conf_path)['cmp-a']['Claims'] == 2
    finally:
        assert dep.stop() == 0


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_an_unreachable_broker_leaves_the_write_and_warns(tmp_path):
    db_url = 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    seed.use_database(db_url)
    conf_path = tmp_path / 'scheduler.conf'
    conf_path.write_text(
        '[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:%d/\n'
        '[database]\nconnection = %s\n' % (_closed_port(), db_url))
    started = time.monotonic()
    result = _ok(conf_path, 'aggregate', 'create', 'agg', '--zone', 'az1',
                 '-f', 'json')
    assert time.monotonic() - started < 30
    assert json.loads(result.stdout)['name'] == 'agg'
    assert 'warning: the database has the change' in result.stderr
    listed = json.loads(_ok(conf_path, 'aggregate', 'list', '-f',
                            'json').stdout)
    assert [row['Name'] for row in listed] == ['agg']
