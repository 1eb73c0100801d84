"""The soak's pieces without servers (``scheduler_tools.bench.soak`` and
its ``soak_*`` modules): the warm-up, the latency window, the RSS growth
and the connection trends, the verdict, the plot, the process walk, the
metrics parsing, the staleness probe on a simulated view, the compute
side's registry, the claims audit and the aggregate casts on SQLite, and
the options of ``scheduler-soak``.  tests/functional/test_soak.py runs
the real thing.
"""

import collections
import os
import socket
import subprocess
import threading
import types

import pytest
import sqlalchemy as sa
from oslo_config import cfg

from scheduler.db import api as db
from scheduler.db import claims
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj
from scheduler.observability import metrics as service_metrics
from scheduler_tools import bench
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import soak
from scheduler_tools.bench import soak_audit
from scheduler_tools.bench import soak_casts
from scheduler_tools.bench import soak_measure
from scheduler_tools.bench import soak_probe
from scheduler_tools.bench import soak_report
from scheduler_tools.bench import soak_sampler
from scheduler_tools.bench import soak_settings
from scheduler_tools.bench import soak_verdict
from scheduler_tools.bench import soak_world
from scheduler_tools.bench import workload
from scheduler_tools.cmd import soak as soak_cmd

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def _samples(values, interval_s=60.0, key='rss_mb', **extra):
    return [dict({'t_s': index * interval_s, key: value}, **extra)
            for index, value in enumerate(values)]


# ---------------------------------------------------------------- warm-up --

def test_warmup_is_ten_minutes_or_a_third_of_a_short_run():
    assert soak_settings.warmup_for(3600) == 600
    assert soak_settings.warmup_for(1800) == 600
    assert soak_settings.warmup_for(60) == pytest.approx(20)
    assert soak_settings.warmup_for(60, 5) == 5
    assert soak_settings.warmup_for(60, 100) == 60
    settings = soak_settings.SoakSettings()
    assert (settings.hosts, settings.duration_s, settings.sample_interval_s,
            settings.warmup, settings.live_target) == (
        10000, 3600.0, 60.0, 600.0, 10000)
    assert soak_settings.SoakSettings(
        duration_s=60, live_instances=7).live_target == 7


# ------------------------------------------------------------ the window --

def test_latency_window_takes_one_interval_at_a_time():
    window = soak_sampler.LatencyWindow()
    for ms in range(1, 101):
        window.record(float(ms))
    window.record(500.0, 'no_valid_host')
    window.error()
    window.error(timeout=True)
    first = window.take(10.0)
    assert first['calls'] == 101
    assert first['decisions_per_s'] == 10.1
    assert first['no_valid_host'] == 1
    assert (first['errors'], first['timeouts']) == (2, 1)
    assert 50 <= first['p50_ms'] <= 52
    assert 99 < first['p99_ms'] <= 500
    assert first['max_ms'] == 500.0
    second = window.take(10.0)
    assert (second['calls'], second['p99_ms'], second['errors']) == (
        0, None, 0)
    assert len(window.all_ms) == 101


# ---------------------------------------------------------- the verdict --

def test_linear_fit():
    assert soak_verdict.linear_fit([0, 1, 2], [1, 3, 5]) == pytest.approx(
        (2, 1))
    assert soak_verdict.linear_fit([5], [3]) == (0.0, 3)
    assert soak_verdict.linear_fit([], []) == (0.0, 0.0)


def test_rss_growth_ignores_the_warm_up():
    # Steep during the first 10 minutes, flat afterwards.
    values = [100, 300, 350, 380, 395, 399, 400, 400, 400, 400] + (
        [400] * 50 + [401])
    growth = soak_verdict.rss_growth(_samples(values), 600)
    assert growth['samples'] == 51
    assert growth['baseline_mb'] == 400
    assert growth['growth_pct'] < 1
    assert abs(growth['slope_mb_per_min']) < 0.05


def test_rss_growth_catches_a_slow_leak():
    # 1 MiB a minute on 400 MiB: +12.5 % over 50 minutes.
    values = [400 + minute for minute in range(61)]
    growth = soak_verdict.rss_growth(_samples(values), 600)
    assert growth['slope_mb_per_min'] == pytest.approx(1.0)
    assert growth['fitted_pct'] == pytest.approx(100 * 50 / 410, abs=0.01)
    assert growth['endpoint_pct'] > 5
    assert growth['growth_pct'] == max(growth['fitted_pct'],
                                       growth['endpoint_pct'])


