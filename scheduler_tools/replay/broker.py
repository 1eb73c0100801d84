"""The embedded deployment's message broker: kombu's in-memory transport
with waiting consumers.

kombu's ``memory://`` transport keeps every queue in this process, but a
consumer with nothing to read polls again at once: oslo.messaging sets
the in-memory transport's ``polling_interval`` to 0, so each listening
connection (the service's RPC server, the caller's reply waiter) spins
on its queues, using a CPU and taking the interpreter lock from the
threads that do the work (measured with a profiler: about 30% of the
replay's CPU time).

``Transport`` is that transport, same channels, exchanges and bindings,
except that a consumer finding its queues empty waits on a condition
that every publication notifies, until a message is published or its
timeout ends; nothing else changes, so messages go through the same
kombu and oslo.messaging code as over ``memory://``.  Its queues and
exchanges are its own (not those of ``memory://`` users in the same
process).  ``register`` makes it known to kombu as
``replaymemory``; oslo.messaging then reaches it as
``kombu+replaymemory:////``.
"""

import collections
import socket
import threading
import time
from queue import Empty

from kombu import transport as kombu_transport
from kombu.transport import memory
from kombu.transport import virtual

ALIAS = 'replaymemory'
URL = 'kombu+%s:////' % ALIAS


class _Publications:
    """A counter of publications and a condition to wait for the next."""

    def __init__(self):
        self.condition = threading.Condition()
        self.count = 0

    def published(self):
        with self.condition:
            self.count += 1
            self.condition.notify_all()

    def wait_after(self, seen, timeout_s):
        """Wait until a publication after the ``seen``-th one, or for
        ``timeout_s`` seconds; True when there was one."""
        with self.condition:
            return self.condition.wait_for(lambda: self.count != seen,
                                           timeout_s)


PUBLICATIONS = _Publications()


class Channel(memory.Channel):
    """An in-memory channel whose publications wake waiting consumers."""

    events = collections.defaultdict(set)
    queues = {}

    def _put(self, queue, message, **kwargs):
        super()._put(queue, message, **kwargs)
        PUBLICATIONS.published()

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs):
        super()._put_fanout(exchange, message, routing_key, **kwargs)
        PUBLICATIONS.published()


class Transport(memory.Transport):
    """The in-memory transport, consumers waiting instead of polling."""

    Channel = Channel
    global_state = virtual.BrokerState()
    driver_type = driver_name = ALIAS

    def drain_events(self, connection, timeout=None):
        """Deliver one message; wait up to ``timeout`` seconds (None:
        forever) for one to be published, else raise socket.timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            seen = PUBLICATIONS.count
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise socket.timeout()
            PUBLICATIONS.wait_after(seen, remaining)


def register():
    """Make ``Transport`` known to kombu as ``replaymemory`` (once)."""
    kombu_transport.TRANSPORT_ALIASES.setdefault(
        ALIAS, '%s:%s' % (__name__, Transport.__name__))
