"""Load mode: a saturation benchmark of two schedulers on one database.

A bounded load test of the claims (``scheduler.db.claims``): two
schedulers share one RabbitMQ and one PostgreSQL and decide at the same
time, from 1 to many concurrent callers, on a fleet that fills up, so
that each sometimes loses the race for a node's last room to the other.
Nothing else writes to the database during a phase - no compute agent
records instances or reports usage, no periodic task reconciles - so
every claim stays: at the end of each phase the claims alone must fit in
every node's capacity.

For each fleet size N, both topologies run, one after the other
(``TOPOLOGIES``):

``workers``
    one ``scheduler-service`` process with ``[scheduler] workers = 2``;
``services``
    two ``scheduler-service`` processes of one worker, with different
    ``[DEFAULT] host``.

Before them, ``measure_floors`` times the floor on the same broker, once
per ``--callers`` value, with that many callers, the same time budget
and call limit: a no-op oslo.messaging call
(``scheduler_tools.bench.floor``; one no-op server for all the values).
Every row carries the floor of its own callers value:
``noop_calls_per_s``, ``noop_p50_ms``, ``noop_p99_ms`` and
``noop_errors``, and ``share_of_noop``, the decisions per second as a
percentage of the no-op calls per second.  The benchmark's own
oslo.messaging connection pool has room for the largest callers value
(``endtoend.client_pool``), so no caller waits for a connection.

Each service runs with ``[scheduler] claim_resources = True`` (the
default, written explicitly), the benchmark's filters and weighers, no
periodic task, a control exchange private to the topology and
``[DEFAULT] log_file`` at INFO for the claim loop's logger.  For each
topology ``run_topology``:

1. takes a database: the ``--database-connection`` given, which must
   hold no compute node (the seeded rows and their claims are deleted
   again afterwards), or, called with a server's admin URL, a new one
   there (``scheduler_tools.databases``, dropped afterwards);
2. seeds N hosts (``load_hosts``: ``workload.generate_hosts`` with a
   quarter of the RAM, 16 to 128 GiB, so that RAM runs out first: about
   15 instances of the mix per host, so 1,000 hosts hold about 15,000
   and one request of 1,000 instances takes about 7% of them);
3. starts the services ONCE and waits until every worker logged that it
   serves the topic and the topic answers a ``ping``; then warms them up
   with one sequential request of every shape of the mix and
   ``--warmup`` more (``inprocess.warm_up``), so the first phase does
   not pay the workers' first full reads;
4. runs one phase per (``--callers`` value, ``--instances`` value), in
   that order, the services staying up, while a thread keeps the
   compute services' heartbeats.  A phase (``_phase``):

   a. releases every claim (``claims.release_many``, which the services'
      views read back as changed rows): each phase starts from the
      seeded fleet, whatever the previous one placed;
   b. during ``--time-budget`` seconds (default ``DEFAULTS``: 60 s),
      makes that many caller threads call ``SchedulerAPI.
      select_destinations(..., return_objects=True, return_alternates=
      True)`` back to back on the request mix of ``workload.Workload``
      with that many instances per request, at most
      ``settings.requests_for(instances)`` calls (``--requests``
      divided by the instances, at least one); the calls in flight at
      the deadline are waited for (up to ``--call-timeout`` each); the
      requests are the same for every callers value, with instance
      uuids of their own per phase;
   c. waits until the services are idle (``settle``: their CPU time
      grows by less than ``IDLE_CPU_SHARE`` of a core, at most
      ``--call-timeout`` s), so that nothing a refused or timed-out call
      started is still running;
   d. counts the lost races of the phase (the claim loop's INFO line
      ``LOST_RACE_MARKER`` in the services' log files, new since the
      phase started) and checks the database: ``claims.
      overcommitted_nodes`` and ``claims.unbalanced_nodes`` must be
      empty, and the live claims must be exactly the instances placed
      in the phase; and sums the fleet's reported usage, claims and
      capacity (total times allocation ratio) per resource;

5. stops the services (SIGTERM, then SIGKILL of what is left of their
   process group).  A service that died ends the topology's phases.

A call is answered with a Selection, NoValidHost, or a refusal: the
service's ``DatabaseUnavailable`` when a decision waited past
``[scheduler] decision_timeout`` (10 s; a saturated worker sheds its
queue so).  Refusals are counted (``refused``), not timed; time-outs at
the caller and any other exception are errors.

A row (``report.make_row``, mode ``load``) per (hosts, topology,
callers, instances) has the latencies at the caller (ms, calls answered
with a Selection or NoValidHost), ``decisions_per_s`` (those calls per
second over the phase), ``instances_per_s`` (instances placed per
second), ``placed`` (instances), the services' RSS and: ``topology``,
``processes``, ``workers`` (per process), ``callers``,
``time_budget_s``, ``last_placement_s`` (when the last instance was
placed, s into the phase: about when the fleet was full), ``refused``,
``timeouts``, ``first_error``, ``lost_races``, ``lost_races_by_service``,
``service_errors`` (ERROR lines in the logs during the phase),
``services_died``, ``settle_s``, ``claims``, ``claims_match``,
``overcommitted``, ``unbalanced``, ``fleet_<resource>_used`` /
``_claimed`` / ``_capacity`` (vCPUs, MiB, GiB) and ``verified`` (no
overcommit, claims balanced, no error - every call answered -, claims
equal to placements, no service died); ``log_dirs`` (the services'
configuration and logs, kept) when a row of the topology is not
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
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import claim_sql
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.server import rpcapi
from scheduler.view import host_state
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
# The call time-out is above what a saturated worker answers in: a
# refusal after ``[scheduler] decision_timeout`` (10 s) of waiting, or a
# decision of 1,000 instances still computing, behind a queue of them.
DEFAULTS = {'hosts': [30], 'instances': [1], 'requests': 100000,
            'callers': [8], 'time_budget_s': 60.0, 'call_timeout': 120}
# Two callers values and one multi-instance value, 4 short phases per
# topology.
SMOKE = {'hosts': [20], 'callers': [2, 8], 'instances': [1, 10],
         'time_budget_s': 5.0, 'warmup': 3, 'server_timeout': 60.0,
         'call_timeout': 30}

# RAM of the generated hosts is divided by this (16 to 128 GiB).
RAM_DIVISOR = 4
# The driver's INFO line on a lost race.
LOST_RACE_MARKER = filter_scheduler.LOST_RACE
# SchedulerService.start's INFO line, once per worker.
SERVING_MARKER = ' serving topic '
ERROR_MARKER = ' ERROR '
# Loggers the services log at INFO whatever QUIET_LOG_LEVELS say.
SERVICE_LOG_LEVELS = ['scheduler.drivers.filter_scheduler=INFO',
                      'scheduler.server.service=INFO']
LOG_FILE = 'scheduler.log'
HEARTBEAT_INTERVAL_S = inprocess.HEARTBEAT_INTERVAL_S
REQUEST_CHUNK = 200
POLL_S = 0.5
# Claims released per transaction between phases.
RELEASE_CHUNK = 5000
# The services are idle when their CPU time grows by less than this
# share of one core over SETTLE_POLL_S.
IDLE_CPU_SHARE = 0.05
SETTLE_POLL_S = 0.5


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
    table = claim_sql.CLAIMS
    ids = seeded.compute_node_ids
    with db.context_manager.writer.using(ctx) as session:
        for start in range(0, len(ids), seed.INSERT_CHUNK):
            session.execute(sa.delete(table).where(
                table.c.compute_node_id.in_(
                    ids[start:start + seed.INSERT_CHUNK])))
    seed.remove_seeded(ctx, seeded)


def release_claims(ctx, chunk=RELEASE_CHUNK):
    """Release every live claim (``claims.release_many``, ``chunk`` at a
    time): the claimed amounts go back to their nodes, whose rows the
    services' views then read as changed.  Returns the claims
    released."""
    uuids = [row['instance_uuid'] for row in claims.get_claims(ctx)]
    released = 0
    for start in range(0, len(uuids), chunk):
        released += claims.release_many(ctx, uuids[start:start + chunk])
    return released


def fleet_totals(ctx):
    """Sums over the live compute nodes, per resource of
    ``claim_sql.RESOURCES`` (``vcpus``, ``memory_mb`` in MiB, ``disk_gb`` in
    GiB): ``{'fleet_<name>_used': reported usage, 'fleet_<name>_claimed':
    claims, 'fleet_<name>_capacity': total times the allocation ratio
    claims use (float)}``."""
    node = db.COMPUTE_NODES.c
    columns = [node.id]
    for resource in claim_sql.RESOURCES:
        columns += [node[resource.total], node[resource.used],
                    node[resource.claimed], node[resource.ratio]]
    with db.context_manager.reader.using(ctx) as session:
        rows = session.execute(sa.select(*columns).where(
            node.deleted == 0)).mappings().all()
    totals = {}
    for resource in claim_sql.RESOURCES:
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
    end.  With ``uuid_tag``, each request gets instance uuids of its own
    (``phase_uuids``): the same requests for every tag, new instances."""

    def __init__(self, bench, instances, limit, uuid_tag=None):
        self.bench = bench
        self.instances = instances
        self.limit = limit
        self.uuid_tag = uuid_tag
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
                requests = self.bench.requests(
                    self.instances, count, 'load-%d' % self._chunks)
                if self.uuid_tag is not None:
                    requests = [phase_uuids(request, self.uuid_tag)
                                for request in requests]
                self._buffer.extend(requests)
                self._chunks += 1
            self.issued += 1
            return self._buffer.popleft()


