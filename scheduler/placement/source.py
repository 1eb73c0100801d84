"""Placement's allocation candidates as the driver's candidate source.

``PlacementSource`` implements ``scheduler.engine.candidates.
CandidateSource`` over the ``PlacementView`` (``scheduler.placement.
view``) and claims in Placement (``scheduler.placement.reservation``), as
Nova's scheduler has since Pike: a request's candidates are those of its
``GET /allocation_candidates`` query, computed in memory after the
view's refresh; ``PlacementCandidatesFilter`` runs before the enabled
filters; each instance placed consumes the allocation request it takes,
which its Selection carries; every request is claimed but a rebuild
(Nova asks Placement nothing for one).  Requests are decided one by one:
each claim is a round trip of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any

from scheduler.filters import BaseHostFilter
from scheduler.filters import placement_candidates
from scheduler.placement import client as client_lib
from scheduler.placement import reservation as reservation_lib
from scheduler.placement import view as view_lib
from scheduler.view.host_state import HostState

if TYPE_CHECKING:
    from scheduler.engine.reservation import Reservation


class PlacementSource:
    """Placement's candidates and claims (see the module).  ``view``:
    the PlacementView; ``client``: the PlacementClient of the claims."""

    batches = False

    def __init__(self, view: view_lib.PlacementView,
                 client: client_lib.PlacementClient) -> None:
        self.view = view
        self.reservation: Reservation = (
            reservation_lib.PlacementReservation(view, client))

    def check(self) -> BaseHostFilter | None:
        return placement_candidates.PlacementCandidatesFilter(self.view)

    def claiming(self, spec_obj: Any) -> bool:
        """Always, but for a rebuild."""
        return not _rebuild(spec_obj)

    def select(self, spec_obj: Any, states: list[HostState],
               aggregates: Iterable[Any]) -> None:
        """Refresh the view and compute the request's candidates (none
        for a rebuild; ``spec_obj`` None: nothing asked yet)."""
        if spec_obj is not None and _rebuild(spec_obj):
            return
        self.view.refresh()
        if spec_obj is not None:
            self.view.select(spec_obj, functools.partial(_find_nodes,
                                                         states),
                             aggregates)

    def consume(self, state: HostState) -> None:
        self.view.consume(state.uuid)

    def allocation_request(self, state: HostState
                           ) -> tuple[str, str] | None:
        request = self.view.allocation_request_json(state.uuid)
        if request is None:
            return None
        return request, view_lib.ALLOCATION_REQUEST_VERSION

    def stop(self) -> None:
        self.view.close()


def _rebuild(spec_obj: Any) -> bool:
    return spec_obj.get_scheduler_hint('_nova_check_type') == 'rebuild'


def _find_nodes(states: list[HostState], host: str | None,
                node: str | None, cell: Any) -> list[HostState]:
    """The HostStates of ``states`` on service host ``host`` and/or of
    hypervisor node ``node`` (``cell`` is not needed: host names are
    unique across cells)."""
    return [state for state in states
            if (host is None or state.host == host) and
            (node is None or state.nodename == node)]
