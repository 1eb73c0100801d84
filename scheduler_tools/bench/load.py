"""Load mode: concurrent callers against two schedulers on one database.

A bounded load test of the claims (``scheduler.db.claims``): two
schedulers share one RabbitMQ and one PostgreSQL and decide at the same
time on a deliberately small fleet, which fills up, so that each
sometimes loses the race for a node's last room to the other.  Nothing
else writes to the database during the run - no compute agent records
instances or reports usage, no periodic task reconciles - so every claim
stays: at the end the claims alone must fit in every node's capacity.

Both topologies run, one after the other, for each fleet size N
(``TOPOLOGIES``):

``workers``
    one ``scheduler-service`` process with ``[scheduler] workers = 2``;
``services``
    two ``scheduler-service`` processes with different ``[DEFAULT]
    host``.

Before them, ``measure_floor`` times the floor on the same broker, with
as many callers, the same time budget and call limit: a no-op
oslo.messaging call (``scheduler_tools.bench.floor``).  Every row
carries its ``noop_calls_per_s``, ``noop_p50_ms``, ``noop_p99_ms`` and
``noop_errors``, and ``share_of_noop``, the decisions per second as a
percentage of the no-op calls per second.

Each with ``[scheduler] claim_resources = True`` (the default, written
explicitly), the benchmark's filters and weighers, no periodic task, a
control exchange private to the topology and ``[DEFAULT] log_file`` at
INFO for the claim loop's logger.  For each topology ``run``:

1. takes a database: the ``--database-connection`` given, which must
   hold no compute node (the seeded rows and their claims are deleted
   again afterwards), or, called with a server's admin URL, a new one
   there (``scheduler_tools.databases``, dropped afterwards);
2. seeds N hosts (``load_hosts``: ``workload.generate_hosts`` with a
   quarter of the RAM, 16 to 128 GiB, so that RAM runs out first);
3. starts the services and waits until every worker logged that it
   serves the topic and the topic answers a ``ping``;
4. during ``--time-budget`` seconds (default ``DEFAULTS``: 60 s), makes
   ``--callers`` threads (default 8) call ``SchedulerAPI.
   select_destinations(..., return_objects=True, return_alternates=
   True)`` back to back on the request mix of ``workload.Workload``
   (``--instances``: its first value, default 1), at most ``--requests``
   calls in all, while a thread keeps the compute services' heartbeats;
5. stops the services (SIGTERM, then SIGKILL of what is left of their
   process group) and counts the lost races: the claim loop's INFO line
   ``LOST_RACE_MARKER`` in the services' log files;
6. checks the database: ``claims.overcommitted_nodes`` and
   ``claims.unbalanced_nodes`` must be empty, and the live claims must be
   exactly the instances placed; and sums the fleet's reported usage,
   claims and capacity (total times allocation ratio) per resource.

A row (``report.make_row``, mode ``load``) per topology has the
latencies at the caller (ms, answered calls: a Selection or NoValidHost),
decisions (answered calls) per second over the call phase, the services'
RSS and: ``topology``, ``processes``, ``workers`` (per process),
``callers``, ``placed`` (instances), ``last_placement_s`` (when the last
instance was placed, s into the load: about when the fleet was full),
``timeouts``, ``first_error``, ``lost_races``,
``lost_races_by_service``, ``service_errors`` (ERROR lines in the logs),
``services_died``, ``claims``, ``claims_match``, ``overcommitted``,
``unbalanced``, ``fleet_<resource>_used`` / ``_claimed`` /
``_capacity`` (vCPUs, MiB, GiB) and ``verified`` (no overcommit, claims
balanced, every call answered, claims equal to placements, no service
died); ``log_dirs`` (the services' configuration and logs, kept) when not
verified.  ``print_table`` prints the rows.
"""

import collections
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid

import oslo_messaging as messaging
import sqlalchemy as sa
from oslo_log import log as logging

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import host_state
from scheduler import rpc
from scheduler import rpcapi
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler_tools import seed
from scheduler_tools.bench import LOAD
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import floor
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

LOG = logging.getLogger(__name__)

# What the load mode runs unless the option is given (bench.Settings
# fields); ``--smoke`` then makes it shorter (``SMOKE``).
DEFAULTS = {'hosts': [30], 'instances': [1], 'requests': 100000,
            'callers': 8, 'time_budget_s': 60.0, 'call_timeout': 30}
