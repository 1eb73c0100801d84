"""``scheduler-bench``: measure the scheduler against its targets.

``scheduler-bench`` with no option measures 1,000 and 10,000 hosts,
in-process, then end-to-end when it is given a broker and a database
(``--transport-url``, ``--database-connection``; without them the
end-to-end mode is skipped), and prints a table of measured / target
figures (the targets are ``bench.report.TARGETS``).  Options (parsed
with the usual ``--config-file``; see ``scheduler-bench --help``):

``--hosts 1000,10000``      fleet sizes
``--instances 1,10``        instances per request (multi-instance
                            requests ask for alternates)
``--requests N``            measured single-instance requests per size
                            (multi-instance: N / instances, at least 1)
``--warmup N``              requests before measuring
``--mode inprocess|endtoend|load|placement|versus-nova|all``  (``all``:
                            inprocess and endtoend)
``--output FILE.json``      one JSON object per (mode, hosts, instances,
                            callers; topology in the load mode)
``--smoke``                 50 hosts, 30 requests, in-process plus
                            end-to-end when servers are given
``--transport-url URL``     the broker of the end-to-end and load modes
                            (a vhost no Nova uses)
``--database-connection URL``  their database, which must hold no
                            compute node (PostgreSQL)
``--placement-url URL``     the placement mode's Placement (noauth2,
                            holding no resource provider)
``--placement-database URL``  its database, only read
``--nova-venv DIR``         versus-nova: Nova 34.0.0's virtualenv
``--nova-database-server URL``  versus-nova: a PostgreSQL admin URL on
                            which Nova's databases are made
``--plot FILE.png``         versus-nova: decisions/s and p99 per callers
``--time-budget SECONDS``   cap of each phase (0: none)
``--callers 1,8``           concurrent callers (end-to-end and load: a
                            measurement per value; default 1)
``--profile-dir DIR``       cProfile one in-process decision per size
``--update-rounds N``, ``--seed N``, ``--noprogress``

``--mode load`` runs the load test (``scheduler_tools.bench.load``) with its
own defaults for the options not given (``load.DEFAULTS``: 30 hosts, 8
callers, single-instance requests, 60 s per phase, 120 s call
time-out...), shortened by ``--smoke`` (``load.SMOKE``); a phase per
(``--callers``, ``--instances``) value for each fleet size and
topology, the services of a topology staying up between phases::

    scheduler-bench --mode load --output load.json
    scheduler-bench --mode load --hosts 1000,10000 --callers 1,8,32,128 \\
        --instances 1,10,100,1000 --time-budget 15 --transport-url ... \\
        --database-connection ...

``--mode placement`` compares Placement's ``GET /allocation_candidates``
with ours (``scheduler_tools.bench.placement``) at 1,000, 10,000 and
50,000 providers unless ``--hosts`` says otherwise (``placement.DEFAULTS``;
``--smoke``: ``placement.SMOKE``)::

    scheduler-bench --mode placement --placement-url http://127.0.0.1:8778 \
        --placement-database postgresql+psycopg2://...

``--mode versus-nova`` runs Nova 34's nova-scheduler and this service
side by side (``scheduler_tools.bench.versus_nova``; own defaults
``versus_nova.DEFAULTS``, ``--smoke``: ``versus_nova.SMOKE``)::

    scheduler-bench --mode versus-nova --transport-url rabbit://... \
        --nova-database-server postgresql+psycopg2://postgres@.../postgres \
        --placement-url http://127.0.0.1:8778 --placement-database ... \
        --output versus.json --plot versus.png

Exit status: 0 when the benchmark ran (whether or not targets are met),
1 when the load mode ran but its check failed (overcommit, unbalanced
claims, unanswered calls) or the placement mode found candidates that
differ from Placement's or the versus-nova mode found an overcommit
or allocations that differ from the instances placed, 2 when it could not run.

The modes' modules (SQLAlchemy, NumPy, oslo.messaging...) are imported
once the options are parsed, so ``--help`` and ``--version`` answer
without them.
"""

import importlib
import os
import platform
import sys
import time

from oslo_config import cfg
from oslo_config import types
from oslo_log import log as logging

from scheduler import config
from scheduler.conf import CONF
from scheduler_tools import bench
from scheduler_tools.bench import versus_nova_venv

SMOKE = {'hosts': [50], 'requests': 30, 'warmup': 3, 'update_rounds': 2,
         'time_budget_s': 30.0, 'server_timeout': 60.0}

