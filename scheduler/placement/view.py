"""Placement's resource providers in memory, and one request's candidates.

``PlacementView`` keeps every resource provider of Placement's database
(read through ``[placement_database] connection``, never written): the
root providers in a ``ProviderTable``, the child providers in another,
both in a ``scheduler.placement.provider_trees.Forest``.  ``refresh``
reads again only the providers that changed: those whose generation
moved (Placement bumps it when a provider's inventories, traits or
aggregates change and when allocations are written against it, our own
claims included), and those whose usage changed without a bump
(allocations removed: a ``DELETE /allocations/{consumer}``, or a
consumer moved off the provider), which
``scheduler.placement.usage_watch`` finds within ``[placement_database]
usage_check_interval`` seconds.  The first ``refresh`` reads everything;
the service answers only after it.

``select(spec_obj, find_nodes)`` computes the allocation candidates of a
request in memory, as Placement 16.0.0 would answer Nova's ``GET
/allocation_candidates`` (the query of ``scheduler.placement.request``
after Nova's request filters, ``scheduler.placement.request_filters``,
with no ``limit``: every host is considered):

* a request of one group (no numbered groups; root traits are the
  candidate's own) that asks nothing a child provider holds (resource
  classes, traits, aggregates: the VGPU, bandwidth or PCI providers
  under a compute node) nor a resource class a sharing provider offers
  is answered by the root providers' columns alone
  (``scheduler.placement.candidates``, ``provider_trees.root_group``): the fast
  path;
* any other request (numbered groups, ports, accelerators, a VGPU from
  a child provider, a disk from a sharing provider, ``same_subtree``)
  by ``trees.Plan`` over the whole forest.

Placement's API is never asked for candidates.  Where Placement 16.0.0
itself errs (``scheduler.placement.trees`` lists the cases: a 500, or
candidates it garbles or loses) the in-memory answer follows the rule
instead.  A query Placement refuses (400: malformed, or naming a trait
its database does not hold) has no candidate, as Nova reads it.

Each instance of a multi-instance request is checked again after the
earlier ones consumed (``consume``), root, child and sharing providers
alike, as their claims will; the allocation request each one consumed
is the one its claim sends.  A compute node's provider is the one whose
uuid is the node's uuid (as nova-compute creates it), so the candidates
are keyed by compute node uuid.  The view is used under the host
manager's lock: one decision at a time.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import threading
import time
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

import numpy as np
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db.nova import cells
from scheduler.placement import candidates as candidates_lib
from scheduler.placement import client as client_lib
from scheduler.placement import database
from scheduler.placement import host_candidates
from scheduler.placement import limits
from scheduler.placement import provider_trees
from scheduler.placement import query as query_lib
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters
from scheduler.placement import trees
from scheduler.placement import usage_watch

LOG = logging.getLogger(__name__)

# How much earlier than the previous read's start the next one asks for
# changes: the commit delay and clock lag a change read forgives.
CLOCK_MARGIN = datetime.timedelta(seconds=1)
# Seconds between two reads of every provider's generation.
FULL_CHECK_INTERVAL = 10.0
# What a Selection's ``allocation_request_version`` says: the
# microversion of the allocation requests' shape (``mappings``).
ALLOCATION_REQUEST_VERSION = client_lib.MICROVERSION


@dataclasses.dataclass
class Candidates:
    """The allocation candidates of one request.

    ``group`` and ``static`` when the root providers alone answer it:
    the request group and the mask of the root providers whose traits,
    aggregates and tree match it (capacity is checked again after each
    consumption).  ``plan`` when it needs provider trees or sharing
    providers; ``chosen``: the allocation requests consumed so far, by
    compute node uuid, in order.  Neither: no candidate."""

    group: candidates_lib.RequestGroup | None = None
    static: np.ndarray | None = None
    plan: trees.Plan | None = None
    chosen: dict[str, list[dict[str, Any]]] = dataclasses.field(
        default_factory=dict)
    # What every node's candidates share (``host_candidates``).
    shared: dict[str, Any] = dataclasses.field(default_factory=dict)


class PlacementView:
    """Placement's resource providers (see the module).

    ``engine``: a SQLAlchemy engine on Placement's database (only
    read; the claims go through ``scheduler.placement.reservation``)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        # The root providers (the fast path's table), the child
        # providers, and both as one forest.
        self.table: candidates_lib.ProviderTable | None = None
        self.children: candidates_lib.ProviderTable | None = None
        self.forest: provider_trees.Forest | None = None
        self._generations: dict[int, int] = {}
        self._child_generations: dict[int, int] = {}
        self._id_of: dict[str, int] = {}
        self._uuid_of: dict[int, str] = {}
        # Providers to read again at the next refresh; the usage watch's
        # thread adds to it too (under ``_stale_lock``).
        self._stale: set[int] = set()
        self._stale_lock = threading.Lock()
        self.watch: usage_watch.UsageWatch | None = None
        # The reads of providers, for the usage watch.
        self.reads = usage_watch.ReadLog()
        # Counts the ProviderTables built: a HostTable memo of provider
        # rows (``passes_rows``) holds for one of them.
        self._table_epoch = 0
        # The traits Placement's database is known to hold.
        self._known_traits: set[str] = set()
        self.current = Candidates()
        # Naive UTC start of the last read; monotonic time of the last
        # full check.
        self._read_since = datetime.datetime.min
        self._last_full = 0.0

    # -- the providers ------------------------------------------------------

    def refresh(self) -> int:
        """Read the providers that changed since the last refresh (all
        of them the first time, or when providers appeared or went);
        returns how many were read.

        Only the generations of the providers stamped since the last
        read began (less ``CLOCK_MARGIN``) are read, unless a full check
        is due: at the first read, when the number of providers changed,
        and every ``FULL_CHECK_INTERVAL`` seconds, every generation is
        read, which catches a change committed late or stamped by a
        clock lagging ours by more than the margin."""
        started = timeutils.utcnow()
        with self.engine.connect() as connection:
            if self._full_check_due(connection):
                roots = database.read_generations(connection)
                children = database.child_generations(connection)
                self._last_full = time.monotonic()
                self._known_traits.clear()
            else:
                roots, children = database.generations_since(
                    connection, self._read_since - CLOCK_MARGIN)
                roots = {**self._generations, **roots}
                children = {**self._child_generations, **children}
            read = self._read(connection, roots, children)
        self._read_since = started
        return read

    def _full_check_due(self, connection: Any) -> bool:
        return (self.forest is None or
                time.monotonic() - self._last_full >= FULL_CHECK_INTERVAL
                or database.provider_count(connection) !=
                len(self._generations) + len(self._child_generations))

    def _read(self, connection: Any, roots: dict[int, int],
              children: dict[int, int]) -> int:
        """Read the providers whose generation moved (``roots`` and
        ``children``: ``{id: generation}``), or all of them when some
        appeared or went."""
        if (self.forest is None or
                roots.keys() != self._generations.keys() or
                children.keys() != self._child_generations.keys()):
            return self._read_all(connection, roots, children)
        changed = (_moved(self._generations, roots) |
                   _moved(self._child_generations, children) |
                   self._take_stale())
        if changed:
            found, below = database.read_trees(connection, changed)
            try:
                self.forest.replace([*found.values(), *below.values()])
            except KeyError:        # moved between roots and children
                return self._read_all(connection, roots, children)
            self.reads.record(frozenset(found) | frozenset(below))
        self._generations = roots
        self._child_generations = children
        return len(changed)

    def _read_all(self, connection: Any, roots: dict[int, int],
                  children: dict[int, int]) -> int:
        found, below = database.read_trees(connection)
        self.table = candidates_lib.ProviderTable(found.values())
        self.children = candidates_lib.ProviderTable(below.values())
        self.forest = provider_trees.Forest(self.table, self.children)
        self._table_epoch += 1
        self._id_of = {p.uuid: rp_id for providers in (found, below)
                       for rp_id, p in providers.items()}
        self._uuid_of = {rp_id: uuid for uuid, rp_id in self._id_of.items()}
        self._generations = {rp_id: roots[rp_id] for rp_id in found
                             if rp_id in roots}
        self._child_generations = {rp_id: children[rp_id]
                                   for rp_id in below if rp_id in children}
        self._take_stale()
        self.reads.record(None)
        return len(found) + len(below)

    def forget(self, uuids: Iterable[str]) -> None:
        """Read providers ``uuids`` again at the next refresh (their use
        here includes consumption that was not claimed)."""
        self.mark_stale({self._id_of[uuid] for uuid in uuids
                         if uuid in self._id_of})

    def mark_stale(self, ids: set[int]) -> None:
        """Read the providers ``ids`` (``resource_providers.id``) again at
        the next refresh.  Thread-safe: the usage watch calls it."""
        with self._stale_lock:
            self._stale |= ids

    def _take_stale(self) -> set[int]:
        with self._stale_lock:
            stale, self._stale = self._stale, set()
        return stale

    def watch_usages(self, interval: float) -> None:
        """Start the usage watch (``scheduler.placement.usage_watch``):
        its first read now, before the view's first load."""
        self.watch = usage_watch.UsageWatch(
            self.engine, interval, self.reconcile_usages, self.reads.since)
        self.watch.start()

    def reconcile_usages(self, usages: usage_watch.Usages,
                         only: frozenset[int] | None = None) -> None:
        """Read again, at the next refresh, the providers (those of
        ``only``, or all when it is None) whose usage in Placement's
        database (``usages``: ``{resource_providers.id: {resource class:
        used}}``, the providers without an allocation absent) differs
        from the view's.  Called from the usage watch's
        thread, without the host manager's lock: a provider the view
        reads or consumes meanwhile may be read once more than needed,
        never less (one it consumes is to be read again anyway)."""
        if self.forest is None:
            return
        stale = usage_watch.stale_providers(self.forest, self._id_of,
                                            self._uuid_of, usages, only)
        if stale:
            LOG.debug('Usage changed outside a generation bump on %d '
                      'resource provider(s)', len(stale))
            self.mark_stale(stale)

    def close(self) -> None:
        """Stop the usage watch and close the database connections."""
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        self.engine.dispose()

    def _forest(self) -> provider_trees.Forest:
        if self.forest is None:
            self.refresh()
        assert self.forest is not None
        return self.forest

    # -- one request --------------------------------------------------------

    def select(self, spec_obj: Any, find_nodes: request_lib.NodeFinder,
               aggregates: Iterable[Any] = (),
               lookups: request_filters.Lookups | None = None
               ) -> Candidates:
        """Compute the candidates of ``spec_obj`` (see the module; trees
        searched within ``[placement] max_candidate_combinations``), after
        Nova's request filters over the host ``aggregates``, and keep them
        as ``current`` for ``passes``, ``consume`` and ``allocation_request``.
        Raises NoValidHost when a requested host or node names no compute
        node or a request filter fails, InvalidRequestSpec for a request
        Nova refuses to translate.  ``lookups``: what the request filters
        read outside the request (the view adds the providers'
        aggregates)."""
        query = request_lib.for_scheduling(spec_obj, limits.max_results(CONF),
                                           find_nodes)
        request_filters.apply(
            query, spec_obj, aggregates, CONF,
            (lookups or request_filters.Lookups()).with_providers(
                request_filters.forest_aggregates(self._forest())))
        self.current = self.candidates(query.query_params())
        return self.current

    def candidates(self, params: query_lib.Params) -> Candidates:
        """The Candidates of the ``GET /allocation_candidates`` query
        ``params`` (``query_lib.Params``); none (logged) for a query
        Placement refuses."""
        forest = self._forest()
        try:
            request = query_lib.Request.from_query(params)
        except ValueError as exc:
            LOG.info('No allocation candidate: Placement refuses the query '
                     '(%s)', exc)
            return Candidates()
        unknown = self._unknown_traits(request.trait_names())
        if unknown:
            LOG.info('No allocation candidate: Placement refuses the query '
                     '(unknown traits %s)', ', '.join(sorted(unknown)))
            return Candidates()
        # Nova's limit (scheduler.placement.limits), when asked for.
        limit = (limits.query_limit(params)
                 if CONF.placement.apply_max_placement_results else None)
        group = provider_trees.root_group(request, forest)
        if group is not None:
            static = forest.roots.matches(group)
            if limit is not None:
                static = limits.first(
                    static & forest.roots.fits_capacity(group), limit)
            return Candidates(group=group, static=static)
        if limit is not None:
            return Candidates(plan=limits.LimitedPlan(forest, request, limit))
        return Candidates(plan=trees.Plan(forest, request))

    def _unknown_traits(self, names: frozenset[str]) -> frozenset[str]:
        """Which of ``names`` Placement's database does not hold (read
        for the names not known yet: one query, only then; none without
        a database)."""
        unknown = names - self._known_traits
        if not unknown or self.engine is None:
            return frozenset()
        with self.engine.connect() as connection:
            self._known_traits |= database.known_traits(connection, unknown)
        return unknown - self._known_traits

    def covers(self, group: candidates_lib.RequestGroup) -> bool:
        """Whether the root providers alone answer ``group`` (an
        unsuffixed group alone) as Placement:
        ``provider_trees.Features.covers``."""
        return self._forest().features.covers(group)

    def passes(self, uuids: Sequence[str]) -> np.ndarray:
        """Which of the compute nodes ``uuids`` can hold one more
        instance of the current request: a boolean array."""
        table = self._forest().roots
        missing = len(table.providers)
        rows = np.fromiter((table.row_of.get(uuid, missing)
                            for uuid in uuids), dtype=np.intp,
                           count=len(uuids))
        return self._fits()[rows]

    def passes_rows(self, hosts: Any, rows: np.ndarray) -> np.ndarray:
        """``passes`` for the HostStates at ``rows`` of ``hosts`` (a
        ``scheduler.view.host_table.HostTable``): a boolean array over
        ``rows``.  Each host's provider row is kept in the HostTable's
        memo, computed again only for hosts synced since, or when the
        providers were read anew."""
        table = self._forest().roots
        missing = len(table.providers)
        provider_rows = hosts.memo(
            self, ('provider_row', self._table_epoch),
            lambda state: table.row_of.get(state.uuid, missing), rows,
            dtype=np.intp)
        return self._fits()[provider_rows]

    def _fits(self) -> np.ndarray:
        """Over the root provider rows plus one (a host with no
        provider, False): whether the compute node can hold one more
        instance of the current request."""
        current = self.current
        table = self._forest().roots
        if current.group is not None:
            assert current.static is not None
            fits = table.fits_capacity(current.group) & current.static
        elif current.plan is not None:
            fits = current.plan.hosts()
        else:
            fits = np.zeros(len(table.providers), dtype=bool)
        return np.append(fits, False)

    def allocation_request(self, uuid: str, nth: int | None = 0,
                           surviving: Sequence[dict[str, Any]] | None = None
                           ) -> dict[str, Any]:
        """The current request's allocation request on compute node
        ``uuid`` (a claim's body, a Selection's): the ``nth`` instance's
        there, else the next one's, the first of ``surviving`` when
        given (``host_candidates.next_request``).  KeyError: none."""
        self._forest()
        return host_candidates.next_request(self, uuid, nth, surviving)

    def allocation_request_json(self, uuid: str, surviving: Any = None,
                                nth: int = 0) -> str | None:
        """``allocation_request`` as JSON (a Selection's); None: none."""
        try:
            return json.dumps(self.allocation_request(uuid, nth, surviving))
        except KeyError:
            return None

    def consume(self, uuid: str,
                surviving: Sequence[dict[str, Any]] | None = None) -> None:
        """Count ``allocation_request``'s next on its providers."""
        self._forest()
        host_candidates.consume(self, uuid, surviving)


def _moved(known: dict[int, int], read: dict[int, int]) -> set[int]:
    """The providers whose generation in ``read`` is not the ``known``
    one (both ``{id: generation}`` over the same ids)."""
    return {rp_id for rp_id, generation in read.items()
            if generation != known[rp_id]}


def from_config(conf: Any) -> PlacementView:
    """The PlacementView of ``conf``: an engine on ``[placement_database]
    connection`` (the ``[api_database]`` engine options, statement
    time-outs installed), loaded once before it is returned, so that the
    service answers only with a complete view.  Raises
    PlacementUnavailable when the database cannot be read."""
    url = conf.placement_database.connection
    if not url:
        raise exception.PlacementUnavailable(
            reason='[scheduler] use_placement needs [placement_database] '
                   'connection')
    try:
        engine = cells.create_engine(url, conf)
    except cells.CellsError as exc:
        raise exception.PlacementUnavailable(
            reason='[placement_database] connection: %s' % exc) from exc
    view = PlacementView(engine)
    try:
        view.watch_usages(conf.placement_database.usage_check_interval)
        read = view.refresh()
    except BaseException:
        view.close()
        raise
    LOG.info('Placement view loaded: %d resource provider(s) from %s',
             read, cells.safe_url(url))
    return view
