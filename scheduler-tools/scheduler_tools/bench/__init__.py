"""``scheduler-bench``: how fast the scheduler decides, and at what cost.

The benchmark builds N compute nodes with varied attributes
(``workload``), warms the scheduler up and times ``select_destinations``
on a deterministic request mix, in three modes; a fourth compares
allocation candidates with Placement's, a fifth Nova's own scheduler
with this service:

inprocess (``inprocess``)
    The real FilterScheduler driver, with its HostManager, in this
    process on a temporary SQLite database: decision latency, decisions
    per second, this process's resident memory, and the cost of one
    compute node update reaching the scheduler's view.
endtoend (``endtoend``)
    A separate ``scheduler-service`` process on PostgreSQL, called
    through ``SchedulerAPI`` over RabbitMQ by sequential callers (each
    ``--callers`` value in turn): latency at the caller, decisions per
    second and the service's resident memory.  The servers are the ones
    given (``--transport-url``, ``--database-connection``); without them
    ``all`` skips this mode.
load (``load``)
    A saturation benchmark: concurrent callers for a time budget against
    two schedulers sharing one RabbitMQ and PostgreSQL - one
    ``scheduler-service`` with two workers, then two services, each
    started once per fleet size - in a phase per ``--callers`` value
    (default 8) and ``--instances`` value (default 1), each on a fleet
    that starts empty and fills up: decisions and instances per second,
    latency, lost claim races, beside a no-op call on the same broker
    with as many callers (the floor), and a check in the database that
    no node is overcommitted.  Not part of ``all``; it has its own
    defaults (``load.DEFAULTS``).
placement (``placement``)
    Placement's own ``GET /allocation_candidates`` against ours
    (``scheduler.placement.candidates``) on the same providers, written
    into the Placement given through its REST API and read back from
    its database: latencies, speed-up and a check that both find the
    same providers.  Not part of ``all``; own defaults
    (``placement.DEFAULTS``).
versus-nova (``versus_nova``)
    Nova 34's own ``nova-scheduler``, then this service in Placement
    mode, then in SQL mode, on the same RabbitMQ, Nova databases (made
    by Nova's migrations) and Placement, driven by Nova's
    ``SchedulerQueryClient`` from 1, 8 and 32 callers: decisions per
    second, latency, capacity checks, and how often both choose the
    same host.  Not part of ``all``; each contestant runs with its own
    defaults, not ``SCHEDULER_OPTIONS``; own benchmark defaults
    (``versus_nova.DEFAULTS``).

All other modes use the Newton default filters plus CoreFilter and
every weigher (``SCHEDULER_OPTIONS``); only the benchmark's own options
differ between runs.  ``report`` prints the table and writes one JSON
object per (mode, hosts, instances), per callers value in the end-to-end
and load modes, and per topology in the load mode.  The
benchmark only measures: it changes neither the scheduler's code nor its
decisions.
"""

import dataclasses

from scheduler.conf import opts as conf_opts

# The targets (``report.TARGETS``) are for these filters and weighers.
BENCH_FILTERS = [
    'RetryFilter', 'AvailabilityZoneFilter', 'RamFilter', 'CoreFilter',
    'DiskFilter', 'ComputeFilter', 'ComputeCapabilitiesFilter',
    'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter']
ALL_WEIGHERS = ['scheduler.weights.all_weighers']

# (group, option) -> value, set on the scheduler in both modes.  No
# periodic task runs during a measurement.
SCHEDULER_OPTIONS = {
    ('filter_scheduler', 'enabled_filters'): BENCH_FILTERS,
    ('filter_scheduler', 'weight_classes'): ALL_WEIGHERS,
    ('filter_scheduler', 'use_baremetal_filters'): False,
    ('scheduler', 'driver'): 'filter_scheduler',
    ('scheduler', 'periodic_task_interval'): -1,
}

# Forced-down hosts make ComputeFilter log a warning per host and request;
# the benchmark silences that logger (in both modes) so the figures do
# not depend on where the log goes.  The rest keeps the output readable.
QUIET_LOG_LEVELS = ['scheduler=WARNING', 'scheduler_tools=WARNING',
                    'scheduler.filters.compute_filter=ERROR',
                    'kombu=ERROR', 'amqp=WARNING', 'alembic=WARNING',
                    'oslo.messaging=WARNING', 'oslo_messaging=WARNING',
                    'oslo_db=WARNING']

INPROCESS = 'inprocess'
ENDTOEND = 'endtoend'
LOAD = 'load'
PLACEMENT = 'placement'
VERSUS_NOVA = 'versus-nova'
# ``--mode all``.
MODES = (INPROCESS, ENDTOEND)


class BenchError(RuntimeError):
    """The benchmark cannot run (bad options, servers not available...)."""


@dataclasses.dataclass
class Settings:
    """What to run.  Times in seconds."""

    hosts: list = dataclasses.field(default_factory=lambda: [1000, 10000])
    instances: list = dataclasses.field(default_factory=lambda: [1, 10])
    requests: int = 200
    warmup: int = 20
    modes: tuple = MODES
    output: str | None = None
    seed: int = 0
    transport_url: str | None = None
    database_connection: str | None = None
    update_rounds: int = 20
    # Each phase stops after this many seconds (at least a few requests).
    time_budget_s: float | None = 300.0
    # Concurrent callers, a measurement per value (end-to-end, load).
    callers: list = dataclasses.field(default_factory=lambda: [1])
    call_timeout: int = 120
    server_timeout: float = 120.0
    smoke: bool = False
    # Directory for the cProfile of one in-process decision per size.
    profile_dir: str | None = None
    # Skip end-to-end, rather than fail, when no server is given.
    endtoend_optional: bool = False
    progress: bool = True

    def requests_for(self, instances):
        """Measured requests of ``instances`` instances: ``requests``
        divided by ``instances`` (at least one), as each is about that
        many decisions' work."""
        return max(1, self.requests // instances)


def apply_scheduler_options(conf):
    """Set ``SCHEDULER_OPTIONS`` on ``conf`` (in-process mode)."""
    for (group, name), value in SCHEDULER_OPTIONS.items():
        conf.set_override(name, value, group)


# Option groups of the scheduler whose values given to the benchmark
# (``--config-file``) the benchmarked services get too.
PASSED_GROUPS = ('scheduler', 'filter_scheduler')


def scheduler_config_lines(conf=None):
    """``SCHEDULER_OPTIONS`` as ``{group: ['name = value', ...]}`` for a
    service's configuration file, after the options of ``PASSED_GROUPS``
    whose value in ``conf`` (the benchmark's own configuration) is not
    their default, so that both modes measure the same scheduler."""
    options = {}
    if conf is not None:
        for group, opts in conf_opts.list_opts():
            group = getattr(group, 'name', group)   # an OptGroup or a name
            if group not in PASSED_GROUPS:
                continue
            for opt in opts:
                value = conf[group][opt.dest]
                if value != opt.default:
                    options[(group, opt.dest)] = value
    options.update(SCHEDULER_OPTIONS)
    groups = {}
    for (group, name), value in options.items():
        if isinstance(value, list):
            value = ','.join(str(item) for item in value)
        groups.setdefault(group, []).append('%s = %s' % (name, value))
    return groups