def phase_uuids(request, tag):
    """``request`` (a ``workload.BenchRequest``, changed in place) with
    its instance uuids replaced by ones derived from them and ``tag``
    (uuid5: deterministic, distinct per tag)."""
    request.instance_uuids = [
        str(uuid.uuid5(uuid.NAMESPACE_OID, '%s:%s' % (tag, instance)))
        for instance in request.instance_uuids]
    request.spec.instance_uuid = request.instance_uuids[0]
    return request


@dataclasses.dataclass
class CallerResult:
    """What callers saw: ``timings`` of the calls answered with a
    Selection or NoValidHost, ``placed`` instances, ``refused`` calls
    (the service's DatabaseUnavailable: not timed, not errors),
    ``timeouts`` (also counted in ``timings.errors``), the first error's
    text and ``last_placement_s``, when the last instance was placed (s
    since the phase started; None without placements)."""

    timings: inprocess.Timings = dataclasses.field(
        default_factory=inprocess.Timings)
    placed: int = 0
    refused: int = 0
    timeouts: int = 0
    first_error: str | None = None
    last_placement_s: float | None = None

    def merge(self, other):
        self.timings.merge(other.timings)
        self.placed += other.placed
        self.refused += other.refused
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
    DatabaseUnavailable, the service's refusal of a decision that waited
    past its ``decision_timeout``, is counted in ``refused`` and not
    timed; MessagingTimeout and any other exception are errors (counted,
    the caller goes on).  Returns the callers' merged CallerResult; its
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
            except exception.DatabaseUnavailable:
                result.refused += 1
                if progress is not None:
                    progress.update(1)
                continue
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
    """Load each topology with ``hosts_count`` hosts, a phase per
    (callers, instances); return the rows (``emit(row)`` is called as
    each is measured).

    ``transport_url`` is the broker; each topology's database is a new
    one on ``admin_url`` (a PostgreSQL superuser URL) or, without it,
    ``settings.database_connection``.
    """
    rows = []
    with endtoend.client_pool(max(settings.callers)):
        floors = measure_floors(settings, transport_url)

        def add(row):
            noop = floors[row['callers']]
            row.update(noop)
            row['share_of_noop'] = _share(row['decisions_per_s'],
                                          noop['noop_calls_per_s'])
            rows.append(row)
            if emit is not None:
                emit(row)

        for topology in topologies:
            run_topology(topology, hosts_count, settings, transport_url,
                         admin_url, add)
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


