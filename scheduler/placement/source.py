"""Placement's allocation candidates as the driver's candidate source.

``PlacementSource`` implements ``scheduler.engine.candidates.
CandidateSource`` over the ``PlacementView`` (``scheduler.placement.
view``) and claims in Placement (``scheduler.placement.reservation``), as
Nova's scheduler has since Pike: a request's candidates are those of its
``GET /allocation_candidates`` query, computed in memory after the
view's refresh; ``PlacementCandidatesFilter`` runs before the enabled
filters; each instance placed consumes the allocation request it takes,
which its Selection carries; every request is claimed but a rebuild
(Nova asks Placement nothing for one), recognised by its shape and by the
instance's allocations on its node (``_rebuild``).

Requests that arrive together are decided together
(``scheduler.engine.batching``): one refresh of the view, then each
request's candidates computed on it in turn (``select`` without
``refresh``), each seeing what those before it consumed; each request's
claims are collected as it is placed (``claims_when_placed``: they are
the allocation requests its candidates consumed) and the reservation
sends those of the whole batch in one round trip.  A request that fails
in a batch gives back what it consumed (``unconsume``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any

import sqlalchemy as sa

from scheduler.conf import CONF
from scheduler.filters import BaseHostFilter
from scheduler.filters import placement_candidates
from scheduler.placement import client as client_lib
from scheduler.placement import host_candidates
from scheduler.placement import request_filters
from scheduler.placement import reservation as reservation_lib
from scheduler.placement import view as view_lib
from scheduler.resources import pci_placement
from scheduler.view import rebuild
from scheduler.view.host_state import HostState

if TYPE_CHECKING:
    from scheduler.engine.reservation import Reservation


class PlacementSource:
    """Placement's candidates and claims (see the module).  ``view``:
    the PlacementView; ``client``: the PlacementClient of the claims."""

    batches = True
    claims_when_placed = True

    def __init__(self, view: view_lib.PlacementView,
                 client: client_lib.PlacementClient,
                 lookups: request_filters.Lookups | None = None) -> None:
        self.view = view
        # What the request filters read outside the request (the cells'
        # minimum compute version, Neutron).
        self.lookups = (lookups if lookups is not None
                        else request_filters.lookups_from_config(CONF))
        self.reservation: Reservation = (
            reservation_lib.PlacementReservation(view, client))
        # The HostStates given allocation candidates for the request.
        self._kept: list[HostState] = []

    def check(self) -> BaseHostFilter | None:
        return placement_candidates.PlacementCandidatesFilter(self.view)

    def claiming(self, spec_obj: Any) -> bool:
        """Always, but for a rebuild."""
        return not _rebuild(self.view, spec_obj)

    def select(self, spec_obj: Any, states: list[HostState],
               aggregates: Iterable[Any], refresh: bool = True) -> None:
        """Refresh the view (with ``refresh``) and compute the request's
        candidates (none for a rebuild; ``spec_obj`` None: nothing asked
        yet)."""
        self._keep_candidates(None, ())
        # Until the request's are computed, none: a rebuild's Selections
        # carry no allocation request (not the last request's), and a
        # request that fails before has consumed nothing.
        self.view.current = view_lib.Candidates()
        if spec_obj is not None and _rebuild(self.view, spec_obj):
            return
        if refresh:
            self.view.refresh()
        if spec_obj is not None:
            self.view.select(spec_obj, functools.partial(_find_nodes,
                                                         states),
                             aggregates, self.lookups)
            pci_placement.check_option(
                spec_obj, CONF.filter_scheduler.pci_in_placement)
            self._keep_candidates(spec_obj, states)

    def _keep_candidates(self, spec_obj: Any,
                         states: Iterable[HostState]) -> None:
        """Give each of ``states`` its allocation candidates for
        ``spec_obj`` when the filters check them one by one
        (``host_candidates.wanted``; built lazily), after taking those
        of the last request away."""
        for state in self._kept:
            state.allocation_candidates = None
        self._kept = []
        if spec_obj is None or not host_candidates.wanted(spec_obj):
            return
        self._kept = list(states)
        for state in self._kept:
            state.allocation_candidates = host_candidates.HostCandidates(
                self.view, state.uuid)

    def consume(self, state: HostState) -> None:
        """Count the first surviving candidate of ``state`` (Nova 34);
        its list is built anew for the next instance."""
        self.view.consume(state.uuid, state.allocation_candidates)
        if state.allocation_candidates is not None:
            state.allocation_candidates = host_candidates.HostCandidates(
                self.view, state.uuid)

    def unconsume(self) -> None:
        """Take back from the view's providers what the current request
        consumed (``PlacementView.consume``); they are still read again
        at the next refresh."""
        forest = self.view.forest
        chosen = self.view.current.chosen
        for request in itertools.chain.from_iterable(chosen.values()):
            for rp_uuid, allocation in request['allocations'].items():
                if forest is not None and forest.index_of(rp_uuid) >= 0:
                    forest.consume(rp_uuid, {
                        rc: -amount for rc, amount
                        in allocation['resources'].items()})
        chosen.clear()

    def allocation_request(self, state: HostState, nth: int = 0
                           ) -> tuple[str, str] | None:
        request = self.view.allocation_request_json(
            state.uuid, state.allocation_candidates, nth)
        if request is None:
            return None
        return request, view_lib.ALLOCATION_REQUEST_VERSION

    def stop(self) -> None:
        self.view.close()


def _rebuild(view: view_lib.PlacementView, spec_obj: Any) -> bool:
    """Whether ``spec_obj`` is Nova's rebuild, neither selected nor
    claimed (``rebuild.is_rebuild``): its shape, and the instance's
    allocations in Placement on the forced node, which is what makes
    skipping the claim safe (OSSA-2026-022).  The filters confirm the
    host view's instances in turn."""
    if spec_obj.get_scheduler_hint(rebuild.CHECK_TYPE_HINT) is None:
        return False
    engine = view.engine
    return rebuild.is_rebuild(spec_obj, allocated=(
        None if engine is None else
        functools.partial(_holds_allocations, engine)))


_ALLOCATIONS = sa.table('allocations', sa.column('resource_provider_id'),
                        sa.column('consumer_id'))
_PROVIDERS = sa.table('resource_providers', sa.column('id'),
                      sa.column('name'), sa.column('root_provider_id'))


def _holds_allocations(engine: Any, consumer: str, node: str) -> bool:
    """Whether consumer ``consumer`` (an instance uuid) holds allocations
    in the provider tree whose root is named ``node`` (nova-compute names
    a compute node's provider after its hypervisor hostname).  One
    query."""
    provider = _PROVIDERS.alias('provider')
    root = _PROVIDERS.alias('root')
    query = (sa.select(sa.literal(1))
             .select_from(_ALLOCATIONS
                          .join(provider, provider.c.id ==
                                _ALLOCATIONS.c.resource_provider_id)
                          .join(root, root.c.id ==
                                provider.c.root_provider_id))
             .where(_ALLOCATIONS.c.consumer_id == consumer,
                    root.c.name == node)
             .limit(1))
    with engine.connect() as connection:
        return connection.execute(query).first() is not None


def _find_nodes(states: list[HostState], host: str | None,
                node: str | None, cell: Any) -> list[HostState]:
    """The HostStates of ``states`` on service host ``host`` and/or of
    hypervisor node ``node`` (``cell`` is not needed: host names are
    unique across cells)."""
    return [state for state in states
            if (host is None or state.host == host) and
            (node is None or state.nodename == node)]
