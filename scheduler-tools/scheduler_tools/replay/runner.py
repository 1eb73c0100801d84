"""The replay itself: options, deployments and the run.

Two deployments:

embedded (the default)
    The scheduler service (``SchedulerService``) runs in a process of
    its own, forked once the database is seeded (``embedded``), on the
    real rabbit driver over an in-memory broker in that process
    (``broker``: kombu's in-memory transport whose consumers wait
    instead of polling), which the replay reaches over a pipe; the
    database is a temporary SQLite file unless
    ``--database-connection`` names another.  Its RPC server runs
    ``EMBEDDED_POOL_SIZE`` threads unless ``[DEFAULT]
    executor_thread_pool_size`` is configured, and releases deleted
    instances' claims in batches (``[scheduler] claim_release_delay``
    ``EMBEDDED_RELEASE_DELAY_S`` unless configured).
external (``--transport-url``)
    The replay talks to scheduler services started separately
    (``scheduler-service``) over that transport, on the database of
    ``--database-connection`` (else ``[database] connection``).  Those
    services read the aggregates when they start, so the order is: seed
    (``scheduler-replay --seed-only``), start the services, replay
    (``--no-seed``).  ``--seed`` only seeds the embedded service: a
    separate service takes ``[scheduler] random_seed`` from its own
    configuration.

The run (``run``): read the trace and group it into requests, size and
seed the fleet (unless ``--no-seed``), read the compute nodes back,
print the capacity lower bound of the trace on them, and replay
(``replayer.Replay``, an ``loop.EventLoop``: every arrival one
``select_destinations`` call, every departure replayed, also after the
last arrival).  With ``--compare`` the reference policies
(``policies``) run on the same requests and nodes in a separate process
meanwhile.  Trace time is simulated: with ``--speed X`` the loop sleeps
so that events happen at X times real time, otherwise it never sleeps.
A background thread refreshes every compute service's heartbeat each
``HEARTBEAT_INTERVAL_S`` wall seconds so that ComputeFilter keeps the
hosts up however long the replay takes.

A generated fleet has ``--hosts`` hosts of ``--host-shape``, or with
``--hosts-factor F`` ``ceil(F x peak lower bound)`` of them, the bound
being that of the whole trace (every VM placed) on hosts of that shape.
A shape ``VCPUS:MEMORY_MB`` without a disk gets a disk large enough for
every VM of the trace at once (their root disks added up, at least 1
GiB), so that disk never constrains.

Why placements are deterministic (same seed and settings give the same
placements CSV, embedded or against one separate service):

* the replay waits for each decision and writes the chosen nodes' rows
  (committed) before it sends the next request, and commits the
  departures due before an arrival before it sends that arrival's
  request;
* the scheduler re-reads every ``compute_nodes`` row on each request, and
  a row written after its virtual consumption replaces it (the row's
  ``updated_at`` is newer; both clocks are the same machine's), so every
  decision sees exactly the usage the agents wrote, whatever the service;
* nodes are seeded in fleet order, so their ids, the order in which the
  scheduler weighs them and the stable sort's tie order are the same on
  every database;
* the driver draws from ``random.Random([scheduler] random_seed)``, once
  per chosen host, in request order;
* the ``update_instance_info`` / ``delete_instance_info`` casts (sent
  only with ``[filter_scheduler] track_instance_changes``, as Nova's
  compute does) are asynchronous, but they only feed the per-host
  instance lists, which the default filters and weighers do not read
  (no server groups, no affinity), so their timing cannot change a
  decision.

Several services, or ``[scheduler] workers`` > 1, answer in whatever
order the broker hands requests out, each with its own random source, so
only a single service with sequential calls is reproducible.
"""

import concurrent.futures
import contextlib
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_messaging import opts as messaging_opts

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import migration
from scheduler.server import rpcapi
from scheduler.view.host_state import resolve_allocation_ratio
from scheduler_tools import seed
from scheduler_tools.replay import agent
from scheduler_tools.replay import broker
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import embedded
from scheduler_tools.replay import fleet
from scheduler_tools.replay import metrics
from scheduler_tools.replay import policies
from scheduler_tools.replay import replayer
from scheduler_tools.replay import report
from scheduler_tools.replay import trace

