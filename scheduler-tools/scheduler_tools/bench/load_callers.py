"""The load's callers: the requests they send (``RequestFeed``), the
threads that call back to back (``drive``), what they saw
(``CallerResult``) and the compute services' heartbeats meanwhile
(``heartbeats``)."""

import collections
import contextlib
import dataclasses
import threading
import time
import uuid

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler_tools import seed
from scheduler_tools.bench import inprocess

LOG = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = inprocess.HEARTBEAT_INTERVAL_S
# The load's heartbeats come in this many slices an interval: a refresh
# reads the rows stamped since the previous one, as with real services,
# not the whole fleet's at once every interval.
HEARTBEAT_SLICES = 10
REQUEST_CHUNK = 200


class RequestFeed:
    """The workload's requests of ``instances`` instances, made
    ``REQUEST_CHUNK`` at a time (streams ``load-0``, ``load-1``...), at
    most ``limit``; ``next()`` is thread-safe and gives None at the
    end.  With ``uuid_tag``, each request gets instance uuids of its own
    (``phase_uuids``): the same requests for every tag, new instances."""

    def __init__(self, bench, instances, limit, uuid_tag=None):
        self.bench = bench
        self.instances = instances
        self.limit = limit
        self.uuid_tag = uuid_tag
        self.issued = 0
        self._chunks = 0
        self._buffer = collections.deque()
        self._lock = threading.Lock()

    def next(self):
        with self._lock:
            if self.issued >= self.limit:
                return None
            if not self._buffer:
                count = min(REQUEST_CHUNK, self.limit - self.issued)
                requests = self.bench.requests(
                    self.instances, count, 'load-%d' % self._chunks)
                if self.uuid_tag is not None:
                    requests = [phase_uuids(request, self.uuid_tag)
                                for request in requests]
                self._buffer.extend(requests)
                self._chunks += 1
            self.issued += 1
            return self._buffer.popleft()


def phase_uuids(request, tag):
    """``request`` (a ``workload.BenchRequest``, changed in place) with
    its instance uuids replaced by ones derived from them and ``tag``
    (uuid5: deterministic, distinct per tag)."""
    request.instance_uuids = [
        str(uuid.uuid5(uuid.NAMESPACE_OID, '%s:%s' % (tag, instance)))
        for instance in request.instance_uuids]
    request.spec.instance_uuid = request.instance_uuids[0]
    return request


@dataclasses.dataclass
class CallerResult:
    """What callers saw: ``timings`` of the calls answered with a
    Selection or NoValidHost, ``placed`` instances, ``refused`` calls
    (the service's DatabaseUnavailable: not timed, not errors),
    ``timeouts`` (also counted in ``timings.errors``), the first error's
    text and ``last_placement_s``, when the last instance was placed (s
    since the phase started; None without placements)."""

    timings: inprocess.Timings = dataclasses.field(
        default_factory=inprocess.Timings)
    placed: int = 0
    refused: int = 0
    timeouts: int = 0
    first_error: str | None = None
    last_placement_s: float | None = None

    def merge(self, other):
        self.timings.merge(other.timings)
        self.placed += other.placed
        self.refused += other.refused
        self.timeouts += other.timeouts
        self.first_error = self.first_error or other.first_error
        if other.last_placement_s is not None:
            self.last_placement_s = max(self.last_placement_s or 0.0,
                                        other.last_placement_s)


def drive(decide, feed, callers, deadline, stop, progress=None):
    """Call ``decide(request)`` from ``callers`` threads, each back to
    back, until the feed ends, ``time.monotonic()`` passes ``deadline``
    or ``stop`` (an Event) is set.

    ``decide`` returns the instances placed; NoValidHost is an answer;
    DatabaseUnavailable, the service's refusal of a decision that waited
    past its ``decision_timeout``, is counted in ``refused`` and not
    timed; MessagingTimeout and any other exception are errors (counted,
    the caller goes on).  Returns the callers' merged CallerResult; its
    ``timings.busy_s`` is the wall time of the phase in s and
    ``timings.truncated`` whether the deadline or ``stop`` ended it.
    """
    results = [CallerResult() for _ in range(callers)]
    started = time.monotonic()

    def caller(result):
        timings = result.timings
        while True:
            if stop.is_set() or time.monotonic() >= deadline:
                timings.truncated = True
                return
            request = feed.next()
            if request is None:
                return
            begin = time.perf_counter()
            try:
                placed = decide(request)
            except exception.NoValidHost:
                timings.no_valid_host += 1
            except exception.DatabaseUnavailable:
                result.refused += 1
                if progress is not None:
                    progress.update(1)
                continue
            except Exception as exc:
                timings.errors += 1
                if isinstance(exc, messaging.MessagingTimeout):
                    result.timeouts += 1
                if result.first_error is None:
                    result.first_error = '%s: %s' % (type(exc).__name__,
                                                     exc)
                LOG.warning('select_destinations failed: %s', exc)
                continue
            else:
                if placed:
                    result.placed += placed
                    result.last_placement_s = time.monotonic() - started
            timings.latencies_ms.append(
                (time.perf_counter() - begin) * 1000.0)
            if progress is not None:
                progress.update(1)

    threads = [threading.Thread(target=caller, args=(result,),
                                name='load-caller-%d' % index, daemon=True)
               for index, result in enumerate(results)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = CallerResult()
    for result in results:
        total.merge(result)
    total.timings.busy_s = time.monotonic() - started
    return total


@contextlib.contextmanager
def heartbeats(interval_s=HEARTBEAT_INTERVAL_S,
               slices=HEARTBEAT_SLICES):
    """Keep the compute services up in a thread of its own while in the
    block: every service beats every ``interval_s`` seconds, one of
    ``slices`` slices of them every ``interval_s / slices`` seconds
    (``seed.heartbeat_services``), as independent nova-computes spread
    theirs; the first beat stamps them all."""
    done = threading.Event()
    ctx = scheduler_context.get_admin_context()

    def beat():
        for args in seed.heartbeat_slices(slices):
            if done.is_set():
                break
            try:
                seed.heartbeat_services(ctx, *args)
            except Exception as exc:
                LOG.warning('heartbeat failed: %s', exc)
            done.wait(interval_s / slices)

    thread = threading.Thread(target=beat, name='load-heartbeat',
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
