"""SchedulerService: one scheduler process serving the RPC API.

``start()`` builds everything a process needs after a fork - the
database engine, the RPC transport, the notifier, the manager with its
driver and host manager, the RPC server on ``Target(topic='scheduler',
server=[DEFAULT] host)`` - and a thread running the driver's periodic
tasks.  ``stop()`` stops the server, waits for in-flight requests and
releases the transport.  It has the start/stop/wait/reset interface of an
oslo.service Service, so ``scheduler-service`` can run it under
oslo.service's threading launcher with several workers.
"""

import threading

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_service.backend import base as service_base

from scheduler import context as scheduler_context
from scheduler import manager
from scheduler import objects
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db_api

LOG = logging.getLogger(__name__)

DEFAULT_PERIODIC_SPACING = 60


class SchedulerService(service_base.ServiceBase):
    """The RPC server of one scheduler process."""

    def __init__(self, transport=None):
        self._transport = transport
        self._owns_transport = transport is None
        self.manager = None
        self.server = None
        self._stopping = threading.Event()
        self._periodic = None

    def start(self):
        objects.register_all()
        db_api.configure(CONF)
        context = scheduler_context.get_admin_context()
        if self._transport is None:
            self._transport = rpc.get_transport(CONF)
        notifier = rpc.get_notifier(rpc.get_notification_transport(CONF),
                                    CONF.host)
        self.manager = manager.SchedulerManager(context, notifier=notifier)
        target = messaging.Target(topic=rpc.TOPIC, server=CONF.host)
        self.server = rpc.get_server(
            self._transport, target,
            [self.manager, manager.BaseRPCAPI()])
        self.server.start()
        self._start_periodic_tasks(context)
        LOG.info('Scheduler %s serving topic %s with driver %s',
                 CONF.host, rpc.TOPIC, CONF.scheduler.driver)

    def _start_periodic_tasks(self, context):
        interval = CONF.scheduler.periodic_task_interval
        if interval < 0:
            return
        spacing = interval or DEFAULT_PERIODIC_SPACING
        self._periodic = threading.Thread(
            target=self._run_periodic_tasks, args=(context, spacing),
            name='scheduler-periodic', daemon=True)
        self._periodic.start()

    def _run_periodic_tasks(self, context, spacing):
        while not self._stopping.is_set():
            try:
                self.manager.driver.run_periodic_tasks(context)
            except Exception:
                LOG.exception('Periodic task failed')
            self._stopping.wait(spacing)

    def stop(self, graceful=True):
        self._stopping.set()
        if self.server is not None:
            self.server.stop()
            self.server.wait()
            self.server = None
        if self._owns_transport and self._transport is not None:
            self._transport.cleanup()
            self._transport = None
        LOG.info('Scheduler %s stopped', CONF.host)

    def wait(self):
        self._stopping.wait()

    def reset(self):
        """SIGHUP: nothing to reload beyond the configuration."""