LOG = logging.getLogger(__name__)

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DEFAULT_TRACE = os.path.join(DATA_DIR, 'azure-v1-slice.csv.gz')
# The default fleet: 24 hosts of 64 vCPUs, 256 GiB and 2000 GiB.  The
# shipped slice's running VMs ask for up to about 10.6 TiB of RAM, 28
# such hosts' worth under Nova's RAM allocation ratio of 1.5: the fleet
# is full (RAM at its limit) from about 0.4 of the slice's 1.3 hours on,
# and about 3.5% of the requests meet NoValidHost.
DEFAULT_HOSTS = 24
DEFAULT_HOST_SHAPE = '64:262144:2000'
DEFAULT_SEED = 0
EMBEDDED_TRANSPORT_URL = broker.URL
SHM_DIR = '/dev/shm'
HEARTBEAT_INTERVAL_S = 10.0
# Threads of the embedded service's RPC server (oslo.messaging's default
# is 64): they share their process's interpreter lock, so more of them only
# contend for it (4,000 VMs of the Azure trace on 1,121 nodes: 64 threads
# take about 40% longer).
EMBEDDED_POOL_SIZE = 4
# [scheduler] claim_release_delay of the embedded service: the agents send
# one delete_instance_info cast per departed instance (about 410,000 for
# the Azure V1 trace), each a claim lookup when released at once (about
# 7% of the interpreter-lock samples under py-spy, though the whole
# trace's wall time did not measurably change); their claims are already
# gone (the agents release them as the instances are written), so no
# decision changes.
EMBEDDED_RELEASE_DELAY_S = 0.5
PROGRESS_EVERY = 25

ReplayError = replayer.ReplayError

REPLAY_OPTS = [
    cfg.StrOpt('trace', default=DEFAULT_TRACE, metavar='PATH',
               help='Trace CSV (plain or .gz) to replay; default: the '
                    'shipped Azure slice.'),
    cfg.IntOpt('limit', min=1, metavar='N',
               help='Replay only the first N VMs of the trace.'),
    cfg.StrOpt('fleet', metavar='PATH',
               help='Fleet CSV, one compute node per row; default: a '
                    'generated fleet of --hosts hosts of --host-shape.'),
    cfg.IntOpt('hosts', default=DEFAULT_HOSTS, min=1, metavar='N',
               help='Number of hosts of the generated fleet.'),
    cfg.FloatOpt('hosts-factor', min=0.0, metavar='F',
                 help='Size the generated fleet at F times the peak '
                      'capacity lower bound of the trace on hosts of '
                      '--host-shape (instead of --hosts).'),
    cfg.StrOpt('host-shape', default=DEFAULT_HOST_SHAPE,
               metavar='VCPUS:MEMORY_MB[:LOCAL_GB]',
               help='vcpus:memory_mb:local_gb of each generated host; '
                    'without local_gb, a disk large enough for every VM '
                    'of the trace at once (disk never constrains).'),
    cfg.IntOpt('seed', default=None, metavar='N',
               help='[scheduler] random_seed of the embedded service '
                    '(default: the configured one, else 0).'),
    cfg.FloatOpt('speed', min=0.0, metavar='X',
                 help='Replay at this many times real time (sleeping '
                      'between events); default: as fast as possible.'),
    cfg.FloatOpt('group-window', default=trace.DEFAULT_BIN_S, min=0.0,
                 metavar='SECONDS',
                 help='Seconds of the bins in which consecutive VMs of '
                      'one project and flavor form one request; 0 sends '
                      'every VM alone.'),
    cfg.BoolOpt('compare', default=False,
                help='Also run the reference policies (first-fit, '
                     'best-fit) on the same trace and fleet and print '
                     'them next to the service.'),
    cfg.StrOpt('output', metavar='PATH',
               help='Write the figures as JSON to this file.'),
    cfg.StrOpt('plot', metavar='PATH',
               help='Draw hosts in use against the lower bound, '
                    'utilisation, stranded capacity and NoValidHost '
                    'moments over trace time into this PNG file.'),
    cfg.StrOpt('placements', metavar='PATH',
               help='Write vm_id,host,nodename per VM (empty host: not '
                    'placed) to this CSV file.'),
    cfg.StrOpt('transport-url', dest='replay_transport_url', secret=True,
               metavar='URL',
               help='Talk to separately started scheduler services over '
                    'this transport instead of embedding one.'),
    cfg.StrOpt('database-connection', dest='replay_database_connection',
               secret=True, metavar='URL',
               help='Database URL (default: embedded, a temporary '
                    'SQLite file; external, [database] connection).'),
    cfg.BoolOpt('seed-only', default=False,
                help='Seed the database with the fleet and stop.'),
    cfg.BoolOpt('no-seed', default=False,
                help='Do not seed: replay on the compute nodes already in '
                     'the database.'),
    cfg.IntOpt('call-timeout', default=60, min=1, metavar='SECONDS',
               help='Seconds to wait for each select_destinations answer.'),
    cfg.BoolOpt('progress', default=True,
                help='Show a progress bar (--noprogress to hide it).'),
]


