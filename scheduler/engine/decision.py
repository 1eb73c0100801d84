"""One request's effects on the view and on the claims, and their undo.

A driver places a request instance by instance; each choice changes the
view before the next instance is ranked, and the choices are then
claimed.  ``Decision`` holds those effects for one request and is the
one place that makes and unmakes them:

* ``consume(state, index)``: instance ``index`` counts on ``state``: in
  the host view (``HostManager.consume``: its resources, and the
  instance among the host's instances), in the candidate source
  (``CandidateSource.consume``: in Placement mode, the allocation
  request it takes), and in the request's server group
  (``group.add_host``, as Nova);
* ``claim(atomic)``: the claims of every instance consumed, all or
  none (``Reservation.claim``: raises LostRace with none kept); with
  ``atomic`` they are in the transaction of the reservation's
  ``decision`` and count as taken once ``committed()`` says it
  committed (a rollback takes them back), else at once;
  ``claim_one(state, index)`` claims one instance as its host is chosen,
  ``claim_best(ranking, index)`` the best host of a ranking that takes
  the claim (after a lost race);
* ``keep()``: the request is answered; its consumption stays until the
  nodes report (``HostManager.keep_consumption``); ``settle`` keeps it
  or, when the caller was answered DatabaseUnavailable meanwhile,
  ``abandon``s the decision (an ``undo`` that says so);
* ``undo()``: every failure path's one undo: the claims taken are
  released (only those: an instance holding allocations of its own, as
  an evacuated one does, keeps them; a release that fails is logged:
  database claims then end with ``claim_timeout``), the consumption is
  forgotten (the hosts are read again) and the group's hosts are put
  back.

A Decision is used under the host manager's lock, by one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from oslo_log import log as logging

from scheduler.engine import candidates
from scheduler.resources import capacity
from scheduler.view.host_state import HostState

LOG = logging.getLogger(__name__)


class Decision:
    """The effects of one request (see the module).

    ``manager``: the HostManager; ``source``: the CandidateSource
    (``scheduler.engine.candidates``), whose reservation claims;
    ``spec_obj``: the RequestSpec; ``uuids``: one instance uuid per
    instance, in order."""

    def __init__(self, manager: Any, source: candidates.CandidateSource,
                 context: Any, spec_obj: Any,
                 uuids: Sequence[str]) -> None:
        self.manager = manager
        self.source = source
        self.reservation = source.reservation
        self.context = context
        self.spec_obj = spec_obj
        self.uuids = list(uuids)
        # The HostStates chosen, one per instance consumed, in order.
        self.selected: list[HostState] = []
        # The instances whose claims were taken: what ``undo`` releases;
        # and those claimed in a transaction not committed yet.
        self.claimed: list[str] = []
        self._pending: list[str] = []
        group = spec_obj.get('instance_group')
        self._group = group
        self._group_hosts = group.host_list() if group is not None else None

    def consume(self, state: HostState, index: int) -> None:
        """Count instance ``index`` on ``state`` (see the module)."""
        self.manager.consume(state, self.spec_obj, self.uuids[index])
        self.source.consume(state)
        if self._group is not None:
            self._group.add_host(state.host)
        self.selected.append(state)

    def claim(self, atomic: bool) -> None:
        """Claim every instance consumed, all or none; raises LostRace
        (nothing kept).  ``atomic``: in the decision's transaction (see
        ``committed``)."""
        taken = self.uuids[:len(self.selected)]
        with capacity.fixed_amounts(self.spec_obj):
            self.reservation.claim(self.context, self.spec_obj,
                                   self.selected, taken)
        if atomic:
            self._pending = taken
        else:
            self.claimed = taken

    def committed(self) -> None:
        """The decision's transaction committed: the claims made in it
        are taken."""
        self.claimed += self._pending
        self._pending = []

    def claim_one(self, state: HostState, index: int) -> bool:
        """Claim instance ``index`` on ``state`` (before it is consumed);
        False when refused (the reservation logs why)."""
        uuid = self.uuids[index]
        if not self.reservation.claim_one(self.context, self.spec_obj,
                                          state, uuid):
            return False
        self.claimed.append(uuid)
        return True

    def claim_best(self, ranking: Any, index: int) -> None:
        """Claim instance ``index`` on the best candidate of ``ranking``
        (``scheduler.engine.pipeline.Ranking``); when the claim is
        refused (the reservation says why), have that node read again,
        drop it and try the next, until one is claimed or none is
        left."""
        while len(ranking):
            state = ranking.first()
            if self.claim_one(state, index):
                return
            self.manager.forget_consumption([state])
            ranking.drop_first()

    def keep(self) -> None:
        """The request is answered: keep its consumption."""
        self.manager.keep_consumption(self.selected)

    def settle(self, claiming: bool, finish: Callable[[], bool]) -> bool:
        """After the claims committed: keep the consumption (when
        ``claiming``) and return True when the caller still waits for
        the answer (``finish()``: ``scheduler.engine.deadline``); else
        ``abandon`` and return False."""
        if claiming:
            self.keep()
        if finish():
            return True
        self.abandon()
        return False

    def abandon(self) -> None:
        """The caller was answered DatabaseUnavailable while the decision
        waited (``decision_timeout``): ``undo``, claims included, and say
        so."""
        released = ', '.join(self.claimed) or 'none'
        self.undo()
        LOG.warning('Released the claims of a decision whose caller was '
                    'answered DatabaseUnavailable (decision_timeout): %s',
                    released)

    def undo(self) -> None:
        """Release the claims taken, forget the consumption, put the
        group's hosts back; a second call does nothing."""
        self._pending = []
        if self.claimed:
            claimed, self.claimed = self.claimed, []
            try:
                self.reservation.release(self.context, claimed)
            except Exception as exc:
                LOG.warning('Could not release the claims of %s: %s',
                            ', '.join(claimed), exc)
        selected, self.selected = self.selected, []
        self.manager.forget_consumption(selected)
        if self._group is not None:
            assert self._group_hosts is not None  # set with ``_group``
            self._group.hosts = list(self._group_hosts)
            self._group.obj_reset_changes(['hosts'])
