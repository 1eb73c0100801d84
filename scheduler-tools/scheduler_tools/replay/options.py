"""The ``Settings`` read from the replay's command-line options (defined
in ``cli_options``: ``REPLAY_OPTS``, ``register_opts`` and the
defaults).

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

from scheduler.conf import CONF
from scheduler.view.host_state import resolve_allocation_ratio
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import fleet
from scheduler_tools.replay import formats
from scheduler_tools.replay.cli_options import DEFAULT_HOSTS_FACTOR
from scheduler_tools.replay.cli_options import REPORT_DIR_FORMAT
from scheduler_tools.replay.cli_options import REPORT_JSON
from scheduler_tools.replay.cli_options import REPORT_PLOT
from scheduler_tools.replay.replayer import ReplayError

DEFAULT_SEED = 0

# Options a planning mode (--find-fleet, --fill-until-failure) cannot
# take: (the Settings attribute, the option's name).
PLANNING_EXCLUDES = (
    ('transport_url', '--transport-url'),
    ('database_connection', '--database-connection'),
    ('no_seed', '--no-seed'), ('seed_only', '--seed-only'),
    ('speed', '--speed'), ('placements', '--placements'))


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
            (not self.hosts or self.host_shape.local_gb is None))

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
        host = self.host_shape
        shape = ('%s generated hosts of %s vCPUs, %s MiB RAM%s and %s GiB '
                 'disk' % (format(self.hosts, ','), format(host.vcpus, ','),
                           format(host.memory_mb, ','),
                           ', %d %s GPUs' % (host.gpus, host.gpu_model)
                           if host.gpus else '',
                           format(host.local_gb, ',')))
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
                'host_shape': str(self.host_shape)}


def generated_shape(shape, requests):
    """``shape`` with its disk: given, else the root disks of every VM
    of ``requests`` added up (at least 1 GiB)."""
    shape = fleet.HostShape(*shape)
    if shape.local_gb is not None:
        return shape
    return shape._replace(local_gb=max(1, sum(
        vm.disk_gb for request in requests for vm in request.vms)))


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