def measure_floors(settings, transport_url):
    """The no-op call's figures (``scheduler_tools.bench.floor``) on the
    same broker, with the load's time budget and call limit, for each
    ``settings.callers`` value (one no-op server for all): ``{callers:
    {'noop_calls_per_s', 'noop_p50_ms', 'noop_p99_ms',
    'noop_errors'}}``."""
    exchange = 'load-noop-%s' % uuid.uuid4().hex[:8]
    budget = settings.time_budget_s
    floors = {}
    with floor.noop_call(transport_url, exchange,
                         settings.call_timeout) as call:
        for callers in settings.callers:
            if callers in floors:
                continue
            with inprocess.progress_bar(
                    None, '%s no-op call, %d callers' % (LOAD, callers),
                    settings.progress) as bar:
                deadline = time.monotonic() + (budget if budget
                                               else float('inf'))
                result = drive(lambda _: call(), _Calls(settings.requests),
                               callers, deadline, threading.Event(), bar)
            timings = result.timings
            found = report.percentiles_ms(timings.latencies_ms)
            floors[callers] = {
                'noop_calls_per_s': _round(timings.decisions_per_s()),
                'noop_p50_ms': found.get('p50_ms'),
                'noop_p99_ms': found.get('p99_ms'),
                'noop_errors': timings.errors}
    return floors


