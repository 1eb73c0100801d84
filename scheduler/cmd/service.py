"""``scheduler-service``: run the scheduler RPC server until SIGTERM.

``scheduler-service --config-file /etc/scheduler/scheduler.conf`` serves
the ``scheduler`` topic with ``[scheduler] workers`` processes (default:
the number of CPUs, as Nova 34), which reload their configuration in
place on SIGHUP (``scheduler.server.launcher``).  At start it logs the
options its config files set and it does not honour
(``scheduler.conf.unhonoured``).  With ``SCHEDULER_TRACEMALLOC_DIR``
set in its environment, every process dumps tracemalloc snapshots there
(``scheduler.observability.tracemalloc_dump``).  glibc's malloc keeps
two arenas, not eight per core (``scheduler.server.malloc_arenas``).
"""

import sys

from oslo_log import log as logging

from scheduler import config
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)


def main(argv=None):
    config.parse_args(sys.argv[1:] if argv is None else argv)
    # Imported once the arguments are parsed: ``--help`` and
    # ``--version`` exit before the service's runtime loads.
    from oslo_concurrency import processutils

    from scheduler import conf
    from scheduler.conf import unhonoured
    from scheduler.observability import tracemalloc_dump
    from scheduler.server import launcher
    from scheduler.server import malloc_arenas
    from scheduler.server import preflight
    from scheduler.server import service

    conf.register_client_opts(CONF)
    error = preflight.problem()
    if error:
        LOG.error('Cannot start: %s', error)
        return 1
    # Every value reads now (preflight); secret options (passwords in
    # URLs) are masked by oslo.config.
    CONF.log_opt_values(LOG, logging.DEBUG)
    unhonoured.log_unhonoured(CONF)
    try:
        # Off unless SCHEDULER_TRACEMALLOC_DIR is set (docs/soak.rst).
        tracemalloc_dump.install()
        # Before any worker or thread starts (docs/soak.rst).
        malloc_arenas.install()
    except (tracemalloc_dump.TracemallocConfigError,
            malloc_arenas.MallocArenasConfigError) as error:
        LOG.error('Cannot start: %s', error)
        return 1
    workers = CONF.scheduler.workers or processutils.get_worker_count()
    LOG.info('Starting scheduler-service on host %s with %d worker(s)',
             CONF.host, workers)
    launcher.launch(service.SchedulerService, workers)
    return 0


if __name__ == '__main__':
    sys.exit(main())
