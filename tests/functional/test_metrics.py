"""The Prometheus endpoint of a real ``scheduler-service``: two workers
on RabbitMQ, real ``select_destinations`` calls, then ``/metrics``
scraped from the parent over loopback; and a ``[prometheus] bind`` that
cannot work stops the service at start."""

import datetime
import glob
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import sqlalchemy as sa
from deployment import Deployment
from deployment import service_environment
from oslo_utils import timeutils
from prometheus_client import multiprocess
from prometheus_client import parser

from scheduler import exception
from scheduler.db import api as db
from scheduler.db import service_row
from scheduler.observability import metrics
from scheduler_tools import seed

WORKERS = 2
# Most seconds a step may take (a refusal, a worker's gauges to go).
BOUND = 20
# Most single-instance calls made for both workers to take some.
MAX_CALLS = 40


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _fleet(ctx):
    """Three usable hosts, one disabled, one down."""
    for i in range(3):
        seed.add_compute(ctx, 'host%d' % i)
    seed.add_compute(ctx, 'host3', disabled=True)
    seed.add_compute(ctx, 'host4', last_seen_up=timeutils.utcnow() -
                     datetime.timedelta(days=1))


@pytest.fixture
def service(tmp_path, rabbit_url, monkeypatch):
    """The service with its metrics in ``tmp_path/metrics`` (named in
    its environment, so that the test can read each worker's files)."""
    directory = tmp_path / 'metrics'
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(directory))
    port = _free_port()
    dep = Deployment(
        'sqlite:///%s' % (tmp_path / 'scheduler.sqlite'), 'process',
        rabbit_url, str(tmp_path),
        {('scheduler', 'workers'): WORKERS,
         ('prometheus', 'bind'): '127.0.0.1:%d' % port,
         (None, 'report_interval'): 1})
    _fleet(dep.ctx)
    dep.start()
    yield dep, port, directory
    dep.stop()


def _scrape(port):
    """``{(sample name, ((label, value), ...)): value}`` served."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=5) as reply:
        text = reply.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def _decisions_by_pid(directory):
    """``{pid: decisions}`` of each process's own counter file."""
    found = {}
    for path in glob.glob(os.path.join(directory, 'counter_*.db')):
        pid = int(path.rsplit('_', 1)[1].split('.')[0])
        found[pid] = sum(
            sample.value
            for family in multiprocess.MultiProcessCollector.merge([path])
            if family.name == 'scheduler_decisions'
            for sample in family.samples)
    return found


def _service_row(dep):
    table = db.SERVICES
    with db.get_engine().connect() as connection:
        return connection.execute(sa.select(table).where(
            table.c.host == dep.host,
            table.c.binary == service_row.BINARY)).one()


def test_metrics_add_up_over_the_workers(service):
    dep, port, directory = service
    workers = dep.worker_pids(WORKERS)
    assert len(workers) == WORKERS, dep.log()
    calls = 0
    while not all(_decisions_by_pid(directory).get(pid) for pid in workers):
        assert calls < MAX_CALLS, _decisions_by_pid(directory)
        assert len(dep.api.select_destinations(dep.ctx,
                                               seed.make_spec())) == 1
        calls += 1
    assert len(dep.api.select_destinations(
        dep.ctx, seed.make_spec(num_instances=2))) == 2
    with pytest.raises(exception.NoValidHost):
        dep.api.select_destinations(
            dep.ctx, seed.make_spec(availability_zone='nowhere'))

    served = _scrape(port)

    def value(name, **labels):
        return served.get((name, tuple(sorted(labels.items()))))
    successes = calls + 1
    assert [value('scheduler_decisions_total', outcome=outcome)
            for outcome in metrics.OUTCOMES] == [successes, 1, 0, 0, 0, 0]
    assert value('scheduler_instances_placed_total') == calls + 2
    assert value('scheduler_decision_duration_seconds_count') == (
        successes + 1)
    assert value('scheduler_decision_duration_seconds_bucket',
                 le='+Inf') == successes + 1
    assert value('scheduler_no_valid_host_total',
                 filter='AvailabilityZoneFilter') == 1
    removed = 'scheduler_filter_removed_hosts_total'
    # Once per request, the disabled host and the one down; AZ before.
    assert value(removed, filter='ComputeFilter') == 2 * successes
    assert value(removed, filter='AvailabilityZoneFilter') == 5
    assert [value('scheduler_hosts_' + name)
            for name in ('known', 'up', 'disabled')] == [5, 4, 1]
    assert 0 <= value('scheduler_view_staleness_seconds') < BOUND
    # Each worker's first decision read every row.
    assert value('scheduler_view_read_duration_seconds_count',
                 read='full') == WORKERS
    assert value('scheduler_claim_races_lost_total') == 0
    # The workers wrote it all, the parent nothing.
    by_pid = _decisions_by_pid(directory)
    assert sorted(by_pid) == workers, dep.log()
    assert sum(by_pid.values()) == successes + 1

    # The service's own row, beaten by its workers.
    row = _service_row(dep)
    assert (row.topic, row.deleted) == (service_row.TOPIC, 0)
    dep.wait_for(lambda: _service_row(dep).report_count >
                 row.report_count + 1, timeout=BOUND)

    # A worker killed: its gauges go at the next scrape, its counts stay.
    os.kill(workers[0], signal.SIGKILL)
    gauges = os.path.join(directory, 'gauge_live*_%d.db' % workers[0])
    assert glob.glob(gauges)
    dep.wait_for(lambda: _scrape(port) and not glob.glob(gauges),
                 timeout=BOUND)
    after = _scrape(port)
    assert after[('scheduler_decisions_total', (('outcome', 'success'),))
                 ] == successes


def _refusal(tmp_path, bind):
    """Start the service with ``bind``; its status and "Cannot start"
    lines."""
    db_url = 'sqlite:///%s' % (tmp_path / 'synced.sqlite')
    seed.use_database(db_url)
    log = tmp_path / 'service.log'
    conf = tmp_path / 'scheduler.conf'
    conf.write_text(
        '[DEFAULT]\ntransport_url = fake:/\nlog_file = %s\n'
        '[database]\nconnection = %s\n[scheduler]\nworkers = 2\n'
        '[prometheus]\nbind = %s\n' % (log, db_url, bind))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-m', 'scheduler.cmd.service', '--config-file',
         str(conf)], capture_output=True, text=True, timeout=BOUND,
        env=service_environment(), cwd=tmp_path)
    assert time.monotonic() - started < BOUND
    text = log.read_text()
    assert 'Traceback' not in text and 'Forking' not in text, text
    return done.returncode, [line for line in text.splitlines()
                             if 'Cannot start:' in line]


def test_a_bad_bind_stops_the_service(tmp_path):
    status, lines = _refusal(tmp_path, 'localhost')
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].endswith(
        "Cannot start: [prometheus] bind: 'localhost' is not HOST:PORT with "
        "a port from 1 to 65535 (e.g. 127.0.0.1:9180)")


def test_a_port_in_use_stops_the_service(tmp_path):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        bind = '127.0.0.1:%d' % taken.getsockname()[1]
        status, lines = _refusal(tmp_path, bind)
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].endswith('Cannot start: [prometheus] bind: cannot '
                             'listen on %s: Address already in use' % bind)
