"""The parent process's ``/metrics``, ``/healthz`` and ``/readyz``.

``start`` (the launcher's, before it forks the workers) names the
directory of the workers' metric files in the environment
(``metrics.MULTIPROC_ENV``), and serves, on threads of its own (one per
request), every metric there added up over the processes that wrote
them (prometheus_client's multiprocess mode) on ``/metrics``.  A worker
that died leaves its counters (totals never go down) but not its
gauges: each scrape first drops those of the processes gone
(``Endpoint.forget_dead_workers``).
``parse_bind`` and ``bind_problem`` check ``[prometheus] bind``
(``scheduler.server.preflight``).

Beside the metrics, as Kubernetes' API server and oslo.middleware's
healthcheck answer (JSON bodies in the latter's shape: ``{"detailed":
false, "reasons": [...]}``):

* ``/healthz``, liveness: 200, ``"reasons": ["OK"]``, whenever this
  process serves;
* ``/readyz``, readiness: 200 (``["OK"]``) when RabbitMQ, the
  databases and Placement (when configured) answer, else 503 with one
  ``"NAME: REASON"`` per dependency that does not
  (``scheduler.observability.health``: each probe bounded in time, the
  verdict kept for two seconds; ``/metrics`` never waits for it);
* any other path: 404.  ``HEAD`` answers the same status, without a
  body.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterable
from collections.abc import Iterator
from typing import TYPE_CHECKING

import psutil
from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.observability import health
from scheduler.observability import metrics
from scheduler.observability import routes

if TYPE_CHECKING:
    from prometheus_client import Metric

LOG = logging.getLogger(__name__)

EXAMPLE = '127.0.0.1:9180'

# The endpoint serving in this process, if any (its listening socket is
# closed in the workers forked from it).
_current: Endpoint | None = None


class BindError(ValueError):
    """``/metrics`` cannot be served as ``[prometheus] bind`` asks (the
    message says why, in one line)."""


def parse_bind(value: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (an IPv6 host in brackets).

    :raises BindError: ``value`` is not that.
    """
    host, colon, port = value.rpartition(':')
    if host.startswith('[') and host.endswith(']'):
        host = host[1:-1]
    elif ':' in host:
        host = ''       # an IPv6 host without its brackets
    if not (colon and host and port.isdigit() and 0 < int(port) < 65536):
        raise BindError('%r is not HOST:PORT with a port from 1 to 65535 '
                        '(e.g. %s)' % (value, EXAMPLE))
    return host, int(port)


def bind_problem(value: str) -> str | None:
    """Why ``/metrics`` cannot be served on ``value`` (one line: not
    HOST:PORT, an unknown host, an address in use), or None."""
    try:
        host, port = parse_bind(value)
        with _listening(value):
            family, _, _, _, address = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM,
                flags=socket.AI_PASSIVE)[0]
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                # As the HTTP server binds (http.server's
                # allow_reuse_address).
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except BindError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def _listening(bind: str) -> Iterator[None]:
    """Raise an OSError of the block as BindError."""
    try:
        yield
    except OSError as exc:
        raise BindError('cannot listen on %s: %s'
                        % (bind, exc.strerror or exc)) from exc


class Endpoint:
    """``/metrics`` served on ``host``:``port`` over the metric files of
    ``directory`` (see the module); ``owned``: a directory of its own,
    removed at ``stop``; ``readiness``: the verdict ``/readyz`` serves
    (by default no probe: always ready)."""

    def __init__(self, host: str, port: int, directory: str,
                 owned: bool,
                 readiness: health.Readiness | None = None) -> None:
        from prometheus_client import CollectorRegistry
        from prometheus_client import multiprocess
        self.directory = directory
        self.owned = owned
        self.readiness = readiness or health.Readiness({})
        self._forgetting = threading.Lock()
        self._files = multiprocess.MultiProcessCollector(None,
                                                         path=directory)
        registry = CollectorRegistry()
        registry.register(self)
        self.httpd, self.thread = routes.serve(
            host, port, routes.application(registry, self.readiness))
        LOG.info('Serving the metrics of %s on http://%s:%d/metrics '
                 '(/healthz, /readyz beside)', directory, host, port)

    def collect(self) -> Iterable[Metric]:
        """What a scrape gets: every file added up, once the gauges of
        the processes gone are dropped."""
        self.forget_dead_workers()
        return self._files.collect()

    def forget_dead_workers(self) -> None:
        """Drop the gauges of the processes that wrote here and are gone
        (``mark_process_dead``); their counters stay."""
        from prometheus_client import multiprocess
        with self._forgetting:      # scrapes run on threads of their own
            for path in glob.glob(os.path.join(self.directory,
                                               'gauge_live*')):
                pid = int(path.rsplit('_', 1)[1].split('.')[0])
                if not psutil.pid_exists(pid):
                    multiprocess.mark_process_dead(pid, self.directory)

    def close_socket(self) -> None:
        """Close the listening socket (in a forked worker)."""
        self.httpd.socket.close()

    def stop(self) -> None:
        """Stop serving; remove the directory when it is ours."""
        global _current
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.owned:
            _discard(self.directory)
        _current = None


def start(bind: str) -> Endpoint | None:
    """Serve ``/metrics`` on ``bind`` (``[prometheus] bind``; empty:
    nothing, None) over the files of the workers forked from now on: in
    ``$PROMETHEUS_MULTIPROC_DIR`` when it is set (its earlier files
    removed), else in a new private directory; and ``/healthz``,
    ``/readyz`` over the dependencies ``CONF`` configures.

    :raises BindError: ``bind`` is not HOST:PORT, it cannot be listened
        on, or the directory cannot be used.
    """
    global _current
    if not bind:
        return None
    host, port = parse_bind(bind)
    directory, owned = _directory()
    try:
        with _listening(bind):
            _current = Endpoint(host, port, directory, owned,
                                health.Readiness(health.from_conf(CONF)))
    except BaseException:
        if owned:
            _discard(directory)
        raise
    return _current


def _directory() -> tuple[str, bool]:
    """The workers' directory, emptied of earlier files, and whether it
    is a new one of ours; named in the environment."""
    named = os.environ.get(metrics.MULTIPROC_ENV)
    if named:
        try:
            os.makedirs(named, exist_ok=True)
            for path in glob.glob(os.path.join(named, '*.db')):
                os.remove(path)
        except OSError as exc:
            raise BindError('the directory %s=%s cannot be used: %s' % (
                metrics.MULTIPROC_ENV, named, exc.strerror or exc)) from exc
        return named, False
    directory = tempfile.mkdtemp(prefix='scheduler-metrics-')
    os.environ[metrics.MULTIPROC_ENV] = directory
    return directory, True


def _discard(directory: str) -> None:
    """Remove a directory of ours and its name from the environment."""
    shutil.rmtree(directory, ignore_errors=True)
    os.environ.pop(metrics.MULTIPROC_ENV, None)


def _close_in_child() -> None:
    if _current is not None:
        _current.close_socket()


os.register_at_fork(after_in_child=_close_in_child)
