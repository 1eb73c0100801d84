"""A fault-injecting HTTP proxy in front of a real Placement, on loopback.

``FaultProxy(upstream_url)`` listens on 127.0.0.1 (``url``) and forwards
each request to the real Placement, unless ``fault`` says otherwise for
the claims' writes (``PUT``/``POST`` under ``/allocations``):

* ``None``: forward everything;
* ``'blackhole'``: a write is accepted and never answered (a backend
  that hangs behind a load balancer), not even once the fault is
  cleared: only when the proxy stops does the connection close;
* ``'503-every-second'``: every second write is answered 503 without
  being forwarded (a flapping backend);
* ``'drop-answer'``: a write is forwarded, Placement commits it, and the
  connection is closed before its answer reaches the client.

Reads and deletes are always forwarded.  ``writes`` counts the writes
seen, ``faulted`` those the fault hit; ``first_write`` and
``last_answer`` are the monotonic times of the first write's arrival and
of the last answer.  Used as a context manager, the
proxy stops at the end of the block.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import time
import urllib.parse

FAULTS = (None, 'blackhole', '503-every-second', 'drop-answer')
# Headers of an answer not copied back (the proxy sets its own framing).
HOP_BY_HOP = {'connection', 'keep-alive', 'transfer-encoding',
              'content-length'}


class FaultProxy:
    """See the module."""

    def __init__(self, upstream_url: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream_url)
        self.fault: str | None = None
        self.writes = 0
        self.faulted = 0
        # Seconds from the first write's arrival to the last one's answer.
        self.first_write: float | None = None
        self.last_answer: float | None = None
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name='fault-proxy', daemon=True)

    @property
    def url(self) -> str:
        return 'http://127.0.0.1:%d' % self._server.server_address[1]

    def set_fault(self, fault: str | None) -> None:
        assert fault in FAULTS, fault
        self.fault = fault

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _fault_of(self, method: str, path: str) -> str | None:
        """The fault that hits this request, counted."""
        if method not in ('PUT', 'POST') or not path.startswith(
                '/allocations'):
            return None
        with self._lock:
            self.writes += 1
            if self.first_write is None:
                self.first_write = time.monotonic()
            fault = self.fault
            if fault == '503-every-second' and self.writes % 2:
                fault = None
            if fault is not None:
                self.faulted += 1
        return fault

    def forward(self, method: str, path: str, headers: dict[str, str],
                body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(
            self.upstream.hostname, self.upstream.port, timeout=60)
        try:
            connection.request(method, self.upstream.path.rstrip('/') + path,
                               body=body or None, headers=headers)
            reply = connection.getresponse()
            return reply.status, reply.getheaders(), reply.read()
        finally:
            connection.close()


def _handler(proxy: FaultProxy) -> type[http.server.BaseHTTPRequestHandler]:

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(length) if length else b''
            fault = proxy._fault_of(self.command, self.path)
            if fault == 'blackhole':
                proxy._released.wait()
                self.close_connection = True
                return
            if fault == '503-every-second':
                self._answer(503, [('Content-Type', 'text/plain')],
                             b'503 Service Unavailable (fault proxy)')
                return
            headers = {name: value for name, value in self.headers.items()
                       if name.lower() not in HOP_BY_HOP | {'host'}}
            status, reply_headers, reply_body = proxy.forward(
                self.command, self.path, headers, body)
            proxy.last_answer = time.monotonic()
            if fault == 'drop-answer':
                self.close_connection = True
                return
            self._answer(status, reply_headers, reply_body)

        def _answer(self, status: int, headers: list[tuple[str, str]],
                    body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _serve

    return Handler
