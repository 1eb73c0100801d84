"""The replay's command-line options (``REPLAY_OPTS``) and the
``Settings`` read from them.

The trace's format is ``--trace-format``, else detected from the path
(``formats``).  The fleet is ``--fleet``, else the trace's own (the
Alibaba GPU trace's node list), else a generated one.

A generated fleet has ``--hosts`` hosts of ``--host-shape``, or with
``--hosts-factor F`` ``ceil(F x peak lower bound)`` of them, the bound
being that of the whole trace (every VM placed) on hosts of that shape.
A shape ``VCPUS:MEMORY_MB`` without a disk gets a disk large enough for
every VM of the trace at once (their root disks added up, at least 1
GiB), so that disk never constrains.

``--find-fleet`` and ``--fill-until-failure`` (``planning``) replace
the replay by capacity planning runs; ``Settings.planning`` names the
mode, and ``PLANNING_EXCLUDES`` the options neither takes.
"""

import os
import time

from oslo_config import cfg

from scheduler.conf import CONF
from scheduler.view.host_state import resolve_allocation_ratio
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import fleet
from scheduler_tools.replay import formats
from scheduler_tools.replay import trace
from scheduler_tools.replay.replayer import ReplayError

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DEFAULT_TRACE = os.path.join(DATA_DIR, 'azure-v1-slice.csv.gz')
# The default fleet, without --fleet, --hosts or --hosts-factor and when
# the trace brings none: DEFAULT_HOSTS_FACTOR times the trace's peak
# lower bound of hosts of DEFAULT_HOST_SHAPE (64 vCPUs, 256 GiB, 2000
# GiB).  No placement fits the trace on fewer hosts than the bound, and
# real packing needs some room above it (best-fit on the whole Azure V1
# trace needs about 1.03 x its bound to refuse nothing), so at 1.15 x a
# first run shows how tightly each policy packs, not a fleet too small
# for its trace (the shipped slice: 50 hosts against a bound of 43).
DEFAULT_HOSTS_FACTOR = 1.15
DEFAULT_HOST_SHAPE = '64:262144:2000'
# The report folder's name, from the run's start (UTC), and its files.
REPORT_DIR_FORMAT = 'replay-%Y%m%d-%H%M%S'
REPORT_JSON = 'summary.json'
REPORT_PLOT = 'replay.png'
DEFAULT_SEED = 0

REPLAY_OPTS = [
    cfg.StrOpt('trace', default=DEFAULT_TRACE, metavar='PATH',
               help='Trace to replay: a trace CSV (plain or .gz), an '
                    'Azure flavor-sequence folder or an Alibaba GPU '
                    'trace folder; default: the shipped Azure slice.'),
    cfg.StrOpt('trace-format', choices=formats.FORMATS,
               help='Format of --trace (default: detected from the '
                    'path).'),
    cfg.IntOpt('limit', min=1, metavar='N',
               help='Replay only the first N VMs of the trace.'),
    cfg.StrOpt('fleet', metavar='PATH',
               help='Fleet CSV, one compute node per row; default: a '
                    'generated fleet of --hosts hosts of --host-shape.'),
    cfg.IntOpt('hosts', min=1, metavar='N',
               help='Number of hosts of the generated fleet (default: '
                    'sized from the trace, see --hosts-factor).'),
    cfg.FloatOpt('hosts-factor', min=0.0, metavar='F',
                 help='Size the generated fleet at F times the peak '
                      'capacity lower bound of the trace on hosts of '
                      '--host-shape (default, without --hosts: %g).'
                      % DEFAULT_HOSTS_FACTOR),
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
    cfg.BoolOpt('compare', default=True,
                help='Also run the reference policies (first-fit, '
                     'best-fit) on the same trace and fleet and print '
                     'them next to the service (--nocompare: the service '
                     'alone).'),
    cfg.BoolOpt('report', default=True,
                help='Write the report: the figures as JSON (%s) and the '
                     'plot (%s) in --report-dir (--noreport: none but '
                     'what --output and --plot ask for).'
                     % (REPORT_JSON, REPORT_PLOT)),
    cfg.StrOpt('report-dir', metavar='DIR',
               help='Folder of the report (default: %s, from the start '
                    'time in UTC, in the current folder).'
                    % REPORT_DIR_FORMAT.replace('%', '%%')),
    cfg.StrOpt('output', metavar='PATH',
               help='Write the figures as JSON to this file (instead of '
                    'the report folder\'s).'),
    cfg.StrOpt('plot', metavar='PATH',
               help='Draw hosts in use against the lower bound, '
                    'utilisation, stranded capacity and NoValidHost '
                    'moments over trace time into this PNG file (instead '
                    'of the report folder\'s).'),
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
    cfg.BoolOpt('find-fleet', default=False,
                help='Capacity planning: find, for the service and each '
                     'reference policy, the fewest generated hosts of '
                     '--host-shape on which it refuses at most '
                     '--max-refused of the instances (see '
                     'scheduler_tools.replay.planning).'),
    cfg.FloatOpt('max-refused', min=0.0, max=1.0, metavar='SHARE',
                 help='With --find-fleet, the share of the instances a '
                      'fleet may refuse and still pass (default 0).'),
    cfg.BoolOpt('fill-until-failure', default=False,
                help='Capacity planning: place the trace\'s requests '
                     'without departures until the first NoValidHost, '
                     'then report what each policy placed, used and '
                     'left stranded.'),
    cfg.IntOpt('fill-seed', metavar='N',
               help='With --fill-until-failure, draw the requests at '
                    'random from the trace\'s (seeded); default: the '
                    'trace\'s order, repeated.'),
    cfg.BoolOpt('reference-only', default=False,
                help='With --find-fleet or --fill-until-failure, run the '
                     'reference policies only, not the service.'),
]

