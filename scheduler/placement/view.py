"""Placement's resource providers in memory, and one request's candidates.

``PlacementView`` keeps the root providers of Placement's database (read
through ``[placement_database] connection``, never written) in a
``ProviderTable``.  ``refresh`` reads every provider's generation (one
query) and reads again only the providers whose generation moved:
Placement bumps it with every change of a provider's inventories,
allocations, traits or aggregates, our own claims included.  The first
``refresh`` reads everything; the service answers only after it.

``select(spec_obj, find_nodes)`` computes the allocation candidates of a
request, as Nova's scheduler asks Placement for them (``GET
/allocation_candidates``, the query of ``scheduler.placement.request``
after Nova's request filters, ``scheduler.placement.request_filters``,
with no ``limit``: every host is considered):

* a request of one group (no numbered groups, no ``same_subtree``;
  root traits are the candidate's own) that asks nothing a child
  provider holds (resource classes, traits, aggregates: the VGPU,
  bandwidth or PCI providers under a compute node) nor a resource class
  a sharing provider offers is answered in memory (``ProviderTable``),
  since its every candidate allocates from a root provider alone
  (``covers``); each instance of the request is then checked again
  after the earlier ones consumed (``consume``), as their claims will;
* any other request (granular groups, port or accelerator groups, a
  VGPU from a child provider...) is asked from Placement's API itself
  until the in-memory candidates cover it.

A compute node's provider is the one whose uuid is the node's uuid (as
nova-compute creates it), so the candidates are keyed by compute node
uuid.  The view is used under the host manager's lock: one decision at
a time.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
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
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters

LOG = logging.getLogger(__name__)

# How much earlier than the previous read's start the next one asks for
# changes: the commit delay and clock lag a change read forgives.
CLOCK_MARGIN = datetime.timedelta(seconds=1)
# Seconds between two reads of every provider's generation.
FULL_CHECK_INTERVAL = 10.0
# The trait of a provider that shares its inventory with the members
# of its aggregates (Placement's sharing providers).
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
# What a Selection's ``allocation_request_version`` says: the
# microversion of the allocation requests' shape (``mappings``).
ALLOCATION_REQUEST_VERSION = client_lib.MICROVERSION


@dataclasses.dataclass
class Candidates:
    """The allocation candidates of one request.

    ``group`` and ``static`` when computed in memory: the request group
    and the mask of the providers whose traits, aggregates and tree
    match it (capacity is checked again after each consumption).
    ``requests`` when Placement computed them: allocation requests by
    compute node uuid, best first."""

    group: candidates_lib.RequestGroup | None = None
    static: np.ndarray | None = None
    requests: dict[str, list[dict[str, Any]]] = dataclasses.field(
        default_factory=dict)


class PlacementView:
    """Placement's root providers (see the module).

    ``engine``: a SQLAlchemy engine on Placement's database;
    ``client``: the PlacementClient used for the requests the in-memory
    candidates do not cover."""

    def __init__(self, engine: Any, client: client_lib.PlacementClient
                 ) -> None:
        self.engine = engine
        self.client = client
        self.table: candidates_lib.ProviderTable | None = None
        self._generations: dict[int, int] = {}
        self._id_of: dict[str, int] = {}
        self._stale: set[int] = set()
        # Counts the ProviderTables built: a HostTable memo of provider
        # rows (``passes_rows``) holds for one of them.
        self._table_epoch = 0
        # What child providers hold, and the resource classes sharing
        # providers offer: a request touching none is answered in memory.
        self.nested = database.NestedFeatures()
        self._child_generations: dict[int, int] = {}
        self.shared_classes: frozenset[str] = frozenset()
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
            else:
                roots, children = database.generations_since(
                    connection, self._read_since - CLOCK_MARGIN)
                roots = {**self._generations, **roots}
                children = {**self._child_generations, **children}
            self._read_nested(connection, children)
            read = self._read_roots(connection, roots)
        self._read_since = started
        return read

    def _full_check_due(self, connection: Any) -> bool:
        return (self.table is None or
                time.monotonic() - self._last_full >= FULL_CHECK_INTERVAL
                or database.provider_count(connection) !=
                len(self._generations) + len(self._child_generations))

    def _read_nested(self, connection: Any, children: dict[int, int]
                     ) -> None:
        if children != self._child_generations:
            self.nested = (database.nested_features(connection)
                           if children else database.NestedFeatures())
            self._child_generations = children

    def _read_roots(self, connection: Any, generations: dict[int, int]
                    ) -> int:
        if (self.table is None or
                generations.keys() != self._generations.keys()):
            providers = database.providers_by_id(connection)
            self.table = candidates_lib.ProviderTable(providers.values())
            self._table_epoch += 1
            self._id_of = {p.uuid: rp_id for rp_id, p in providers.items()}
            self._generations = {rp_id: generations[rp_id]
                                 for rp_id in providers
                                 if rp_id in generations}
            read = len(providers)
        else:
            changed = {rp_id for rp_id, generation in generations.items()
                       if generation != self._generations[rp_id]}
            changed |= self._stale
            if changed:
                self.table.replace(database.providers_by_id(
                    connection, changed).values())
            self._generations = generations
            read = len(changed)
        self._stale.clear()
        if read:
            self.shared_classes = frozenset().union(*(
                provider.inventories for provider in self.table.providers
                if SHARING_TRAIT in provider.traits))
        return read

    def forget(self, uuids: Iterable[str]) -> None:
        """Read providers ``uuids`` again at the next refresh (their use
        here includes consumption that was not claimed)."""
        self._stale.update(self._id_of[uuid] for uuid in uuids
                           if uuid in self._id_of)

    # -- one request --------------------------------------------------------

    def select(self, spec_obj: Any, find_nodes: request_lib.NodeFinder,
               aggregates: Iterable[Any] = ()) -> Candidates:
        """Compute the candidates of ``spec_obj`` (see the module), after
        Nova's request filters over the host ``aggregates``
        (``scheduler.placement.request_filters``), and keep them as
        ``current`` for ``passes``, ``consume`` and
        ``allocation_request``.  Raises NoValidHost when a requested
        host or node names no compute node or a request filter fails,
        InvalidRequestSpec for a request Nova refuses to translate."""
        query = request_lib.for_scheduling(spec_obj, None, find_nodes)
        request_filters.apply(query, spec_obj, aggregates, CONF)
        table = self._table()
        group = None if _needs_placement(query) else _single_group(query)
        if group is not None and self.covers(group):
            self.current = Candidates(group=group,
                                      static=table.matches(group))
        elif group is None and not _needs_placement(query):
            self.current = Candidates()     # Placement would answer 400
        else:
            self.current = Candidates(requests=_by_root(
                self.client.allocation_candidates(query.querystring())))
        return self.current

    def covers(self, group: candidates_lib.RequestGroup) -> bool:
        """Whether the in-memory candidates of ``group`` are Placement's:
        none of its resource classes, traits (required, any-of or
        forbidden) or aggregates is held by a child provider, and no
        sharing provider offers its resource classes.  Then every
        candidate allocates from a root provider alone."""
        nested = self.nested
        traits = frozenset().union(*group.required) | group.forbidden
        return not (
            group.resources.keys() & (nested.resource_classes |
                                      self.shared_classes) or
            traits & nested.traits or
            ((group.member_of or group.forbidden_aggregates) and
             nested.aggregates))

    def passes(self, uuids: Sequence[str]) -> np.ndarray:
        """Which of the compute nodes ``uuids`` can hold one more
        instance of the current request: a boolean array."""
        current = self.current
        if current.group is None:
            return np.fromiter((uuid in current.requests for uuid in uuids),
                               dtype=bool, count=len(uuids))
        table = self._table()
        missing = len(table.providers)
        rows = np.fromiter((table.row_of.get(uuid, missing)
                            for uuid in uuids), dtype=np.intp,
                           count=len(uuids))
        return self._fits()[rows]

    def passes_rows(self, hosts: Any, rows: np.ndarray) -> np.ndarray:
        """``passes`` for the HostStates at ``rows`` of ``hosts`` (a
        ``scheduler.host_table.HostTable``): a boolean array over
        ``rows``.  Each host's provider row is kept in the HostTable's
        memo, computed again only for hosts synced since, or when the
        providers were read anew."""
        if self.current.group is None:
            return self.passes([state.uuid for state in hosts.states_at(rows)])
        table = self._table()
        missing = len(table.providers)
        provider_rows = hosts.memo(
            self, ('provider_row', self._table_epoch),
            lambda state: table.row_of.get(state.uuid, missing), rows,
            dtype=np.intp)
        return self._fits()[provider_rows]

    def _fits(self) -> np.ndarray:
        """Over the provider rows plus one (a host with no provider,
        False): whether the provider can hold one more instance of the
        current in-memory request."""
        current = self.current
        assert current.group is not None and current.static is not None
        table = self._table()
        return np.append(table.fits_capacity(current.group) & current.static,
                         False)

    def allocation_request(self, uuid: str) -> dict[str, Any]:
        """The allocation request of the current request on compute node
        ``uuid`` (its best, when Placement gave several): the body of a
        claim, and a Selection's ``allocation_request``.  KeyError when
        the node is no candidate."""
        current = self.current
        if current.group is None:
            return current.requests[uuid][0]
        self._table().row_of[uuid]          # KeyError: not a provider
        return {'allocations': {uuid: {'resources': dict(
                    current.group.resources)}},
                'mappings': {'': [uuid]}}

    def allocation_request_json(self, uuid: str) -> str | None:
        """``allocation_request`` as the JSON text a Selection carries, or
        None when the node is no candidate."""
        try:
            return json.dumps(self.allocation_request(uuid))
        except KeyError:
            return None

    def consume(self, uuid: str) -> None:
        """Count the current request's allocation on compute node
        ``uuid`` in the view (one instance chosen there)."""
        try:
            allocations = self.allocation_request(uuid)['allocations']
        except KeyError:
            return
        table = self._table()
        for rp_uuid, allocation in allocations.items():
            if rp_uuid in table.row_of:
                table.consume(rp_uuid, allocation['resources'])
            self.forget([rp_uuid])

    def _table(self) -> candidates_lib.ProviderTable:
        if self.table is None:
            self.refresh()
        assert self.table is not None
        return self.table


def _needs_placement(query: request_lib.ResourceRequest) -> bool:
    """Whether the in-memory candidates do not cover ``query`` yet:
    numbered groups, ``same_subtree``."""
    return bool(set(query.groups) - {None} or query.same_subtree)


def _single_group(query: request_lib.ResourceRequest
                  ) -> candidates_lib.RequestGroup | None:
    """The RequestGroup of a one-group query, its root traits joined to
    its own (over root providers the root is the candidate); None for a
    query Placement refuses (400: nothing asked, traits both required
    and forbidden), which has no candidate."""
    group = query.groups.get(None)
    if group is None:
        return None
    params: dict[str, list[str]] = {}
    for name, value in group.query_params():
        params.setdefault(name, []).append(value)
    root_traits = sorted(query.root_required) + [
        '!' + trait for trait in sorted(query.root_forbidden)]
    if root_traits:
        params.setdefault('required', []).append(','.join(root_traits))
    try:
        return candidates_lib.RequestGroup.from_query(params)
    except ValueError as exc:
        LOG.info('No allocation candidate: Placement refuses the query '
                 '(%s)', exc)
        return None


def _by_root(body: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Placement's allocation requests by the root provider (compute
    node) uuid of their providers, in Placement's order."""
    summaries = body.get('provider_summaries') or {}
    found: dict[str, list[dict[str, Any]]] = {}
    for allocation_request in body.get('allocation_requests') or ():
        roots = {summaries.get(rp_uuid, {}).get('root_provider_uuid', rp_uuid)
                 for rp_uuid in allocation_request['allocations']}
        for root in roots:
            found.setdefault(root, []).append(allocation_request)
    return found



def from_config(conf: Any) -> PlacementView:
    """The PlacementView of ``conf``: an engine on ``[placement_database]
    connection`` (the ``[api_database]`` engine options, statement
    time-outs installed) and a PlacementClient of ``[placement]``;
    loaded once before it is returned, so that the service answers only
    with a complete view.  Raises PlacementUnavailable when the database
    cannot be read."""
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
    view = PlacementView(engine, client_lib.PlacementClient(conf=conf))
    read = view.refresh()
    LOG.info('Placement view loaded: %d resource provider(s) from %s',
             read, cells.safe_url(url))
    return view
