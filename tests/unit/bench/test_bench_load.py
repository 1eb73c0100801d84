"""``scheduler-bench --mode load`` without servers: its options (lists of
callers and instances, own defaults), the callers' accounting, the
phases' requests, the claims released between phases, the rows (one
per hosts, topology, callers and instances, each with the floor of its
callers value) and the tables, which fit in 120 columns."""

import io
import os
import subprocess
import sys
import threading
import time
import uuid

import oslo_messaging as messaging
import pytest
from oslo_config import cfg
from rich.console import Console

from scheduler import exception
from scheduler.db import claims
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import load
from scheduler_tools.bench import load_callers
from scheduler_tools.bench import load_fleet
from scheduler_tools.bench import load_services
from scheduler_tools.bench import load_table
from scheduler_tools.bench import report
from scheduler_tools.bench import workload
from scheduler_tools.cmd import bench as bench_cmd


def _settings(*args):
    conf = cfg.ConfigOpts()
    bench_cmd.register_opts(conf)
    conf(list(args), project='scheduler-bench-test')
    return bench_cmd.settings_from(conf)


# ---------------------------------------------------------------- options --

def test_callers_is_a_list_like_hosts():
    settings = _settings('--mode', 'load', '--callers', '1,8,32,128',
                         '--instances', '1,10,100,1000', '--hosts',
                         '1000,10000')
    assert settings.callers == [1, 8, 32, 128]
    assert settings.instances == [1, 10, 100, 1000]
    assert settings.hosts == [1000, 10000]
    assert _settings('--callers', '4').callers == [4]


@pytest.mark.parametrize('value', ['0', '1,0', 'x', '-2'])
def test_callers_must_be_positive_integers(value, capsys):
    # oslo.config rejects the value and exits, as argparse does.
    with pytest.raises(SystemExit):
        _settings('--mode', 'load', '--callers', value)


def test_callers_need_a_value():
    with pytest.raises(BenchError, match='--callers'):
        _settings('--mode', 'load', '--callers', '')


def test_load_defaults_apply_to_options_not_given():
    settings = _settings('--mode', 'load', '--callers', '4')
    assert settings.modes == ('load',)
    assert settings.callers == [4]
    assert settings.hosts == [30]
    assert settings.instances == [1]
    assert settings.time_budget_s == 60.0
    assert settings.call_timeout == 120
    assert settings.requests == 100000
    assert _settings('--mode', 'load').callers == [8]
    given = _settings('--mode', 'load', '--call-timeout', '45',
                      '--time-budget', '15')
    assert (given.call_timeout, given.time_budget_s) == (45, 15.0)
    # --smoke: two callers values, one multi-instance value, short.
    smoke = _settings('--mode', 'load', '--smoke', '--hosts', '40')
    assert (smoke.hosts, smoke.callers, smoke.instances,
            smoke.time_budget_s, smoke.call_timeout) == (
        [20], [2, 8], [1, 10], 5.0, 30)
    # The other modes keep their own defaults.
    other = _settings('--mode', 'endtoend')
    assert (other.hosts, other.callers, other.call_timeout) == (
        [1000, 10000], [1], 300)


def test_multi_instance_phases_make_fewer_calls():
    settings = _settings('--mode', 'load', '--instances', '1,10,100,1000')
    assert [settings.requests_for(n) for n in settings.instances] == [
        100000, 10000, 1000, 100]


# ------------------------------------------------------------------ fleet --

def test_load_hosts_have_a_quarter_of_the_ram():
    hosts = load_fleet.load_hosts(10, seed=3)
    full = workload.generate_hosts(10, seed=3)
    for small, big in zip(hosts, full, strict=True):
        assert small.spec.memory_mb == big.spec.memory_mb // 4
        assert small.memory_mb_used == big.memory_mb_used // 4
        assert small.spec.vcpus == big.spec.vcpus
        assert small.spec.local_gb == big.spec.local_gb


def test_a_thousand_hosts_hold_a_request_of_a_thousand_instances():
    # RAM runs out first.  Even at a RAM allocation ratio of 1.0 (30% of
    # the hosts; the others have the default 1.5), the live hosts' free
    # RAM holds 3,000 instances of the largest flavor of the mix...
    hosts = [host for host in load_fleet.load_hosts(1000) if host.up]
    largest = max(memory_mb for _, memory_mb, _, _ in workload.FLAVORS)
    room = sum((host.spec.memory_mb - host.memory_mb_used) // largest
               for host in hosts)
    assert room >= 3 * 1000
    # ... and a few requests of 1,000 instances fill it: between 5 and
    # 20 of the mean flavor.
    mean = sum(memory_mb for _, memory_mb, _, _ in workload.FLAVORS) / len(
        workload.FLAVORS)
    free = sum(host.spec.memory_mb - host.memory_mb_used for host in hosts)
    assert 5 * 1000 < free / mean < 20 * 1000


