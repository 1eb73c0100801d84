"""The embedded deployment's message broker: kombu's in-memory transport
with waiting consumers, reachable from a second process over a pipe.

kombu's ``memory://`` transport keeps every queue in this process, but a
consumer with nothing to read polls again at once: oslo.messaging sets
the in-memory transport's ``polling_interval`` to 0, so each listening
connection (the service's RPC server, the caller's reply waiter) spins
on its queues, using a CPU and taking the interpreter lock from the
threads that do the work (measured with a profiler: about 30% of the
replay's CPU time).

``Transport`` is that transport, same channels, exchanges and bindings,
except that a consumer finding its queues empty waits on a condition
that every publication to its transport's queues notifies, until a
message is published or its timeout ends; nothing else changes, so
messages go through the same kombu and oslo.messaging code as over
``memory://``.  Its queues and exchanges are its own (not those of
``memory://`` users in the same process).  oslo.messaging reaches it as
``kombu+replaymemory:////`` (``URL``).

The embedded replay runs the service in a process of its own, so that
the service and the replay (its simulated compute agents, their
database writes and casts) each have an interpreter lock and a core.
The broker stays in the service's process; ``Hub`` serves the replay's
side of a ``multiprocessing`` pipe there.  The replay uses
``PipeTransport`` (``kombu+replaypipe:////``, ``PIPE_URL``, once
``connect``\\ ed to the pipe): a channel that applies its declarations
locally and sends them to the hub, sends each publication to the hub
whole (the hub routes it with the broker's exchanges and bindings), and
tells the hub which queues it consumes: the hub sends the messages
routed to those queues (the replies of its calls) back over the pipe,
where a thread puts them in the replay's local queues.  Messages cross
the pipe as the dicts kombu's virtual channels keep (pickled), so both
sides still run kombu's and oslo.messaging's code unchanged.
"""

import collections
import socket
import threading
import time
from queue import Empty
from queue import Queue

import kombu
from kombu import transport as kombu_transport
from kombu.transport import memory
from kombu.transport import virtual
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

ALIAS = 'replaymemory'
URL = 'kombu+%s:////' % ALIAS
PIPE_ALIAS = 'replaypipe'
PIPE_URL = 'kombu+%s:////' % PIPE_ALIAS
# Seconds ``disconnect`` waits for the hub to confirm the close.
CLOSE_TIMEOUT_S = 10.0


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


class _Link:
    """One end of the pipe: sends from any thread, one at a time."""

    def __init__(self, conn):
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, *operation):
        with self._lock:
            self.conn.send(operation)

    def operations(self):
        """Yield ``(operation, args)`` as received, until the other end
        closes the pipe."""
        while True:
            try:
                operation, *args = self.conn.recv()
            except (EOFError, OSError):
                return
            yield operation, args


class Channel(memory.Channel):
    """An in-memory channel whose publications wake waiting consumers;
    a queue another process consumes (``remote``) is sent there."""

    events = collections.defaultdict(set)
    queues = {}
    publications = _Publications()
    remote = {}   # queue name -> the _Link of the process consuming it

    def _put(self, queue, message, **kwargs):
        link = self.remote.get(queue)
        if link is not None:
            link.send('deliver', queue, message)
            return
        super()._put(queue, message, **kwargs)
        self.publications.published()

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs):
        for queue in self._lookup(exchange, routing_key):
            self._put(queue, message)

    def deliver(self, message, exchange, routing_key):
        """Route a message a remote channel prepared (``basic_publish``
        without its preparation)."""
        if exchange:
            self.typeof(exchange).deliver(message, exchange, routing_key)
        else:
            self._put(routing_key, message)

    @classmethod
    def accept(cls, queue, message):
        """Put a message the hub sent into the local ``queue``."""
        local = cls.queues.get(queue)
        if local is None:
            local = cls.queues.setdefault(queue, Queue())
        local.put(message)
        cls.publications.published()


class Transport(memory.Transport):
    """The in-memory transport, consumers waiting instead of polling."""

    Channel = Channel
    global_state = virtual.BrokerState()
    driver_type = driver_name = ALIAS

    def drain_events(self, connection, timeout=None):
        """Deliver one message; wait up to ``timeout`` seconds (None:
        forever) for one to be published, else raise socket.timeout."""
        publications = self.Channel.publications
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            seen = publications.count
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
            publications.wait_after(seen, remaining)


