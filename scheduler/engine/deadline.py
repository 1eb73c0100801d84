"""A decision's deadline: a stalled database cannot hold a call.

``run`` runs each ``select_destinations`` decision on a thread of its
own while the RPC thread waits for it, up to ``[scheduler]
decision_timeout`` seconds.  Past that, a decision still moving (its
thread used CPU over the last ``PROGRESS_WINDOW`` s: a request for
thousands of instances; or a call to another service came back: their
claims in Placement) is waited for; a decision that is waiting (on
the database, or on the view's lock another stalled decision holds) is
*abandoned*: the caller gets DatabaseUnavailable at once, and the
decision, whenever the database answers again, commits no claim:

* ``check()``, called before a claim transaction commits, raises
  ``Abandoned`` (the transaction rolls back);
* ``finish()``, called once the claims are committed, says whether the
  answer will still reach its caller; when it will not, the decision
  releases what it committed.

Abandoning and finishing exclude each other (one lock), so a caller
never gets an error for claims that stay, nor an answer for claims that
were released.  The database server bounds its own statements and lock
waits too (``scheduler.db.timeouts``); this bound holds when the server
cannot (a frozen server, a network that drops packets).

The error names what the decisions wait on: a call to another service
in flight (``outside``: Placement's API) is blamed with that service's
error (PlacementUnavailable), else the database is (DatabaseUnavailable).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import psutil
from oslo_log import log as logging

from scheduler import exception

LOG = logging.getLogger(__name__)

# Seconds over which a decision's thread must use CPU to count as
# computing (and be waited for) once its deadline passed.
PROGRESS_WINDOW = 0.5
# The CPU share of one core, over PROGRESS_WINDOW, above which it does.
PROGRESS_SHARE = 0.05


# The calls to other services in flight: key -> (error class, name,
# monotonic start); the oldest is blamed when a decision is abandoned.
_outside: dict[object, tuple[Callable[..., Exception], str, float]] = {}
_outside_lock = threading.Lock()
# Seconds since the last answer of another service to a decision within
# which that decision, waiting on the next one, counts as moving: as long
# as one request to Placement may take by default ([placement] timeout).
ANSWER_WINDOW = 5.0


class Abandoned(Exception):
    """The decision's caller was answered DatabaseUnavailable: commit
    nothing."""


class Deadline:
    """One decision's deadline and its fate (see the module)."""

    def __init__(self, seconds: float) -> None:
        self.expires = time.monotonic() + seconds
        self.thread_id: int | None = None    # native id, once it runs
        self._lock = threading.Lock()
        self._abandoned = False
        self._finished = False
        # When a call to another service made for it last came back.
        self.answered = float('-inf')

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    def abandon(self) -> bool:
        """Give the decision up; False when it finished first."""
        with self._lock:
            if not self._finished:
                self._abandoned = True
            return self._abandoned

    def finish(self) -> bool:
        """The decision's claims are committed: True when its answer
        still reaches the caller, False when it was abandoned."""
        with self._lock:
            if not self._abandoned:
                self._finished = True
            return self._finished

    def check(self) -> None:
        """Raise Abandoned when the decision was given up."""
        if self._abandoned:
            raise Abandoned()


_current = threading.local()


def current() -> Deadline | None:
    """The deadline of the decision running on this thread, if any."""
    return getattr(_current, 'deadline', None)


@contextlib.contextmanager
def acting_for(deadline: Deadline | None) -> Iterator[None]:
    """Make ``deadline`` this thread's decision's deadline for a while
    (a batch decides other callers' requests: ``None`` while deciding
    several, each one's own while deciding it alone)."""
    previous = current()
    _current.deadline = deadline
    try:
        yield
    finally:
        _current.deadline = previous


def check() -> None:
    """``Deadline.check`` of this thread's decision (none: no-op)."""
    deadline = current()
    if deadline is not None:
        deadline.check()


def finish() -> bool:
    """``Deadline.finish`` of this thread's decision (none: True)."""
    deadline = current()
    return deadline.finish() if deadline is not None else True


@contextlib.contextmanager
def outside(name: str, error: Callable[..., Exception]
            ) -> Iterator[None]:
    """A call to another service (``name``, e.g. "Placement") is in
    flight for the block: a decision abandoned meanwhile is answered
    ``error(reason=...)`` naming it instead of DatabaseUnavailable; its
    return counts as this thread's decision moving."""
    key = object()
    with _outside_lock:
        _outside[key] = (error, name, time.monotonic())
    try:
        yield
    finally:
        with _outside_lock:
            del _outside[key]
        deadline = current()
        if deadline is not None:
            deadline.answered = time.monotonic()


def _blamed(seconds: float) -> Exception:
    """The error of an abandoned decision: the oldest call to another
    service in flight, else the database's."""
    with _outside_lock:
        oldest = min(_outside.values(), key=lambda call: call[2],
                     default=None)
    if oldest is not None:
        error, name, _since = oldest
        return error(reason='%s did not answer within %.0f s '
                            '(decision_timeout)' % (name, seconds))
    return exception.DatabaseUnavailable(
        reason='no answer within %.0f s (decision_timeout)' % seconds)


def _cpu_seconds(thread_id: int) -> float | None:
    for thread in psutil.Process().threads():
        if thread.id == thread_id:
            return thread.user_time + thread.system_time
    return None


def _computing(deadline: Deadline) -> bool:
    """Whether the decision is moving over the next ``PROGRESS_WINDOW``
    s: its thread used CPU, or a call to another service came back
    within the last ``ANSWER_WINDOW`` s (the claims of a large request);
    False when it has not started."""
    if deadline.thread_id is None:
        return False
    before = _cpu_seconds(deadline.thread_id)
    time.sleep(PROGRESS_WINDOW)
    after = _cpu_seconds(deadline.thread_id)
    return (time.monotonic() - deadline.answered < ANSWER_WINDOW or (
        before is not None and after is not None and
        after - before > PROGRESS_SHARE * PROGRESS_WINDOW))


class _Decision(threading.Thread):
    """One decision on a daemon thread of its own (a decision stalled in
    the database must not hold the process at exit)."""

    def __init__(self, deadline: Deadline, decide: Callable[[], Any]
                 ) -> None:
        super().__init__(name='decision', daemon=True)
        self.deadline = deadline
        self.decide = decide
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        self.deadline.thread_id = threading.get_native_id()
        _current.deadline = self.deadline
        try:
            self.deadline.check()
            self.result = self.decide()
        except BaseException as exc:
            self.error = exc
        finally:
            _current.deadline = None

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


def run(seconds: float, decide: Callable[[], Any]) -> Any:
    """``decide()``'s result, within ``seconds`` while it waits.

    Raises what ``decide`` raises, or DatabaseUnavailable (or the error
    of the other service it waits on: ``outside``) when the decision is
    abandoned (see the module).  ``seconds`` 0: ``decide``
    runs on this thread, unbounded.
    """
    if not seconds:
        return decide()
    deadline = Deadline(seconds)
    decision = _Decision(deadline, decide)
    decision.start()
    while True:
        decision.join(deadline.remaining())
        if not decision.is_alive():
            return decision.outcome()
        if (_computing(deadline) or not decision.is_alive() or
                not deadline.abandon()):
            continue
        error = _blamed(seconds)
        LOG.error('Abandoned a decision waiting for more than %.0f s '
                  '(decision_timeout): %s', seconds, error)
        raise error
