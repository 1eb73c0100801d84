"""Claims whose outcome Placement never told: read back, undone if written.

A claim sent to Placement and answered neither 204 nor 409 (the
connection dropped after the request went out, a timeout, a 5xx a load
balancer sends after forwarding) may have been committed
(``scheduler.placement.client.ClaimUncertain``).  Its caller is told the
claim failed, so an allocation Placement did write would leak: nobody
uses it and no compute host will ever delete it.  ``Unsettled`` keeps
each such consumer with the allocations it held before (None: a new
consumer) and those the claim sent, and ``settle`` resolves them:

* the consumer holds exactly what was sent: the claim was written; its
  allocations are put back to what it held (none for a new consumer:
  they are deleted), checked against the consumer's generation just
  read, so a change made since by someone else is never undone;
* it holds anything else: the claim was not written (or was replaced
  since): nothing to do;
* Placement cannot be read, or the consumer changed between the read
  and the write: it stays, and is settled again before the next claim
  (``PlacementReservation``) until it is resolved.

Nova's scheduler deletes the allocations of the instances it claimed
when it fails a request (``FilterScheduler._cleanup_allocations``); the
read-back extends that to the claims whose fate is unknown.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping

from oslo_log import log as logging

from scheduler import exception
from scheduler.placement import client as client_lib

LOG = logging.getLogger(__name__)

# Attempts at settling each consumer on the spot, before it waits for the
# next claim.
ATTEMPTS = 2


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One uncertain claim of a consumer: the allocations it held before
    (None: none, a new consumer), those the claim sent, and for whom."""

    held: client_lib.Allocations | None
    sent: client_lib.Allocations
    project_id: str
    user_id: str


class Unsettled:
    """The consumers whose claim's outcome is unknown (see the module).
    Thread-safe."""

    def __init__(self, client: client_lib.PlacementClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._pending: dict[str, Attempt] = {}

    def add(self, uncertain: client_lib.ClaimUncertain, project_id: str,
            user_id: str) -> None:
        """Keep the attempts of ``uncertain`` and settle them at once
        (``ATTEMPTS`` tries each); what cannot be settled yet stays."""
        LOG.warning('Placement did not say whether it wrote the claims of '
                    '%s (%s): reading them back', ', '.join(sorted(
                        uncertain.attempts)), uncertain.kwargs['reason'])
        with self._lock:
            for consumer, (held, sent) in uncertain.attempts.items():
                self._pending[consumer] = Attempt(held, sent, project_id,
                                                  user_id)
        self.settle(ATTEMPTS, only=uncertain.attempts)

    def settle(self, attempts: int = 1,
               only: Mapping[str, object] | None = None) -> int:
        """Resolve the pending consumers (those of ``only``, else all),
        each up to ``attempts`` times; returns how many are left.  Stops
        at the first one Placement cannot be asked about."""
        with self._lock:
            pending = [(consumer, attempt)
                       for consumer, attempt in self._pending.items()
                       if only is None or consumer in only]
        for consumer, attempt in pending:
            for _try in range(attempts):
                try:
                    settled = self._settle_one(consumer, attempt)
                except exception.PlacementUnavailable as exc:
                    LOG.warning('Could not read back the claim of %s yet: '
                                '%s', consumer, exc)
                    return len(self._pending)
                if settled:
                    with self._lock:
                        self._pending.pop(consumer, None)
                    break
        return len(self._pending)

    def _settle_one(self, consumer: str, attempt: Attempt) -> bool:
        """Undo ``attempt`` when Placement wrote it; False when the
        consumer changed between the read and the undo."""
        current, generation = self.client.allocations(consumer)
        if current != attempt.sent:
            LOG.info('The uncertain claim of %s was not written', consumer)
            return True
        if not self.client.replace_allocations(
                consumer, attempt.held or {}, generation,
                attempt.project_id, attempt.user_id):
            return False
        LOG.warning('Undid the claim of %s that Placement wrote without '
                    'answering it', consumer)
        return True
