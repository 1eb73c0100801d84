"""Requests that arrive together are decided together.

A process decides one request at a time, behind the host view's lock.
Under load, requests queue for that lock, and each one used to pay its
own refresh of the view and its own claim transaction, which were most
of a decision's cost.  ``Batcher`` combines them: a request joins the
queue, then waits for the lock; whoever gets the lock takes every
request queued by then, in arrival order, and decides them as one batch
(``decide_batch``: one refresh, then each request placed in turn, each
seeing the consumption of those before it, then one claim transaction),
then gives each waiting request its own outcome.  A request that finds
its outcome there when it gets the lock returns it at once.

No request waits for a window to fill: a batch is whatever queued while
the previous one was decided, so a lone request is decided at once, as
before.  Every request of a batch arrived before the batch's refresh,
so each sees the view as of after its arrival, and the requests of a
batch see each other's consumption in arrival order: the answers are
those of deciding them one by one in that order.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any


class Ticket:
    """One request waiting for its outcome: ``request`` (whatever the
    deciding function takes), then ``result`` or ``error``."""

    def __init__(self, request: Any) -> None:
        self.request = request
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    def succeed(self, result: Any) -> None:
        self.result, self.done = result, True

    def fail(self, error: BaseException) -> None:
        self.error, self.done = error, True

    def outcome(self) -> Any:
        """The result, or raise the error."""
        if self.error is not None:
            raise self.error
        return self.result


class Batcher:
    """Combine the requests queued for ``lock`` (see the module).

    ``decide_batch(tickets)`` is called with ``lock`` held and must give
    every ticket its outcome (``Ticket.succeed`` / ``fail``); at most
    ``max_batch`` tickets are given at a time.
    """

    def __init__(self, lock: Any,
                 decide_batch: Callable[[Sequence[Ticket]], None],
                 max_batch: int) -> None:
        self.lock = lock
        self.decide_batch = decide_batch
        self.max_batch = max_batch
        self._queue: collections.deque[Ticket] = collections.deque()
        self._queue_lock = threading.Lock()

    def submit(self, request: Any) -> Any:
        """Decide ``request`` (in a batch of those queued with it) and
        return its result, or raise its error."""
        ticket = Ticket(request)
        with self._queue_lock:
            self._queue.append(ticket)
        with self.lock:
            while not ticket.done:
                batch = self._take()
                try:
                    self.decide_batch(batch)
                finally:
                    for other in batch:
                        if not other.done:
                            other.fail(RuntimeError(
                                'the batch ended without an outcome'))
        return ticket.outcome()

    def _take(self) -> list[Ticket]:
        """The oldest queued tickets, up to ``max_batch``."""
        with self._queue_lock:
            count = min(self.max_batch, len(self._queue))
            return [self._queue.popleft() for _ in range(count)]
