"""The replay's command-line options (``REPLAY_OPTS``) and the
``Settings`` read from them.

A generated fleet has ``--hosts`` hosts of ``--host-shape``, or with
``--hosts-factor F`` ``ceil(F x peak lower bound)`` of them, the bound
being that of the whole trace (every VM placed) on hosts of that shape.
A shape ``VCPUS:MEMORY_MB`` without a disk gets a disk large enough for
every VM of the trace at once (their root disks added up, at least 1
GiB), so that disk never constrains.
"""

import os

from oslo_config import cfg

from scheduler.conf import CONF
from scheduler.view.host_state import resolve_allocation_ratio
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import fleet
from scheduler_tools.replay import trace
from scheduler_tools.replay.replayer import ReplayError

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
