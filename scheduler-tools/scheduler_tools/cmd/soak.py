"""``scheduler-soak``: an hour of mixed load, sampled and judged.

``scheduler-soak`` seeds 10,000 hosts in PostgreSQL, starts one
``scheduler-service`` of two workers on them and, for an hour, boots
and deletes instances through it and sends it the instance and
aggregate casts and the heartbeats of a cloud; every minute it samples
the services' memory, the open connections, the decision latency and
the host view's staleness, and at the end checks the claims in the
database (``scheduler_tools.bench.soak``).  Options (parsed with the
usual ``--config-file``; see ``scheduler-soak --help``):

``--hosts N``                 fleet size (10,000)
``--duration SECONDS``        load time (3,600)
``--sample-interval SECONDS`` between samples (60)
``--warmup SECONDS``          left out of the RSS growth (default: 600,
                              or a third of a shorter run)
``--callers N``               concurrent callers (8)
``--services N``, ``--workers N``  processes and workers each (1 x 2)
``--live-instances N``        live instances kept (default: one per host)
``--delete-share F``          share of boots preceded by a delete below
                              that (0.1)
``--transport-url URL``       the broker (a vhost no Nova uses)
``--database-connection URL`` an empty PostgreSQL database, or
``--admin-connection URL``    a superuser URL: a new database is made
                              there and dropped afterwards
``--output-dir DIR``          samples.jsonl, soak.png, summary.json
``--heartbeat-lag SECONDS``   stamp the compute services' heartbeats
                              that long before their commit (0)
``--seed N``, ``--rss-growth-limit PCT``, ``--nometrics``,
``--noprogress``

Exit status: 0 when every check passed (the verdict is PASS), 1 when
one failed, 2 when the soak could not run.

The soak's modules (SQLAlchemy, oslo.messaging, matplotlib...) are
imported once the options are parsed, so ``--help`` and ``--version``
answer without them.
"""

import os
import sys
import time

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import config
from scheduler.conf import CONF
from scheduler_tools import bench
from scheduler_tools.bench import soak_settings

SOAK_OPTS = [
    cfg.IntOpt('hosts', dest='soak_hosts', default=10000, min=1,
               metavar='N', help='Compute nodes of the fleet.'),
    cfg.FloatOpt('duration', dest='soak_duration', default=3600.0,
                 min=1.0, metavar='SECONDS',
                 help='How long the load lasts.'),
    cfg.FloatOpt('sample-interval', dest='soak_sample_interval',
                 default=60.0, min=0.5, metavar='SECONDS',
                 help='Seconds between two samples.'),
    cfg.FloatOpt('warmup', dest='soak_warmup', min=0.0, metavar='SECONDS',
                 help='Seconds of the load left out of the RSS growth '
                      '(default: 600, or a third of a shorter run).'),
    cfg.IntOpt('callers', dest='soak_callers', default=8, min=1,
               metavar='N', help='Concurrent callers booting instances.'),
    cfg.IntOpt('services', dest='soak_services', default=1, min=1,
               metavar='N', help='scheduler-service processes.'),
    cfg.IntOpt('workers', dest='soak_workers', default=2, min=1,
               metavar='N', help='[scheduler] workers of each.'),
    cfg.IntOpt('instances', dest='soak_instances', default=1, min=1,
               max=100, metavar='N', help='Instances per boot request.'),
    cfg.IntOpt('live-instances', dest='soak_live_instances', min=1,
               metavar='N',
               help='Live instances to keep: every boot is preceded by a '
                    'delete once there are this many (default: one per '
                    'host).'),
    cfg.FloatOpt('delete-share', dest='soak_delete_share', default=0.1,
                 min=0.0, max=1.0, metavar='F',
                 help='Below --live-instances, the share of boots preceded '
                      'by a delete.'),
    cfg.StrOpt('transport-url', dest='soak_transport_url', secret=True,
               metavar='URL', help='The broker (a vhost no Nova uses).'),
    cfg.StrOpt('database-connection', dest='soak_database_connection',
               secret=True, metavar='URL',
               help='An empty PostgreSQL database (its rows are deleted '
                    'again afterwards).'),
    cfg.StrOpt('admin-connection', dest='soak_admin_connection',
               secret=True, metavar='URL',
               help='Instead of --database-connection: a PostgreSQL '
                    'superuser URL; a new database is made there and '
                    'dropped afterwards.'),
    cfg.StrOpt('output-dir', dest='soak_output_dir', metavar='DIR',
               help='Where samples.jsonl, soak.png and summary.json go '
                    '(default: soak-<date>-<time>).'),
    cfg.IntOpt('seed', dest='soak_seed', default=0, metavar='N',
               help='Seed of the fleet, the requests and the deletes.'),
    cfg.IntOpt('call-timeout', dest='soak_call_timeout', default=60,
               min=1, metavar='SECONDS',
               help='Seconds to wait for each answer.'),
    cfg.FloatOpt('server-timeout', dest='soak_server_timeout',
                 default=300.0, min=1.0, metavar='SECONDS',
                 help='Seconds to wait for the services to start.'),
    cfg.FloatOpt('drain-timeout', dest='soak_drain_timeout', default=60.0,
                 min=0.0, metavar='SECONDS',
                 help='Seconds the services get after the load to handle '
                      'the casts still queued.'),
    cfg.FloatOpt('rss-growth-limit', dest='soak_rss_growth_limit',
                 default=5.0, min=0.0, metavar='PCT',
                 help='Largest RSS growth after the warm-up, in percent.'),
    cfg.BoolOpt('metrics', dest='soak_metrics', default=True,
                help='Serve the services\' Prometheus metrics on loopback '
                     'and sample them (--nometrics: do not).'),
    cfg.FloatOpt('heartbeat-lag', dest='soak_heartbeat_lag', default=0.0,
                 min=0.0, metavar='SECONDS',
                 help='Stamp each compute service heartbeat this many '
                      'seconds before its commit (a compute clock behind '
                      'the scheduler\'s, or a heartbeat committed late).'),
    cfg.BoolOpt('progress', dest='soak_progress', default=True,
                help='Print a line per sample (--noprogress: do not).'),
]