@pytest.fixture
def ctx(tmp_path):
    yield seed.use_database('sqlite:///%s' % (tmp_path / 'load.sqlite'))
    writers.reset_engine()


def test_claims_are_released_between_phases(ctx):
    hosts = load_fleet.load_hosts(6, seed=1)
    seeded = workload.seed_hosts(ctx, hosts)
    uuids = [str(uuid.uuid4()) for _ in range(9)]
    for index, instance in enumerate(uuids):
        assert claims.claim(ctx, seeded.compute_node_ids[index % 3],
                            instance, 1, 512, 1)
    found = load_fleet.verify(ctx, 9)
    assert found['claims'] == 9 and found['claims_match']
    assert found['fleet_memory_mb_claimed'] == 9 * 512
    assert load_fleet.release_claims(ctx, chunk=4) == 9
    found = load_fleet.verify(ctx, 0)
    assert (found['claims'], found['claims_match'], found['unbalanced'],
            found['overcommitted']) == (0, True, [], [])
    assert found['fleet_memory_mb_claimed'] == 0
    assert found['fleet_vcpus_claimed'] == 0
    assert load_fleet.release_claims(ctx) == 0
    load_fleet.remove_load(ctx, seeded)


# ---------------------------------------------------------------- callers --

class _Feed:
    def __init__(self, items):
        self.items = list(items)
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            return self.items.pop(0) if self.items else None


def test_drive_counts_every_outcome():
    outcomes = (['place'] * 6 + ['nvh'] * 3 + ['timeout'] * 2 +
                ['boom'] + ['refused'] * 4)

    def decide(outcome):
        if outcome == 'nvh':
            raise exception.NoValidHost(reason='full')
        if outcome == 'timeout':
            raise messaging.MessagingTimeout('no answer')
        if outcome == 'boom':
            raise RuntimeError('boom')
        if outcome == 'refused':
            raise exception.DatabaseUnavailable(reason='decision_timeout')
        return 2

    result = load_callers.drive(decide, _Feed(outcomes), 3,
                        time.monotonic() + 60, threading.Event())
    timings = result.timings
    assert result.placed == 12
    assert timings.no_valid_host == 3
    # Refusals are answers but not decisions: counted, not timed.
    assert result.refused == 4
    assert len(timings.latencies_ms) == 9
    assert timings.errors == 3 and result.timeouts == 2
    assert result.first_error is not None
    assert 0 < result.last_placement_s <= timings.busy_s
    assert not timings.truncated


def test_heartbeats_beat_every_service_then_a_slice_at_a_time(monkeypatch):
    """The load's heartbeats stamp the fleet once, then one slice a
    period, as independent nova-computes spread theirs; the whole fleet
    at once every interval made every worker read every service row in
    one refresh (issue 33's p99 bursts)."""
    calls = []
    enough = threading.Event()

    def beat(ctx, *args):
        calls.append(args)
        if len(calls) >= 5:
            enough.set()
        return 0

    monkeypatch.setattr(seed, 'heartbeat_services', beat)
    with load_callers.heartbeats(interval_s=0.03, slices=3):
        assert enough.wait(30)
    assert calls[:5] == [(), (3, 0), (3, 1), (3, 2), (3, 0)]


def test_drive_stops_at_the_deadline():
    stop = threading.Event()
    result = load_callers.drive(lambda request: 1, _Feed(range(10)), 2,
                        time.monotonic() - 1, stop)
    assert (result.placed, result.timings.latencies_ms,
            result.timings.truncated, result.last_placement_s) == (
        0, [], True, None)


def test_caller_results_merge():
    first = load_callers.CallerResult(placed=3, refused=1, timeouts=0,
                              last_placement_s=2.0)
    second = load_callers.CallerResult(placed=4, refused=2, timeouts=1,
                               first_error='x', last_placement_s=1.0)
    first.merge(second)
    assert (first.placed, first.refused, first.timeouts, first.first_error,
            first.last_placement_s) == (7, 3, 1, 'x', 2.0)


