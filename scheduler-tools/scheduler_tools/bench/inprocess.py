"""In-process mode: the FilterScheduler driver on a warm HostManager.

For each fleet size N, ``run``:

1. creates a temporary SQLite database (in ``/dev/shm`` when there is
   one, written without syncing) and seeds N hosts
   (``workload.seed_hosts``);
2. loads the real driver (``[scheduler] driver = filter_scheduler``) with
   a notifier built as the service builds it, so the
   ``select_destinations.start/.end`` payloads are made as in the
   service (nothing is sent: no notification driver is configured);
3. warms up with one request of every shape of the mix, then
   ``--warmup`` more (``Workload.warmup_requests``; the first one builds
   every HostState), and more until ``WARMUP_MIN_S`` seconds have passed
   since the seeding (``warm_up``);
4. times ``driver.select_destinations(..., return_alternates=True)`` on
   the request mix, once per ``--instances`` value: latency of each
   decision in ms, decisions per second, this process's RSS;
5. measures the cost of one compute node update reaching the scheduler's
   view (``measure_node_update``).

With ``--profile-dir``, one more decision, not counted - a plain
single-instance boot, which every filter and weigher sees most hosts
for - runs under cProfile after the warm-up (``profile_decision``).

The timing helpers (``Timings``, ``Heartbeat``, ``time_decisions``,
``measure_node_update``) are shared with the end-to-end mode.  Compute
services are kept alive by heartbeats written between decisions, never
during one.  Each phase stops early, after at least ``MIN_REQUESTS``
requests, once it has run for ``--time-budget`` seconds.
"""

import contextlib
import dataclasses
import os
import random
import shutil
import tempfile
import time

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import drivers
from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import INPROCESS
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

LOG = logging.getLogger(__name__)

SHM_DIR = '/dev/shm'
HEARTBEAT_INTERVAL_S = 10.0
MIN_REQUESTS = 3
# A warm-up lasts at least this long after the seeding: longer than the
# window of a sweep (host_manager.CLOCK_MARGIN + SWEEP_INTERVAL).
WARMUP_MIN_S = 3.0
MAX_ERRORS_IN_A_ROW = 5
# Added to each compute node row a simulated agent writes.
UPDATE_MEMORY_MB = 512


# ----------------------------------------------------------------- timing --

@dataclasses.dataclass
class Timings:
    """Latencies (ms) of the decisions of one phase and their outcome.

    ``busy_s`` is the time spent in decisions plus the benchmark's own
    work between them, heartbeats excluded.
    """

    latencies_ms: list = dataclasses.field(default_factory=list)
    no_valid_host: int = 0
    errors: int = 0
    busy_s: float = 0.0
    truncated: bool = False

    def decisions_per_s(self):
        """Completed decisions (NoValidHost included) per second."""
        if not self.latencies_ms or self.busy_s <= 0:
            return None
        return len(self.latencies_ms) / self.busy_s

    def merge(self, other):
        self.latencies_ms.extend(other.latencies_ms)
        self.no_valid_host += other.no_valid_host
        self.errors += other.errors
        self.truncated = self.truncated or other.truncated


class Heartbeat:
    """Keeps the compute services' heartbeats fresh
    (``seed.heartbeat_services``), spread as independent services spread
    theirs: every ``interval_s / SLICES`` seconds one of ``SLICES``
    slices of the services beats, so each beats every ``interval_s``
    seconds.  Called between decisions only; the first call beats every
    service.  Forced-down services stay down.

    Real services beat at independent moments, so a decision reads the
    heartbeats of the time since the previous one; ``SLICES`` is fine
    enough (a slice every 0.1 s) that one decision in a hundred does not
    read a tenth of the fleet's rows at once, as coarse slices would
    make it."""

    SLICES = 100

    def __init__(self, ctx, interval_s=HEARTBEAT_INTERVAL_S):
        self.ctx = ctx
        self.interval_s = interval_s
        self.last = None   # the first call beats
        self.order = seed.heartbeat_slices(self.SLICES)

    def beat_if_due(self):
        """Beat if due; return the seconds it took (0.0 if not due)."""
        started = time.monotonic()
        if (self.last is not None and
                started - self.last < self.interval_s / self.SLICES):
            return 0.0
        seed.heartbeat_services(self.ctx, *next(self.order))
        self.last = time.monotonic()
        return self.last - started