def expected_errors():
    """The errors ``main`` reports as a soak that could not run."""
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools import databases
    from scheduler_tools.bench import workload

    return (bench.BenchError, databases.DatabaseError,
            workload.WorkloadError, OSError)


def register_opts(conf=CONF):
    """Register the soak's command-line options on ``conf`` (once)."""
    missing = [opt for opt in SOAK_OPTS if opt.dest not in conf]
    if missing:
        conf.register_cli_opts(missing)


def settings_from(conf=CONF):
    """A ``soak_settings.SoakSettings`` from the parsed options."""
    if conf.soak_database_connection and conf.soak_admin_connection:
        raise bench.BenchError('give --database-connection or '
                               '--admin-connection, not both')
    return soak_settings.SoakSettings(
        hosts=conf.soak_hosts, duration_s=conf.soak_duration,
        sample_interval_s=conf.soak_sample_interval,
        warmup_s=conf.soak_warmup, callers=conf.soak_callers,
        services=conf.soak_services, workers=conf.soak_workers,
        instances=conf.soak_instances,
        live_instances=conf.soak_live_instances,
        delete_share=conf.soak_delete_share,
        transport_url=conf.soak_transport_url,
        database_connection=conf.soak_database_connection,
        admin_connection=conf.soak_admin_connection,
        output_dir=(conf.soak_output_dir or
                    time.strftime('soak-%Y%m%d-%H%M%S')),
        seed=conf.soak_seed, call_timeout=conf.soak_call_timeout,
        server_timeout=conf.soak_server_timeout,
        drain_timeout_s=conf.soak_drain_timeout,
        rss_growth_limit_pct=conf.soak_rss_growth_limit,
        metrics=conf.soak_metrics, progress=conf.soak_progress,
        heartbeat_lag_s=conf.soak_heartbeat_lag)


def _parse(argv):
    register_opts(CONF)
    logging.set_defaults(default_log_levels=(
        logging.get_default_log_levels() + bench.QUIET_LOG_LEVELS))
    config.parse_args(sys.argv[1:] if argv is None else argv)


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), run the soak, print the
    verdict; return the exit status."""
    _parse(argv)
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools.bench import soak
    from scheduler_tools.bench import soak_report

    expected = expected_errors()
    try:
        settings = settings_from(CONF)
        summary = soak.run(settings)
    except expected as exc:
        print('scheduler-soak: error: %s' % exc, file=sys.stderr)
        return 2
    soak_report.print_summary(summary)
    if not summary['verified']:
        print('scheduler-soak: error: the soak failed (see "checks" in %s)'
              % os.path.join(os.path.dirname(summary['plot']),
                             soak_settings.SUMMARY_FILE), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
