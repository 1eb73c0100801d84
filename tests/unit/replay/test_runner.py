"""The replay's settings: fleet sizing, host shapes, warnings, the
embedded deployment's broker (and its pipe) and thread pool, log
levels."""

import io
import logging
import multiprocessing
import socket
import subprocess
import sys
import threading
import types

import kombu
import numpy as np
import pytest
from oslo_config import cfg

from scheduler.conf import scheduler as scheduler_opts
from scheduler_tools.replay import broker
from scheduler_tools.replay import capacity
from scheduler_tools.replay import deployment
from scheduler_tools.replay import fleet
from scheduler_tools.replay import metrics
from scheduler_tools.replay import options
from scheduler_tools.replay import runner
from scheduler_tools.replay import trace

HEADER = 'vm_id,arrival_s,lifetime_s,vcpus,memory_mb\n'


def _requests(*sizes):
    """One request per ``(vcpus, memory_mb, disk_gb)`` size, a second
    apart, each VM living 60 s."""
    return [trace.Request(index, float(index), [
        trace.VM('vm%d' % index, float(index), 60.0, *size)])
        for index, size in enumerate(sizes)]


# -- fleet shape and size ----------------------------------------------------

def test_a_shape_without_a_disk_gets_one_for_every_vm_at_once():
    diskless = _requests((1, 1024, 0), (2, 2048, 0))
    assert options.generated_shape((80, 184320, None), diskless) == (
        fleet.HostShape(80, 184320, 1))
    disks = _requests((1, 1024, 10), (2, 2048, 25))
    assert options.generated_shape((80, 184320, None), disks) == (
        fleet.HostShape(80, 184320, 35))
    assert options.generated_shape((8, 1024, 500), disks) == (
        fleet.HostShape(8, 1024, 500))
    gpus = fleet.HostShape(8, 1024, None, 4, 'T4')
    assert options.generated_shape(gpus, disks) == gpus._replace(local_gb=35)


def _settings(**values):
    settings = object.__new__(options.Settings)
    defaults = dict(fleet=None, no_seed=False, seed_only=False, hosts=None,
                    hosts_given=False, hosts_factor=None,
                    host_shape=(8, 8192, None))
    settings.__dict__.update(defaults, **values)
    settings.host_shape = fleet.HostShape(*settings.host_shape)
    return settings


def test_hosts_factor_sizes_the_fleet_from_the_peak_bound(conf):
    for name in ('cpu_allocation_ratio', 'ram_allocation_ratio'):
        conf.set_override(name, 1.0)
    # At t=1 both VMs run: 12 vCPUs, 12288 MiB -> ceil(12 / 8) = 2 hosts.
    requests = _requests((4, 4096, 0), (8, 8192, 0))
    settings = _settings(hosts_factor=1.5)
    specs = settings.fleet_specs(requests)
    assert len(specs) == 3   # ceil(1.5 * 2)
    assert (specs[0].vcpus, specs[0].memory_mb, specs[0].local_gb) == (
        8, 8192, 1)
    assert settings.hosts == 3 and settings.host_shape == (8, 8192, 1, 0, None)
    assert len(_settings(hosts=24, hosts_given=True).fleet_specs(
        requests)) == 24


def test_without_a_size_the_fleet_is_the_default_factor_of_the_bound(conf):
    for name in ('cpu_allocation_ratio', 'ram_allocation_ratio'):
        conf.set_override(name, 1.0)
    requests = _requests((4, 4096, 0), (8, 8192, 0))   # bound: 2 hosts
    settings = _settings()
    assert len(settings.fleet_specs(requests)) == 3    # ceil(1.15 * 2)
    assert settings.fleet_origin() == (
        "3 generated hosts of 8 vCPUs, 8,192 MiB RAM and 1 GiB disk: 1.15 x "
        "the trace's peak lower bound (the default; choose with --hosts or "
        "--hosts-factor)")
    gpus = _settings(hosts=2, hosts_given=True,
                     host_shape=(8, 8192, 10, 4, 'T4'))
    assert [(spec.gpus, spec.gpu_model)
            for spec in gpus.fleet_specs(requests)] == [(4, 'T4')] * 2
    assert gpus.fleet_origin() == (
        '2 generated hosts of 8 vCPUs, 8,192 MiB RAM, 4 T4 GPUs and 10 GiB '
        'disk (--hosts)')


