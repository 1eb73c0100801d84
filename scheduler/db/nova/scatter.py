"""Reading the cell databases side by side, each within a bound.

Nova's scheduler reads its cells with ``nova.context.
scatter_gather_cells``: one task per cell on a pool of threads, one wait
of ``CELL_TIMEOUT`` (60 s) for all of them; a cell that has not answered
by then gets ``did_not_respond_sentinel`` and is left out of the result,
its task left to finish in the background.  ``gather`` does the same,
with the bound ``[scheduler] cell_timeout`` (3 s by default: a decision
waits at most ``[scheduler] decision_timeout``, 10 s), and ``Lane`` keeps
a cell that does not answer from holding more threads:

* each cell has a ``Lane``: at most ``THREADS`` threads reading its
  database, started when first needed;
* a read that outlives the bound makes its lane *late* until it returns:
  meanwhile ``gather`` does not read that cell again and gives it
  ``NotAnswering`` at once, so a frozen database holds at most
  ``THREADS`` threads whatever the number of requests, and the requests
  after the first do not wait for it.

The lanes' threads are daemon threads rather than a ``concurrent.
futures`` pool's, whose threads are joined at interpreter exit: a read
stuck on a frozen server must not hold the service's exit (the
decisions' threads of ``scheduler.engine.deadline`` are daemon threads
for the same reason).  The results travel in ``concurrent.futures.
Future`` objects, waited for by ``concurrent.futures.wait``.

A lane also logs its cell's outages once each: ``down`` logs the first
failure (WARNING), ``up`` the first answer after it (INFO, with the
outage's length); the failures in between are logged at DEBUG.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
import typing
from collections.abc import Callable
from collections.abc import Sequence

from oslo_db import exception as db_exc
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The most threads reading one cell database at a time: the host view's
# read and a periodic task's.
THREADS = 2

T = typing.TypeVar('T')


class NotAnswering(db_exc.DBError):
    """A cell database did not answer within the bound (str: which cell
    and how long it was waited for).  A ``DBError``, as the errors of a
    database that fails: a caller of the read answers
    DatabaseUnavailable."""


class Outcome(typing.NamedTuple):
    """What ``gather`` got from one cell: its ``value``, or the
    ``error`` (an exception of ``errors``) instead."""

    value: typing.Any
    error: BaseException | None


class Lane:
    """The reads of one cell database (module docstring); thread-safe.
    ``label`` names the cell in messages; ``close`` ends its threads
    (those still reading end when their read returns)."""

    def __init__(self, label: str, threads: int = THREADS) -> None:
        self.label = label
        self._most = threads
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._queued = 0
        self._late: set[concurrent.futures.Future] = set()
        self._down_since: float | None = None
        self._closed = False

    # -- reads -----------------------------------------------------------

    @property
    def late(self) -> bool:
        """Whether a read of this cell outlived its bound and has not
        returned yet."""
        with self._lock:
            return bool(self._late)

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        with self._lock:
            return self._closed

    @property
    def workers(self) -> int:
        """The lane's threads (idle, reading or stuck)."""
        with self._lock:
            return self._workers

    def submit(self, read: Callable[[], T]
               ) -> concurrent.futures.Future[T] | None:
        """``read()`` on a thread of the lane; None (nothing started)
        when the lane is late or closed."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._late or self._closed:
                return None
            self._queue.put((future, read))
            self._queued += 1
            start = (self._queued > self._idle and
                     self._workers < self._most)
            if start:
                self._workers += 1
        if start:
            threading.Thread(target=self._work, daemon=True,
                             name='cell-read %s' % self.label).start()
        return future

    def overdue(self, future: concurrent.futures.Future) -> None:
        """``future``'s read outlived its bound: the lane is late until
        it returns."""
        with self._lock:
            self._late.add(future)
        future.add_done_callback(self._returned)

    def _returned(self, future: concurrent.futures.Future) -> None:
        with self._lock:
            self._late.discard(future)

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            item = self._queue.get()
            with self._lock:
                self._idle -= 1
                if item is None:
                    self._workers -= 1
                    return
                self._queued -= 1
            future, read = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = read()
            except BaseException as exc:  # handed to the waiting caller
                future.set_exception(exc)
            else:
                future.set_result(result)
            del future, read, item

    def close(self) -> None:
        """No more reads; each thread ends once idle."""
        with self._lock:
            self._closed = True
            count = self._workers
        for _ in range(count):
            self._queue.put(None)

    # -- outages ---------------------------------------------------------

    def down(self, reason: str) -> None:
        """A read of the cell failed with ``reason``: logged once per
        outage (then at DEBUG)."""
        with self._lock:
            first = self._down_since is None
            if first:
                self._down_since = time.monotonic()
        if first:
            LOG.warning('Cell %s is skipped until its database answers '
                        'again: %s', self.label, reason)
        else:
            LOG.debug('Cell %s is still skipped: %s', self.label, reason)

    def up(self) -> None:
        """A read of the cell succeeded: the end of an outage is
        logged."""
        with self._lock:
            since, self._down_since = self._down_since, None
        if since is not None:
            LOG.info('Cell %s answers again, after %.1f s skipped',
                     self.label, time.monotonic() - since)


def gather(reads: Sequence[tuple[Lane, Callable[[], typing.Any]]],
           timeout: float, errors: tuple[type[BaseException], ...]
           ) -> list[Outcome]:
    """Run each ``(lane, read)`` on its lane, all at once, and wait at
    most ``timeout`` seconds for them all.

    :returns: one ``Outcome`` per read, in order: its value; or its error
        when it raised one of ``errors``; or a ``NotAnswering`` error when
        it did not return within ``timeout`` (it is cancelled if it had
        not started, else left to finish and its lane is late) or its lane
        was already late (it did not start).
    :raises: the first error of a read that is not one of ``errors``,
        once every outcome is known.
    """
    futures = [lane.submit(read) for lane, read in reads]
    concurrent.futures.wait([f for f in futures if f is not None],
                            timeout)
    outcomes, unexpected = [], None
    for (lane, _read), future in zip(reads, futures, strict=True):
        if future is None:
            outcomes.append(Outcome(None, NotAnswering(
                'cell %s: %s' % (lane.label, 'its reads are closed'
                                 if lane.closed else 'an earlier read has '
                                 'not returned yet'))))
        elif future.done():
            try:
                outcomes.append(Outcome(future.result(), None))
            except errors as exc:
                outcomes.append(Outcome(None, exc))
            except BaseException as exc:
                unexpected = unexpected or exc
                outcomes.append(Outcome(None, exc))
        else:
            if not future.cancel():
                lane.overdue(future)
            outcomes.append(Outcome(None, NotAnswering(
                'cell %s did not answer within %.1f s'
                % (lane.label, timeout))))
    if unexpected is not None:
        raise unexpected
    return outcomes