def _share(rate, noop_rate):
    """``rate`` as a percentage of the no-op call's, or None."""
    if not rate or not noop_rate:
        return None
    return round(100.0 * rate / noop_rate, 1)


def run_topology(topology, hosts_count, settings, transport_url,
                 admin_url=None, emit=None):
    """The rows of one topology, a phase per (callers, instances) (see
    the module docstring); ``emit(row)`` is called as each is
    measured."""
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
                         transport_url, db_url, emit)
        finally:
            if given:
                remove_load(ctx, seeded)
            db.context_manager.dispose_pool()


def _load(ctx, topology, hosts, seed_s, settings, transport_url, db_url,
          emit=None):
    tag = uuid.uuid4().hex[:8]
    exchange = 'load-%s' % tag
    endtoend._register_transport_opts()
    CONF.set_override('control_exchange', exchange)
    services = []
    transport = None
    keep = False
    rows = []
    try:
        transport = rpc.get_transport(CONF, url=transport_url)
        for index in range(topology.processes):
            workdir = tempfile.mkdtemp(prefix='scheduler-bench-load-')
            services.append(LoadService(
                workdir, transport_url, db_url,
                'load-%s-%s-%d' % (topology.name, tag, index), exchange,
                topology.workers))
        started = time.monotonic()
        start_s = endtoend.start_all(services, transport, ctx,
                                     settings.server_timeout)
        api = rpcapi.SchedulerAPI(transport, timeout=settings.call_timeout)

        def decide(request):
            return len(api.select_destinations(
                ctx, request.spec, request.instance_uuids,
                return_objects=True, return_alternates=True))

        bench = workload.Workload(hosts, settings.seed)
        common = {'topology': topology.name,
                  'processes': topology.processes,
                  'workers': topology.workers, 'seed_s': round(seed_s, 2),
                  'start_s': round(start_s, 2)}
        label = '%s %s %s hosts' % (LOAD, topology.name,
                                    '{:,}'.format(len(hosts)))
        with heartbeats():
            warmup_started = time.monotonic()
            inprocess.warm_up(decide, bench, settings, None, label,
                              started, errors=endtoend.CALL_ERRORS)
            common['warmup_s'] = round(time.monotonic() - warmup_started,
                                       2)
            for callers in settings.callers:
                for instances in settings.instances:
                    row = _phase(ctx, decide, services, bench, len(hosts),
                                 callers, instances, settings, label)
                    for name, value in common.items():
                        row.setdefault(name, value)
                    if not row['verified']:
                        keep = True
                        row['log_dirs'] = [service.workdir
                                           for service in services]
                    rows.append(row)
                    if emit is not None:
                        emit(row)
                    if row['services_died']:
                        break
                else:
                    continue
                break
        return rows
    finally:
        for service in services:
            service.stop()
            if not keep:
                shutil.rmtree(service.workdir, ignore_errors=True)
        if transport is not None:
            transport.cleanup()
        CONF.clear_override('control_exchange')


