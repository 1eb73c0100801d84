"""Where the scheduler runs during a replay (``Deployment``).

Two deployments:

embedded (the default)
    The scheduler service (``SchedulerService``) runs in a process of
    its own, forked once the database is seeded (``embedded``), on the
    real rabbit driver over an in-memory broker in that process
    (``broker``: kombu's in-memory transport whose consumers wait
    instead of polling), which the replay reaches over a pipe; the
    database is a temporary SQLite file unless
    ``--database-connection`` names another.  Its RPC server runs
    ``EMBEDDED_POOL_SIZE`` threads unless ``[DEFAULT]
    executor_thread_pool_size`` is configured, releases deleted
    instances' claims in batches (``[scheduler] claim_release_delay``
    ``EMBEDDED_RELEASE_DELAY_S`` unless configured) and reads the hosts'
    instance lists from the database (``[filter_scheduler]
    track_instance_changes`` False unless configured: see ``runner``).
external (``--transport-url``)
    The replay talks to scheduler services started separately
    (``scheduler-service``) over that transport, on the database of
    ``--database-connection`` (else ``[database] connection``).  Those
    services read the aggregates when they start, so the order is: seed
    (``scheduler-replay --seed-only``), start the services, replay
    (``--no-seed``).  ``--seed`` only seeds the embedded service: a
    separate service takes ``[scheduler] random_seed`` from its own
    configuration.
"""

import os
import shutil
import tempfile

from oslo_messaging import opts as messaging_opts

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.server import rpcapi
from scheduler_tools.replay import broker
from scheduler_tools.replay import embedded
from scheduler_tools.replay.replayer import ReplayError

EMBEDDED_TRANSPORT_URL = broker.URL
SHM_DIR = '/dev/shm'
# Threads of the embedded service's RPC server (oslo.messaging's default
# is 64): they share their process's interpreter lock, so more of them only
# contend for it (4,000 VMs of the Azure trace on 1,121 nodes: 64 threads
# take about 40% longer).
EMBEDDED_POOL_SIZE = 4
# [scheduler] claim_release_delay of the embedded service: the agents send
# one delete_instance_info cast per departed instance (about 410,000 for
# the Azure V1 trace), each a claim lookup when released at once (about
# 7% of the interpreter-lock samples under py-spy, though the whole
# trace's wall time did not measurably change); their claims are already
# gone (the agents release them as the instances are written), so no
# decision changes.
EMBEDDED_RELEASE_DELAY_S = 0.5


class Deployment:
    """Where the scheduler runs: the database, the transport, the service.

    Use as a context manager: ``__enter__`` points ``scheduler.db.api``
    at the database (``ctx`` is then an admin context on it); ``start``
    makes the transport, embedded starts the service too, and returns a
    SchedulerAPI; ``__exit__`` stops them, releases the database and
    removes a temporary one.
    """

    def __init__(self, settings, conf=CONF):
        self.settings = settings
        self.conf = conf
        self.ctx = None
        self.transport = None
        self.service = None
        self._tempdir = None

    def database_url(self):
        """``--database-connection``, else embedded a temporary SQLite
        file, else ``[database] connection``."""
        if self.settings.database_connection:
            return self.settings.database_connection
        if self.settings.embedded:
            return self._temporary_sqlite()
        return self.conf.database.connection

    def _temporary_sqlite(self):
        """A throw-away SQLite file, in memory-backed ``/dev/shm`` when
        there is one, written without waiting for the disk (nothing needs
        to survive the process)."""
        parent = SHM_DIR if os.access(SHM_DIR, os.W_OK) else None
        self._tempdir = tempfile.mkdtemp(prefix='scheduler-replay-',
                                         dir=parent)
        self.conf.set_override('sqlite_synchronous', False, 'database')
        return 'sqlite:///%s' % os.path.join(self._tempdir, 'replay.sqlite')

    def open_database(self):
        """Point the DB API at the database; return an admin context."""
        objects.register_all()
        self.conf.set_override('connection', self.database_url(),
                               'database')
        if not db.configure(self.conf):
            raise ReplayError('the database engine was already started')
        self.ctx = scheduler_context.get_admin_context()
        return self.ctx

    def start(self):
        """Embedded, start the service (``embedded.ServiceProcess``);
        make the transport and return a SchedulerAPI on it."""
        url = self.settings.transport_url
        if self.settings.embedded:
            self._configure_embedded()
            self.service = embedded.ServiceProcess().start()
            url = broker.PIPE_URL
        self.transport = rpc.get_transport(self.conf, url=url)
        return rpcapi.SchedulerAPI(self.transport,
                                   timeout=self.settings.call_timeout)

    def _configure_embedded(self):
        """The embedded service's settings (its process inherits them)."""
        _register_messaging_opts(self.conf)
        self.conf.set_override('transport_url', EMBEDDED_TRANSPORT_URL)
        self.conf.set_override('heartbeat_timeout_threshold', 0,
                               'oslo_messaging_rabbit')
        self.conf.set_override('random_seed', self.settings.random_seed,
                               'scheduler')
        self.conf.set_default('executor_thread_pool_size',
                              EMBEDDED_POOL_SIZE)
        self.conf.set_default('track_instance_changes', False,
                              'filter_scheduler')
        self.conf.set_default('claim_release_delay',
                              EMBEDDED_RELEASE_DELAY_S, 'scheduler')

    def stop(self):
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None
        if self.service is not None:
            self.service.stop()
            self.service = None

    def __enter__(self):
        self.open_database()
        return self

    def __exit__(self, *exc_info):
        self.stop()
        db.context_manager.dispose_pool()
        if self._tempdir:
            shutil.rmtree(self._tempdir, ignore_errors=True)


def _register_messaging_opts(conf):
    """Register oslo.messaging's options as the library lists them (a
    transport registers its own only when it is made), so that the
    embedded service's settings can be made before its process makes
    one; a configuration file still overrides the defaults set."""
    for group, opts in messaging_opts.list_opts():
        conf.register_opts(opts, group=None if group == 'DEFAULT' else group)
