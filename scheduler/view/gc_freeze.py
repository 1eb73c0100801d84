"""Keep the host view out of Python's full garbage collections.

CPython's cyclic garbage collector walks every object it tracks in a
full (oldest-generation) collection.  At 10,000 hosts a worker tracks
about 250,000 objects, most of them living as long as the process: the
host view's (HostStates, their rows, aggregates and instances) and the
libraries'.  A full collection then takes about 100 ms, and it runs
inside whichever decision allocates past the collector's threshold.

``HeapFreezer.after_full_read`` runs after each full read of the view,
at most once every ``MIN_INTERVAL_S`` seconds: it collects once and
freezes every object that survives (``gc.freeze()``, Python 3.7 and
later), so that later collections walk only the objects made since
(about 10 ms at 10,000 hosts).  Reference counting still frees a frozen
object as soon as nothing refers to it; only a frozen object that
becomes part of an unreachable cycle waits, until the next call
unfreezes everything (``gc.unfreeze()``) before its collection.  The
collector is process-wide, and so is ``FREEZER``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# The least time between two freezes, in seconds: a full read for every
# decision (``[scheduler] full_refresh_interval = 0``) must not make
# each decision pay a full collection.
MIN_INTERVAL_S = 60.0


class HeapFreezer:
    """When the process's heap was last frozen, and the freezing."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: float | None = None

    def after_full_read(self, enabled: bool) -> bool:
        """Collect and freeze the heap if ``enabled`` and the last freeze
        is at least ``MIN_INTERVAL_S`` seconds old (or there was none);
        when not ``enabled``, give back to the collector what an earlier
        freeze kept from it.  Returns whether the heap was frozen now."""
        if not enabled:
            if gc.get_freeze_count():
                gc.unfreeze()
            self._last = None
            return False
        now = self._clock()
        if self._last is not None and now - self._last < MIN_INTERVAL_S:
            return False
        self._last = now
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        LOG.debug('Froze %d objects after a full read of the host view '
                  '(%d unreachable found, %.0f ms)', gc.get_freeze_count(),
                  found, (self._clock() - now) * 1000.0)
        return True


FREEZER = HeapFreezer()
