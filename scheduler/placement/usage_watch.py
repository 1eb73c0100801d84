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
thread reads one aggregate row of the ``allocations`` table
(``database.allocations_fingerprints``): the fingerprint of the whole
table, and that of the rows the previous read counted (those up to its
largest id).  Allocation rows are only inserted, with larger ids, and
deleted, so when the second equals the previous read's fingerprint no
row the previous read counted is gone: usage has only risen, on
providers whose generation moved, except where rows inserted since were
deleted again.  Such a rise and fall matters only on a provider the view
read in between; so the watch then compares just the providers the view
read since the previous read (the view's ``ReadLog``)
with their usage in Placement (``database.usages_of``), and nothing at
all when the view read none.  Otherwise (a row gone, the first read, a
view that read everything or too many providers since) it reads every
provider's usage (one grouped query, ``database.read_usages``).  Either
way it hands what it read to ``reconcile``: the view compares it with
the usages it holds and reads again, at its next refresh, the providers
that differ.  Comparing with the view, not with the previous read,
catches a usage that rose and fell between two reads (the view may have
read the rise meanwhile).

Under load every decision's claim inserts rows and the view reads the
providers claimed on, so the watch compares tens of providers at each
read instead of grouping and comparing every allocation (at 10,000
hosts, the full read and comparison took about half of a worker's
time in Placement mode).  Where a database reuses the largest id after
a delete (SQLite), the replacing row changes the fingerprint's sums
unless it has the same provider and amount.

The first read (``start``) comes before the view's first load, so no
change after the load can be missed.  A read that fails is logged and
the next one reads everything again.  A provider freed in Placement is
thus seen by the decisions that start at most ``interval`` seconds, plus
one read, after the removal committed.
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from scheduler.placement import database
from scheduler.placement.provider_trees import Forest

LOG = logging.getLogger(__name__)

# {resources_providers.id: {resource class: used}}
Usages = dict[int, dict[str, int]]
# What the view read since a read of the watch: ``(its read count now,
# the ids of the providers read since, or None for every provider)``.
ReadSince = tuple[int, frozenset[int] | None]
# More providers than this read by the view since the last read: every
# usage is read instead of theirs.
MAX_LISTED = 1000


class ReadLog:
    """The reads of providers by a view: ``count`` of them, the last
    ``SIZE`` as ``(number, ids read or None for all)``.  ``record`` is
    the view's (under its lock), ``since`` the watch's (any thread)."""

    SIZE = 4096

    def __init__(self) -> None:
        self.count = 0
        self._log: collections.deque[tuple[int, frozenset[int] | None]] = (
            collections.deque(maxlen=self.SIZE))

    def record(self, ids: frozenset[int] | None) -> None:
        """Count a read of the providers ``ids`` (None: all of them),
        logged before it is counted."""
        self._log.append((self.count + 1, ids))
        self.count += 1

    def since(self, count: int | None) -> ReadSince:
        """``(count now, ids)``: the ids of the providers read since the
        count was ``count``, or None when that is not known (``count``
        None, older than the log, or a read of every provider since)."""
        now = self.count
        if count is None:
            return now, None
        ids: set[int] = set()
        expected = count + 1
        for number, read in list(self._log):   # one step under the GIL
            if number <= count or number > now:
                continue
            if number != expected or read is None:
                return now, None
            ids |= read
            expected += 1
        return (now, frozenset(ids)) if expected == now + 1 else (now, None)


class UsageWatch:
    """Hands Placement's usages to ``reconcile`` when they may differ
    from the view's (see the module).

    ``engine``: a SQLAlchemy engine on Placement's database;
    ``interval``: seconds between two reads; ``reconcile(usages,
    only)``: called from the watch's thread with the usages of the
    providers ``only`` (a frozenset of ``resource_providers.id``), or of
    every provider when ``only`` is None (the providers without an
    allocation are absent); ``reads_since(count)``: what the view read
    since its read count was ``count`` (``ReadSince``; None: since
    ever)."""

    def __init__(self, engine: Any, interval: float,
                 reconcile: Callable[[Usages, frozenset[int] | None], None],
                 reads_since: Callable[[int | None], ReadSince]) -> None:
        self.engine = engine
        self.interval = interval
        self.reconcile = reconcile
        self.reads_since = reads_since
        # The fingerprint and the view's read count at the last read.
        self._last: tuple[tuple[int, ...], int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def read(self) -> tuple[Usages, frozenset[int] | None] | None:
        """One read: ``(usages, only)`` as ``reconcile`` takes them, or
        None when nothing can differ from the view.  Raises what the
        database raises."""
        last = self._last
        count, read = self.reads_since(None if last is None else last[1])
        with self.engine.connect() as connection:
            whole, older = database.allocations_fingerprints(
                connection, None if last is None else last[0][1])
            if last is not None and older == last[0]:
                only = read
            else:
                only = None     # a row the last read counted is gone
            if only is None or len(only) > MAX_LISTED:
                found: tuple[Usages, frozenset[int] | None] | None = (
                    database.read_usages(connection), None)
            elif only:
                found = database.usages_of(connection, only), only
            else:
                found = None
        self._last = (whole, count)
        return found

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
            found = self.read()
            if found is not None:
                self.reconcile(*found)
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
                    uuid_of: Mapping[int, str], usages: Usages,
                    only: Collection[int] | None = None) -> set[int]:
    """The providers (``resource_providers.id``; ``id_of`` maps uuids to
    ids, ``uuid_of`` ids to uuids) of ``forest``, or those of them in
    ``only`` (looked up, not searched for among all), whose usage
    differs from ``usages``, as ``UsageWatch`` reads them: ``{id:
    {resource class: used}}``, a provider without an allocation absent,
    a class not in use left out."""
    if only is None:
        pairs = [(id_of[provider.uuid], provider)
                 for table in (forest.roots, forest.children)
                 for provider in list(table.providers)
                 if provider.uuid in id_of]
    else:
        indices = ((row_id, forest.index_of(uuid_of.get(row_id)))
                   for row_id in only)
        pairs = [(row_id, forest.provider(index))
                 for row_id, index in indices if index >= 0]
    return {row_id for row_id, provider in pairs
            if usages.get(row_id, {}) != {
                rc: amount for rc, amount in provider.usages.items()
                if amount}}