def register_opts(conf=CONF):
    """Register the replay's command-line options on ``conf`` (once)."""
    missing = [opt for opt in REPLAY_OPTS if opt.dest not in conf]
    if missing:
        conf.register_cli_opts(missing)


# ------------------------------------------------------------- settings --

class Settings:
    """The replay's options, read from ``conf`` once it is parsed."""

    def __init__(self, conf=CONF):
        self.trace = conf.trace
        self.limit = conf.limit
        self.fleet = conf.fleet
        self.hosts = conf.hosts
        self.hosts_factor = conf.hosts_factor
        self.host_shape = fleet.parse_host_shape(conf.host_shape)
        self.speed = conf.speed or None
        self.group_window_s = conf.group_window
        self.compare = conf.compare
        self.output = conf.output
        self.plot = conf.plot
        self.placements = conf.placements
        self.transport_url = conf.replay_transport_url
        self.database_connection = conf.replay_database_connection
        self.seed_only = conf.seed_only
        self.no_seed = conf.no_seed
        self.call_timeout = conf.call_timeout
        self.progress = conf.progress
        self.random_seed = _random_seed(conf)
        if self.seed_only and self.no_seed:
            raise ReplayError('--seed-only and --no-seed exclude each other')
        if self.hosts_factor and (self.fleet or self.no_seed):
            raise ReplayError('--hosts-factor sizes a generated fleet: it '
                              'does not apply with --fleet or --no-seed')

    @property
    def embedded(self):
        return not self.transport_url

    @property
    def needs_trace(self):
        """Whether the trace must be read: to replay it, or to size the
        generated fleet from it."""
        return not self.seed_only or (
            not self.fleet and not self.no_seed and
            (self.hosts_factor or self.host_shape[2] is None))

    def fleet_specs(self, requests=()):
        """The HostSpecs to seed: the fleet CSV, else a generated fleet
        (sized and its disk chosen from ``requests`` as the module
        docstring says; ``hosts`` and ``host_shape`` then record what
        was generated)."""
        if self.fleet:
            return fleet.read_fleet(self.fleet)
        shape = generated_shape(self.host_shape, requests)
        self.hosts = self.generated_hosts(shape, requests)
        self.host_shape = shape
        return fleet.generate_fleet(self.hosts, shape)

    def generated_hosts(self, shape, requests):
        """``--hosts``, or with ``--hosts-factor`` that many times the
        peak lower bound of ``requests`` on hosts of ``shape``."""
        if not self.hosts_factor:
            return self.hosts
        limits = capacity_mod.FleetCapacity.from_specs(
            fleet.generate_fleet(1, shape)).limits[0]
        _, held = capacity_mod.trace_demand(requests)
        peak = capacity_mod.bound_for_shape(
            held.max(axis=0, initial=0.0), limits)
        return capacity_mod.fleet_size_for(self.hosts_factor, peak)

    def describe(self, conf=CONF):
        """JSON-ready description of the run and the scheduler's settings."""
        fs = conf.filter_scheduler
        return {
            'mode': 'embedded' if self.embedded else 'external',
            'trace': os.path.abspath(self.trace), 'limit': self.limit,
            'fleet': self._fleet_source(),
            'seeded': not self.no_seed,
            'random_seed': self.random_seed,
            'group_window_s': self.group_window_s, 'speed': self.speed,
            'scheduler': {
                'driver': conf.scheduler.driver,
                'enabled_filters': list(fs.enabled_filters),
                'weight_classes': list(fs.weight_classes),
                'host_subset_size': fs.host_subset_size,
                'shuffle_best_same_weighed_hosts':
                    fs.shuffle_best_same_weighed_hosts,
                'weight_multipliers': {
                    name: getattr(fs, name) for name in (
                        'ram_weight_multiplier', 'cpu_weight_multiplier',
                        'disk_weight_multiplier',
                        'io_ops_weight_multiplier')},
                'allocation_ratios': {
                    name: resolve_allocation_ratio(name, None)
                    for name in fleet.RATIO_NAMES},
            },
        }

    def _fleet_source(self):
        if self.no_seed:
            return 'database'
        if self.fleet:
            return os.path.abspath(self.fleet)
        return {'generated_hosts': self.hosts,
                'hosts_factor': self.hosts_factor,
                'host_shape': ':'.join(map(str, self.host_shape))}