BENCH_OPTS = [
    cfg.ListOpt('hosts', dest='bench_hosts', item_type=types.Integer(min=1),
                default=[1000, 10000], metavar='N,N',
                help='Fleet sizes to measure, comma-separated.'),
    cfg.ListOpt('instances', dest='bench_instances',
                item_type=types.Integer(min=1, max=1000), default=[1, 10],
                metavar='N,N',
                help='Instances per request, comma-separated (load: a '
                     'phase per value and callers value).'),
    cfg.IntOpt('requests', dest='bench_requests', default=200, min=1,
               metavar='N',
               help='Measured single-instance requests per fleet size '
                    '(multi-instance: N / instances, at least 1); load: '
                    'the cap of calls per phase, the same way (default '
                    '100000).'),
    cfg.IntOpt('warmup', dest='bench_warmup', default=20, min=0,
               metavar='N', help='Requests before measuring.'),
    cfg.StrOpt('mode', dest='bench_mode', default='all', metavar='MODE',
               choices=('inprocess', 'endtoend', 'load', 'placement',
                        'versus-nova', 'all'),
               help='In-process (driver on a warm HostManager), '
                    'end-to-end (scheduler-service over RabbitMQ and '
                    'PostgreSQL), both (all), load (concurrent '
                    'callers against 2 workers, then 2 services, a phase '
                    'per callers and instances value, each with a check '
                    'of the claims in the database), or '
                    'placement (Placement\'s allocation candidates '
                    'against ours on the same providers), or versus-nova '
                    '(Nova 34\'s nova-scheduler and this service in '
                    'turn on the same servers and load).'),
    cfg.StrOpt('output', dest='bench_output', metavar='FILE.json',
               help='Write one JSON object per (mode, hosts, instances, '
                    'callers; load: and topology) to this file, one per '
                    'line.'),
    cfg.BoolOpt('smoke', dest='bench_smoke', default=False,
                help='Quick check: 50 hosts, a few requests; end-to-end '
                     'only when servers are given.'),
    cfg.StrOpt('transport-url', dest='bench_transport_url', secret=True,
               metavar='URL',
               help='End-to-end and load: the broker (a vhost no Nova '
                    'uses).'),
    cfg.StrOpt('database-connection', dest='bench_database_connection',
               secret=True, metavar='URL',
               help='End-to-end and load: the database, which must hold '
                    'no compute node.'),
    cfg.StrOpt('placement-url', dest='bench_placement_url', metavar='URL',
               help='Placement mode: the endpoint of a Placement in '
                    'noauth2 that holds no resource provider (the '
                    'benchmark writes its own).'),
    cfg.StrOpt('placement-database', dest='bench_placement_database',
               secret=True, metavar='URL',
               help='Placement mode: the SQLAlchemy URL of that '
                    'Placement\'s database, only read.'),
    cfg.StrOpt('nova-venv', dest='bench_nova_venv',
               default=versus_nova_venv.default_venv(), metavar='DIR',
               help='Versus-nova: the virtualenv of Nova 34.0.0 '
                    '(default: $SCHEDULER_NOVA_VENV, else '
                    '~/.cache/scheduler-tests/nova-34.0.0).'),
    cfg.StrOpt('nova-database-server', dest='bench_nova_database_server',
               secret=True, metavar='URL',
               help='Versus-nova: the admin URL of a PostgreSQL server '
                    'on which Nova\'s API and cell databases (and this '
                    'service\'s own) are made for each fleet size, and '
                    'dropped after it.'),
    cfg.StrOpt('plot', dest='bench_plot', metavar='FILE.png',
               help='Versus-nova: plot decisions/s and p99 per callers '
                    'for each contestant and fleet size (matplotlib).'),
    cfg.IntOpt('seed', dest='bench_seed', default=0, metavar='N',
               help='Seed of the fleet, the requests and the '
                    'scheduler\'s random source.'),
    cfg.IntOpt('update-rounds', dest='bench_update_rounds', default=20,
               min=0, metavar='N',
               help='Rounds of the node update cost measurement (0: '
                    'skip it).'),
    cfg.ListOpt('callers', dest='bench_callers',
                item_type=types.Integer(min=1), default=[1], metavar='N,N',
                help='Concurrent callers, comma-separated: end-to-end and '
                     'load measure each value in turn (a row per callers '
                     'value and instances value), with the same '
                     'services; load mode default: 8.'),
    cfg.FloatOpt('time-budget', dest='bench_time_budget', default=300.0,
                 min=0.0, metavar='SECONDS',
                 help='Stop each phase after this many seconds (once a '
                      'few requests are measured; load: calls in flight '
                      'are waited for, default 60 s per phase); 0: no '
                      'limit.'),
    cfg.IntOpt('call-timeout', dest='bench_call_timeout', default=300,
               min=1, metavar='SECONDS',
               help='End-to-end and load: seconds to wait for each answer '
                    '(load mode default: 120).'),
    cfg.FloatOpt('server-timeout', dest='bench_server_timeout',
                 default=120.0, min=1.0, metavar='SECONDS',
                 help='Seconds to wait for the scheduler services to '
                      'start.'),
    cfg.StrOpt('profile-dir', dest='bench_profile_dir', metavar='DIR',
               help='Profile one extra in-process decision per fleet size '
                    'with cProfile: DIR/inprocess-<N>.pstats and the top '
                    'entries by cumulative time in DIR/inprocess-<N>.txt.'),
    cfg.BoolOpt('progress', dest='bench_progress', default=True,
                help='Show progress bars (--noprogress to hide them).'),
]

