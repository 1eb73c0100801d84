"""The paths of the Prometheus port: ``/metrics``, ``/healthz``,
``/readyz``, and 404 for any other.

``application`` is the WSGI application ``scheduler.observability.server``
serves (see there for what each path answers); ``serve`` runs it on a
thread of its own, a thread per request (wsgiref's server with
``socketserver.ThreadingMixIn``, as prometheus_client's own
``start_http_server``), so that a slow ``/readyz`` never holds a scrape.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any
from wsgiref import simple_server

from oslo_log import log as logging

from scheduler.observability import health

LOG = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
App = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

METRICS = '/metrics'
LIVENESS = '/healthz'
READINESS = '/readyz'
_STATUS = {200: '200 OK', 404: '404 Not Found',
           405: '405 Method Not Allowed',
           503: '503 Service Unavailable'}


def application(registry: Any, readiness: health.Readiness) -> App:
    """The WSGI application of the port: ``registry``'s metrics on
    ``/metrics``, ``readiness``'s verdict on ``/readyz``."""
    from prometheus_client import make_wsgi_app

    metrics_app = make_wsgi_app(registry)

    def route(environ: dict[str, Any],
              start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get('PATH_INFO') or '/'
        if path == METRICS:
            return metrics_app(environ, start_response)
        head = environ.get('REQUEST_METHOD') == 'HEAD'
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            return _reply(start_response, 405, ['GET or HEAD only'], head)
        if path == LIVENESS:
            return _reply(start_response, 200, ['OK'], head)
        if path == READINESS:
            verdict = readiness.verdict()
            if verdict.ready:
                return _reply(start_response, 200, ['OK'], head)
            return _reply(start_response, 503, list(verdict.reasons), head)
        return _reply(start_response, 404, [
            'no such path: %s (there are %s, %s and %s)'
            % (path, METRICS, LIVENESS, READINESS)], head)

    return route


def _reply(start_response: StartResponse, status: int,
           reasons: list[str], head: bool) -> Iterable[bytes]:
    """oslo.middleware healthcheck's JSON body (not detailed)."""
    body = json.dumps({'detailed': False, 'reasons': reasons}).encode()
    start_response(_STATUS[status], [
        ('Content-Type', 'application/json'),
        ('Content-Length', str(len(body))),
        ('Cache-Control', 'no-store')])
    return [] if head else [body]


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    """Requests are logged at DEBUG, not written to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug('%s ' + format, self.address_string(), *args)


def serve(host: str, port: int, app: App
          ) -> tuple[simple_server.WSGIServer, threading.Thread]:
    """Serve ``app`` on ``host``:``port`` (IPv4 or IPv6, as ``host``
    resolves) on a daemon thread; the server and the thread.

    :raises OSError: the address cannot be listened on.
    """
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]

    class Server(_Server):
        address_family = family

    httpd = simple_server.make_server(str(address[0]), port, app, Server,
                                      handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever,
                              name='metrics-http', daemon=True)
    thread.start()
    return httpd, thread