def test_rss_growth_needs_two_samples_after_the_warm_up():
    growth = soak_verdict.rss_growth(_samples([100, 200, 300]), 120)
    assert growth['samples'] == 1
    assert growth['growth_pct'] is None
    # Samples without RSS do not count.
    samples = _samples([100, None, None, 120])
    assert soak_verdict.rss_growth(samples, 0)['samples'] == 2


def test_steady_tolerates_noise_but_not_a_leak():
    noisy = [20, 24, 19, 23, 25, 21, 20, 24, 22, 23, 21, 25]
    assert soak_verdict.steady(_samples(noisy, key='fds'), 'fds', 0)['steady']
    leak = list(range(20, 80, 5))
    found = soak_verdict.steady(_samples(leak, key='fds'), 'fds', 0)
    assert found['steady'] is False
    assert found['first_max'] == 35 and found['last_median'] == 67.5
    assert soak_verdict.steady(_samples([1, 2], key='fds'), 'fds',
                               0)['steady'] is None


def _audit(**changes):
    audit = {'live': 10, 'claims': 10, 'lost': [], 'leaked': [],
             'abandoned': [], 'misplaced': [], 'instances_match': True}
    audit.update(changes)
    return audit


def _found(**changes):
    found = {'claims': 10, 'overcommitted': [], 'unbalanced': [],
             'claims_match': True}
    found.update(changes)
    return found


PROBE = {'measured': 12, 'timeouts': 0}


def _flat_samples():
    return [dict(s, db_connections=10, service_db_connections=4,
                 service_broker_connections=3, fds=60)
            for s in _samples([300] * 13, interval_s=5.0)]


def test_verdict_passes_a_clean_soak():
    checks, growth, trends = soak_verdict.verdict(
        _flat_samples(), _audit(), _found(), {'errors': 0}, PROBE, 0, 20.0,
        5.0)
    assert set(checks) == set(soak_verdict.CHECKS)
    assert all(check['passed'] for check in checks.values()), checks
    assert [name for name, check in checks.items() if check['target']] == \
        ['rss_growth', 'overcommit']
    assert growth['growth_pct'] == 0
    assert all(trend['steady'] for trend in trends.values())


@pytest.mark.parametrize('failing, args', [
    ('overcommit', {'found': _found(overcommitted=[{'id': 1}])}),
    ('claims_balanced', {'found': _found(unbalanced=[{'id': 1}])}),
    ('lost_claims', {'audit': _audit(lost=['a'])}),
    ('lost_claims', {'audit': _audit(leaked=['b'])}),
    ('lost_claims', {'audit': _audit(misplaced=['c'])}),
    ('lost_claims', {'audit': _audit(instances_match=False)}),
    ('calls_answered', {'calls': {'errors': 1}}),
    ('services_alive', {'died': 1}),
    ('staleness_probes', {'probe': {'measured': 3, 'timeouts': 1}}),
    ('staleness_probes', {'probe': {'measured': 0, 'timeouts': 0}}),
])
def test_verdict_fails_each_check(failing, args):
    given = {'samples': _flat_samples(), 'audit': _audit(),
             'found': _found(), 'calls': {'errors': 0}, 'probe': PROBE,
             'died': 0}
    given.update(args)
    checks, _, _ = soak_verdict.verdict(warmup_s=20.0, rss_limit_pct=5.0,
                                        **given)
    assert [name for name, check in checks.items()
            if not check['passed']] == [failing]


def test_verdict_fails_rss_growth_and_connection_leaks():
    samples = _flat_samples()
    for index, sample in enumerate(samples):
        sample['rss_mb'] = 300 + 5 * index
        sample['db_connections'] = 10 + 3 * index
    checks, growth, _ = soak_verdict.verdict(samples, _audit(), _found(),
                                             {'errors': 0}, PROBE, 0, 20.0,
                                             5.0)
    assert not checks['rss_growth']['passed']
    assert checks['rss_growth']['value'] == growth['growth_pct'] > 5
    assert checks['connections_stable']['value'] == ['db_connections']
    # Too few samples after the warm-up: no verdict on RSS is a fail.
    checks, _, _ = soak_verdict.verdict(samples[:2], _audit(), _found(),
                                        {'errors': 0}, PROBE, 0, 20.0, 5.0)
    assert not checks['rss_growth']['passed']
    assert checks['rss_growth']['value'] is None


# ---------------------------------------------------------------- plot --

