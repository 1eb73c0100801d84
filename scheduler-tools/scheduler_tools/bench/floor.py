"""The load mode's floor: a no-op oslo.messaging call on the same broker.

What the message bus itself carries, measured in the same run as the
decisions: a one-process RPC server (``python -m
scheduler_tools.bench.floor TRANSPORT_URL EXCHANGE``, the threading
executor the service uses) whose one method, ``noop``, returns None at
once, called back to back by as many callers as the load has.  A
decision's rate as a share of this call's rate says how much of the bus
the scheduler uses; the gap is the scheduler's own work.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from collections.abc import Iterator

import oslo_messaging as messaging

from scheduler.conf import CONF

TOPIC = 'scheduler-bench-noop'
NAMESPACE = 'noop'
VERSION = '1.0'
READY = 'noop server ready'
# Seconds the server may take to answer its first call.
READY_TIMEOUT = 60.0


class NoopEndpoint:
    """The server's endpoint: ``noop()`` does nothing."""

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def noop(self, ctxt: dict) -> None:
        return None


def _target(exchange: str, server: str | None = None) -> messaging.Target:
    return messaging.Target(topic=TOPIC, exchange=exchange, server=server,
                            namespace=NAMESPACE, version=VERSION)


def serve(transport_url: str, exchange: str) -> None:
    """Run the no-op server until SIGTERM (in the child process)."""
    CONF([], project='scheduler-bench-noop', default_config_files=[],
         default_config_dirs=[])
    transport = messaging.get_rpc_transport(CONF, url=transport_url)
    # The threading executor, oslo.messaging's default, as the service's.
    server = messaging.get_rpc_server(
        transport, _target(exchange, server='noop'), [NoopEndpoint()])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(READY, flush=True)
    stop.wait()
    server.stop()
    server.wait()
    transport.cleanup()


@contextlib.contextmanager
def noop_call(transport_url: str, exchange: str,
              call_timeout: float) -> Iterator[Callable[[], None]]:
    """In the block, a no-op server runs in a child process on
    ``transport_url`` (its topic in ``exchange``); yields a function
    making one no-op call (thread-safe: one RPC client).  Raises
    RuntimeError when the server does not answer within
    ``READY_TIMEOUT`` s."""
    child = subprocess.Popen(
        [sys.executable, '-m', 'scheduler_tools.bench.floor',
         transport_url, exchange],
        stdout=subprocess.PIPE, text=True)
    transport = None
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != READY:
            raise RuntimeError('the no-op server did not start')
        transport = messaging.get_rpc_transport(CONF, url=transport_url)
        client = messaging.get_rpc_client(transport, _target(exchange),
                                          timeout=call_timeout)
        client.prepare(timeout=READY_TIMEOUT).call({}, 'noop')
        yield lambda: client.call({}, 'noop')
    finally:
        if transport is not None:
            transport.cleanup()
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


if __name__ == '__main__':
    serve(sys.argv[1], sys.argv[2])