def generated_shape(shape, requests):
    """``shape`` with its disk: given, else the root disks of every VM
    of ``requests`` added up (at least 1 GiB)."""
    vcpus, memory_mb, local_gb = shape
    if local_gb is None:
        local_gb = max(1, sum(vm.disk_gb for request in requests
                              for vm in request.vms))
    return (vcpus, memory_mb, local_gb)


def _random_seed(conf):
    if conf.seed is not None:
        return conf.seed
    if conf.scheduler.random_seed is not None:
        return conf.scheduler.random_seed
    return DEFAULT_SEED


# ---------------------------------------------------------- deployments --

class Deployment:
    """Where the scheduler runs: the database, the transport, the service.

    Use as a context manager: ``__enter__`` points ``scheduler.db.api``
    at the database (``ctx`` is then an admin context on it); ``start``
    makes the transport, embedded starts the service too, and returns a
    SchedulerAPI; ``__exit__`` stops them, releases the database and
    removes a temporary one.
    """

    def __init__(self, settings, conf=CONF):
        self.settings = settings
        self.conf = conf
        self.ctx = None
        self.transport = None
        self.service = None
        self._tempdir = None

    def database_url(self):
        """``--database-connection``, else embedded a temporary SQLite
        file, else ``[database] connection``."""
        if self.settings.database_connection:
            return self.settings.database_connection
        if self.settings.embedded:
            return self._temporary_sqlite()
        return self.conf.database.connection

    def _temporary_sqlite(self):
        """A throw-away SQLite file, in memory-backed ``/dev/shm`` when
        there is one, written without waiting for the disk (nothing needs
        to survive the process)."""
        parent = SHM_DIR if os.access(SHM_DIR, os.W_OK) else None
        self._tempdir = tempfile.mkdtemp(prefix='scheduler-replay-',
                                         dir=parent)
        self.conf.set_override('sqlite_synchronous', False, 'database')
        return 'sqlite:///%s' % os.path.join(self._tempdir, 'replay.sqlite')

    def open_database(self):
        """Point the DB API at the database; return an admin context."""
        objects.register_all()
        self.conf.set_override('connection', self.database_url(),
                               'database')
        if not db.configure(self.conf):
            raise ReplayError('the database engine was already started')
        self.ctx = scheduler_context.get_admin_context()
        return self.ctx

    def start(self):
        """Embedded, start the service (``embedded.ServiceProcess``);
        make the transport and return a SchedulerAPI on it."""
        url = self.settings.transport_url
        if self.settings.embedded:
            self._configure_embedded()
            self.service = embedded.ServiceProcess().start()
            url = broker.PIPE_URL
        self.transport = rpc.get_transport(self.conf, url=url)
        return rpcapi.SchedulerAPI(self.transport,
                                   timeout=self.settings.call_timeout)

    def _configure_embedded(self):
        """The embedded service's settings (its process inherits them)."""
        _register_messaging_opts(self.conf)
        self.conf.set_override('transport_url', EMBEDDED_TRANSPORT_URL)
        self.conf.set_override('heartbeat_timeout_threshold', 0,
                               'oslo_messaging_rabbit')
        self.conf.set_override('random_seed', self.settings.random_seed,
                               'scheduler')
        self.conf.set_default('executor_thread_pool_size',
                              EMBEDDED_POOL_SIZE)
        self.conf.set_default('claim_release_delay',
                              EMBEDDED_RELEASE_DELAY_S, 'scheduler')

    def stop(self):
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None
        if self.service is not None:
            self.service.stop()
            self.service = None

    def __enter__(self):
        self.open_database()
        return self

    def __exit__(self, *exc_info):
        self.stop()
        db.context_manager.dispose_pool()
        if self._tempdir:
            shutil.rmtree(self._tempdir, ignore_errors=True)