# Settings field -> option dest, for the load and placement modes' own
# defaults.
LOAD_OPTIONS = {'hosts': 'bench_hosts', 'instances': 'bench_instances',
                'requests': 'bench_requests', 'callers': 'bench_callers',
                'time_budget_s': 'bench_time_budget',
                'call_timeout': 'bench_call_timeout',
                'warmup': 'bench_warmup'}
# The modules ``run`` imports.
MODE_MODULES = ('endtoend', 'inprocess', 'load', 'placement', 'versus_nova')
# Modes with their own defaults and smoke settings: the module (of
# ``scheduler_tools.bench``) of their DEFAULTS and SMOKE.
OWN_DEFAULTS = {bench.LOAD: 'load', bench.PLACEMENT: 'placement',
                bench.VERSUS_NOVA: 'versus_nova'}


def own_defaults(mode):
    """The module of ``mode``'s own defaults and smoke settings
    (``DEFAULTS``, ``SMOKE``), or None when it has none."""
    if mode not in OWN_DEFAULTS:
        return None
    # Imported after parsing: --help and --version start without it.
    return importlib.import_module('scheduler_tools.bench.'
                                   + OWN_DEFAULTS[mode])


def expected_errors():
    """The errors ``main`` reports as a benchmark that could not run."""
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools import databases
    from scheduler_tools.bench import workload

    return (bench.BenchError, databases.DatabaseError,
            workload.WorkloadError, OSError)


def register_opts(conf=CONF):
    """Register the benchmark's command-line options on ``conf`` (once)."""
    missing = [opt for opt in BENCH_OPTS if opt.dest not in conf]
    if missing:
        conf.register_cli_opts(missing)


def settings_from(conf=CONF):
    """A ``bench.Settings`` from the parsed options."""
    modes = (bench.MODES if conf.bench_mode == 'all'
             else (conf.bench_mode,))
    own = own_defaults(conf.bench_mode)
    settings = bench.Settings(
        hosts=list(conf.bench_hosts), instances=list(conf.bench_instances),
        requests=conf.bench_requests, warmup=conf.bench_warmup,
        modes=modes, output=conf.bench_output, seed=conf.bench_seed,
        transport_url=conf.bench_transport_url,
        database_connection=conf.bench_database_connection,
        update_rounds=conf.bench_update_rounds,
        callers=list(conf.bench_callers),
        time_budget_s=conf.bench_time_budget or None,
        call_timeout=conf.bench_call_timeout,
        server_timeout=conf.bench_server_timeout,
        smoke=conf.bench_smoke, profile_dir=conf.bench_profile_dir,
        progress=conf.bench_progress)
    if own is not None:
        for name, dest in LOAD_OPTIONS.items():
            if (name in own.DEFAULTS and conf.get_location(dest).location ==
                    cfg.Locations.opt_default):
                setattr(settings, name, own.DEFAULTS[name])
    if settings.smoke:
        for name, value in (own.SMOKE if own else SMOKE).items():
            setattr(settings, name, value)
    settings.endtoend_optional = conf.bench_mode == 'all'
    if not settings.hosts or not settings.instances or not settings.callers:
        raise bench.BenchError('--hosts, --instances and --callers need a '
                               'value')
    return settings


def _parse(argv):
    register_opts(CONF)
    logging.set_defaults(default_log_levels=(
        logging.get_default_log_levels() + bench.QUIET_LOG_LEVELS))
    config.parse_args(sys.argv[1:] if argv is None else argv)


def _servers_given(settings):
    """Whether the end-to-end mode runs (the load mode needs the same
    servers): True when both the broker and the database are given;
    False, with a note, when one is missing and the end-to-end mode is
    optional (``--mode all``).  Raises BenchError otherwise."""
    missing = [option for option, value in (
        ('--transport-url', settings.transport_url),
        ('--database-connection', settings.database_connection))
        if not value]
    if not missing:
        return True
    if settings.endtoend_optional:
        print('scheduler-bench: end-to-end skipped: no %s given'
              % ' and '.join(missing), file=sys.stderr)
        return False
    raise bench.BenchError('end-to-end and load need a RabbitMQ and a '
                           'PostgreSQL database: pass %s'
                           % ' and '.join(missing))


