"""SchedulerService: one scheduler process serving the RPC API.

``start()`` builds everything a process needs after a fork - the
database engine, the RPC transport, the notifier, the manager with its
driver and host manager, the RPC server on ``Target(topic='scheduler',
server=[DEFAULT] host)`` - and a thread running the driver's periodic
tasks.  ``stop()`` stops the server, waits for in-flight requests and
releases the transport.  It has the start/stop/wait/reset interface of an
oslo.service Service, so ``scheduler-service`` can run it under
oslo.service's threading launcher with several workers.

``start`` first checks the databases (``check_databases``): in Nova
database mode (``[api_database] connection`` set) it opens and checks
Nova's API and cell databases (``scheduler.db.source.get_source``); on
the standalone schema it refuses a ``[database] connection`` that is
another application's database (e.g. a Nova cell database).  When one
cannot be used, it logs one line saying which and why, and exits
(``SystemExit(1)``).  Then, in
both modes, it keeps the service's ``nova-scheduler`` row
(``scheduler.db.service_row``): created or updated at start, its
heartbeat raised every ``[DEFAULT] report_interval`` seconds by a thread
of its own, so that Nova's service list shows the scheduler up or down
as it shows Nova's own.  A failed heartbeat is logged and the next one
tried; it never stops the service.

In Nova database mode, with ``[scheduler] discover_hosts_in_cells_interval``
set, a thread of its own maps new compute hosts to their cells every
that many seconds, when this scheduler is the leader
(``scheduler.server.leader``, ``scheduler.db.nova.discovery``).

With ``[prometheus] bind`` set, ``start`` turns the recording of the
metrics on in this process (``scheduler.observability.metrics``); the
launcher serves them.
"""

import threading

import oslo_messaging as messaging
from oslo_log import log as logging
from oslo_service.backend import base as service_base

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import service_row
from scheduler.db import source as db_source
from scheduler.db.nova import cells
from scheduler.db.nova import discovery
from scheduler.db.nova import source as nova_source
from scheduler.observability import metrics
from scheduler.server import leader
from scheduler.server import manager

LOG = logging.getLogger(__name__)

DEFAULT_PERIODIC_SPACING = 60


def check_databases():
    """Check that the configured databases can be used, as
    ``SchedulerService.start`` needs them: on the standalone schema, that
    ``[database] connection`` is not another application's database (a
    Nova database: Nova database mode is what schedules on those); in
    Nova database mode, that Nova's API database, every cell database to
    schedule to, the service row's cell and our own (synced) database can
    be read.  The engines opened are closed again, so that a launcher can
    call it before it forks its workers.

    :returns: None when they can be used, else the one-line reason
        (str, without passwords).
    """
    try:
        return _check_databases()
    finally:
        db_api.get_engine().dispose()


def _check_databases():
    if not db_source.nova_mode():
        return migration.foreign_schema()
    probe = nova_source.NovaSource(CONF)
    try:
        probe.start()
        probe.service_cell()
    except cells.CellsError as exc:
        return str(exc)
    finally:
        probe.stop()
    return None


class SchedulerService(service_base.ServiceBase):
    """The RPC server of one scheduler process."""

    def __init__(self, transport=None):
        self._transport = transport
        self._owns_transport = transport is None
        self.manager = None
        self.server = None
        self._stopping = threading.Event()
        self._periodic = None
        self._discovery = None
        self._heartbeats = None
        self.service_row = None

    def start(self):
        if CONF.prometheus.bind:
            metrics.enable()
        objects.register_all()
        db_api.configure(CONF)
        self._open_databases()
        self.service_row.register()
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
        self._start_discovery()
        self._heartbeats = threading.Thread(
            target=self._beat, name='scheduler-heartbeat', daemon=True)
        self._heartbeats.start()
        LOG.info('Scheduler %s serving topic %s with driver %s',
                 CONF.host, rpc.TOPIC, CONF.scheduler.driver)

    def _open_databases(self):
        """Open the host view's source and the service row's database; a
        configuration that cannot work is logged in one line and ends
        the process (see ``check_databases``)."""
        error = None
        try:
            if not db_source.nova_mode():
                error = migration.foreign_schema()
            db_source.get_source()
            self.service_row = service_row.configured(CONF.host)
        except cells.CellsError as exc:
            error = str(exc)
        if error is not None:
            LOG.error('Cannot start: %s', error)
            self._stopping.set()
            raise SystemExit(1)

    def _beat(self):
        """Raise the service row's heartbeat every ``report_interval``
        seconds until the service stops."""
        while not self._stopping.wait(CONF.report_interval):
            try:
                self.service_row.heartbeat()
            except Exception as exc:
                LOG.warning("Could not record the service's heartbeat: %s",
                            exc)

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

    def _start_discovery(self):
        """Nova's ``_discover_hosts_in_cells`` periodic task: every
        ``[scheduler] discover_hosts_in_cells_interval`` seconds (0: 60;
        negative: off), the first run at once, on the leader only
        (``scheduler.server.leader``), in Nova database mode only."""
        interval = CONF.scheduler.discover_hosts_in_cells_interval
        if interval < 0:
            return
        if not db_source.nova_mode():
            LOG.warning('[scheduler] discover_hosts_in_cells_interval is '
                        'ignored on the standalone schema, which has no '
                        'host mappings (Nova database mode only)')
            return
        self._discovery = discovery.HostDiscovery(CONF)
        threading.Thread(
            target=self._run_discovery,
            args=(interval or DEFAULT_PERIODIC_SPACING,),
            name='scheduler-discover-hosts', daemon=True).start()

    def _run_discovery(self, spacing):
        while not self._stopping.is_set():
            try:
                if leader.is_leader(self.service_row):
                    self._discovery.run()
            except Exception as exc:
                if not self._stopping.is_set():
                    LOG.warning('Discovering hosts in cells failed: %s',
                                cells.first_line(exc))
            self._stopping.wait(spacing)

    def stop(self, graceful=True):
        """Stop taking messages at once, wait up to ``[scheduler]
        drain_timeout`` seconds for the requests started, then close the
        transport: what was taken but not started goes back to the
        broker."""
        self._stopping.set()
        if self.server is not None:
            self.server.stop()
            self._drain(self.server)
            self.server = None
        if self._owns_transport and self._transport is not None:
            self._transport.cleanup()
            self._transport = None
        if self.manager is not None:
            self.manager.driver.stop()
        if self._discovery is not None:
            self._discovery.stop()
        db_source.reset()
        LOG.info('Scheduler %s stopped', CONF.host)

    @staticmethod
    def _drain(server):
        waiter = threading.Thread(target=server.wait, daemon=True,
                                  name='scheduler-drain')
        waiter.start()
        waiter.join(CONF.scheduler.drain_timeout)
        if waiter.is_alive():
            LOG.warning('Requests still running after %.0f s '
                        '([scheduler] drain_timeout); stopping without '
                        'them', CONF.scheduler.drain_timeout)

    def wait(self):
        self._stopping.wait()

    def reset(self):
        """SIGHUP, once the mutable options are re-read: the service keeps
        serving (nothing else is rebuilt)."""
        LOG.info('Scheduler %s reloaded its configuration; log level %s',
                 CONF.host, 'DEBUG' if CONF.debug else 'INFO')