def test_plot_writes_a_png_of_the_samples(tmp_path):
    samples = _flat_samples()
    for index, sample in enumerate(samples):
        sample.update(p50_ms=10.0 + index, p99_ms=30.0 + index,
                      sockets=12, staleness_s=0.05 * index,
                      view_age_s=0.001)
    samples[0].update(p50_ms=None, p99_ms=None, staleness_s=None)
    path = tmp_path / 'soak.png'
    growth = soak_verdict.rss_growth(samples, 20.0)
    assert soak_report.plot(samples, str(path), 20.0, growth,
                            'a title') == str(path)
    with open(path, 'rb') as stream:
        assert stream.read(8) == PNG_MAGIC
    assert path.stat().st_size > 10000


# ----------------------------------------------------------- processes --

def test_process_tree_and_figures_count_children_and_connections():
    child = subprocess.Popen(['sleep', '30'])
    server = socket.create_server(('127.0.0.1', 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    try:
        tree = soak_measure.process_tree(os.getpid())
        assert tree[0] == os.getpid() and child.pid in tree
        port = server.getsockname()[1]
        figures = soak_measure.process_figures([os.getpid()], {'db': port,
                                                               'broker': 1})
        assert figures['processes'] == 1
        assert figures['rss_mb'] > 10
        assert figures['fds'] >= figures['sockets'] >= 3
        assert figures['db_connections'] == 1
        assert figures['broker_connections'] == 0
        both = soak_measure.process_figures(tree)
        assert both['processes'] == len(tree) >= 2
        assert 'db_connections' not in both
    finally:
        for each in (client, accepted, server):
            each.close()
        child.kill()
        child.wait()
    assert soak_measure.process_tree(child.pid) == []
    assert soak_measure.process_figures([child.pid])['processes'] == 0


# -------------------------------------------------------------- metrics --

def _service_metrics_text(staleness, decisions, seconds, lost):
    from prometheus_client import generate_latest
    registry = service_metrics.enable()
    try:
        for _ in range(decisions):
            service_metrics.decision(service_metrics.SUCCESS,
                                     seconds / decisions, 1)
        for _ in range(lost):
            service_metrics.lost_race()
        service_metrics.host_view(100, 98, 1, staleness)
        return generate_latest(registry).decode()
    finally:
        service_metrics.disable()


def test_parse_metrics_reads_the_service_s_own_names():
    text = _service_metrics_text(0.25, 4, 0.2, 2)
    found = soak_measure.parse_metrics(text)
    assert found['view_age_s'] == 0.25
    assert found['decisions'] == 4
    assert found['decision_count'] == 4
    assert found['decision_seconds'] == pytest.approx(0.2)
    assert found['lost_races'] == 2
    assert found['hosts_known'] == 100
    assert soak_measure.parse_metrics('') == dict.fromkeys(found)


def test_metrics_of_several_services_and_intervals():
    one = soak_measure.parse_metrics(_service_metrics_text(0.5, 2, 0.02, 0))
    two = soak_measure.parse_metrics(_service_metrics_text(0.1, 3, 0.03, 1))
    combined = soak_measure.combine_metrics([one, None, two])
    assert combined['view_age_s'] == 0.5
    assert combined['decisions'] == 5
    first = soak_measure.metric_deltas(None, combined, 10.0)
    assert first == {'view_age_s': 0.5, 'server_decisions': 5,
                     'server_mean_ms': 10.0, 'server_lost_races': 1}
    later = dict(combined, decisions=9, decision_count=9,
                 decision_seconds=0.09, view_age_s=0.01)
    assert soak_measure.metric_deltas(combined, later, 10.0) == {
        'view_age_s': 0.01, 'server_decisions': 4, 'server_mean_ms': 10.0,
        'server_lost_races': 0}
    assert soak_measure.metric_deltas(
            None, soak_measure.combine_metrics([]), 1.0) == {
        'view_age_s': None, 'server_decisions': None,
        'server_mean_ms': None, 'server_lost_races': None}


# ------------------------------------------------------ staleness probe --

class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_wait_reflected_gives_the_window_of_the_change():
    clock = FakeClock()
    # Each call takes 0.1 s; the view shows the change from 0.35 s on.
    answers = []

    def ask():
        seen = clock.now - 100.0 >= 0.35
        clock.now += 0.1
        answers.append(seen)
        return seen

    upper, floor, calls = soak_probe.wait_reflected(
        ask, True, 100.0, 3, 10.0, clock=clock, pause_s=0)
    assert answers == [False, False, False, False, True, True, True]
    assert calls == 7
    assert floor == pytest.approx(0.3)      # the last stale call began
    assert upper == pytest.approx(0.5)      # the first agreeing one ended


def test_wait_reflected_needs_the_answers_in_a_row():
    clock = FakeClock()
    script = iter([True, False, None, True, True])

    def ask():
        clock.now += 0.1
        return next(script)

    upper, floor, calls = soak_probe.wait_reflected(
        ask, True, 100.0, 2, 10.0, clock=clock, pause_s=0)
    # ``None`` (no answer) breaks the run but is no stale answer.
    assert (calls, floor) == (5, pytest.approx(0.1))
    assert upper == pytest.approx(0.4)


def test_wait_reflected_gives_up():
    clock = FakeClock()

    def ask():
        clock.now += 1.0
        return False

    assert soak_probe.wait_reflected(ask, True, 100.0, 1, 5.0, clock=clock,
                                     pause_s=0) is None
    stop = threading.Event()
    stop.set()
    assert soak_probe.wait_reflected(lambda: True, True, 100.0, 1, 5.0,
                                     stop=stop, pause_s=0) is None


class LaggingView:
    """A service whose view shows the database's disabled flags
    ``lag`` calls late; ``full`` hosts have no room."""

    def __init__(self, lag=2, full=()):
        self.lag = lag
        self.full = set(full)
        self.disabled = collections.defaultdict(bool)
        self.history = collections.defaultdict(list)
        self.writes = []

    def set_disabled(self, host, disabled):
        self.writes.append((host, disabled))
        self.disabled[host] = disabled

    def ask(self, host):
        seen = self.history[host]
        seen.append(self.disabled[host])
        view = seen[max(0, len(seen) - 1 - self.lag)]
        return not view and host not in self.full


def test_staleness_probe_measures_both_changes_and_reenables():
    view = LaggingView(lag=2, full=['h0'])
    probe = soak_probe.StalenessProbe(view.ask, view.set_disabled,
                                      ['h0', 'h1'], confirm=3,
                                      interval_s=0.01)
    probe.cycle()               # h0 is full: skipped
    assert (probe.skipped, view.writes) == (1, [])
    probe.cycle()
    assert view.writes == [('h1', True), ('h1', False)]
    changes = probe.take()
    assert [m.change for m in changes] == ['disable', 'enable']
    # Two stale answers each (the lag), then three agreeing ones.
    assert [m.calls for m in changes] == [5, 5]
    assert all(m.upper >= m.floor >= 0 for m in changes)
    assert probe.take() == []
    summary = probe.summary()
    assert (summary['measured'], summary['timeouts'], summary['skipped'],
            summary['confirm']) == (2, 0, 1, 3)
    assert summary['max_s'] >= summary['p50_s']


def test_staleness_probe_enables_the_host_again_on_errors():
    view = LaggingView(lag=0)
    calls = []

    def ask(host):
        calls.append(host)
        if len(calls) > 1:
            raise RuntimeError('broker gone')
        return True

    probe = soak_probe.StalenessProbe(ask, view.set_disabled, ['h1'], 1, 0.01)
    with pytest.raises(RuntimeError):
        probe.cycle()
    assert view.writes == [('h1', True), ('h1', False)]


def test_staleness_probe_counts_changes_never_seen():
    view = LaggingView(lag=10 ** 6)
    probe = soak_probe.StalenessProbe(view.ask, view.set_disabled, ['h1'],
                                      1, 0.01, timeout_s=0.05)
    probe.cycle()
    assert probe.timeouts == 1
    assert view.writes == [('h1', True), ('h1', False)]


def test_probe_spec_asks_for_one_host():
    spec = soak_probe.probe_spec('bench-000003')
    dest = spec.requested_destination
    assert (dest.host, dest.node) == ('bench-000003', 'bench-000003')
    assert (spec.flavor.memory_mb, spec.flavor.vcpus) == (512, 1)


# ------------------------------------------------------------ the world --

class FakeAPI:
    def __init__(self):
        self.casts = []

    def __getattr__(self, name):
        def cast(ctx, *args, **kwargs):
            self.casts.append((name, args, kwargs))
        return cast


def _selection(host):
    return types.SimpleNamespace(service_host=host, nodename=host)


def _requests(hosts, count, instances=1):
    return workload.Workload(hosts).requests(instances, count, 'test',
                                             'plain')


def test_world_keeps_the_live_instances_at_the_target():
    hosts = workload.generate_hosts(5)
    api = FakeAPI()
    world = soak_world.World(api, live_target=4, delete_share=0.0, write=False)
    for index, request in enumerate(_requests(hosts, 6)):
        if index >= 4:
            doomed = world.pick_delete()
            assert doomed is not None
            world.delete(doomed)
        else:
            assert world.pick_delete() is None
        assert world.boot(request, [[_selection(hosts[index % 5].host),
                                     _selection('alternate')]]) == 1
    assert len(world) == 4
    assert world.filled_at is not None
    counts = world.counters()
    assert (counts['boots'], counts['deletes'],
            counts['update_instance_info'],
            counts['delete_instance_info']) == (6, 2, 6, 2)
    live = world.live()
    assert {i.host for i in live.values()} <= {h.host for h in hosts}
    host, instances = world.host_instances()
    assert instances and {i.host for i in instances} == {host}
    assert all(i.uuid in live for i in instances)
    names = [name for name, _, _ in api.casts]
    assert names.count('delete_instance_info') == 2
    name, args, _ = api.casts[0]
    assert name == 'update_instance_info' and args[0] == hosts[0].host
    assert isinstance(args[1], instance_obj.InstanceList)
    assert args[1].objects[0].host == hosts[0].host


def test_world_deletes_a_share_below_the_target():
    world = soak_world.World(FakeAPI(), live_target=10 ** 6,
                             delete_share=0.5, seed=3, write=False)
    hosts = workload.generate_hosts(3)
    for request in _requests(hosts, 400):
        doomed = world.pick_delete()
        if doomed is not None:
            world.delete(doomed)
        world.boot(request, [[_selection(hosts[0].host)]])
    deletes = world.counters()['deletes']
    assert 150 < deletes < 250
    assert len(world) == 400 - deletes


def test_world_multi_instance_boot_casts_once_per_host():
    hosts = workload.generate_hosts(3)
    api = FakeAPI()
    world = soak_world.World(api, 100, 0.0, write=False)
    request = _requests(hosts, 1, instances=3)[0]
    world.boot(request, [[_selection(hosts[0].host)],
                         [_selection(hosts[1].host)],
                         [_selection(hosts[0].host)]])
    casts = [(args[0], len(args[1].objects)) for _, args, _ in api.casts]
    assert casts == [(hosts[0].host, 2), (hosts[1].host, 1)]


# --------------------------------------------- SQLite: audit and casts --

@pytest.fixture
def ctx(tmp_path):
    yield seed.use_database('sqlite:///%s' % (tmp_path / 'soak.sqlite'))
    writers.reset_engine()


def test_audit_claims_finds_lost_leaked_and_misplaced_claims(ctx):
    hosts = workload.generate_hosts(3)
    workload.seed_hosts(ctx, hosts)
    nodes = {node['host']: node['id']
             for node in db.compute_node_get_all(ctx)}
    world = soak_world.World(FakeAPI(), 100, 0.0)
    requests = _requests(hosts, 3)
    for request, host in zip(requests, hosts, strict=True):
        flavor = request.spec.flavor
        assert claims.claim(ctx, nodes[host.host],
                            request.instance_uuids[0], flavor.vcpus,
                            flavor.memory_mb, flavor.root_gb)
        world.boot(request, [[_selection(host.host)]])
    audit = soak_audit.audit_claims(ctx, world)
    assert (audit['live'], audit['claims'], audit['lost'], audit['leaked'],
            audit['misplaced'], audit['instances_match']) == (
        3, 3, [], [], [], True)
    first, second, third = (r.instance_uuids[0] for r in requests)
    # Deleted, its claim not released yet: leaked (until the service
    # handles the delete_instance_info cast).
    world.delete(world.remove(first))
    assert soak_audit.audit_claims(ctx, world)['leaked'] == [first]
    claims.release(ctx, first)
    # A live instance whose claim is gone: lost.
    claims.release(ctx, second)
    assert soak_audit.audit_claims(ctx, world)['lost'] == [second]
    # A claim moved to another node than the instance's: misplaced.
    assert claims.claim(ctx, nodes[hosts[0].host], third, 1, 1, 1)
    assert soak_audit.audit_claims(ctx, world)['misplaced'] == [third]
    # A claim of a call the soak gave up on: abandoned, not leaked.
    assert claims.claim(ctx, nodes[hosts[1].host], 'a' * 8 + '-' +
                        '0' * 27, 1, 1, 1)
    world.abandon(['a' * 8 + '-' + '0' * 27])
    audit = soak_audit.audit_claims(ctx, world)
    assert audit['abandoned'] == ['a' * 8 + '-' + '0' * 27]
    assert audit['leaked'] == []
    soak_audit.remove_soak_rows(ctx)
    assert not soak_audit.audit_claims(ctx, world)['instances_match']


def test_cast_loop_churns_its_aggregates(ctx):
    hosts = workload.generate_hosts(6)
    workload.seed_hosts(ctx, hosts)
    api = FakeAPI()
    world = soak_world.World(api, 100, 0.0)
    loop = soak_casts.CastLoop(api, world, [h.host for h in hosts], seed=1)
    for _ in range(12):
        loop.aggregate_step(ctx)
    names = collections.Counter(name for name, _, _ in api.casts)
    assert names['delete_aggregate'] >= 2
    assert names['update_aggregates'] >= 5
    for name, args, _ in api.casts:
        sent = args[0][0] if name == 'update_aggregates' else args[0]
        assert isinstance(sent, aggregate_obj.Aggregate)
        assert sent.id and sent.name.startswith(soak_casts.AGGREGATE_PREFIX)
        assert sent.hosts and sent.metadata['soak']
    ours = {agg['id'] for agg in db.aggregate_get_all(ctx)
            if agg['name'].startswith(soak_casts.AGGREGATE_PREFIX)}
    assert ours == {aggregate_id for aggregate_id, _ in loop.aggregates}
    assert 0 < len(ours) <= soak_casts.MAX_AGGREGATES
    # The instance casts: none without live instances, then both.
    loop.tick(1)
    assert world.counters().get('sync_instance_info') is None
    world.boot(_requests(hosts, 1)[0], [[_selection(hosts[0].host)]])
    loop.tick(1)
    assert world.counters()['sync_instance_info'] == 1
    name, args, _ = [cast for cast in api.casts
                     if cast[0] == 'sync_instance_info'][0]
    assert args == (hosts[0].host, [i.uuid for i in world.live().values()])
    loop.remove_all(ctx)
    with db.context_manager.reader.using(ctx) as session:
        left = session.execute(sa.select(db.AGGREGATES.c.name)).scalars()
        assert not [n for n in left
                    if n.startswith(soak_casts.AGGREGATE_PREFIX)]


def test_cast_loop_casts_every_kind_within_one_cycle(ctx):
    """Whatever the draws, a delete comes by the ``2 * MAX_AGGREGATES``th
    step: the short soak's minute has twelve steps and must see one."""
    hosts = workload.generate_hosts(3)
    workload.seed_hosts(ctx, hosts)
    for draw in range(20):
        api = FakeAPI()
        world = soak_world.World(api, 100, 0.0)
        loop = soak_casts.CastLoop(api, world, [h.host for h in hosts],
                                   seed=draw)
        for _ in range(2 * soak_casts.MAX_AGGREGATES):
            loop.aggregate_step(ctx)
        names = [name for name, _, _ in api.casts]
        assert 'delete_aggregate' in names, (draw, names)
        assert names[0] == 'update_aggregates', (draw, names)
        loop.remove_all(ctx)


# ---------------------------------------------------------- the command --

def _settings(*args):
    conf = cfg.ConfigOpts()
    soak_cmd.register_opts(conf)
    conf(list(args), project='scheduler-soak-test')
    return soak_cmd.settings_from(conf)


def test_command_defaults_are_the_one_hour_soak():
    settings = _settings()
    assert (settings.hosts, settings.duration_s, settings.sample_interval_s,
            settings.warmup, settings.callers, settings.services,
            settings.workers, settings.rss_growth_limit_pct) == (
        10000, 3600.0, 60.0, 600.0, 8, 1, 2, 5.0)
    assert settings.output_dir.startswith('soak-')
    short = _settings('--hosts', '500', '--duration', '60',
                      '--sample-interval', '10', '--output-dir', 'out',
                      '--noprogress', '--nometrics')
    assert (short.hosts, short.warmup, short.output_dir, short.progress,
            short.metrics) == (500, 20.0, 'out', False, False)


def test_command_takes_one_database():
    with pytest.raises(bench.BenchError, match='not both'):
        _settings('--database-connection', 'postgresql://a/b',
                  '--admin-connection', 'postgresql://a/postgres')
    with pytest.raises(bench.BenchError, match='RabbitMQ'):
        soak.run(soak_settings.SoakSettings())
    with pytest.raises(bench.BenchError, match='PostgreSQL'):
        soak.run(soak_settings.SoakSettings(transport_url='rabbit://x'))