# Options a planning mode (--find-fleet, --fill-until-failure) cannot
# take: (the Settings attribute, the option's name).
PLANNING_EXCLUDES = (
    ('transport_url', '--transport-url'),
    ('database_connection', '--database-connection'),
    ('no_seed', '--no-seed'), ('seed_only', '--seed-only'),
    ('speed', '--speed'), ('placements', '--placements'))


def register_opts(conf=CONF):
    """Register the replay's command-line options on ``conf`` (once)."""
    missing = [opt for opt in REPLAY_OPTS if opt.dest not in conf]
    if missing:
        conf.register_cli_opts(missing)


class Settings:
    """The replay's options, read from ``conf`` once it is parsed.

    ``trace_format`` is the trace's FORMATS name, ``trace_fleet`` the
    HostSpecs the trace brings (None: it brings none, or another fleet
    is used)."""

    trace_format = None
    trace_fleet = None

    def __init__(self, conf=CONF):
        self.trace = conf.trace
        self.trace_format = conf.trace_format
        self.limit = conf.limit
        self.fleet = conf.fleet
        self.hosts = conf.hosts
        self.hosts_given = conf.hosts is not None
        self.hosts_factor = conf.hosts_factor
        self.host_shape = fleet.parse_host_shape(conf.host_shape)
        self.speed = conf.speed or None
        self.group_window_s = conf.group_window
        self.compare = conf.compare
        self.report_dir = _report_dir(conf)
        self.output = conf.output or self._in_report(REPORT_JSON)
        self.plot = conf.plot or self._in_report(REPORT_PLOT)
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
        if self.hosts and self.hosts_factor:
            raise ReplayError('--hosts and --hosts-factor both size the '
                              'generated fleet: give one')
        if (self.hosts or self.hosts_factor) and (self.fleet or
                                                  self.no_seed):
            raise ReplayError('--hosts and --hosts-factor size a generated '
                              'fleet: they do not apply with --fleet or '
                              '--no-seed')
        self.trace_format = (self.trace_format or
                             formats.detect_format(self.trace))
        self.trace_fleet = None
        if not (self.fleet or self.no_seed):
            self.trace_fleet = formats.trace_fleet(self.trace,
                                                   self.trace_format)
        if (self.hosts or self.hosts_factor) and self.trace_fleet:
            raise ReplayError('--hosts and --hosts-factor size a generated '
                              'fleet: the trace %s brings its own (give '
                              '--fleet to replace it)' % self.trace)
        self.find_fleet = conf.find_fleet
        self.max_refused = conf.max_refused
        self.fill_until_failure = conf.fill_until_failure
        self.fill_seed = conf.fill_seed
        self.reference_only = conf.reference_only
        _check_planning(self)

    @property
    def planning(self):
        """The planning mode asked for (``'find-fleet'``,
        ``'fill-until-failure'``), or None for a replay."""
        if self.find_fleet:
            return 'find-fleet'
        return 'fill-until-failure' if self.fill_until_failure else None

    @property
    def embedded(self):
        return not self.transport_url

    @property
    def needs_trace(self):
        """Whether the trace must be read: to replay it, or to size the
        generated fleet from it."""
        return not self.seed_only or (
            not self.fleet and not self.no_seed and
            (not self.hosts or self.host_shape[2] is None))

    def fleet_specs(self, requests=()):
        """The HostSpecs to seed: the fleet CSV, else the trace's own
        fleet (``formats.trace_fleet``), else a generated fleet (sized
        and its disk chosen from ``requests`` as the module docstring
        says; ``hosts`` and ``host_shape`` then record what was
        generated)."""
        if self.fleet:
            return fleet.read_fleet(self.fleet)
        if self.trace_fleet is not None:
            return self.trace_fleet
        shape = generated_shape(self.host_shape, requests)
        self.hosts = self.generated_hosts(shape, requests)
        self.host_shape = shape
        return fleet.generate_fleet(self.hosts, shape)

    def generated_hosts(self, shape, requests):
        """``--hosts``, else ``--hosts-factor`` (default
        ``DEFAULT_HOSTS_FACTOR``) times the peak lower bound of
        ``requests`` on hosts of ``shape``."""
        if self.hosts:
            return self.hosts
        return capacity_mod.fleet_size_for(self.factor,
                                           peak_bound(shape, requests))

    @property
    def factor(self):
        """The factor a generated fleet is sized by when ``--hosts``
        does not give its size."""
        return self.hosts_factor or DEFAULT_HOSTS_FACTOR

    def fleet_origin(self):
        """One line saying where the fleet comes from, and for a
        generated one how it was sized (after ``fleet_specs``)."""
        if self.no_seed:
            return 'the compute nodes already in the database'
        if self.fleet:
            return 'the fleet of %s' % self.fleet
        if self.trace_fleet is not None:
            return "the trace's own node list"
        vcpus, memory_mb, local_gb = self.host_shape
        shape = ('%s generated hosts of %s vCPUs, %s MiB RAM and %s GiB '
                 'disk' % tuple(format(value, ',') for value in (
                     self.hosts, vcpus, memory_mb, local_gb)))
        if self.hosts_given:
            return '%s (--hosts)' % shape
        how = ('--hosts-factor' if self.hosts_factor else
               'the default; choose with --hosts or --hosts-factor')
        return ("%s: %g x the trace's peak lower bound (%s)"
                % (shape, self.factor, how))

    def outputs(self):
        """The files the run writes (``--output``, ``--plot``, the
        report folder's), in that order; creates the folders they are
        in."""
        paths = [path for path in (self.output, self.plot) if path]
        for path in paths:
            os.makedirs(os.path.dirname(path) or os.curdir, exist_ok=True)
        return paths

    def _in_report(self, name):
        if self.report_dir is None:
            return None
        return os.path.join(self.report_dir, name)

    def describe(self, conf=CONF):
        """JSON-ready description of the run and the scheduler's settings."""
        fs = conf.filter_scheduler
        return {
            'mode': 'embedded' if self.embedded else 'external',
            'trace': os.path.abspath(self.trace), 'limit': self.limit,
            'trace_format': self.trace_format,
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
        if self.trace_fleet is not None:
            return {'trace_nodes': os.path.abspath(self.trace)}
        return {'generated_hosts': self.hosts,
                'hosts_factor': None if self.hosts_given else self.factor,
                'host_shape': ':'.join(map(str, self.host_shape))}


def generated_shape(shape, requests):
    """``shape`` with its disk: given, else the root disks of every VM
    of ``requests`` added up (at least 1 GiB)."""
    vcpus, memory_mb, local_gb = shape
    if local_gb is None:
        local_gb = max(1, sum(vm.disk_gb for request in requests
                              for vm in request.vms))
    return (vcpus, memory_mb, local_gb)


def peak_bound(shape, requests):
    """Hosts of ``shape`` (its disk given) that the peak of ``requests``
    needs at the least, every VM placed (``capacity.bound_for_shape``
    of the most of each resource held at once)."""
    limits = capacity_mod.FleetCapacity.from_specs(
        fleet.generate_fleet(1, shape)).limits[0]
    _, held = capacity_mod.trace_demand(requests)
    return capacity_mod.bound_for_shape(held.max(axis=0, initial=0.0),
                                        limits)


def _check_planning(settings):
    """Raise ReplayError when the planning options contradict each
    other or the options they cannot take (see ``PLANNING_EXCLUDES``)."""
    mode = settings.planning
    if settings.find_fleet and settings.fill_until_failure:
        raise ReplayError('--find-fleet and --fill-until-failure exclude '
                          'each other: run them one at a time')
    for value, option, modes in (
            (settings.max_refused, '--max-refused', ('find-fleet',)),
            (settings.fill_seed, '--fill-seed', ('fill-until-failure',)),
            (settings.reference_only or None, '--reference-only',
             ('find-fleet', 'fill-until-failure'))):
        if value is not None and mode not in modes:
            raise ReplayError('%s applies only with %s' % (
                option, ' or '.join('--' + name for name in modes)))
    if mode is None:
        return
    taken = [option for name, option in PLANNING_EXCLUDES
             if getattr(settings, name)]
    if taken:
        raise ReplayError('--%s runs embedded services on temporary '
                          'databases of its own, as fast as it can: it '
                          'does not apply with %s' % (mode, ', '.join(taken)))
    if settings.find_fleet and (settings.fleet or settings.hosts or
                                settings.hosts_factor):
        raise ReplayError('--find-fleet searches the number of generated '
                          'hosts of --host-shape: it does not apply with '
                          '--fleet, --hosts or --hosts-factor')


def _report_dir(conf):
    """``--report-dir``, else (with ``--report``) a folder named from
    the time now, UTC (``REPORT_DIR_FORMAT``); None with
    ``--noreport``."""
    if not conf.report:
        return None
    if conf.report_dir:
        return conf.report_dir
    return time.strftime(REPORT_DIR_FORMAT, time.gmtime())


def _random_seed(conf):
    if conf.seed is not None:
        return conf.seed
    if conf.scheduler.random_seed is not None:
        return conf.scheduler.random_seed
    return DEFAULT_SEED