def run(settings, out):
    """Run the modes; return ``(rows, wall times in s by phase)``."""
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools.bench import endtoend
    from scheduler_tools.bench import inprocess
    from scheduler_tools.bench import load
    from scheduler_tools.bench import placement
    from scheduler_tools.bench import versus_nova

    rows, walls = [], {}

    def emit(row):
        rows.append(row)
        out.write(row)

    given = False
    if bench.ENDTOEND in settings.modes or bench.LOAD in settings.modes:
        given = _servers_given(settings)
    if bench.INPROCESS in settings.modes:
        bench.apply_scheduler_options(CONF)
        for hosts in settings.hosts:
            started = time.monotonic()
            inprocess.run(hosts, settings, emit)
            walls['%s %d' % (bench.INPROCESS, hosts)] = (
                time.monotonic() - started)
    if bench.PLACEMENT in settings.modes:
        started = time.monotonic()
        placement.run(settings, CONF.bench_placement_url,
                      CONF.bench_placement_database, emit)
        walls[bench.PLACEMENT] = time.monotonic() - started
    if bench.VERSUS_NOVA in settings.modes:
        started = time.monotonic()
        versus_nova.run(settings, versus_nova.Servers(
            settings.transport_url, CONF.bench_nova_database_server,
            CONF.bench_placement_url, CONF.bench_placement_database,
            CONF.bench_nova_venv, CONF.bench_plot), emit)
        walls[bench.VERSUS_NOVA] = time.monotonic() - started
    if given:
        for mode, module in ((bench.ENDTOEND, endtoend),
                             (bench.LOAD, load)):
            if mode not in settings.modes:
                continue
            for hosts in settings.hosts:
                started = time.monotonic()
                module.run(hosts, settings, settings.transport_url,
                           None, emit)
                walls['%s %d' % (mode, hosts)] = (
                    time.monotonic() - started)
    return rows, walls


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), run, print the table;
    return the exit status."""
    _parse(argv)
    # Imported after parsing: --help and --version start without them;
    # run's modes too, so that the wall time printed leaves them out.
    from scheduler_tools.bench import load_table
    from scheduler_tools.bench import placement_table
    from scheduler_tools.bench import report
    from scheduler_tools.bench import versus_nova_report

    for name in MODE_MODULES:
        importlib.import_module('scheduler_tools.bench.' + name)

    expected = expected_errors()
    started = time.monotonic()
    try:
        settings = settings_from(CONF)
        with report.JsonLines(settings.output) as out:
            rows, walls = run(settings, out)
    except expected as exc:
        print('scheduler-bench: error: %s' % exc, file=sys.stderr)
        return 2
    cpus = len(os.sched_getaffinity(0)) if hasattr(
        os, 'sched_getaffinity') else os.cpu_count()
    print('Python %s on %d CPU(s); seed %d; wall time %.1f s (%s)' % (
        platform.python_version(), cpus, settings.seed,
        time.monotonic() - started,
        ', '.join('%s: %.1f s' % item for item in walls.items())))
    loaded = [row for row in rows if row['mode'] == bench.LOAD]
    compared = [row for row in rows if row['mode'] == bench.PLACEMENT]
    versus = [row for row in rows
              if row['mode'].startswith(bench.VERSUS_NOVA)]
    if len(loaded) + len(compared) + len(versus) < len(rows) or not rows:
        report.print_table([row for row in rows if row['mode'] not in (
            bench.LOAD, bench.PLACEMENT) and row not in versus])
    if versus:
        versus_nova_report.print_table(versus)
        if CONF.bench_plot:
            print('Plot written to %s' % CONF.bench_plot)
    if loaded:
        load_table.print_table(loaded)
    if compared:
        placement_table.print_table(compared)
    if settings.output:
        print('Wrote %d row(s) to %s' % (len(rows), settings.output))
    if settings.profile_dir:
        print('Profiles of one decision in %s' % settings.profile_dir)
    if not all(row['verified'] for row in loaded):
        print('scheduler-bench: error: the load check failed (see '
              '"verified")', file=sys.stderr)
        return 1
    if not all(row.get('verified', True) for row in versus):
        print('scheduler-bench: error: a versus-nova check failed (see '
              '"verified")', file=sys.stderr)
        return 1
    if any(row['mismatches'] for row in compared):
        print('scheduler-bench: error: our candidates differ from '
              'Placement\'s (see "mismatches")', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
