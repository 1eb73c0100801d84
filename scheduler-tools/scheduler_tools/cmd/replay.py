"""``scheduler-replay``: drive the scheduler with a public VM trace.

``scheduler-replay`` with no option replays the shipped Azure slice on a
generated fleet against an embedded scheduler service (a process of its
own, on an in-memory broker) and prints a table of figures.  The
scheduler's own settings come from the usual ``--config-file``; the
replay's options (``--trace``, ``--limit``,
``--fleet``, ``--hosts``, ``--hosts-factor``, ``--host-shape``,
``--seed``, ``--speed``, ``--nocompare``, ``--report-dir``,
``--noreport``, ``--output``, ``--plot``,
``--placements``, ``--transport-url``, ``--database-connection``,
``--seed-only``, ``--no-seed``, ...) parse with it; see
``scheduler_tools.replay`` and ``scheduler-replay --help``.
``--find-fleet`` and ``--fill-until-failure`` plan capacity instead
(``scheduler_tools.replay.planning``) and print their own table.

The progress bar and the tables are the output, so the service's and
the transport's INFO lines are hidden (``QUIET_LOG_LEVELS``) unless the
user asks for logs: with ``--debug`` or ``--log-file`` oslo.log's
levels (or the configured ``default_log_levels``) apply.

The options are registered from ``scheduler_tools.replay.cli_options``;
the runtime (the runner, the agents, SQLAlchemy, NumPy, oslo.messaging)
is imported once they are parsed, so ``--help`` and ``--version``
answer without it.

Against separately started services::

    scheduler-replay --seed-only --database-connection URL [fleet options]
    scheduler-service --config-file scheduler.conf     # same database
    scheduler-replay --no-seed --transport-url rabbit://... \\
        --database-connection URL --placements out.csv

Exit status: 0 on success, 2 when the replay could not run.
"""

import logging as std_logging
import sys

from oslo_log import log as logging

from scheduler import config
from scheduler.conf import CONF
from scheduler_tools.replay import cli_options
from scheduler_tools.replay import glossary

# The progress bar and the table are the output: the service's and the
# transport's INFO lines would only interleave with them.
QUIET_LOG_LEVELS = ['scheduler=WARNING', 'scheduler_tools=WARNING',
                    'kombu=ERROR', 'amqp=WARNING',
                    'alembic=WARNING', 'matplotlib=WARNING',
                    'oslo.messaging=WARNING', 'oslo_messaging=WARNING']


def expected_errors():
    """The errors ``main`` reports as a replay that could not run."""
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools.replay import agent
    from scheduler_tools.replay import fleet
    from scheduler_tools.replay import runner
    from scheduler_tools.replay import trace

    return (runner.ReplayError, fleet.FleetError, trace.TraceError,
            agent.AgentError, OSError)


def _parse(argv):
    cli_options.register_opts(CONF)
    logging.set_defaults(default_log_levels=(
        logging.get_default_log_levels() + QUIET_LOG_LEVELS))
    config.parse_args(sys.argv[1:] if argv is None else argv,
                      epilog=glossary.epilog())
    if CONF.debug or CONF.log_file:
        # The user asked for logs: their levels, not the quiet ones.
        for pair in QUIET_LOG_LEVELS:
            std_logging.getLogger(pair.split('=')[0]).setLevel(
                std_logging.NOTSET)
        CONF.set_default('default_log_levels',
                         logging.get_default_log_levels())
        logging.setup(CONF, 'scheduler')


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), seed and/or replay,
    print the figures; return the exit status."""
    _parse(argv)
    # Imported after parsing: --help and --version start without them.
    from scheduler_tools.replay import options
    from scheduler_tools.replay import planning
    from scheduler_tools.replay import planning_report
    from scheduler_tools.replay import report
    from scheduler_tools.replay import runner

    expected = expected_errors()
    try:
        settings = options.Settings(CONF)
        if settings.planning:
            result = planning.run(settings)
        else:
            result = runner.run(settings)
    except expected as exc:
        print('scheduler-replay: error: %s' % exc, file=sys.stderr)
        return 2
    if settings.seed_only:
        print('Seeded %d compute node(s).' % result['seeded_nodes'])
        return 0
    if settings.planning:
        planning_report.print_tables(result)
    else:
        report.print_tables(result)
    for path in settings.outputs():
        print('Wrote %s' % path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