def _register_messaging_opts(conf):
    """Register oslo.messaging's options as the library lists them (a
    transport registers its own only when it is made), so that the
    embedded service's settings can be made before its process makes
    one; a configuration file still overrides the defaults set."""
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=None if group == 'DEFAULT' else group)


class Heartbeat:
    """Refreshes every compute service's heartbeat every ``interval_s``
    wall seconds from a daemon thread, until stopped."""

    def __init__(self, ctx, interval_s=HEARTBEAT_INTERVAL_S):
        self.ctx = ctx
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='replay-heartbeat')

    def beat(self):
        try:
            seed.heartbeat_services(self.ctx)
        except Exception:
            LOG.exception('Compute service heartbeat failed')

    def _run(self):
        while not self._stop.wait(self.interval_s):
            self.beat()

    def __enter__(self):
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------- entry --

def seed_database(ctx, settings, requests=()):
    """Create the schema and seed the fleet; returns the HostSpecs."""
    migration.db_sync(db.get_engine())
    specs = settings.fleet_specs(requests)
    seed.seed_fleet(ctx, specs)
    return specs


def load_requests(settings):
    """The trace's requests (see ``trace``); warns when
    ``--group-window`` has no project id to group by."""
    vms = trace.read_trace(settings.trace, settings.limit)
    if not vms:
        raise ReplayError('the trace %s has no VM' % settings.trace)
    if settings.group_window_s and not any(vm.project_id for vm in vms):
        LOG.warning('--group-window %g: the trace %s has no project_id, '
                    'so no VMs are grouped; every VM is a request of its '
                    'own', settings.group_window_s, settings.trace)
    return trace.group_requests(vms, settings.group_window_s)


def announce(requests, capacity, stream=None):
    """Tell the user (on stderr) what will be replayed and the trace's
    capacity lower bound on the fleet (every VM placed, mean over the
    arrival window), to size fleets by; returns the bound's ``{'peak',
    'mean', 'end'}``."""
    times, held = capacity_mod.trace_demand(requests)
    window = metrics.arrival_window(requests) or (0.0, 0.0)
    bound = metrics.bound_figures(times, held, capacity, window)
    vms = sum(request.num_instances for request in requests)
    print('scheduler-replay: %s VMs in %s requests arriving over %.1f h '
          '(the last departure at %.1f h) on %s nodes; capacity lower '
          'bound of the trace on them: peak %s, mean %.1f nodes'
          % (format(vms, ','), format(len(requests), ','),
             (window[1] - window[0]) / 3600.0,
             (times[-1] - window[0]) / 3600.0 if len(times) else 0.0,
             format(capacity.size, ','), format(bound['peak'], ','),
             bound['mean']), file=stream or sys.stderr)
    return bound


