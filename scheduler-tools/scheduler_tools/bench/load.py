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
verified.  ``load_table.print_table`` prints the rows.

Its parts: ``load_fleet`` (the fleet and the database's checks),
``load_services`` (the services and their settling), ``load_callers``
(the requests, the caller threads, the heartbeats) and ``load_table``
(the rows printed).
"""

import dataclasses
import tempfile
import threading
import time
import uuid

from oslo_log import log as logging

from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.server import rpcapi
from scheduler_tools import seed
from scheduler_tools.bench import LOAD
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import floor
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

# Re-exported: scheduler_tools.bench.soak reaches it, as the parts below,
# through this module.
from scheduler_tools.bench.load_callers import RequestFeed
from scheduler_tools.bench.load_callers import drive
from scheduler_tools.bench.load_callers import heartbeats
from scheduler_tools.bench.load_fleet import load_hosts
from scheduler_tools.bench.load_fleet import release_claims
from scheduler_tools.bench.load_fleet import remove_load
from scheduler_tools.bench.load_fleet import verify
from scheduler_tools.bench.load_services import ERROR_MARKER
from scheduler_tools.bench.load_services import LOST_RACE_MARKER
from scheduler_tools.bench.load_services import POLL_S
from scheduler_tools.bench.load_services import LoadService
from scheduler_tools.bench.load_services import settle
from scheduler_tools.bench.load_services import stop_all

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



@dataclasses.dataclass(frozen=True)
class Topology:
    """``processes`` scheduler-service processes of ``workers`` workers
    each."""

    name: str
    processes: int
    workers: int


TOPOLOGIES = (Topology('workers', 1, 2), Topology('services', 2, 1))



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
        stop_all(services, keep)
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


def _watch(services, stop, threads_done):
    """Set ``stop`` when a service exits before ``threads_done``."""
    while not threads_done.wait(POLL_S):
        if not all(service.alive for service in services):
            LOG.warning('a scheduler-service exited during the load')
            stop.set()
            return


def _round(value, digits=2):
    return None if value is None else round(value, digits)
