"""The services whose heartbeat the host view reads again before it
judges them up or down (``Suspects``).

Nova reads every service row for every request; the host view keeps
copies, refreshed from the rows the change reads find by their stamps
(docs/refresh.rst).  A heartbeat committed long after its stamp, or
stamped by a clock that lags the scheduler's, is in no change read, so
``Suspects`` names the services whose copy is about to look down
(``servicegroup.service_down_time``), for the view to read their rows
again, by id, before it judges them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from scheduler.conf import CONF
from scheduler.view.servicegroup import service_down_time

if TYPE_CHECKING:
    import datetime

    from scheduler.view.host_table import HostTable

# A copy whose heartbeat is older than ``service_down_time`` minus this
# many seconds is read again at every check (every second, the sweep's)
# until it is newer or down: the margin covers the interval between two
# checks and the time a decision takes after its refresh.
RECHECK_MARGIN_S = 3.0
# The copies up to this many seconds younger than that are read again
# too, the oldest first, a share per check, so that a mass of heartbeats
# that all came late (a stalled database) is read over these seconds
# rather than at once.
PACE_S = 10.0
# A service whose re-read brought no new heartbeat is read again at most
# this often once down (or before it is about to look down), unless a
# change read brings its row: a host that is really down costs one row
# per this many seconds, not one per check.
UNCHANGED_RECHECK_S = 10.0


class Suspects:
    """The services whose copy in the view must be read again before the
    view judges them (see the module).  Services forced down are left
    out (their heartbeat decides nothing); disabled ones are not (the
    view's count of the hosts up includes them).  By the age of
    the copy's heartbeat, with ``down`` = ``service_down_time()`` and
    ``closing`` = ``down - RECHECK_MARGIN_S``:

    * over ``closing`` and at most ``down``: at every check;
    * over ``down`` (down in the view): at most every
      ``UNCHANGED_RECHECK_S`` when the last re-read brought nothing new;
    * over ``closing - PACE_S`` (and over ``report_interval +
      RECHECK_MARGIN_S``, which a punctual heartbeat never reaches): the
      same, and paced (``_paced``).

    Not thread-safe (the host manager's lock guards the view)."""

    def __init__(self) -> None:
        # services.id -> monotonic time of a re-read that brought no new
        # row (``changed`` drops it)
        self._unchanged: dict[int, float] = {}

    def due(self, table: HostTable, now: datetime.datetime,
            clock: float) -> list[int]:
        """The ids (sorted) of the services of ``table``'s hosts to read
        again at ``now`` (naive UTC), ``clock`` (monotonic seconds)."""
        columns = table.columns
        judged = columns['has_service'] & ~columns['forced_down']
        age = table.heartbeat_age_us(now) / 1e6
        down = service_down_time()
        closing = down - RECHECK_MARGIN_S
        early = max(closing - PACE_S, CONF.report_interval + RECHECK_MARGIN_S)
        found = _ids(table, np.flatnonzero(judged & (age > closing) &
                                           (age <= down)))
        found.update(self._waited(table, np.flatnonzero(
            judged & (age > down)), clock).keys())
        waiting = self._waited(table, np.flatnonzero(
            judged & (age > early) & (age <= closing)), clock)
        found.update(_ids(table, _paced(np.asarray(
            sorted(waiting.values()), dtype=np.intp), age, closing)))
        return sorted(found)

    def _waited(self, table: HostTable, rows: np.ndarray,
                clock: float) -> dict[int, int]:
        """``{service id: row}`` of ``rows`` but the services re-read
        less than ``UNCHANGED_RECHECK_S`` before ``clock`` with nothing
        new."""
        unchanged = self._unchanged
        found = {}
        for row in rows.tolist():
            service = table.states[row].service
            if service and clock - unchanged.get(
                    service['id'], -np.inf) >= UNCHANGED_RECHECK_S:
                found[service['id']] = row
        return found

    def read(self, service_ids: Iterable[int], clock: float) -> None:
        """These services were just read again (at ``clock``, monotonic
        seconds); ``changed`` names next those whose row was new."""
        self._unchanged.update((service_id, clock)
                               for service_id in service_ids)

    def changed(self, service_ids: Iterable[int]) -> None:
        """A read brought new rows of these services: the next check
        judges them afresh."""
        for service_id in service_ids:
            self._unchanged.pop(service_id, None)

    def clear(self) -> None:
        """Forget the re-reads (a full read read every row)."""
        self._unchanged.clear()


def _ids(table: HostTable, rows: np.ndarray) -> set[int]:
    """The service ids of the hosts at ``rows`` of ``table``."""
    services = (table.states[row].service for row in rows.tolist())
    return {service['id'] for service in services if service}


def _paced(rows: np.ndarray, age: np.ndarray, until: float) -> np.ndarray:
    """The oldest share of ``rows`` (their heartbeats' ``age`` in
    seconds, by row) to read at this check: a share per second, the
    last read when the oldest reaches ``until`` seconds."""
    if len(rows) == 0:
        return rows
    ages = age[rows]
    count = math.ceil(len(rows) / max(1.0, until - float(ages.max())))
    if count >= len(rows):
        return rows
    return rows[np.argpartition(-ages, count - 1)[:count]]
