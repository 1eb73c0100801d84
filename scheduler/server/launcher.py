"""The service's processes: one, or workers that reload in place.

With one worker the service runs in this process under oslo.service's
launcher.  With more, cotyledon's ServiceManager (the supervisor
oslo.service's threading backend is built on) forks them and replaces
any that dies.  In both, SIGHUP re-reads the mutable options of the
configuration files (log levels among them) in every process and calls
the service's ``reset``: the workers keep running and keep answering.
oslo.service's own process launcher ends every worker on SIGHUP instead,
dropping the calls they held.  SIGTERM stops every process gracefully
within ``[DEFAULT] graceful_shutdown_timeout``, and a worker whose parent
dies stops as if it had received SIGTERM.

With ``[prometheus] bind`` set, this process serves ``/metrics`` over
the workers' metric files from before it forks them
(``scheduler.observability.server``).

The workers share ``[oslo_concurrency] lock_path`` for the locks that
keep two of them from writing claims on one resource provider at once
(``scheduler.placement.claim_locks``); when it is unset, a private
directory this process makes before it forks them and removes at
exit.
"""

from collections.abc import Callable

import cotyledon
from cotyledon import types as cotyledon_types
from oslo_log import log as logging
from oslo_service import service as os_service
from oslo_service.backend import base as service_base

from scheduler.conf import CONF
from scheduler.observability import server
from scheduler.placement import claim_locks

LOG = logging.getLogger(__name__)

ServiceFactory = Callable[[], service_base.ServiceBase]


def register_opts(conf=CONF) -> None:
    """Register oslo.service's options (``graceful_shutdown_timeout``,
    ...) on ``conf`` if they are not yet."""
    for group, opts in os_service.list_opts():
        conf.register_opts(opts, group)


class Worker(cotyledon.Service):
    """One forked worker running the service ``make_service()`` builds."""

    name = 'scheduler-worker'

    def __init__(self, worker_id: cotyledon_types.WorkerId,
                 make_service: ServiceFactory):
        super().__init__(worker_id)
        self._service = make_service()

    def run(self) -> None:
        self._service.start()

    def terminate(self) -> None:
        self._service.stop()

    def reload(self) -> None:
        """SIGHUP: mutate the configuration and reset the service, in
        place (cotyledon's default would end this worker)."""
        reload_configuration(self._service)


def reload_configuration(service: service_base.ServiceBase | None) -> None:
    """Re-read the mutable options of the configuration files (oslo.log
    applies a changed ``debug`` itself) and ``reset`` ``service``."""
    CONF.mutate_config_files()
    if service is not None:
        service.reset()


def launch(make_service: ServiceFactory, workers: int) -> None:
    """Run ``workers`` processes of the service until SIGTERM (returns
    then).  ``make_service`` builds one service (called in the worker
    after the fork)."""
    register_opts()
    endpoint = _metrics_endpoint()
    try:
        _run(make_service, workers)
    finally:
        if endpoint is not None:
            endpoint.stop()


def _metrics_endpoint() -> server.Endpoint | None:
    """The ``/metrics`` endpoint of ``[prometheus] bind`` (None when
    off); an address that cannot be listened on is logged in one line and
    ends the process."""
    try:
        return server.start(CONF.prometheus.bind)
    except server.BindError as exc:
        LOG.error('Cannot start: [prometheus] bind: %s', exc)
        raise SystemExit(1) from exc


def _run(make_service: ServiceFactory, workers: int) -> None:
    if workers == 1:
        launcher = os_service.launch(CONF, make_service(), workers=1,
                                     restart_method='mutate')
        launcher.wait()
        return
    with claim_locks.private_lock_path():
        manager = cotyledon.ServiceManager(
            graceful_shutdown_timeout=CONF.graceful_shutdown_timeout)
        manager.register_hooks(on_reload=lambda: reload_configuration(None))
        manager.add(Worker, workers=workers, args=(make_service,))
        manager.run()