def test_the_trace_is_read_to_size_a_fleet_even_when_only_seeding():
    assert _settings().needs_trace
    assert _settings(seed_only=True, host_shape=(8, 8192, None)).needs_trace
    shaped = _settings(seed_only=True, host_shape=(8, 8192, 10), hosts=4,
                       hosts_given=True)
    assert not shaped.needs_trace
    # sized from the trace: by --hosts-factor, or by default
    assert _settings(seed_only=True, host_shape=(8, 8192, 10),
                     hosts_factor=1.2).needs_trace
    assert _settings(seed_only=True, host_shape=(8, 8192, 10)).needs_trace
    assert not _settings(seed_only=True, fleet='f.csv').needs_trace


# -- reading the trace -------------------------------------------------------

def test_a_group_window_without_project_ids_warns(tmp_path, caplog):
    path = tmp_path / 'anonymous.csv'
    path.write_text(HEADER + 'a,0,60,1,1024\nb,1,60,1,1024\n')
    settings = types.SimpleNamespace(trace=str(path), limit=None,
                                     group_window_s=300.0,
                                     trace_format=None, embedded=True)
    with caplog.at_level(logging.WARNING, logger='scheduler_tools.replay'):
        requests = runner.load_requests(settings)
    assert len(requests) == 2
    assert 'no project_id' in caplog.text
    caplog.clear()
    settings.group_window_s = 0.0
    with caplog.at_level(logging.WARNING, logger='scheduler_tools.replay'):
        runner.load_requests(settings)
    assert 'no project_id' not in caplog.text


def test_announce_prints_the_bound_of_the_trace():
    fleet = capacity.FleetCapacity(np.asarray([[4.0, 4096.0, 0.0]] * 5),
                                   np.ones((5, 3)))
    out = io.StringIO()
    bound = runner.announce(_requests((4, 4096, 0), (4, 4096, 0)), fleet,
                            out)
    assert bound['peak'] == 2
    assert '2 VMs in 2 requests' in out.getvalue()
    assert 'lower bound of the trace on them: peak 2' in out.getvalue()


# -- the embedded deployment -------------------------------------------------

def test_messaging_defaults_yield_to_the_configuration():
    conf = cfg.ConfigOpts()
    deployment._register_messaging_opts(conf)
    conf.set_default('executor_thread_pool_size', 4)
    conf([])
    assert conf.executor_thread_pool_size == 4
    assert conf.oslo_messaging_rabbit.heartbeat_timeout_threshold == 60
    conf.set_override('executor_thread_pool_size', 16)
    assert conf.executor_thread_pool_size == 16


def _embedded_conf(*args):
    """A fresh ConfigOpts with the service's [scheduler] and
    [filter_scheduler] options, parsed from ``args``, configured as the
    embedded deployment configures its service."""
    conf = cfg.ConfigOpts()
    scheduler_opts.register_opts(conf)
    conf(list(args))
    settings = types.SimpleNamespace(random_seed=1)
    deployment.Deployment(settings, conf)._configure_embedded()
    return conf


def test_the_embedded_service_reads_instance_lists_from_the_database(
        tmp_path):
    # The casts are asynchronous, and MixedFitWeigher reads the lists:
    # read from the rows the agents commit before each call, they are
    # the same at every run.
    assert _embedded_conf().filter_scheduler.track_instance_changes is False
    configured = tmp_path / 'track.conf'
    configured.write_text('[filter_scheduler]\ntrack_instance_changes = '
                          'True\n')
    conf = _embedded_conf('--config-file', str(configured))
    assert conf.filter_scheduler.track_instance_changes is True


def test_broker_consumers_wait_for_a_publication():
    broker.register()
    received = []
    with kombu.Connection('%s://' % broker.ALIAS) as connection:
        queue = kombu.Queue('replay-test', kombu.Exchange('replay-test'),
                            'key')
        with connection.Consumer(queue, callbacks=[
                lambda body, message: received.append(body)]):
            with pytest.raises(socket.timeout):
                connection.drain_events(timeout=0.05)
            timer = threading.Timer(0.1, lambda: kombu.Connection(
                '%s://' % broker.ALIAS).Producer().publish(
                'hello', exchange=queue.exchange, routing_key='key',
                declare=[queue]))
            timer.start()
            connection.drain_events(timeout=10)
            timer.join()
    assert received == ['hello']