def time_decisions(decide, requests, heartbeat=None, budget_s=None,
                   minimum=MIN_REQUESTS, errors=(), progress=None):
    """Call ``decide(request)`` for each request and time it.

    NoValidHost counts as a decision; exceptions of the ``errors`` tuple
    are counted and not timed (BenchError after ``MAX_ERRORS_IN_A_ROW``
    in a row); others propagate.  After ``minimum`` requests, stops once
    ``budget_s`` seconds have passed.  Returns Timings.
    """
    timings = Timings()
    started = time.monotonic()
    paused = 0.0
    in_a_row = 0
    for done, request in enumerate(requests):
        elapsed = time.monotonic() - started
        if budget_s is not None and done >= minimum and elapsed > budget_s:
            timings.truncated = True
            break
        if heartbeat is not None:
            paused += heartbeat.beat_if_due()
        begin = time.perf_counter()
        try:
            decide(request)
        except exception.NoValidHost:
            timings.no_valid_host += 1
        except errors as exc:
            timings.errors += 1
            in_a_row += 1
            LOG.warning('select_destinations failed: %s', exc)
            if in_a_row >= MAX_ERRORS_IN_A_ROW:
                raise BenchError('%d select_destinations calls failed in a '
                                 'row; last: %s' % (in_a_row, exc)) from exc
            continue
        timings.latencies_ms.append((time.perf_counter() - begin) * 1000.0)
        in_a_row = 0
        if progress is not None:
            progress.update(1)
    timings.busy_s = time.monotonic() - started - paused
    return timings


def _median(values):
    return report.percentiles_ms(values)['p50_ms']


def measure_node_update(ctx, decide, requests, node_ids, rounds,
                        heartbeat=None, budget_s=None, seed=0):
    """The cost of one changed ``compute_nodes`` row reaching the view.

    Each round: a decision with no row changed since the previous one
    (after a heartbeat, an untimed decision first takes it in), then one
    row updated as its compute agent would (``compute_node_update``,
    more RAM used), then the next decision.  Returns a dict of medians in
    ms: ``node_write_ms`` (the update), ``decision_no_change_ms``,
    ``decision_after_update_ms`` and ``node_update_cost_ms`` (after minus
    no change), with ``node_update_rounds``.
    """
    rng = random.Random('update:%s' % seed)
    requests = iter(requests)
    no_change, after, writes = [], [], []
    started = time.monotonic()

    def timed(request):
        begin = time.perf_counter()
        with contextlib.suppress(exception.NoValidHost):
            decide(request)
        return (time.perf_counter() - begin) * 1000.0

    for done in range(rounds):
        if (budget_s is not None and done >= 1 and
                time.monotonic() - started > budget_s):
            break
        try:
            settle, baseline, following = (next(requests), next(requests),
                                           next(requests))
        except StopIteration:
            break
        if heartbeat is not None and heartbeat.beat_if_due():
            timed(settle)
        no_change.append(timed(baseline))
        node_id = rng.choice(node_ids)
        row = db.compute_node_get(ctx, node_id)
        begin = time.perf_counter()
        writers.compute_node_update(ctx, node_id, {
            'memory_mb_used': row['memory_mb_used'] + UPDATE_MEMORY_MB,
            'free_ram_mb': row['free_ram_mb'] - UPDATE_MEMORY_MB,
            'running_vms': (row['running_vms'] or 0) + 1})
        writes.append((time.perf_counter() - begin) * 1000.0)
        after.append(timed(following))
    result = {'node_update_rounds': len(after),
              'node_write_ms': _median(writes),
              'decision_no_change_ms': _median(no_change),
              'decision_after_update_ms': _median(after),
              'node_update_cost_ms': None}
    if after:
        result['node_update_cost_ms'] = round(
            result['decision_after_update_ms'] -
            result['decision_no_change_ms'], 3)
    return result


def warm_up(decide, bench, settings, heartbeat, label, since,
            errors=()):
    """Decide ``bench.warmup_requests(settings.warmup)``, then more of the
    warm-up stream until ``WARMUP_MIN_S`` seconds have passed ``since``
    (monotonic time, right after the fleet was seeded; within the time
    budget): the scheduler's sweeps then look past the seeding, whose
    rows they would all compare (``scheduler.view.host_manager``)."""
    warmup = bench.warmup_requests(settings.warmup)
    with progress_bar(len(warmup), label + ' warm-up',
                      settings.progress) as bar:
        time_decisions(decide, warmup, heartbeat, settings.time_budget_s,
                       minimum=1, errors=errors, progress=bar)
    rounds = 0
    while time.monotonic() - since < min(WARMUP_MIN_S,
                                         settings.time_budget_s or
                                         WARMUP_MIN_S):
        rounds += 1
        time_decisions(decide, bench.requests(1, MIN_REQUESTS,
                                              'warmup-%d' % rounds),
                       heartbeat, errors=errors)


