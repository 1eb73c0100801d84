"""``PlacementReservation``: the claims of the Placement mode.

The ``Reservation`` of ``scheduler.engine.reservation`` with Placement's
API as the store of claims, as Nova's scheduler claims since Pike: each
instance's claim is the chosen host's allocation request
(``PlacementView.allocation_request``: its first allocation candidate
that NUMATopologyFilter and PciPassthroughFilter kept, as Nova 34;
``scheduler.placement.host_candidates``), for the request's project and
user, with ``consumer_generation`` null (a new consumer).

The claims made in a ``decision`` are collected (each request's
allocation requests taken as it is placed, before the next request of
a batch replaces the view's candidates) and sent when it ends, after
the deadline's check: one round trip for the whole decision, as the
SQL mode's one transaction.  The instances of one request are claimed
together with ``POST /allocations`` (microversion 1.13+), all or none
(``scheduler.placement.bulk_claims``: in parallel chunks for a large
request); one instance, or an instance that holds allocations already
(an evacuation), with ``PUT /allocations/{instance}``.  The requests of
a batch decided together are claimed in one ``POST /allocations``, each
consumer with its own request's project and user, all or none: when
Placement refuses it, or one of its consumers holds allocations
already, nothing of it is kept and the decision ends in ``LostRace``
(the driver decides those requests again one by one).  Placement checks
capacity and generations itself; its 409 is a lost race (``claim``:
nothing is kept, then ``LostRace``) or a refused host (``claim_one``:
False, the driver tries the next).  A claim Placement may have written
without answering (``ClaimUncertain``) is read back and undone
(``scheduler.placement.settling``) before the error reaches the
decision, whose undo releases the claims it took: no failure leaves an
allocation behind.  A release deletes the instance's allocations.
Placement holds no claim that outlives its instance's allocations, so
there is nothing to reconcile, and a deleted instance's allocations are
deleted by its compute host.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import threading
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from oslo_log import log as logging

from scheduler import exception
from scheduler.engine import deadline
from scheduler.engine import reservation
from scheduler.observability import metrics
from scheduler.placement import bulk_claims
from scheduler.placement import client as client_lib
from scheduler.placement import settling
from scheduler.placement import view as view_lib
from scheduler.view.host_state import HostState

LOG = logging.getLogger(__name__)


class PlacementReservation:
    """``Reservation`` through Placement's API (see the module)."""

    def __init__(self, view: view_lib.PlacementView,
                 client: client_lib.PlacementClient) -> None:
        self.view = view
        self.client = client
        self.unsettled = settling.Unsettled(client)
        # The claims of the thread's open decision (``collected``; none
        # open: a claim is sent at once).
        self._local = threading.local()

    @contextlib.contextmanager
    def decision(self, context: Any, claiming: bool = True
                 ) -> Iterator[bool]:
        """The claims made in it are collected and sent when it ends,
        in one round trip (see the module), all or none: raises LostRace
        when Placement refuses them (nothing kept), PlacementUnavailable
        as ``claim``, Abandoned when the decision's caller was given up
        on (nothing sent).  Yields True: its claims commit together."""
        collected: list[_Claim] = []
        self._local.collected = collected
        try:
            yield True
        finally:
            self._local.collected = None
        if len(collected) == 1:
            self._claim_request(context, collected[0])
        elif collected:
            self._claim_together(collected)

    def claim(self, context: Any, spec_obj: Any,
              selected: Sequence[HostState],
              instance_uuids: Sequence[str]) -> None:
        """Claim each instance on its chosen host, all or none: raises
        LostRace when Placement refuses (nothing kept), or
        PlacementUnavailable (nothing kept once ``settling`` could read
        back what Placement may have written).  Inside a ``decision``,
        the claims are only collected (their allocation requests, as
        the view has them now) and sent when it ends."""
        claim = _Claim(spec_obj, list(selected),
                       self._allocation_requests(selected, instance_uuids))
        collected = getattr(self._local, 'collected', None)
        if collected is not None:
            collected.append(claim)
        else:
            self._claim_request(context, claim)

    def _claim_request(self, context: Any, claim: _Claim) -> None:
        """``claim``'s claims of one request (see ``claim``)."""
        spec_obj, selected, requests = (claim.spec_obj, claim.selected,
                                        claim.requests)
        self.unsettled.settle()
        if requests is None:
            raise reservation.LostRace()
        if len(requests) == 1:
            (uuid, request), = requests.items()
            claimed: bool | None = self._send(spec_obj, self.client.claim,
                                              uuid, request)
        else:
            claimed = self._send(spec_obj, functools.partial(
                bulk_claims.claim_all, self.client), requests)
            if claimed is None:     # an instance holds allocations
                self._claim_each(context, spec_obj, selected, requests)
                return
        if not claimed:
            self._refused(selected)
            raise reservation.LostRace()

    def _claim_together(self, collected: list[_Claim]) -> None:
        """The claims of several requests in one ``POST /allocations``
        (chunked by ``bulk_claims`` when large), each consumer its own
        request's: raises LostRace when one request has a host that is
        no allocation candidate or an instance of another request of the
        batch, when Placement refuses (the providers
        are read again at the next refresh) and when a consumer holds
        allocations already (each request is then claimed on its own,
        as it would be alone); nothing is kept."""
        self.unsettled.settle()
        requests: dict[str, dict[str, Any]] = {}
        owners: dict[str, client_lib.Owner] = {}
        for claim in collected:
            if claim.requests is None or not requests.keys().isdisjoint(
                    claim.requests):
                raise reservation.LostRace()    # alone, each is known
            owner = _owner(claim.spec_obj)
            for consumer, request in claim.requests.items():
                requests[consumer] = request
                owners[consumer] = owner
        deadline.check()
        try:
            claimed = bulk_claims.claim_all(
                self.client, requests, *_owner(collected[0].spec_obj),
                owners=owners)
        except client_lib.ClaimUncertain as exc:
            self._uncertain(exc, owners)
            raise exception.PlacementUnavailable(
                reason=exc.kwargs['reason']) from exc
        if claimed is None:
            LOG.info('A consumer of a batch of %d requests holds '
                     'allocations already: claiming each request on its '
                     'own', len(collected))
            raise reservation.LostRace()
        if not claimed:
            self._refused([state for claim in collected
                           for state in claim.selected])
            raise reservation.LostRace()

    def _uncertain(self, uncertain: client_lib.ClaimUncertain,
                   owners: dict[str, client_lib.Owner]) -> None:
        """Settle the attempts of ``uncertain`` (``settling``), those of
        each owner with its project and user."""
        by_owner: dict[client_lib.Owner, dict[str, Any]] = (
            collections.defaultdict(dict))
        for consumer, attempt in uncertain.attempts.items():
            by_owner[owners[consumer]][consumer] = attempt
        for (project_id, user_id), attempts in by_owner.items():
            self.unsettled.add(client_lib.ClaimUncertain(
                attempts, reason=uncertain.kwargs['reason']),
                project_id, user_id)

    def _allocation_requests(self, selected: Sequence[HostState],
                             instance_uuids: Sequence[str]
                             ) -> dict[str, dict[str, Any]] | None:
        """Each instance's allocation request, in order; None when a host
        is no allocation candidate (a forced host Placement does not
        offer)."""
        requests = {}
        placed: collections.Counter[str] = collections.Counter()
        for state, instance_uuid in zip(selected, instance_uuids,
                                        strict=True):
            # The nth instance placed on a node claims what it consumed.
            nth = placed[state.uuid]
            placed[state.uuid] += 1
            request = self._allocation_request(state, nth)
            if request is None:
                return None
            requests[instance_uuid] = request
        return requests

    def _allocation_request(self, state: HostState, nth: int | None
                            ) -> dict[str, Any] | None:
        try:
            return self.view.allocation_request(
                state.uuid, nth, state.allocation_candidates)
        except KeyError:
            LOG.info('%s:%s is no allocation candidate of the request (a '
                     'forced host Placement does not offer)',
                     state.host, state.nodename)
            return None

    def _send(self, spec_obj: Any, call: Any, *args: Any) -> Any:
        """``call(*args, project, user)``; a ClaimUncertain is settled
        (``scheduler.placement.settling``), then raised as
        PlacementUnavailable."""
        deadline.check()
        project_id = spec_obj.project_id
        user_id = spec_obj.obj_get('user_id')
        try:
            return call(*args, project_id, user_id)
        except client_lib.ClaimUncertain as exc:
            self.unsettled.add(exc, project_id, user_id)
            raise exception.PlacementUnavailable(
                reason=exc.kwargs['reason']) from exc

    def _claim_each(self, context: Any, spec_obj: Any,
                    selected: Sequence[HostState],
                    requests: dict[str, dict[str, Any]]) -> None:
        """The claims one PUT each, in order; on a refusal or an error,
        the claims taken are released."""
        taken: list[str] = []
        try:
            for state, (uuid, request) in zip(selected, requests.items(),
                                              strict=True):
                if not self._send(spec_obj, self.client.claim, uuid,
                                  request):
                    self._refused([state])
                    raise reservation.LostRace()
                taken.append(uuid)
        except Exception:
            try:
                self.release(context, taken)
            except Exception as exc:     # Placement gone meanwhile
                LOG.warning('Could not release the claims of %s: %s',
                            ', '.join(taken), exc)
            raise

    def _refused(self, selected: Sequence[HostState]) -> None:
        metrics.lost_race()
        LOG.info(reservation.LOST_RACE + '%s: Placement refused the claim '
                 '(another scheduler\'s claim, or the provider changed); '
                 'trying the next host', ', '.join(sorted({
                     '%s:%s' % (s.host, s.nodename) for s in selected})))
        self.view.forget(list({state.uuid for state in selected}))

    def claim_one(self, context: Any, spec_obj: Any, state: HostState,
                  instance_uuid: str) -> bool:
        """Claim for one instance on ``state``'s node; False when
        Placement refused (its reason is logged).  Raises
        PlacementUnavailable as ``claim``."""
        self.unsettled.settle()
        request = self._allocation_request(state, None)
        if request is None:
            return False
        claimed = self._send(spec_obj, self.client.claim, instance_uuid,
                             request)
        if not claimed:
            self._refused([state])
        return bool(claimed)

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


@dataclasses.dataclass
class _Claim:
    """The claims of one request: its RequestSpec, the HostState of each
    instance, and each instance's allocation request (None: a host is no
    allocation candidate)."""

    spec_obj: Any
    selected: list[HostState]
    requests: dict[str, dict[str, Any]] | None


def _owner(spec_obj: Any) -> client_lib.Owner:
    """Whose the request's consumers are: its project and user."""
    return spec_obj.project_id, spec_obj.obj_get('user_id')
