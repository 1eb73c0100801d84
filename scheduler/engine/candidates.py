"""Where a request's candidate hosts come from, and how they are claimed.

A ``CandidateSource`` says which hosts of the view a request may use and
how its choices are claimed; the driver and the pipeline ask it, and
never which mode the service runs in:

* ``AllHosts`` (the default): every host of the host view; with
  ``[scheduler] claim_resources`` the claims' own capacity check runs
  first (``ClaimCapacityFilter``) and the chosen nodes are claimed in
  the database (``SqlReservation``), forced hosts excepted; several
  requests may be decided together, their claims in one transaction;
* ``scheduler.placement.source.PlacementSource`` (``[scheduler]
  use_placement``): Placement's allocation candidates, computed in
  memory, checked first (``PlacementCandidatesFilter``), consumed as
  each instance is placed, carried in the Selections, and claimed in
  Placement (``PlacementReservation``), a rebuild excepted; several
  requests may be decided together, each one's candidates computed on
  the batch's one refresh of the view and its claims collected as it is
  placed (``claims_when_placed``), all of them sent in one round trip.

The drivers build the source with its reservation
(``scheduler.drivers.base.candidate_source``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from typing import Protocol

from scheduler.conf import CONF
from scheduler.engine import reservation as reservation_lib
from scheduler.filters import BaseHostFilter
from scheduler.filters import claim_capacity
from scheduler.view.host_state import HostState


class CandidateSource(Protocol):
    """Which hosts a request may use, and its claims (see the module)."""

    #: The claims of the chosen hosts.
    reservation: reservation_lib.Reservation
    #: Whether requests that arrive together may be decided together,
    #: their claims in one transaction or one round trip.
    batches: bool
    #: Whether the claims of each request of a batch are taken in the
    #: batch's decision as soon as it is placed, before the next request
    #: is selected (they carry what its candidates consumed: Placement's
    #: allocation requests), rather than once every request is placed.
    #: Its reservation's decision then commits them together.
    claims_when_placed: bool

    def check(self) -> BaseHostFilter | None:
        """The filter that runs before the enabled ones (a
        BaseHostFilter), or None."""

    def claiming(self, spec_obj: Any) -> bool:
        """Whether the hosts chosen for ``spec_obj`` are claimed."""

    def select(self, spec_obj: Any, states: list[HostState],
               aggregates: Iterable[Any], refresh: bool = True) -> None:
        """Take ``spec_obj``'s candidates (``states``: the host view,
        refreshed; ``aggregates``: its aggregates) for the checks,
        consumptions and allocation requests that follow; ``spec_obj``
        None: none yet.  With ``refresh`` the source reads what it holds
        again first; without, the candidates are computed on what it
        holds, the consumption of the requests selected before included
        (the next request of a batch)."""

    def consume(self, state: HostState) -> None:
        """Count one more instance of the current request on ``state``."""

    def unconsume(self) -> None:
        """Take back what the current request consumed here: it failed
        in a batch, and the next request is selected without a
        refresh."""

    def allocation_request(self, state: HostState, nth: int = 0
                           ) -> tuple[str, str] | None:
        """``(allocation request JSON, its microversion)`` of the current
        request on ``state``, for its Selection: the one the ``nth``
        instance placed there took (in Placement mode the first
        allocation candidate the filters left, Nova 34), or the next
        one's when fewer were placed there; None when there is none."""

    def stop(self) -> None:
        """Release what the source holds (threads, connections)."""


def claims_check() -> BaseHostFilter | None:
    """The claims' own capacity check (``ClaimCapacityFilter``) with
    ``[scheduler] claim_resources``, else None."""
    if CONF.scheduler.claim_resources:
        return claim_capacity.ClaimCapacityFilter()
    return None


class AllHosts:
    """Every host of the host view; database claims (see the module)."""

    batches = True
    claims_when_placed = False

    def __init__(self, reservation: reservation_lib.Reservation) -> None:
        self.reservation = reservation

    def check(self) -> BaseHostFilter | None:
        return claims_check()

    def claiming(self, spec_obj: Any) -> bool:
        """With ``[scheduler] claim_resources``, but for forced hosts or
        nodes (an operator's override, as Nova before Placement)."""
        return CONF.scheduler.claim_resources and not bool(
            spec_obj.get('force_hosts') or spec_obj.get('force_nodes'))

    def select(self, spec_obj: Any, states: list[HostState],
               aggregates: Iterable[Any], refresh: bool = True) -> None:
        """Nothing to take: every host is a candidate."""

    def consume(self, state: HostState) -> None:
        """Nothing to count beyond the host view."""

    def unconsume(self) -> None:
        """Nothing counted beyond the host view."""

    def allocation_request(self, state: HostState, nth: int = 0
                           ) -> tuple[str, str] | None:
        return None

    def stop(self) -> None:
        """Nothing held."""