def test_phases_send_the_same_requests_with_their_own_instances():
    bench = workload.Workload(load_fleet.load_hosts(20), seed=0)

    def drain(feed):
        found = []
        while (request := feed.next()) is not None:
            found.append(request)
        return found

    first = drain(load_callers.RequestFeed(bench, 3, 250, uuid_tag='c1'))
    again = drain(load_callers.RequestFeed(bench, 3, 250, uuid_tag='c1'))
    other = drain(load_callers.RequestFeed(bench, 3, 250, uuid_tag='c8'))
    plain = drain(load_callers.RequestFeed(bench, 3, 250))
    assert len(first) == len(other) == len(plain) == 250
    # The same mix: kinds and flavors.
    assert [(r.kind, r.spec.flavor.name) for r in first] == [
        (r.kind, r.spec.flavor.name) for r in other] == [
        (r.kind, r.spec.flavor.name) for r in plain]
    # Deterministic per tag; new instances for another tag.
    assert [r.instance_uuids for r in first] == [
        r.instance_uuids for r in again]
    mine = {u for r in first for u in r.instance_uuids}
    theirs = {u for r in other for u in r.instance_uuids}
    assert len(mine) == 750 and not mine & theirs
    assert not mine & {u for r in plain for u in r.instance_uuids}
    for request in first:
        assert request.spec.instance_uuid == request.instance_uuids[0]
        assert len(request.instance_uuids) == 3
        uuid.UUID(request.spec.instance_uuid)


def test_settle_returns_once_the_services_are_idle():
    class Idle:
        alive = True

        def __init__(self, process):
            self.process = process

    sleeper = subprocess.Popen([sys.executable, '-c',
                                'import time; time.sleep(30)'])
    try:
        time.sleep(0.3)
        started = time.monotonic()
        waited = load_services.settle([Idle(sleeper)], timeout_s=10,
                                      poll_s=0.2)
        assert waited < 2 and time.monotonic() - started < 2
    finally:
        sleeper.kill()
        sleeper.wait()
    # Nothing to read: no wait.
    gone = Idle(sleeper)
    gone.alive = False
    assert load_services.settle([gone], timeout_s=10) < 0.1


def test_settle_gives_up_after_its_timeout():
    class Busy:
        alive = True

        def __init__(self, process):
            self.process = process

    spinner = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    try:
        waited = load_services.settle([Busy(spinner)], timeout_s=0.5,
                                      poll_s=0.2)
        assert 0.5 <= waited < 3
    finally:
        spinner.kill()
        spinner.wait()


def test_cpu_s_reads_this_process():
    assert report.cpu_s(os.getpid()) > 0
    assert report.cpu_s(2 ** 22 + 12345) is None


def test_the_client_pool_has_room_for_every_caller():
    conf = cfg.ConfigOpts()
    with endtoend.client_pool(8, conf) as size:
        assert size == conf.oslo_messaging_rabbit.rpc_conn_pool_size == 30
    with endtoend.client_pool(128, conf) as size:
        assert size == conf.oslo_messaging_rabbit.rpc_conn_pool_size == 128
    assert conf.oslo_messaging_rabbit.rpc_conn_pool_size == 30


# ------------------------------------------------------------------- rows --

def test_make_row_has_instances_per_second():
    timings = inprocess.Timings(latencies_ms=[5.0, 6.0, 7.0, 8.0],
                                no_valid_host=1, busy_s=2.0)
    row = report.make_row('load', 1000, 10, timings, rss=None, placed=30,
                          callers=8)
    assert (row['requests'], row['decisions_per_s'], row['placed'],
            row['instances_per_s'], row['callers']) == (4, 2.0, 30, 15.0, 8)
    # Without ``placed``: the instances of each decision that placed.
    row = report.make_row('endtoend', 1000, 10, timings, rss=None)
    assert (row['placed'], row['instances_per_s']) == (30, 15.0)
    empty = report.make_row('load', 1000, 1, inprocess.Timings(), rss=None,
                            placed=0)
    assert (empty['decisions_per_s'], empty['instances_per_s']) == (
        None, None)


def _row(topology='workers', callers=8, instances=1, **extra):
    timings = inprocess.Timings(latencies_ms=[3.0, 4.0, 120.0, 2500.0],
                                no_valid_host=1, busy_s=2.0,
                                truncated=True)
    row = report.make_row(
        'load', 10000, instances, timings, rss=300.0, placed=3 * instances,
        topology=topology, processes=1 if topology == 'workers' else 2,
        workers=2 if topology == 'workers' else 1, callers=callers,
        refused=0, timeouts=0, first_error=None, last_placement_s=1.5,
        lost_races=3, lost_races_by_service=[3], claims=3 * instances,
        claims_match=True, overcommitted=[], unbalanced=[],
        fleet_vcpus_used=10, fleet_vcpus_claimed=5,
        fleet_vcpus_capacity=100.0, fleet_memory_mb_used=1024,
        fleet_memory_mb_claimed=1024, fleet_memory_mb_capacity=4096.0,
        fleet_disk_gb_used=1, fleet_disk_gb_claimed=1,
        fleet_disk_gb_capacity=20.0, verified=True)
    row.update(extra)
    return row


