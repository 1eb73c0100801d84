"""The replay itself: options, deployments and the event loop.

Two deployments:

embedded (the default)
    The scheduler service runs in this process (``SchedulerService``) on
    the real rabbit driver over kombu's in-memory transport
    (``kombu+memory:////``), with a temporary SQLite file as its database
    unless ``--database-connection`` names another.
external (``--transport-url``)
    The replay talks to scheduler services started separately
    (``scheduler-service``) over that transport, on the database of
    ``--database-connection`` (else ``[database] connection``).  Those
    services read the aggregates when they start, so the order is: seed
    (``scheduler-replay --seed-only``), start the services, replay
    (``--no-seed``).  ``--seed`` only seeds the embedded service: a
    separate service takes ``[scheduler] random_seed`` from its own
    configuration.

The loop (``Replay.run``): seed the database (unless ``--no-seed``),
read the compute nodes back, group the trace into requests and walk the
events in time order.  An arrival is one ``select_destinations`` call
through ``SchedulerAPI``; the simulated compute agents (``agent``) then
record the instances, write the nodes' rows and cast
``update_instance_info``.  A deletion, at arrival + lifetime, destroys the
instance, writes the row and casts ``delete_instance_info``.  The window
ends with the last arrival: later deletions are not replayed.
NoValidHost is counted, never fatal; other call errors are counted too,
and the replay stops after ``MAX_CONSECUTIVE_ERRORS`` in a row.  Trace
time is simulated: with ``--speed X`` the loop sleeps so that events
happen at X times real time, otherwise it never sleeps.  A background
thread refreshes every compute service's heartbeat each
``HEARTBEAT_INTERVAL_S`` wall seconds so that ComputeFilter keeps the
hosts up however long the replay takes.

Why placements are deterministic (same seed and settings give the same
placements CSV, embedded or against one separate service):

* the replay waits for each decision and writes the chosen nodes' rows
  (committed) before it sends the next request;
* the scheduler re-reads every ``compute_nodes`` row on each request, and
  a row written after its virtual consumption replaces it (the row's
  ``updated_at`` is newer; both clocks are the same machine's), so every
  decision sees exactly the usage the agents wrote, whatever the service;
* nodes are seeded in fleet order, so their ids, the order in which the
  scheduler weighs them and the stable sort's tie order are the same on
  every database;
* the driver draws from ``random.Random([scheduler] random_seed)``, once
  per chosen host, in request order;
* the ``update_instance_info`` / ``delete_instance_info`` casts are
  asynchronous, but they only feed the per-host instance lists, which the
  default filters and weighers do not read (no server groups, no
  affinity), so their timing cannot change a decision.

Several services, or ``[scheduler] workers`` > 1, answer in whatever
order the broker hands requests out, each with its own random source, so
only a single service with sequential calls is reproducible.
"""

import contextlib
import csv
import os
import shutil
import tempfile
import threading
import time

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import objects
from scheduler import rpc
from scheduler import rpcapi
from scheduler import service
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import migration
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import request_spec
from scheduler.replay import agent
from scheduler.replay import fleet
from scheduler.replay import metrics
from scheduler.replay import trace

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
EMBEDDED_TRANSPORT_URL = 'kombu+memory:////'
SHM_DIR = '/dev/shm'
HEARTBEAT_INTERVAL_S = 10.0
MAX_CONSECUTIVE_ERRORS = 5
PROGRESS_EVERY = 25

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
    cfg.StrOpt('host-shape', default=DEFAULT_HOST_SHAPE,
               metavar='VCPUS:MEMORY_MB:LOCAL_GB',
               help='vcpus:memory_mb:local_gb of each generated host.'),
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
    cfg.StrOpt('output', metavar='PATH',
               help='Write the figures as JSON to this file.'),
    cfg.StrOpt('plot', metavar='PATH',
               help='Draw hosts in use and utilisation over trace time '
                    'into this PNG file.'),
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


