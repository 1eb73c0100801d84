"""``scheduler-service``: run the scheduler RPC server until SIGTERM.

``scheduler-service --config-file /etc/scheduler/scheduler.conf`` serves
the ``scheduler`` topic with ``[scheduler] workers`` processes (default
one), under oslo.service's native-threading launcher.
"""

import sys

from oslo_service import backend

backend.init_backend(backend.BackendType.THREADING)

from oslo_log import log as logging  # noqa: E402
from oslo_service import service as os_service  # noqa: E402

from scheduler import config  # noqa: E402
from scheduler import service  # noqa: E402
from scheduler.conf import CONF  # noqa: E402

LOG = logging.getLogger(__name__)


def main(argv=None):
    config.parse_args(sys.argv[1:] if argv is None else argv)
    workers = CONF.scheduler.workers or 1
    LOG.info('Starting scheduler-service on host %s with %d worker(s)',
             CONF.host, workers)
    launcher = os_service.launch(CONF, service.SchedulerService(),
                                 workers=workers, restart_method='mutate')
    launcher.wait()


if __name__ == '__main__':
    main()
