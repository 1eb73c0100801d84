"""``scheduler-service``: run the scheduler RPC server until SIGTERM.

``scheduler-service --config-file /etc/scheduler/scheduler.conf`` serves
the ``scheduler`` topic with ``[scheduler] workers`` processes (default
one), under oslo.service's native-threading launcher.
"""

import sys

from oslo_log import log as logging
from oslo_service import service as os_service

from scheduler import config
from scheduler import service
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)


def main(argv=None):
    config.parse_args(sys.argv[1:] if argv is None else argv)
    # Secret options (passwords in URLs) are masked by oslo.config.
    CONF.log_opt_values(LOG, logging.DEBUG)
    error = service.check_databases()
    if error:
        LOG.error('Cannot start: %s', error)
        return 1
    workers = CONF.scheduler.workers or 1
    LOG.info('Starting scheduler-service on host %s with %d worker(s)',
             CONF.host, workers)
    launcher = os_service.launch(CONF, service.SchedulerService(),
                                 workers=workers, restart_method='mutate')
    launcher.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