def test_run_gives_each_row_the_floor_of_its_callers(monkeypatch):
    settings = _settings('--mode', 'load', '--callers', '1,8')
    floors = {1: {'noop_calls_per_s': 100.0, 'noop_p50_ms': 1.0,
                  'noop_p99_ms': 2.0, 'noop_errors': 0},
              8: {'noop_calls_per_s': 400.0, 'noop_p50_ms': 3.0,
                  'noop_p99_ms': 5.0, 'noop_errors': 0}}
    monkeypatch.setattr(load, 'measure_floors', lambda *args: floors)

    def run_topology(topology, hosts_count, settings, transport_url,
                     admin_url, emit):
        for callers in settings.callers:
            for instances in settings.instances:
                emit(_row(topology.name, callers, instances))

    monkeypatch.setattr(load, 'run_topology', run_topology)
    emitted = []
    rows = load.run(30, settings, 'rabbit://', emit=emitted.append)
    assert rows == emitted
    assert [(row['topology'], row['callers']) for row in rows] == [
        ('workers', 1), ('workers', 8), ('services', 1), ('services', 8)]
    for row in rows:
        assert row['noop_calls_per_s'] == floors[row['callers']][
            'noop_calls_per_s']
        assert row['noop_p50_ms'] == floors[row['callers']]['noop_p50_ms']
        assert row['share_of_noop'] == round(
            100.0 * row['decisions_per_s'] / row['noop_calls_per_s'], 1)


# ------------------------------------------------------------------ table --

def _print(rows):
    console = Console(width=load_table.TABLE_WIDTH, record=True,
                      file=io.StringIO())
    load_table.print_table(rows, console)
    return console.export_text()


def test_table_fits_in_120_columns_with_every_figure():
    rows = [_row('workers', 128, 1000, noop_calls_per_s=1234.5,
                 noop_p50_ms=12.34, noop_p99_ms=50.0, share_of_noop=0.1,
                 refused=17),
            _row('services', 1, 1, noop_calls_per_s=99.5, noop_p50_ms=1.5,
                 noop_p99_ms=3.0, share_of_noop=2.0, verified=False,
                 errors=2, timeouts=1, first_error='MessagingTimeout: x',
                 log_dirs=['/tmp/kept'])]
    text = _print(rows)
    assert max(len(line) for line in text.splitlines()) <= 120
    for header in ('mode', 'hosts', 'topology', 'callers', 'inst', 'dec/s',
                   'inst/s', 'p50', 'p99', 'no-op/s', 'lost', 'refused',
                   'verified', 'NoValid', 'errors', 'p95', 'claims', 'RAM',
                   'over-', 'unbal-'):
        assert header in text, header
    lines = text.splitlines()
    first = next(line for line in lines if line.split()[:1] == ['load'])
    # mode, hosts, topology, callers, inst, dec/s, inst/s, p50, p99,
    # no-op/s, no-op p50, % of no-op, lost races, refused, verified.
    assert first.split() == ['load', '10,000', 'workers', '128', '1,000',
                             '2.0', '1,500', '62.0', '2,429', '1,234',
                             '12.3', '0.1', '3', '17', 'yes']
    second = [line for line in lines if line.split()[:1] == ['load']][1]
    assert second.split()[-1] == 'no'
    # The claims table: RAM used + claimed over capacity.
    claims_line = next(line for line in lines
                       if line.split()[:2] == ['10,000', 'workers'])
    assert claims_line.split() == ['10,000', 'workers', '128', '1,000',
                                   '4*', '3,000', '1', '0', '2,143', '1.5',
                                   '3,000', '50%', '0', '0']
    assert '2 (1 t/o)' in text
    assert 'first error: MessagingTimeout: x' in text
    assert 'service logs kept in /tmp/kept' in text


def test_latencies_and_rates_are_short():
    assert [load_table._ms(value)
            for value in (None, 0.123, 12.34, 1234.5)] == [
        '-', '0.12', '12.3', '1,234']
    assert [load_table._rate(value)
            for value in (None, 0.5, 56.63, 1234.5)] == [
        '-', '0.50', '56.6', '1,234']


def test_other_modes_table_shows_the_callers():
    timings = inprocess.Timings(latencies_ms=[1.0, 2.0], busy_s=1.0)
    rows = [report.make_row('endtoend', 1000, 1, timings, rss=100.0,
                            callers=callers) for callers in (1, 32)]
    rows.append(report.make_row('inprocess', 1000, 1, timings, rss=100.0))
    console = Console(width=150, record=True, file=io.StringIO())
    report.print_table(rows, console)
    text = console.export_text()
    assert 'callers' in text
    cells = [line.split('│') for line in text.splitlines()
             if 'endtoend' in line or 'inprocess' in line]
    assert [cell[4].strip() for cell in cells] == ['1', '32', '-']