class ReplayError(RuntimeError):
    """The replay cannot go on."""


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
        self.host_shape = fleet.parse_host_shape(conf.host_shape)
        self.speed = conf.speed or None
        self.group_window_s = conf.group_window
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

    @property
    def embedded(self):
        return not self.transport_url

    def fleet_specs(self):
        """The HostSpecs to seed: the fleet CSV, else a generated fleet."""
        if self.fleet:
            return fleet.read_fleet(self.fleet)
        return fleet.generate_fleet(self.hosts, self.host_shape)

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
                    name: getattr(conf, name) for name in
                    fleet.RATIO_NAMES},
            },
        }

    def _fleet_source(self):
        if self.no_seed:
            return 'database'
        if self.fleet:
            return os.path.abspath(self.fleet)
        return {'generated_hosts': self.hosts,
                'host_shape': ':'.join(map(str, self.host_shape))}


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
        """Make the transport; embedded, start the service too."""
        url = self.settings.transport_url or EMBEDDED_TRANSPORT_URL
        self.transport = rpc.get_transport(self.conf, url=url)
        if self.settings.embedded:
            self.conf.set_override('transport_url', url)
            self.conf.set_override('heartbeat_timeout_threshold', 0,
                                   'oslo_messaging_rabbit')
            self.conf.set_override('random_seed', self.settings.random_seed,
                                   'scheduler')
            self.service = service.SchedulerService(self.transport)
            self.service.start()
        return rpcapi.SchedulerAPI(self.transport,
                                   timeout=self.settings.call_timeout)

    def stop(self):
        if self.service is not None:
            self.service.stop()
            self.service = None
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None

    def __enter__(self):
        self.open_database()
        return self

    def __exit__(self, *exc_info):
        self.stop()
        db.context_manager.dispose_pool()
        if self._tempdir:
            shutil.rmtree(self._tempdir, ignore_errors=True)


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
            fleet.heartbeat_services(self.ctx)
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


# ----------------------------------------------------------------- loop --

class FlavorCatalog:
    """Flavor objects for trace sizes, ids from 1 in first-seen order."""

    def __init__(self):
        self._flavors = {}

    def get(self, vm):
        """The Flavor of ``vm`` (root disk ``disk_gb`` GiB, no swap)."""
        key = (vm.size, vm.flavor_name)
        flavor = self._flavors.get(key)
        if flavor is None:
            flavor_id = len(self._flavors) + 1
            flavor = flavor_obj.Flavor(
                id=flavor_id, name=vm.flavor_name, flavorid=str(flavor_id),
                memory_mb=vm.memory_mb, vcpus=vm.vcpus, root_gb=vm.disk_gb,
                ephemeral_gb=0, swap=0, extra_specs={}, is_public=True,
                disabled=False, projects=[], rxtx_factor=1.0)
            self._flavors[key] = flavor
        return flavor


def build_spec(request, flavor, instance_uuids):
    """The RequestSpec of a trace Request for ``flavor``."""
    first = request.first
    spec = request_spec.RequestSpec(
        flavor=flavor, num_instances=request.num_instances,
        instance_uuid=instance_uuids[0], project_id=first.project_id,
        availability_zone=first.availability_zone)
    return spec.ensure_defaults()


class PlacementsWriter:
    """``vm_id,host,nodename`` rows, in decision order (or nothing)."""

    def __init__(self, path):
        self._file = open(path, 'w', newline='') if path else None
        self._writer = None
        if self._file is not None:
            self._writer = csv.writer(self._file, lineterminator='\n')
            self._writer.writerow(('vm_id', 'host', 'nodename'))

    def placed(self, records):
        if self._writer is not None:
            for record in records:
                self._writer.writerow((record.vm.vm_id, record.host,
                                       record.nodename))

    def rejected(self, vms):
        if self._writer is not None:
            for vm in vms:
                self._writer.writerow((vm.vm_id, '', ''))

    def close(self):
        if self._file is not None:
            self._file.close()


