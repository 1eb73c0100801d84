"""The reservation of a decision's resources: claims, all or none.

``Reservation`` is the interface a driver claims through: the claims of
a whole request taken together (``claim``, in the transaction of the
decision when one is open: ``decision``), one instance's claim as its
host is chosen (``claim_one``), releases (``release``, and
``release_deleted`` for the instances the compute hosts report deleted)
and the periodic ``reconcile``.  A lost race is one exception,
``LostRace``.  ``SqlReservation`` implements it with the database claims
of ``scheduler.db.claims`` (docs/claims.rst);
``scheduler.placement.reservation.PlacementReservation`` with Placement's
allocations.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import Protocol
from typing import cast

from oslo_log import log as logging

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db import claim_releases
from scheduler.db import claims
from scheduler.db import source
from scheduler.engine import deadline
from scheduler.observability import metrics
from scheduler.resources import capacity
from scheduler.view.host_state import HostState

LOG = logging.getLogger(__name__)

# How every INFO line about a claim that lost a race begins (the load
# benchmark counts them).
LOST_RACE = 'Lost a claim race on '


class LostRace(Exception):
    """The claims of a request lost a race (another scheduler took room
    first): nothing of them was kept."""


class Reservation(Protocol):
    """Claims of scheduling decisions (see the module)."""

    def decision(self, context: Any, claiming: bool = True
                 ) -> contextlib.AbstractContextManager:
        """The span of one decision (its reads and, when ``claiming``,
        its ``claim``s: those of one request, or of every request of a
        batch): raises LostRace when a claim or a read made in it lost a
        race.  Yields whether its claims commit together (all undone by
        a LostRace: one transaction; in Placement, one round trip at its
        end) or each on its own (those made before the race stay)."""

    def claim(self, context: Any, spec_obj: Any,
              selected: Sequence[HostState],
              instance_uuids: Sequence[str]) -> None:
        """Claim ``spec_obj``'s resources for each instance on its
        chosen HostState, all or none; raises LostRace."""

    def claim_one(self, context: Any, spec_obj: Any, state: HostState,
                  instance_uuid: str) -> bool:
        """Claim for one instance on ``state``'s node; False (the reason
        logged) when refused."""

    def release(self, context: Any, instance_uuids: Iterable[str]) -> int:
        """Release the claims of ``instance_uuids``; returns how many."""

    def release_deleted(self, context: Any, instance_uuid: str) -> None:
        """Release the claim of an instance its host deleted; never
        raises for a database error."""

    def reconcile(self, context: Any) -> dict[str, int]:
        """Release the claims that ended: ``{'expired': n,
        'superseded': n}``."""


class SqlReservation:
    """``Reservation`` with the claims of ``scheduler.db.claims``: in the
    compute node rows (standalone schema) or in ``scheduler_node_claims``
    (Nova database mode)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._releases = claim_releases.ReleaseQueue(
            lambda context, uuids: claims.release_many(context, uuids),
            CONF.scheduler.claim_release_delay)

    @contextlib.contextmanager
    def decision(self, context: Any, claiming: bool = True
                 ) -> Iterator[bool]:
        """When ``claiming``, the decision's writer transaction on a
        server database (``claims.decision_transaction``), which
        ``claim`` joins; a lost race rolls it all back and leaves as
        LostRace.  Yields whether there is one (on SQLite each claim
        commits on its own).

        The claims of every request of the decision (a batch decides
        several) are written together when it ends, sorted by node
        (``claims.claim_many_in``): every decision locks node rows in
        one order, so two workers' batches that chose the same nodes in
        different orders wait for each other instead of deadlocking
        (which the database breaks only after its deadlock timeout: one
        second on PostgreSQL, then a lost race)."""
        transaction = (claims.decision_transaction(context) if claiming
                       else contextlib.nullcontext())
        try:
            with transaction as connection:
                self._local.connection = connection
                self._local.wanted = []
                try:
                    yield connection is not None
                    if self._local.wanted:
                        claims.claim_many_in(connection, self._local.wanted)
                    # Past its deadline, a decision commits nothing.
                    deadline.check()
                finally:
                    self._local.connection = None
                    self._local.wanted = []
        except claims.RACE_ERRORS as exc:
            metrics.lost_race()
            raise LostRace() from exc

    def claim(self, context: Any, spec_obj: Any,
              selected: Sequence[HostState],
              instance_uuids: Sequence[str]) -> None:
        """All or none: in the open decision's transaction, written
        when it ends (``decision``), or in a transaction of their own
        (``claims.claim_many``)."""
        # The states of the view were read from compute_nodes rows: each
        # has its row's id (``compute_id``).
        wanted = [claims.ClaimRequest(cast(int, state.compute_id), uuid,
                                      *state.claim_amounts(spec_obj),
                                      host=state.host)
                  for state, uuid in zip(selected, instance_uuids,
                                         strict=True)]
        connection = getattr(self._local, 'connection', None)
        try:
            if connection is not None:
                self._local.wanted.extend(wanted)
            elif not claims.claim_many(context, wanted):
                raise claims.NoRoom()
        except claims.RACE_ERRORS as exc:
            metrics.lost_race()
            raise LostRace() from exc

    def claim_one(self, context: Any, spec_obj: Any, state: HostState,
                  instance_uuid: str) -> bool:
        """``claims.claim``; a refusal is explained (``log_refusal``)."""
        deadline.check()
        amounts = state.claim_amounts(spec_obj)
        if claims.claim(context, cast(int, state.compute_id), instance_uuid,
                        *amounts):
            return True
        log_refusal(context, state, amounts)
        return False

    def release(self, context: Any, instance_uuids: Iterable[str]) -> int:
        """``claims.release_many``."""
        return claims.release_many(context, instance_uuids)

    def release_deleted(self, context: Any, instance_uuid: str) -> None:
        """Queued and released in batches (``claim_releases``)."""
        self._releases.release(context, instance_uuid)

    def reconcile(self, context: Any) -> dict[str, int]:
        """``claims.reconcile``."""
        return claims.reconcile(context)


def log_refusal(context: Any, state: HostState,
                amounts: capacity.Amounts) -> None:
    """Log why the claim of ``amounts`` on ``state``'s node was refused,
    from the node's row as it is now: a race (the row's use differs from
    what this view holds: another scheduler's claim or a usage report
    came in between; INFO), or a claim refused although this view agreed
    with the database (WARNING: the candidate check and the claim
    disagree, which should never happen)."""
    try:
        row = source.get_source().compute_node_get(
            context, cast(int, state.compute_id))
    except exception.NotFound:
        LOG.info('Compute node %s:%s is gone; trying the next host',
                 state.host, state.nodename)
        return
    now = HostState(state.host, state.nodename)
    now.update(compute=row)
    lacking = '; '.join(
        '%s: %s free of %s x %s, %s asked' % (name, free, total, ratio,
                                             asked)
        for name, free, asked, total, ratio in capacity.shortfalls(
            lambda name: getattr(now, name), amounts)) or 'nothing now'
    held = [getattr(state, resource.used) for resource in capacity.CLAIMED]
    read = [getattr(now, resource.used) for resource in capacity.CLAIMED]
    if held != read:
        metrics.lost_race()
        LOG.info(LOST_RACE + '%s:%s: it changed since this view read it '
                 '(another scheduler\'s claim or a usage report); it lacks '
                 '%s; trying the next host',
                 state.host, state.nodename, lacking)
    else:
        LOG.warning('The claim on %s:%s was refused although this view '
                    'agrees with the database; it lacks %s; trying the '
                    'next host', state.host, state.nodename, lacking)
