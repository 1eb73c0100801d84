"""``PlacementReservation``: the claims of the Placement mode.

The ``Reservation`` of ``scheduler.engine.reservation`` with Placement's
API as the store of claims, as Nova's scheduler claims since Pike: each
instance's claim is ``PUT /allocations/{instance}`` of the chosen host's
allocation request (``PlacementView.allocation_request``), for the
request's project and user, with ``consumer_generation`` null (a new
consumer).  Placement checks capacity and generations itself; its 409
is a lost race (``claim``: the claims already taken are deleted, then
``LostRace``) or a refused host (``claim_one``: False, the driver tries
the next).  A release deletes the instance's allocations.  Placement
holds no claim that outlives its instance's allocations, so there is
nothing to reconcile, and a deleted instance's allocations are deleted
by its compute host.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from oslo_log import log as logging

from scheduler.engine import deadline
from scheduler.engine import reservation
from scheduler.observability import metrics
from scheduler.placement import client as client_lib
from scheduler.placement import view as view_lib
from scheduler.view.host_state import HostState

LOG = logging.getLogger(__name__)


class PlacementReservation:
    """``Reservation`` through Placement's API (see the module)."""

    def __init__(self, view: view_lib.PlacementView,
                 client: client_lib.PlacementClient) -> None:
        self.view = view
        self.client = client

    @contextlib.contextmanager
    def decision(self, context: Any, claiming: bool = True
                 ) -> Iterator[bool]:
        """No transaction: each claim is one Placement request."""
        yield False

    def claim(self, context: Any, spec_obj: Any,
              selected: Sequence[HostState],
              instance_uuids: Sequence[str]) -> None:
        """Claim each instance on its chosen host, in order; when
        Placement refuses one, delete the claims taken and raise
        LostRace."""
        taken: list[str] = []
        placed: collections.Counter[str] = collections.Counter()
        for state, instance_uuid in zip(selected, instance_uuids,
                                        strict=True):
            # The nth instance placed on a node claims what it consumed.
            nth = placed[state.uuid]
            placed[state.uuid] += 1
            if not self._claim(spec_obj, state, instance_uuid, nth):
                self.release(context, taken)
                raise reservation.LostRace()
            taken.append(instance_uuid)

    def claim_one(self, context: Any, spec_obj: Any, state: HostState,
                  instance_uuid: str) -> bool:
        """Claim for one instance on ``state``'s node; False when
        Placement refused (its reason is logged)."""
        return self._claim(spec_obj, state, instance_uuid, None)

    def _claim(self, spec_obj: Any, state: HostState, instance_uuid: str,
               nth: int | None) -> bool:
        deadline.check()
        try:
            allocation_request = self.view.allocation_request(state.uuid,
                                                              nth)
        except KeyError:
            LOG.info('%s:%s is no allocation candidate of the request (a '
                     'forced host Placement does not offer)',
                     state.host, state.nodename)
            return False
        claimed = self.client.claim(
            instance_uuid, allocation_request, spec_obj.project_id,
            spec_obj.obj_get('user_id'))
        if not claimed:
            metrics.lost_race()
            LOG.info(reservation.LOST_RACE + '%s:%s: Placement refused the '
                     'claim (another scheduler\'s claim, or the provider '
                     'changed); trying the next host',
                     state.host, state.nodename)
            self.view.forget([state.uuid])
        return claimed

    def release(self, context: Any, instance_uuids: Iterable[str]) -> int:
        """Delete the allocations of ``instance_uuids``; returns how many
        consumers had some."""
        return sum(self.client.delete_allocations(instance_uuid)
                   for instance_uuid in instance_uuids)

    def release_deleted(self, context: Any, instance_uuid: str) -> None:
        """Nothing: the compute host deletes a deleted instance's
        allocations in Placement itself."""

    def reconcile(self, context: Any) -> dict[str, int]:
        """Nothing to reconcile: Placement's allocations are the
        claims."""
        return {'expired': 0, 'superseded': 0}