SMOKE = {'hosts': [20], 'time_budget_s': 15.0, 'server_timeout': 60.0}

# RAM of the generated hosts is divided by this (16 to 128 GiB).
RAM_DIVISOR = 4
# The driver's INFO line on a lost race.
LOST_RACE_MARKER = filter_scheduler.LOST_RACE
# SchedulerService.start's INFO line, once per worker.
SERVING_MARKER = ' serving topic '
ERROR_MARKER = ' ERROR '
# Loggers the services log at INFO whatever QUIET_LOG_LEVELS say.
SERVICE_LOG_LEVELS = ['scheduler.drivers.filter_scheduler=INFO',
                      'scheduler.service=INFO']
LOG_FILE = 'scheduler.log'
HEARTBEAT_INTERVAL_S = inprocess.HEARTBEAT_INTERVAL_S
REQUEST_CHUNK = 200
POLL_S = 0.5


@dataclasses.dataclass(frozen=True)
class Topology:
    """``processes`` scheduler-service processes of ``workers`` workers
    each."""

    name: str
    processes: int
    workers: int


TOPOLOGIES = (Topology('workers', 1, 2), Topology('services', 2, 1))


# ------------------------------------------------------------------ fleet --

def load_hosts(count, seed=0, ram_divisor=RAM_DIVISOR):
    """``workload.generate_hosts(count, seed)`` with the RAM (total and
    used, MiB) divided by ``ram_divisor``: a fleet that a few hundred
    requests fill."""
    hosts = []
    for host in workload.generate_hosts(count, seed):
        spec = dataclasses.replace(
            host.spec, memory_mb=host.spec.memory_mb // ram_divisor)
        hosts.append(dataclasses.replace(
            host, spec=spec,
            memory_mb_used=host.memory_mb_used // ram_divisor))
    return hosts


def remove_load(ctx, seeded):
    """Delete the claims on the seeded compute nodes, then the seeded
    rows (``seed.remove_seeded``)."""
    table = claims.CLAIMS
    ids = seeded.compute_node_ids
    with db.context_manager.writer.using(ctx) as session:
        for start in range(0, len(ids), seed.INSERT_CHUNK):
            session.execute(sa.delete(table).where(
                table.c.compute_node_id.in_(
                    ids[start:start + seed.INSERT_CHUNK])))
    seed.remove_seeded(ctx, seeded)


def fleet_totals(ctx):
    """Sums over the live compute nodes, per resource of
    ``claims.RESOURCES`` (``vcpus``, ``memory_mb`` in MiB, ``disk_gb`` in
    GiB): ``{'fleet_<name>_used': reported usage, 'fleet_<name>_claimed':
    claims, 'fleet_<name>_capacity': total times the allocation ratio
    claims use (float)}``."""
    node = db.COMPUTE_NODES.c
    columns = [node.id]
    for resource in claims.RESOURCES:
        columns += [node[resource.total], node[resource.used],
                    node[resource.claimed], node[resource.ratio]]
    with db.context_manager.reader.using(ctx) as session:
        rows = session.execute(sa.select(*columns).where(
            node.deleted == 0)).mappings().all()
    totals = {}
    for resource in claims.RESOURCES:
        prefix = 'fleet_%s_' % resource.name
        totals[prefix + 'used'] = sum(row[resource.used] or 0
                                      for row in rows)
        totals[prefix + 'claimed'] = sum(row[resource.claimed] or 0
                                         for row in rows)
        totals[prefix + 'capacity'] = round(sum(
            (row[resource.total] or 0) * host_state.resolve_allocation_ratio(
                resource.ratio, row[resource.ratio]) for row in rows), 1)
    return totals


def verify(ctx, placed):
    """What the database says after the load: ``claims`` (live claim
    rows), ``overcommitted`` (``claims.overcommitted_nodes``),
    ``unbalanced`` (``claims.unbalanced_nodes``), ``claims_match``
    (claims == ``placed`` instances) and ``fleet_totals``."""
    found = {'claims': claims.claims_count(ctx),
             'overcommitted': claims.overcommitted_nodes(ctx),
             'unbalanced': claims.unbalanced_nodes(ctx)}
    found['claims_match'] = found['claims'] == placed
    found.update(fleet_totals(ctx))
    return found


# --------------------------------------------------------------- services --

def service_config(transport_url, db_url, host, exchange, workers,
                   log_file):
    """The configuration file text of one service under load: the
    benchmark's filters and weighers, ``workers`` workers, claims on,
    INFO log of the claim loop in ``log_file``."""
    return endtoend.service_config(
        transport_url, db_url, host, exchange,
        scheduler_lines=['workers = %d' % workers, 'claim_resources = True'],
        log_file=log_file, log_levels=SERVICE_LOG_LEVELS)


class LoadService(endtoend.ServiceProcess):
    """A ``scheduler-service`` of ``workers`` workers in its own session
    (``stop`` also kills what is left of its process group), logging to
    ``log_file``; stdout and stderr go to ``log_path``."""

    new_session = True

    def __init__(self, workdir, transport_url, db_url, host, exchange,
                 workers):
        self.host = host
        self.workers = workers
        self.log_file = os.path.join(workdir, LOG_FILE)
        super().__init__(workdir, service_config(
            transport_url, db_url, host, exchange, workers, self.log_file))

    def log_text(self):
        try:
            with open(self.log_file, errors='replace') as stream:
                return stream.read()
        except OSError:
            return ''

    def count(self, marker):
        """Lines of the log file holding ``marker``."""
        return sum(marker in line for line in self.log_text().splitlines())

    def log_tail(self, chars=4000):
        return (super().log_tail(chars) + '\n' +
                self.log_text()[-chars:]).strip()

    def wait_ready(self, transport, ctx, timeout_s):
        """Every worker logged that it serves the topic, and the topic
        answers a ping.

        :raises BenchError: it exited or was not ready in ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        while self.count(SERVING_MARKER) < self.workers:
            if self.process.poll() is not None:
                raise BenchError('scheduler-service exited with status %s:'
                                 '\n%s' % (self.process.returncode,
                                           self.log_tail()))
            if time.monotonic() > deadline:
                raise BenchError('%d worker(s) of scheduler-service did not '
                                 'start within %.0f s:\n%s' % (
                                     self.workers, timeout_s,
                                     self.log_tail()))
            time.sleep(POLL_S / 5)
        return super().wait_ready(transport, ctx, max(
            1.0, deadline - time.monotonic()))

    @property
    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        status = super().stop()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        return status


# ---------------------------------------------------------------- callers --

class RequestFeed:
    """The workload's requests of ``instances`` instances, made
    ``REQUEST_CHUNK`` at a time (streams ``load-0``, ``load-1``...), at
    most ``limit``; ``next()`` is thread-safe and gives None at the
    end."""

    def __init__(self, bench, instances, limit):
        self.bench = bench
        self.instances = instances
        self.limit = limit
        self.issued = 0
        self._chunks = 0
        self._buffer = collections.deque()
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            if self.issued >= self.limit:
                return None
            if not self._buffer:
                count = min(REQUEST_CHUNK, self.limit - self.issued)
                self._buffer.extend(self.bench.requests(
                    self.instances, count, 'load-%d' % self._chunks))
                self._chunks += 1
            self.issued += 1
            return self._buffer.popleft()


@dataclasses.dataclass
class CallerResult:
    """What callers saw: ``timings`` of the answered calls (a Selection
    or NoValidHost), ``placed`` instances, ``timeouts`` (also counted in
    ``timings.errors``), the first error's text and ``last_placement_s``,
    when the last instance was placed (s since the phase started; None
    without placements)."""

    timings: inprocess.Timings = dataclasses.field(
        default_factory=inprocess.Timings)
    placed: int = 0
    timeouts: int = 0
    first_error: str | None = None
    last_placement_s: float | None = None

    def merge(self, other):
        self.timings.merge(other.timings)
        self.placed += other.placed
        self.timeouts += other.timeouts
        self.first_error = self.first_error or other.first_error
        if other.last_placement_s is not None:
            self.last_placement_s = max(self.last_placement_s or 0.0,
                                        other.last_placement_s)


def drive(decide, feed, callers, deadline, stop, progress=None):
    """Call ``decide(request)`` from ``callers`` threads, each back to
    back, until the feed ends, ``time.monotonic()`` passes ``deadline``
    or ``stop`` (an Event) is set.

    ``decide`` returns the instances placed; NoValidHost is an answer;
    MessagingTimeout and any other exception are errors (counted, the
    caller goes on).  Returns the callers' merged CallerResult; its
    ``timings.busy_s`` is the wall time of the phase in s and
    ``timings.truncated`` whether the deadline or ``stop`` ended it.
    """
    results = [CallerResult() for _ in range(callers)]
    started = time.monotonic()

    def caller(result):
        timings = result.timings
        while True:
            if stop.is_set() or time.monotonic() >= deadline:
                timings.truncated = True
                return
            request = feed.next()
            if request is None:
                return
            begin = time.perf_counter()
            try:
                placed = decide(request)
            except exception.NoValidHost:
                timings.no_valid_host += 1
            except Exception as exc:
                timings.errors += 1
                if isinstance(exc, messaging.MessagingTimeout):
                    result.timeouts += 1
                if result.first_error is None:
                    result.first_error = '%s: %s' % (type(exc).__name__,
                                                     exc)
                LOG.warning('select_destinations failed: %s', exc)
                continue
            else:
                if placed:
                    result.placed += placed
                    result.last_placement_s = time.monotonic() - started
            timings.latencies_ms.append(
                (time.perf_counter() - begin) * 1000.0)
            if progress is not None:
                progress.update(1)

    threads = [threading.Thread(target=caller, args=(result,),
                                name='load-caller-%d' % index, daemon=True)
               for index, result in enumerate(results)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = CallerResult()
    for result in results:
        total.merge(result)
    total.timings.busy_s = time.monotonic() - started
    return total


@contextlib.contextmanager
def heartbeats(interval_s=HEARTBEAT_INTERVAL_S):
    """Keep the compute services up (``seed.heartbeat_services`` every
    ``interval_s`` seconds) in a thread of its own while in the block."""
    done = threading.Event()
    ctx = scheduler_context.get_admin_context()

    def beat():
        while not done.is_set():
            try:
                seed.heartbeat_services(ctx)
            except Exception as exc:
                LOG.warning('heartbeat failed: %s', exc)
            done.wait(interval_s)

    thread = threading.Thread(target=beat, name='load-heartbeat',
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _watch(services, stop, threads_done):
    """Set ``stop`` when a service exits before ``threads_done``."""
    while not threads_done.wait(POLL_S):
        if not all(service.alive for service in services):
            LOG.warning('a scheduler-service exited during the load')
            stop.set()
            return


# ---------------------------------------------------------------- the run --

def run(hosts_count, settings, transport_url, admin_url=None, emit=None,
        topologies=TOPOLOGIES):
    """Load each topology with ``hosts_count`` hosts; return the rows
    (``emit(row)`` is called as each is measured).

    ``transport_url`` is the broker; each topology's database is a new
    one on ``admin_url`` (a PostgreSQL superuser URL) or, without it,
    ``settings.database_connection``.
    """
    rows = []
    noop = measure_floor(settings, transport_url)
    for topology in topologies:
        row = run_topology(topology, hosts_count, settings, transport_url,
                           admin_url)
        row.update(noop)
        row['share_of_noop'] = _share(row['decisions_per_s'],
                                      noop['noop_calls_per_s'])
        rows.append(row)
        if emit is not None:
            emit(row)
    return rows


class _Calls:
    """``drive``'s feed for the no-op calls: ``limit`` of them."""

    def __init__(self, limit):
        self._left = limit
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            if self._left <= 0:
                return None
            self._left -= 1
            return True


def measure_floor(settings, transport_url):
    """The no-op call's figures (``scheduler_tools.bench.floor``) with
    the load's callers, time budget and call limit, on the same broker:
    ``noop_calls_per_s``, ``noop_p50_ms``, ``noop_p99_ms``,
    ``noop_errors``."""
    exchange = 'load-noop-%s' % uuid.uuid4().hex[:8]
    budget = settings.time_budget_s
    with floor.noop_call(transport_url, exchange,
                         settings.call_timeout) as call, \
            inprocess.progress_bar(None, '%s no-op call' % LOAD,
                                   settings.progress) as bar:
        deadline = time.monotonic() + (budget if budget else float('inf'))
        result = drive(lambda _: call(), _Calls(settings.requests),
                       settings.callers, deadline, threading.Event(), bar)
    timings = result.timings
    found = report.percentiles_ms(timings.latencies_ms)
    return {'noop_calls_per_s': _round(timings.decisions_per_s()),
            'noop_p50_ms': found.get('p50_ms'),
            'noop_p99_ms': found.get('p99_ms'),
            'noop_errors': timings.errors}


def _share(rate, noop_rate):
    """``rate`` as a percentage of the no-op call's, or None."""
    if not rate or not noop_rate:
        return None
    return round(100.0 * rate / noop_rate, 1)


def run_topology(topology, hosts_count, settings, transport_url,
                 admin_url=None):
    """The row of one topology (see the module docstring)."""
    with endtoend.database_for(admin_url, settings.database_connection) as (
            db_url, given):
        ctx = seed.use_database(db_url)
        started = time.monotonic()
        hosts = load_hosts(hosts_count, settings.seed)
        seeded = workload.seed_hosts(ctx, hosts)
        try:
            endtoend.analyze(db_url)
            seed_s = time.monotonic() - started
            return _load(ctx, topology, hosts, seed_s, settings,
                         transport_url, db_url)
        finally:
            if given:
                remove_load(ctx, seeded)
            db.context_manager.dispose_pool()


def _load(ctx, topology, hosts, seed_s, settings, transport_url, db_url):
    tag = uuid.uuid4().hex[:8]
    exchange = 'load-%s' % tag
    endtoend._register_transport_opts()
    CONF.set_override('control_exchange', exchange)
    services = []
    transport = None
    keep = False
    try:
        transport = rpc.get_transport(CONF, url=transport_url)
        for index in range(topology.processes):
            workdir = tempfile.mkdtemp(prefix='scheduler-bench-load-')
            services.append(LoadService(
                workdir, transport_url, db_url,
                'load-%s-%s-%d' % (topology.name, tag, index), exchange,
                topology.workers))
        started = time.monotonic()
        for service in services:
            service.start()
        for service in services:
            service.wait_ready(transport, ctx, settings.server_timeout)
        start_s = time.monotonic() - started
        api = rpcapi.SchedulerAPI(transport, timeout=settings.call_timeout)

        def decide(request):
            return len(api.select_destinations(
                ctx, request.spec, request.instance_uuids,
                return_objects=True, return_alternates=True))

        instances = settings.instances[0]
        feed = RequestFeed(workload.Workload(hosts, settings.seed),
                           instances, settings.requests)
        budget = settings.time_budget_s
        deadline = time.monotonic() + (budget if budget else float('inf'))
        stop, threads_done = threading.Event(), threading.Event()
        watcher = threading.Thread(target=_watch,
                                   args=(services, stop, threads_done),
                                   name='load-watch', daemon=True)
        label = '%s %s %s hosts' % (LOAD, topology.name,
                                    '{:,}'.format(len(hosts)))
        with heartbeats(), inprocess.progress_bar(
                None, label, settings.progress) as bar:
            watcher.start()
            try:
                result = drive(decide, feed, settings.callers, deadline,
                               stop, bar)
            finally:
                threads_done.set()
                watcher.join()
        rss = sum(service.rss_mb() or 0 for service in services) or None
        peak = sum(service.rss_mb('VmHWM') or 0
                   for service in services) or None
        died = not all(service.alive for service in services)
        for service in services:
            service.stop()
        lost = [service.count(LOST_RACE_MARKER) for service in services]
        found = verify(ctx, result.placed)
        row = report.make_row(
            LOAD, len(hosts), instances, result.timings, rss=rss,
            peak_rss=peak, topology=topology.name,
            processes=topology.processes, workers=topology.workers,
            callers=settings.callers, time_budget_s=budget,
            placed=result.placed, timeouts=result.timeouts,
            first_error=result.first_error,
            last_placement_s=_round(result.last_placement_s),
            lost_races=sum(lost),
            lost_races_by_service=lost,
            service_errors=sum(service.count(ERROR_MARKER)
                               for service in services),
            services_died=died, seed_s=round(seed_s, 2),
            start_s=round(start_s, 2), **found)
        row['verified'] = bool(
            not row['overcommitted'] and not row['unbalanced'] and
            row['claims_match'] and not result.timings.errors and not died)
        keep = not row['verified']
        if keep:
            row['log_dirs'] = [service.workdir for service in services]
        return row
    finally:
        for service in services:
            service.stop()
            if not keep:
                shutil.rmtree(service.workdir, ignore_errors=True)
        if transport is not None:
            transport.cleanup()
        CONF.clear_override('control_exchange')


def _round(value, digits=2):
    return None if value is None else round(value, digits)


# ------------------------------------------------------------------ table --

def _gib(mib):
    return mib / 1024.0


def print_table(rows, console=None):
    """Print the load rows as two rich tables: the load at the callers,
    then the claims the database holds afterwards."""
    from rich.console import Console
    from rich.table import Table

    fmt = report._fmt
    if console is None:
        console = Console(width=None if sys.stdout.isatty() else 150)
    table = Table(title='scheduler-bench load: concurrent select_destinations'
                        ' on a filling fleet',
                  caption='latency in ms at the caller; calls answered '
                          '(Selection or NoValidHost); last placed: s '
                          'into the load when the last instance was '
                          'placed; dec/s = answered '
                          'calls per second; lost races = claims lost to '
                          'another scheduler and retried on the next host; '
                          'no-op: a call that does nothing, on the same '
                          'broker with as many callers, measured in the '
                          'same run (the floor); % of no-op = dec/s over '
                          'no-op/s')
    for name in ('topology', 'hosts', 'callers', 'calls', 'placed',
                 'last placed', 'NoValidHost', 'errors', 'dec/s', 'p50',
                 'p95', 'p99', 'lost races', 'no-op/s', 'no-op p50',
                 '% of no-op'):
        table.add_column(name, justify='left' if name == 'topology'
                         else 'right')
    for row in rows:
        calls = str(row['requests'])
        if row.get('truncated'):
            calls += '*'
        table.add_row(
            _topology(row), '{:,}'.format(row['hosts']), str(row['callers']),
            calls, str(row['placed']),
            fmt(row['last_placement_s']),
            str(row['no_valid_host']),
            '%d (%d timeouts)' % (row['errors'], row['timeouts'])
            if row['errors'] else '0',
            fmt(row['decisions_per_s']), fmt(row['p50_ms'], 2),
            fmt(row['p95_ms'], 2), fmt(row['p99_ms'], 2),
            str(row['lost_races']), fmt(row.get('noop_calls_per_s')),
            fmt(row.get('noop_p50_ms'), 2), fmt(row.get('share_of_noop')))
    console.print(table)
    if any(row.get('truncated') for row in rows):
        console.print('* stopped by the time budget (--time-budget)')
    table = Table(title='claims after the load, from the database',
                  caption='claims / instances placed; fleet sums: '
                          'reported usage + claims / capacity (total x '
                          'allocation ratio); nodes overcommitted and '
                          'with unbalanced claims')
    for name in ('topology', 'claims', 'vCPUs', 'RAM GiB', 'disk GiB',
                 'overcommit', 'unbalanced', 'verified'):
        table.add_column(name, justify='left' if name == 'topology'
                         else 'right')
    for row in rows:
        table.add_row(
            _topology(row),
            '%d / %d' % (row['claims'], row['placed']),
            _usage(row, 'vcpus'), _usage(row, 'memory_mb', _gib),
            _usage(row, 'disk_gb'), str(len(row['overcommitted'])),
            str(len(row['unbalanced'])),
            '[green]yes[/]' if row['verified'] else '[red]no[/]')
    console.print(table)
    for row in rows:
        if row.get('log_dirs'):
            console.print('%s: service logs kept in %s' % (
                _topology(row), ', '.join(row['log_dirs'])))


def _topology(row):
    return '%s (%d x %d)' % (row['topology'], row['processes'],
                             row['workers'])


def _usage(row, name, scale=float):
    prefix = 'fleet_%s_' % name
    used = scale(row[prefix + 'used'])
    claimed = scale(row[prefix + 'claimed'])
    capacity = scale(row[prefix + 'capacity'])
    share = (used + claimed) / capacity * 100.0 if capacity else 0.0
    return '%.0f+%.0f / %.0f %3.0f%%' % (used, claimed, capacity, share)