def _phase(ctx, decide, services, bench, hosts_count, callers, instances,
           settings, label):
    """One phase of ``callers`` callers on requests of ``instances``
    instances, from the seeded fleet: its row (without the topology's
    common figures and the floor)."""
    release_claims(ctx)
    lost_before = [service.count(LOST_RACE_MARKER) for service in services]
    errors_before = sum(service.count(ERROR_MARKER) for service in services)
    feed = RequestFeed(bench, instances, settings.requests_for(instances),
                       uuid_tag='c%d' % callers)
    budget = settings.time_budget_s
    deadline = time.monotonic() + (budget if budget else float('inf'))
    stop, threads_done = threading.Event(), threading.Event()
    watcher = threading.Thread(target=_watch,
                               args=(services, stop, threads_done),
                               name='load-watch', daemon=True)
    with inprocess.progress_bar(
            None, '%s, %d callers x%d' % (label, callers, instances),
            settings.progress) as bar:
        watcher.start()
        try:
            result = drive(decide, feed, callers, deadline, stop, bar)
        finally:
            threads_done.set()
            watcher.join()
    settle_s = settle(services, settings.call_timeout)
    rss = sum(service.rss_mb() or 0 for service in services) or None
    peak = sum(service.rss_mb('VmHWM') or 0 for service in services) or None
    died = not all(service.alive for service in services)
    lost = [service.count(LOST_RACE_MARKER) - before
            for service, before in zip(services, lost_before, strict=True)]
    found = verify(ctx, result.placed)
    row = report.make_row(
        LOAD, hosts_count, instances, result.timings, rss=rss,
        peak_rss=peak, placed=result.placed, callers=callers,
        time_budget_s=budget, refused=result.refused,
        timeouts=result.timeouts, first_error=result.first_error,
        last_placement_s=_round(result.last_placement_s),
        lost_races=sum(lost), lost_races_by_service=lost,
        service_errors=sum(service.count(ERROR_MARKER)
                           for service in services) - errors_before,
        services_died=died, settle_s=round(settle_s, 2), **found)
    row['verified'] = bool(
        not row['overcommitted'] and not row['unbalanced'] and
        row['claims_match'] and not result.timings.errors and not died)
    return row


def settle(services, timeout_s, poll_s=SETTLE_POLL_S,
           idle_share=IDLE_CPU_SHARE):
    """Wait until the services are idle: their CPU time (processes and
    children) grew by less than ``idle_share`` of a core over ``poll_s``,
    or ``timeout_s`` passed.  Returns the seconds waited."""
    started = time.monotonic()
    before = _cpu_s(services)
    while before is not None:
        time.sleep(poll_s)
        now = _cpu_s(services)
        if now is None or now - before < idle_share * poll_s:
            break
        if time.monotonic() - started >= timeout_s:
            break
        before = now
    return time.monotonic() - started


def _cpu_s(services):
    """The CPU seconds of the live services, or None when none can be
    read."""
    found = [report.cpu_s(service.process.pid) for service in services
             if service.alive]
    found = [value for value in found if value is not None]
    return sum(found) if found else None


def _round(value, digits=2):
    return None if value is None else round(value, digits)


# ------------------------------------------------------------------ table --

TABLE_WIDTH = 120


def _ms(value):
    """A latency in ms: 2 decimals below 10, 1 below 1,000, else none."""
    if value is None:
        return '-'
    if value < 10:
        return '%.2f' % value
    if value < 1000:
        return '%.1f' % value
    return '{:,.0f}'.format(value)


def _rate(value):
    """A rate per second: 2 decimals below 1, 1 below 100, else none."""
    if value is None:
        return '-'
    if value < 1:
        return '%.2f' % value
    if value < 100:
        return '%.1f' % value
    return '{:,.0f}'.format(value)