@contextlib.contextmanager
def _progress_bar(total, enabled, decisions):
    """A callable moving a tqdm bar by each request's instances, so that
    it shows VMs per second and the time left, with the ``decisions``'
    (a DecisionStats) placements and NoValidHost; None when disabled."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, unit='VM', desc='replay', smoothing=0.05)

    def advance(request):
        bar.update(request.num_instances)
        if decisions.requests % PROGRESS_EVERY == 0:
            bar.set_postfix(placed=decisions.instances_placed,
                            novalidhost=decisions.no_valid_host,
                            refresh=False)

    try:
        yield advance
    finally:
        bar.close()


@contextlib.contextmanager
def _reference_runs(requests, capacity, mix, enabled):
    """With ``enabled``, the reference policies' ``policies.simulate_all``
    running in a separate process (a Future), else None."""
    if not enabled:
        yield None
        return
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context('spawn'))
    with executor:
        yield executor.submit(policies.simulate_all, requests, capacity,
                              mix)


def run(settings):
    """Seed and/or replay as ``settings`` say.

    Returns the summary dict (``metrics.summarize``, with ``compare``
    and ``reference_runs`` under ``--compare``), or with ``seed_only``
    ``{'seeded_nodes': N}``.
    """
    requests = load_requests(settings) if settings.needs_trace else ()
    with Deployment(settings) as deployment:
        ctx = deployment.ctx
        if not settings.no_seed:
            specs = seed_database(ctx, settings, requests)
            if settings.seed_only:
                return {'seeded_nodes': len(specs)}
        rows = fleet.load_nodes(ctx)
        agents = agent.ComputeAgents(
            ctx, None, rows,
            CONF.filter_scheduler.track_instance_changes)
        capacity = capacity_mod.FleetCapacity.from_nodes(agents.ordered)
        mix = capacity_mod.FlavorMix.from_requests(requests)
        trace_bound = announce(requests, capacity)
        agents.api = deployment.start()   # before any thread: it forks
        with _reference_runs(requests, capacity, mix,
                             settings.compare) as references:
            with Heartbeat(ctx):
                summary, ledger = _replay(ctx, agents, requests, capacity,
                                          mix, settings)
            summary['trace_bound'] = trace_bound
            others = _compare(summary, references)
    _write_outputs(settings, summary, ledger, capacity, others)
    return summary


def _replay(ctx, agents, requests, capacity, mix, settings):
    ledger = metrics.Ledger(capacity, mix, metrics.arrival_window(requests))
    placements = replayer.PlacementsWriter(settings.placements)
    replay = replayer.Replay(ctx, agents.api, agents, requests, ledger,
                             settings.speed, placements)
    started = time.monotonic()
    try:
        total = sum(request.num_instances for request in requests)
        with _progress_bar(total, settings.progress,
                           replay.decisions) as progress:
            replay.run(progress)
    finally:
        placements.close()
    description = settings.describe()
    description['fleet_nodes'] = capacity.size
    description['allocation_ratios'] = capacity.effective_ratios()
    description['trace_vms'] = sum(r.num_instances for r in requests)
    summary = metrics.summarize(replay.decisions, ledger, description,
                                time.monotonic() - started)
    return summary, ledger


def _compare(summary, references):
    """Add the reference runs (a Future, or None) to ``summary``; returns
    their series for the plot (or None)."""
    if references is None:
        return None
    results = references.result()
    summary['compare'] = {'service': metrics.comparison(summary)}
    summary['reference_runs'] = {}
    for policy, result in results.items():
        summary['compare'][policy] = metrics.comparison(result['summary'])
        summary['reference_runs'][policy] = result['summary']
    return {policy: result['series'] for policy, result in results.items()}


def _write_outputs(settings, summary, ledger, capacity, others):
    if settings.output:
        report.write_json(settings.output, summary)
    if settings.plot:
        report.plot(settings.plot, ledger.series.arrays(), capacity,
                    ledger.moments, others, ledger.window)
