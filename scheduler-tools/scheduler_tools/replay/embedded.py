"""The embedded scheduler service, in a process of its own.

``ServiceProcess.start`` forks the replay once its database is seeded.
The child opens database connections of its own, starts a
``SchedulerService`` on the in-memory broker (``broker.Transport``) and
serves that broker to the parent over a pipe (``broker.Hub``) until the
parent closes it; the parent reaches the service through
``broker.PipeTransport``.  The child inherits the configuration,
overrides included, so it is the service the replay configured.

Why a process: the replay's simulated compute agents (their database
writes and casts) and the service (its decisions and the handling of
those casts) then use a core each instead of sharing one interpreter
lock.  Decisions stay in trace order: the replay still waits for each
answer and commits the agents' rows before its next call.
"""

import multiprocessing

from oslo_log import log as logging

from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.server import service
from scheduler_tools.replay import broker

LOG = logging.getLogger(__name__)

# Seconds the replay waits for the service to start, and to stop.
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0


class ServiceError(RuntimeError):
    """The embedded service did not start."""


class ServiceProcess:
    """The child process running the embedded service (see the module)."""

    def __init__(self):
        self._process = None
        self._conn = None

    def start(self):
        """Fork, wait until the service serves, and connect
        ``broker.PipeTransport`` to it.  Returns self; raises
        ServiceError (with the child's reason) when it did not start
        within ``READY_TIMEOUT_S``."""
        broker.register()
        self._conn, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context('fork').Process(
            target=_serve, args=(child,), name='scheduler-service',
            daemon=True)
        self._process.start()
        child.close()
        status, detail = self._wait_ready()
        if status != 'ready':
            self.stop()
            raise ServiceError('the embedded scheduler service did not '
                               'start: %s' % detail)
        broker.connect(self._conn)
        return self

    def _wait_ready(self):
        if not self._conn.poll(READY_TIMEOUT_S):
            return 'failed', 'no answer within %d s' % READY_TIMEOUT_S
        try:
            status, *detail = self._conn.recv()
        except (EOFError, OSError):
            self._process.join(STOP_TIMEOUT_S)
            return 'failed', 'its process exited (status %s)' % (
                self._process.exitcode,)
        return status, ' '.join(detail)

    def stop(self):
        """Close the pipe (the child then stops the service and exits);
        terminate the child if it has not exited within
        ``STOP_TIMEOUT_S``."""
        broker.disconnect()
        if self._process is not None:
            self._process.join(STOP_TIMEOUT_S)
            if self._process.is_alive():
                LOG.warning('The embedded scheduler service did not stop '
                            'within %d s; terminating it', STOP_TIMEOUT_S)
                self._process.terminate()
                self._process.join()
            self._process = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _serve(conn):
    """The child: run the service, then the hub until the parent
    closes the pipe."""
    db.get_engine().dispose(close=False)   # the parent's connections
    transport = rpc.get_transport(CONF, url=broker.URL)
    scheduler = service.SchedulerService(transport)
    try:
        scheduler.start()
    except BaseException as exc:
        conn.send(('failed', str(exc) or type(exc).__name__))
        raise
    conn.send(('ready',))
    try:
        broker.Hub(conn).serve()
    finally:
        scheduler.stop()
        transport.cleanup()
        conn.close()
