"""Usage that Placement frees without bumping a generation.

Placement (16.0.0, and every release since Pike) bumps a resource
provider's generation when allocations are written against it, but not
when they are removed: ``DELETE /allocations/{consumer}`` (a server
deleted, shelve-offloaded, a failed build cleaned up, an evacuation's
source cleaned up) and a ``PUT`` or ``POST /allocations`` that moves a
consumer off a provider leave that provider's generation and
``updated_at`` as they were.  A view that re-read only the providers
whose generation moved would keep their old usage forever.

``UsageWatch`` finds those providers.  Every ``interval`` seconds its
thread reads every provider's usage (one grouped query,
``database.read_usages``) and hands them to ``reconcile``: the view
compares them with the usages it holds and reads again, at its next
refresh, the providers that differ.  Comparing with the view, not with
the previous read, catches a usage that rose and fell between two reads
(the view may have read the rise meanwhile).

The grouped query is skipped when nothing can differ: neither the
``allocations`` table (its fingerprint, one aggregate row,
``database.allocations_fingerprint``) nor the view (its ``version``,
which counts its reads) changed since the last comparison.  An
unchanged fingerprint means an unchanged set of rows, as Placement's
allocation ids only grow; where a database reuses the largest id after
a delete (SQLite), a row deleted and replaced in between is caught by
the comparison after the view's next read.

The first read (``start``) comes before the view's first load, so no
change after the load can be missed.  A read that fails is logged and
the next one reads everything again.  A provider freed in Placement is
thus seen by the decisions that start at most ``interval`` seconds, plus
one read, after the removal committed.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from scheduler.placement import database
from scheduler.placement.provider_trees import Forest

LOG = logging.getLogger(__name__)

# {resources_providers.id: {resource class: used}}
Usages = dict[int, dict[str, int]]


class UsageWatch:
    """Hands Placement's usages to ``reconcile`` when they changed (see
    the module).

    ``engine``: a SQLAlchemy engine on Placement's database;
    ``interval``: seconds between two reads; ``reconcile(usages)``:
    called from the watch's thread with every provider's usage (the
    providers without an allocation are absent); ``version()``: a
    number the view raises whenever it reads providers."""

    def __init__(self, engine: Any, interval: float,
                 reconcile: Callable[[Usages], None],
                 version: Callable[[], int]) -> None:
        self.engine = engine
        self.interval = interval
        self.reconcile = reconcile
        self.version = version
        # The fingerprint and view version of the last read.
        self._last: tuple[tuple[int, ...], int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def read(self) -> Usages | None:
        """One read: every provider's usage, or None when neither the
        ``allocations`` table nor the view changed since the last read.
        Raises what the database raises."""
        version = self.version()
        with self.engine.connect() as connection:
            last = (database.allocations_fingerprint(connection), version)
            if last == self._last:
                return None
            usages = database.read_usages(connection)
        self._last = last
        return usages

    def start(self) -> None:
        """Take the first read now (before the view's first load: its
        usages are not compared), then start the thread (a daemon, which
        also ends once the watch is no longer referenced)."""
        self.read()
        self._thread = threading.Thread(
            target=_watch, args=(weakref.ref(self), self._stop,
                                 self.interval),
            name='placement-usage-watch', daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (waits for a read under way, up to 5 s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def check(self) -> None:
        """``read``, and ``reconcile`` what it read; a failed read is
        logged, and the next one reads every usage."""
        try:
            usages = self.read()
            if usages is not None:
                self.reconcile(usages)
        except Exception as exc:
            self._last = None
            LOG.warning('Could not read the usages of Placement\'s '
                        'resource providers (next try in %.1f s): %s',
                        self.interval, exc)


def _watch(ref: Callable[[], UsageWatch | None], stop: threading.Event,
           interval: float) -> None:
    """The thread: ``check`` every ``interval`` seconds until ``stop``
    is set or the watch is gone."""
    while not stop.wait(interval):
        watch = ref()
        if watch is None:
            return
        watch.check()
        del watch


def stale_providers(forest: Forest, id_of: Mapping[str, int],
                    usages: Usages) -> set[int]:
    """The providers (``resource_providers.id``, by uuid in ``id_of``)
    of ``forest`` whose usage differs from ``usages``, as
    ``UsageWatch`` reads them: ``{id: {resource class: used}}``, a
    provider without an allocation absent, a class not in use left
    out."""
    stale = set()
    for table in (forest.roots, forest.children):
        for provider in list(table.providers):
            row_id = id_of.get(provider.uuid)
            if row_id is None:
                continue
            used = {rc: amount for rc, amount in provider.usages.items()
                    if amount}
            if used != usages.get(row_id, {}):
                stale.add(row_id)
    return stale