def live_node_ids(hosts, seeded):
    """Compute node ids of the hosts ComputeFilter keeps (ids follow the
    fleet's order)."""
    ids = [node_id for host, node_id in zip(hosts, seeded.compute_node_ids,
                                            strict=True) if host.up]
    return ids or list(seeded.compute_node_ids)


@contextlib.contextmanager
def progress_bar(total, description, enabled):
    """A tqdm bar on stderr, or None when ``enabled`` is false."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=description, unit='req', leave=False)
    try:
        yield bar
    finally:
        bar.close()


PROFILE_LINES = 25


def profile_decision(decide, request, directory, hosts_count):
    """cProfile one (untimed) decision: ``inprocess-<N>.pstats`` and the
    top ``PROFILE_LINES`` entries by cumulative time in
    ``inprocess-<N>.txt`` in ``directory``.  Returns the text file path."""
    import cProfile
    import io
    import pstats

    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, '%s-%d' % (INPROCESS, hosts_count))
    profiler = cProfile.Profile()
    profiler.enable()
    with contextlib.suppress(exception.NoValidHost):
        decide(request)
    profiler.disable()
    profiler.dump_stats(base + '.pstats')
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats('cumulative').print_stats(PROFILE_LINES)
    with open(base + '.txt', 'w') as stream:
        stream.write(text.getvalue())
    return base + '.txt'


# ---------------------------------------------------------------- the run --

@contextlib.contextmanager
def temporary_sqlite():
    """Point the DB API at a new SQLite file with the schema; yield an
    admin context; remove the file afterwards."""
    parent = SHM_DIR if os.access(SHM_DIR, os.W_OK) else None
    tempdir = tempfile.mkdtemp(prefix='scheduler-bench-', dir=parent)
    CONF.set_override('sqlite_synchronous', False, 'database')
    try:
        yield seed.use_database('sqlite:///%s' % os.path.join(
            tempdir, 'bench.sqlite'))
    finally:
        db.context_manager.dispose_pool()
        CONF.clear_override('sqlite_synchronous', 'database')
        shutil.rmtree(tempdir, ignore_errors=True)


def service_notifier():
    """A notifier made as ``SchedulerService`` makes it, on the
    in-memory transport (no notification driver: nothing is sent)."""
    rpc.set_defaults()
    transport = messaging.get_notification_transport(
        CONF, url='fake://', allowed_remote_exmods=rpc.ALLOWED_EXMODS)
    return rpc.get_notifier(transport, CONF.host)


def run(hosts_count, settings, emit=None):
    """Measure the in-process figures for ``hosts_count`` hosts.

    Returns the rows (see ``report.make_row``), one per ``instances``
    value; ``emit(row)`` is called as each is measured.  The row of
    single-instance requests carries the node update figures and the
    phase times ``seed_s`` and ``warmup_s`` in seconds.
    """
    rows = []
    with temporary_sqlite() as ctx:
        started = time.monotonic()
        hosts = workload.generate_hosts(hosts_count, settings.seed)
        seeded = workload.seed_hosts(ctx, hosts)
        seed_s = time.monotonic() - started
        bench = workload.Workload(hosts, settings.seed)
        started = time.monotonic()
        driver = drivers.load_driver(ctx, notifier=service_notifier(),
                                     name='filter_scheduler')

        def decide(request):
            driver.select_destinations(ctx, request.spec,
                                       request.instance_uuids,
                                       return_alternates=True)

        heartbeat = Heartbeat(ctx)
        label = '%s %s hosts' % (INPROCESS, '{:,}'.format(hosts_count))
        warm_up(decide, bench, settings, heartbeat, label, started)
        warmup_s = time.monotonic() - started
        if settings.profile_dir:
            profile_decision(
                decide, bench.requests(1, 1, 'profile', 'plain')[0],
                settings.profile_dir, hosts_count)
        for instances in settings.instances:
            count = settings.requests_for(instances)
            with progress_bar(count, '%s x%d' % (label, instances),
                              settings.progress) as bar:
                timings = time_decisions(
                    decide, bench.requests(instances, count), heartbeat,
                    settings.time_budget_s, progress=bar)
            extra = {'seed_s': round(seed_s, 2),
                     'warmup_s': round(warmup_s, 2)}
            if instances == 1 and settings.update_rounds:
                extra.update(measure_node_update(
                    ctx, decide,
                    bench.requests(1, 3 * settings.update_rounds, 'update',
                                   'plain'),
                    live_node_ids(hosts, seeded), settings.update_rounds,
                    heartbeat, settings.time_budget_s, settings.seed))
            row = report.make_row(
                INPROCESS, hosts_count, instances, timings,
                rss=report.rss_mb(), peak_rss=report.rss_mb(field='VmHWM'),
                **extra)
            rows.append(row)
            if emit is not None:
                emit(row)
    return rows