@pytest.fixture
def hub():
    """A Hub serving one end of a pipe from a thread; the
    PipeTransport connected to the other end."""
    broker.register()
    replay_end, hub_end = multiprocessing.Pipe()
    serving = threading.Thread(target=broker.Hub(hub_end).serve)
    serving.start()
    broker.connect(replay_end)
    yield
    broker.disconnect()
    serving.join(10)
    assert not serving.is_alive()
    replay_end.close()
    hub_end.close()


def _consume_one(url, queue):
    """The body of the next message of ``queue`` on ``url``'s broker."""
    received = []
    with kombu.Connection(url) as connection:
        with connection.Consumer(queue, callbacks=[
                lambda body, message: received.append(body)]):
            connection.drain_events(timeout=10)
    return received


def test_the_pipe_routes_publications_with_the_hubs_bindings(hub):
    queue = kombu.Queue('pipe-in', kombu.Exchange('pipe-in', 'topic'),
                        'scheduler.*')
    with kombu.Connection('%s://' % broker.ALIAS) as connection:
        queue(connection.default_channel).declare()
    with kombu.Connection('%s://' % broker.PIPE_ALIAS) as connection:
        connection.Producer().publish(
            {'method': 'select_destinations'}, exchange=queue.exchange,
            routing_key='scheduler.host-1', declare=[queue.exchange])
    assert _consume_one('%s://' % broker.ALIAS, queue) == [
        {'method': 'select_destinations'}]


def test_the_hub_sends_the_queues_the_replay_consumes(hub):
    queue = kombu.Queue('pipe-reply', kombu.Exchange('pipe-reply'),
                        'pipe-reply')
    received = []
    with kombu.Connection('%s://' % broker.PIPE_ALIAS) as connection:
        with connection.Consumer(queue, callbacks=[
                lambda body, message: received.append(body)]):
            with pytest.raises(socket.timeout):
                connection.drain_events(timeout=0.05)
            with kombu.Connection('%s://' % broker.ALIAS) as hub_side:
                hub_side.Producer().publish(
                    {'result': 'ok'}, exchange=queue.exchange,
                    routing_key='pipe-reply')
            connection.drain_events(timeout=10)
    assert received == [{'result': 'ok'}]
    assert broker.Channel.queues['pipe-reply'].qsize() == 0


def test_a_closed_pipe_is_a_clear_error():
    broker.register()
    with kombu.Connection('%s://' % broker.PIPE_ALIAS) as connection:
        with pytest.raises(ConnectionError, match='not connected'):
            connection.Producer().publish(
                'lost', exchange='', routing_key='nowhere')


# -- log levels --------------------------------------------------------------

LEVEL = ('from scheduler_tools.cmd import replay; import logging, sys; '
         'replay._parse(sys.argv[1:]); '
         'print(logging.getLogger("scheduler").getEffectiveLevel())')


@pytest.mark.parametrize('args, level', [
    ([], logging.WARNING),
    (['--debug'], logging.DEBUG),
    (['--log-file', 'LOG'], logging.INFO),
])
def test_the_users_log_choice_wins(tmp_path, args, level):
    args = [str(tmp_path / 'replay.log') if arg == 'LOG' else arg
            for arg in args]
    result = subprocess.run([sys.executable, '-c', LEVEL] + args,
                            capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[-1]) == level


# -- the progress bar --------------------------------------------------------

def test_the_progress_bar_ends_on_the_tables_counts(capsys):
    decisions = metrics.DecisionStats()
    requests = [_request_of(2), _request_of(1), _request_of(3)]
    with runner._progress_bar(6, True, decisions) as advance:
        for request, placed in zip(requests, (2, 0, 3), strict=True):
            decisions.record(0.001, request.num_instances, placed)
            advance(request)
    # Fewer requests than PROGRESS_EVERY: only the closing update counts.
    last = capsys.readouterr().err.replace('\r', '\n').strip().splitlines()
    assert 'novalidhost=1, placed=5' in last[-1]


def _request_of(count):
    return trace.Request(0, 0.0, [trace.VM('vm', 0.0, None, 1, 512)
                                  for _ in range(count)])