class Replay:
    """One replay of ``requests`` on the agents' fleet through ``api``."""

    def __init__(self, ctx, api, agents, requests, flavor, settings,
                 placements=None):
        self.ctx = ctx
        self.api = api
        self.agents = agents
        self.requests = requests
        self.settings = settings
        self.catalog = FlavorCatalog()
        self.decisions = metrics.DecisionStats()
        self.gauge = metrics.FleetGauge(flavor, agents.nodes.values())
        self.series = metrics.TimeSeries()
        self.placements = placements or PlacementsWriter(None)
        self.queue = trace.EventQueue(requests)
        self.end_s = requests[-1].time_s if requests else 0.0
        self._errors_in_a_row = 0

    def run(self, progress=None):
        """Process every event; ``progress`` (a tqdm bar or None) moves
        one step per request."""
        start_wall = time.monotonic()
        start_s = self.queue.peek_time()
        while self.queue:
            event = self.queue.pop()
            self._pace(start_wall, start_s, event.time_s)
            if event.kind == trace.ARRIVAL:
                self._arrive(event.payload)
                self._progress(progress)
            else:
                self.gauge.update(self.agents.destroy(event.payload))
            self.series.sample(event.time_s, self.gauge.totals())

    def _pace(self, start_wall, start_s, time_s):
        if not self.settings.speed:
            return
        due = start_wall + (time_s - start_s) / self.settings.speed
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def _progress(self, progress):
        if progress is None:
            return
        progress.update(1)
        if self.decisions.requests % PROGRESS_EVERY == 0:
            progress.set_postfix(placed=self.decisions.instances_placed,
                                 novalidhost=self.decisions.no_valid_host,
                                 refresh=False)

    def _arrive(self, request):
        flavor = self.catalog.get(request.first)
        uuids = [self.agents.new_uuid() for _ in request.vms]
        spec = build_spec(request, flavor, uuids)
        started = time.perf_counter()
        try:
            destinations = self.api.select_destinations(
                self.ctx, spec, instance_uuids=uuids)
        except exception.NoValidHost:
            self._rejected(request, time.perf_counter() - started)
            return
        except (messaging.MessagingException, exception.SchedulerException):
            self._failed(request, time.perf_counter() - started)
            return
        self.decisions.record(time.perf_counter() - started,
                              request.num_instances, len(destinations))
        self._errors_in_a_row = 0
        self._build(request, uuids, destinations, flavor.id)

    def _rejected(self, request, latency_s):
        self.decisions.record(latency_s, request.num_instances, 0)
        self.placements.rejected(request.vms)
        self._errors_in_a_row = 0

    def _failed(self, request, latency_s):
        LOG.exception('select_destinations failed for request %d',
                      request.index)
        self.decisions.record_error(latency_s, request.num_instances)
        self.placements.rejected(request.vms)
        self._errors_in_a_row += 1
        if self._errors_in_a_row >= MAX_CONSECUTIVE_ERRORS:
            raise ReplayError('%d select_destinations calls failed in a '
                              'row' % self._errors_in_a_row)

    def _build(self, request, uuids, destinations, flavor_id):
        if len(destinations) != request.num_instances:
            raise ReplayError('asked for %d hosts, got %d'
                              % (request.num_instances, len(destinations)))
        placed, nodes = self.agents.spawn(request.vms, uuids, destinations,
                                          flavor_id)
        for node in nodes:
            self.gauge.update(node)
        self.placements.placed(placed)
        for record in placed:
            lifetime = record.vm.lifetime_s
            if lifetime is None:
                continue
            if request.time_s + lifetime <= self.end_s:
                self.queue.push_deletion(request.time_s + lifetime, record)


# ---------------------------------------------------------------- entry --

def seed_database(ctx, settings):
    """Create the schema and seed the fleet; returns the HostSpecs."""
    migration.db_sync(db.get_engine())
    specs = settings.fleet_specs()
    fleet.seed_fleet(ctx, specs)
    return specs


def load_requests(settings):
    """``(requests, reference size)`` of the trace (see ``trace``)."""
    vms = trace.read_trace(settings.trace, settings.limit)
    if not vms:
        raise ReplayError('the trace %s has no VM' % settings.trace)
    requests = trace.group_requests(vms, settings.group_window_s)
    return requests, trace.most_common_size(vms)


@contextlib.contextmanager
def _progress_bar(total, enabled):
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, unit='req', desc='replay', smoothing=0.05)
    try:
        yield bar
    finally:
        bar.close()


def run(settings):
    """Seed and/or replay as ``settings`` say.

    Returns the summary dict (``metrics.summarize``), or with
    ``seed_only`` ``{'seeded_nodes': N}``.
    """
    requests = flavor = None
    if not settings.seed_only:
        requests, flavor = load_requests(settings)
    with Deployment(settings) as deployment:
        ctx = deployment.ctx
        if not settings.no_seed:
            specs = seed_database(ctx, settings)
            if settings.seed_only:
                return {'seeded_nodes': len(specs)}
        rows = fleet.load_nodes(ctx)
        with Heartbeat(ctx):
            api = deployment.start()
            return _replay(ctx, api, rows, requests, flavor, settings)


def _replay(ctx, api, rows, requests, flavor, settings):
    agents = agent.ComputeAgents(ctx, api, rows)
    placements = PlacementsWriter(settings.placements)
    replay = Replay(ctx, api, agents, requests, flavor, settings, placements)
    started = time.monotonic()
    try:
        with _progress_bar(len(requests), settings.progress) as bar:
            replay.run(bar)
    finally:
        placements.close()
    description = settings.describe()
    description['fleet_nodes'] = len(rows)
    description['trace_vms'] = sum(r.num_instances for r in requests)
    summary = metrics.summarize(replay.decisions, replay.series, flavor,
                                description, time.monotonic() - started)
    if settings.output:
        metrics.write_json(settings.output, summary)
    if settings.plot:
        metrics.plot(settings.plot, replay.series)
    return summary