class Hub:
    """Serves the other end of ``conn`` (a ``PipeTransport``) on this
    process's ``Transport``, until that end closes."""

    def __init__(self, conn):
        self._link = _Link(conn)
        self._connection = kombu.Connection('%s://' % ALIAS)
        self._channel = self._connection.default_channel

    def serve(self):
        """Apply the operations received until ``close`` or the end of
        the pipe; one that fails is logged and the next one applied."""
        try:
            for operation, args in self._link.operations():
                if operation == 'close':
                    self._link.send('closed')
                    return
                try:
                    getattr(self, '_' + operation)(*args)
                except Exception:
                    LOG.exception('Broker operation %s failed', operation)
        finally:
            self._forget_remote()
            self._connection.release()

    def _forget_remote(self):
        for queue, link in list(Channel.remote.items()):
            if link is self._link:
                del Channel.remote[queue]

    def _exchange_declare(self, kwargs):
        self._channel.exchange_declare(**kwargs)

    def _queue_declare(self, queue):
        self._channel.queue_declare(queue)

    def _queue_bind(self, queue, exchange, routing_key):
        self._channel.queue_bind(queue, exchange, routing_key)

    def _queue_delete(self, queue):
        Channel.remote.pop(queue, None)
        self._channel.queue_delete(queue)

    def _consume(self, queue):
        Channel.remote[queue] = self._link

    def _publish(self, message, exchange, routing_key):
        self._channel.deliver(message, exchange, routing_key)


class PipeChannel(Channel):
    """The replay's channel: declarations applied here and at the hub,
    publications routed by the hub, consumed queues fed by it."""

    events = collections.defaultdict(set)
    queues = {}
    publications = _Publications()
    remote = {}
    link = None   # the _Link to the hub, set by ``connect``

    def _hub(self, *operation):
        if self.link is None:
            raise ConnectionError('the replay broker pipe is not connected')
        self.link.send(*operation)

    def exchange_declare(self, exchange=None, type='direct', durable=False,
                         auto_delete=False, arguments=None, nowait=False,
                         passive=False):
        result = super().exchange_declare(
            exchange, type, durable, auto_delete, arguments, nowait,
            passive)
        if not passive:
            self._hub('exchange_declare', {
                'exchange': exchange, 'type': type, 'durable': durable,
                'auto_delete': auto_delete, 'arguments': arguments})
        return result

    def queue_declare(self, queue=None, passive=False, **kwargs):
        result = super().queue_declare(queue, passive, **kwargs)
        if not passive:
            self._hub('queue_declare', result.queue)
        return result

    def queue_bind(self, queue, exchange=None, routing_key='',
                   arguments=None, **kwargs):
        super().queue_bind(queue, exchange, routing_key, arguments,
                           **kwargs)
        self._hub('queue_bind', queue, exchange or 'amq.direct',
                  routing_key)

    def queue_delete(self, queue, if_unused=False, if_empty=False,
                     **kwargs):
        result = super().queue_delete(queue, if_unused, if_empty, **kwargs)
        self._hub('queue_delete', queue)
        return result

    def basic_consume(self, queue, no_ack, callback, consumer_tag,
                      **kwargs):
        result = super().basic_consume(queue, no_ack, callback,
                                       consumer_tag, **kwargs)
        self._hub('consume', queue)
        return result

    def basic_publish(self, message, exchange, routing_key, **kwargs):
        self._inplace_augment_message(message, exchange, routing_key)
        self._hub('publish', message, exchange, routing_key)


class PipeTransport(Transport):
    """The replay's transport to the hub (see the module)."""

    Channel = PipeChannel
    global_state = virtual.BrokerState()
    driver_type = driver_name = PIPE_ALIAS


_receiver = None


def connect(conn):
    """Make ``PipeTransport`` talk to the hub at the other end of
    ``conn`` (a ``multiprocessing`` connection): start the thread that
    puts the messages the hub sends into the local queues."""
    global _receiver
    link = _Link(conn)
    PipeChannel.link = link
    _receiver = threading.Thread(target=_receive, args=(link,),
                                 name='replay-broker-pipe', daemon=True)
    _receiver.start()


def _receive(link):
    for operation, args in link.operations():
        if operation == 'closed':
            return
        if operation == 'deliver':
            PipeChannel.accept(*args)


def disconnect():
    """Tell the hub to stop serving, wait for it, forget the pipe."""
    global _receiver
    link, PipeChannel.link = PipeChannel.link, None
    if link is None:
        return
    try:
        link.send('close')
    except OSError:
        pass
    if _receiver is not None:
        _receiver.join(CLOSE_TIMEOUT_S)
        _receiver = None
    PipeChannel.queues.clear()


def register():
    """Make ``Transport`` and ``PipeTransport`` known to kombu as
    ``replaymemory`` and ``replaypipe`` (once)."""
    for alias, cls in ((ALIAS, Transport), (PIPE_ALIAS, PipeTransport)):
        kombu_transport.TRANSPORT_ALIASES.setdefault(
            alias, '%s:%s' % (__name__, cls.__name__))