def _share_of(row, name):
    """Reported usage plus claims of resource ``name`` as a percentage of
    the fleet's capacity."""
    prefix = 'fleet_%s_' % name
    capacity = row.get(prefix + 'capacity')
    if not capacity:
        return '-'
    return '%.0f%%' % (100.0 * (row[prefix + 'used'] +
                                row[prefix + 'claimed']) / capacity)


def _table(title, caption, columns):
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for name in columns:
        table.add_column(name, justify='left' if name in ('mode', 'topology')
                         else 'right', no_wrap=True)
    return table


def print_table(rows, console=None):
    """Print the load rows as two rich tables of at most ``TABLE_WIDTH``
    columns, a line per phase: the load at the callers beside the floor,
    then the calls and what the database holds after the phase."""
    from rich.console import Console

    if console is None:
        console = Console(width=None if sys.stdout.isatty() else TABLE_WIDTH)
    table = _table(
        'scheduler-bench load: select_destinations under concurrent callers',
        'topology: workers = 1 service x 2 workers, services = 2 services '
        'x 1 worker; inst = instances per request; dec/s = calls answered '
        '(Selection or NoValidHost) per second, inst/s = instances placed '
        'per second; latency in ms at the caller; no-op = a call that does '
        'nothing on the same broker, as many callers, same run (the '
        'floor); % no-op = dec/s over no-op/s; lost = races lost to '
        'another scheduler; refused = calls the service refused past its '
        'decision_timeout',
        ('mode', 'hosts', 'topology', 'callers', 'inst', 'dec/s', 'inst/s',
         'p50', 'p99', 'no-op/s', 'no-op\np50', '%\nno-op', 'lost\nraces',
         'refused', 'verified'))
    for row in rows:
        table.add_row(
            row['mode'], '{:,}'.format(row['hosts']), row['topology'],
            str(row['callers']), '{:,}'.format(row['instances']),
            _rate(row['decisions_per_s']), _rate(row['instances_per_s']),
            _ms(row['p50_ms']), _ms(row['p99_ms']),
            _rate(row.get('noop_calls_per_s')), _ms(row.get('noop_p50_ms')),
            report._fmt(row.get('share_of_noop')), str(row['lost_races']),
            str(row.get('refused', 0)),
            '[green]yes[/]' if row['verified'] else '[red]no[/]')
    console.print(table)
    table = _table(
        'per phase: the calls, and the claims in the database after them',
        'calls answered (* stopped by --time-budget); last placed: s into '
        'the phase when the last instance was placed; RAM: the fleet\'s '
        'reported usage + claims over its capacity (total x allocation '
        'ratio); nodes overcommitted, nodes with unbalanced claims',
        ('hosts', 'topology', 'callers', 'inst', 'calls', 'placed',
         'NoValid\nHost', 'errors', 'p95', 'last\nplaced', 'claims', 'RAM',
         'over-\ncommit', 'unbal-\nanced'))
    for row in rows:
        calls = '{:,}'.format(row['requests'])
        if row.get('truncated'):
            calls += '*'
        table.add_row(
            '{:,}'.format(row['hosts']), row['topology'],
            str(row['callers']), '{:,}'.format(row['instances']), calls,
            '{:,}'.format(row['placed']),
            '{:,}'.format(row['no_valid_host']),
            '%d (%d t/o)' % (row['errors'], row['timeouts'])
            if row['errors'] else '0',
            _ms(row['p95_ms']), report._fmt(row['last_placement_s']),
            '{:,}'.format(row['claims']), _share_of(row, 'memory_mb'),
            str(len(row['overcommitted'])), str(len(row['unbalanced'])))
    console.print(table)
    for row in rows:
        if row.get('first_error'):
            console.print('%s, %d callers x%d: first error: %s' % (
                row['topology'], row['callers'], row['instances'],
                row['first_error'][:200]))
    dirs = []
    for row in rows:
        for path in row.get('log_dirs') or ():
            if path not in dirs:
                dirs.append(path)
    if dirs:
        console.print('service logs kept in %s' % ', '.join(dirs))
