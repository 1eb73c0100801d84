"""A small Neutron stand-in: ports, networks, subnets and segments over
Neutron's v2.0 API, on 127.0.0.1, in a thread of the test process.

What it serves, as Neutron does:

* ``GET /`` (the versions), ``GET /v2.0/extensions`` (the aliases given,
  ``segment`` by default);
* ``GET /v2.0/{ports,networks,subnets,segments}``: the collection,
  filtered by each query parameter but ``fields`` (``?key=value``, a
  repeated key matching any of its values; values compared as strings),
  with ``fields`` keeping only the keys named (``id`` too, as Neutron);
* ``GET /v2.0/{collection}/{id}``: one resource, ``fields`` likewise;
  404 with a ``NeutronError`` body (``PortNotFound``, ``NetworkNotFound``
  ...) when there is none.

A ``.json`` suffix is accepted (old clients send it).  With ``token``,
a request without that ``X-Auth-Token`` is answered 401.  ``fail``
(path prefix -> status) answers those paths with that status and a
``NeutronError``; ``delay`` (seconds) holds every answer that long.
``requests`` lists ``(method, path)`` of every request.  Nothing is ever
written: any other method is a 405.  Used by
``tests/functional/test_request_filters_neutron.py`` and the Neutron
part of ``tests/functional/test_request_filters_nova.py``.
"""

import http.server
import json
import socket
import threading
import time
from urllib import parse

COLLECTIONS = {'ports': 'port', 'networks': 'network', 'subnets': 'subnet',
               'segments': 'segment'}
NOT_FOUND = {'port': 'PortNotFound', 'network': 'NetworkNotFound',
             'subnet': 'SubnetNotFound', 'segment': 'SegmentNotFound'}
VERSIONS = {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': '/v2.0/'}]}]}


def _error(kind, message):
    return {'NeutronError': {'type': kind, 'message': message,
                             'detail': ''}}


def _fields(resource, fields):
    if not fields:
        return resource
    return {key: value for key, value in resource.items()
            if key in fields or key == 'id'}


def _matches(resource, filters):
    return all(str(resource.get(key)) in values
               for key, values in filters.items())


class NeutronStandin:
    """The stand-in (see the module).  ``ports``, ``networks``,
    ``subnets``, ``segments``: lists of resource dicts, each with an
    ``id``; ``extensions``: the aliases listed."""

    def __init__(self, ports=(), networks=(), subnets=(), segments=(),
                 extensions=('segment',), token=None):
        self.resources = {'ports': list(ports), 'networks': list(networks),
                          'subnets': list(subnets),
                          'segments': list(segments)}
        self.extensions = list(extensions)
        self.token = token
        self.fail = {}
        self.delay = 0.0
        self.requests = []
        self._server = None
        self._thread = None

    @property
    def url(self):
        host, port = self._server.server_address[:2]
        return 'http://%s:%d' % (host, port)

    def start(self):
        handler = type('Handler', (_Handler,), {'standin': self})
        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                       handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={'poll_interval': 0.1},
                                        daemon=True, name='neutron-standin')
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def answer(self, method, path, token):
        """``(status, body)`` of a request."""
        self.requests.append((method, path))
        if self.token is not None and token != self.token:
            return 401, _error('Unauthorized', 'stand-in: bad token')
        if method != 'GET':
            return 405, _error('HTTPMethodNotAllowed', 'stand-in: read only')
        for prefix, status in self.fail.items():
            if path.startswith(prefix):
                return status, _error('InjectedFault',
                                      'stand-in: injected %d' % status)
        url = parse.urlsplit(path)
        parts = [part for part in url.path.split('/') if part]
        if parts:
            parts[-1] = parts[-1].removesuffix('.json')
        query = parse.parse_qs(url.query)
        fields = query.pop('fields', [])
        if not parts:
            return 200, VERSIONS
        if parts[0] != 'v2.0':
            return 404, _error('HTTPNotFound', 'stand-in: no such path')
        return self._v2(parts[1:], query, fields)

    def _v2(self, parts, query, fields):
        if parts == ['extensions']:
            return 200, {'extensions': [
                {'alias': alias, 'name': alias, 'description': '',
                 'updated': '2013-01-01T00:00:00-00:00', 'links': []}
                for alias in self.extensions]}
        if not parts or parts[0] not in COLLECTIONS or len(parts) > 2:
            return 404, _error('HTTPNotFound', 'stand-in: no such path')
        collection, single = parts[0], COLLECTIONS[parts[0]]
        found = [resource for resource in self.resources[collection]
                 if _matches(resource, query)]
        if len(parts) == 1:
            return 200, {collection: [_fields(resource, fields)
                                      for resource in found]}
        for resource in found:
            if resource['id'] == parts[1]:
                return 200, {single: _fields(resource, fields)}
        return 404, _error(NOT_FOUND[single], '%s %s could not be found.'
                           % (single.capitalize(), parts[1]))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    standin = None

    def setup(self):
        super().setup()
        # Headers and body go in two writes: without this, a kept-alive
        # connection waits for the client's delayed ACK (40 ms a reply).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                   1)

    def _reply(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        status, body = self.standin.answer(
            self.command, self.path, self.headers.get('X-Auth-Token'))
        if self.standin.delay:
            time.sleep(self.standin.delay)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _reply

    def log_message(self, fmt, *args):
        pass
