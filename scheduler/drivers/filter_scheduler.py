"""The filter scheduler: filter, weigh, pick at random among the best.

Per instance of a request (Nova's loop):

1. filter the hosts that survived the previous instance (sequential
   narrowing; once-per-request filters run for the first instance only);
2. weigh them, best first; with ``shuffle_best_same_weighed_hosts`` the
   hosts tied at the best weight are shuffled;
3. pick one at random among the first ``host_subset_size`` (from the
   driver's seedable random source) and put it first;
4. consume the request from the chosen HostState and add the host to the
   server group's hosts, so the next instance sees it.

When fewer hosts than instances were found, the chosen hosts are reset to
be re-read from the database (dropping their virtual consumption) and
NoValidHost("There are not enough hosts available.") is raised.
A live migration to a requested destination is pre-checked first
(``scheduler.engine.live_migration``): an unknown host raises
ComputeHostNotFound, a down, disabled or too small one NoValidHost with
the reason.
Alternates (Queens): each instance's list is completed with other hosts in
weight order, not selected for this request, up to ``max_attempts`` hosts
in all.  Decisions of one process are serialised by the host manager's
lock, so concurrent requests never consume the same capacity twice here.

With ``[scheduler] claim_resources`` (the default), the chosen nodes'
vCPUs, RAM and local disk (root + ephemeral, as the consumption) are
claimed before they are returned, through the reservation
(``scheduler.engine.reservation``): other workers and services sharing
the database can never together overcommit them.  The pipeline runs the
claims' own check first (``ClaimCapacityFilter``), so a host the claim
would refuse is never ranked, whatever filters are enabled.  The claims
of a request are taken together, all or none, once every instance has
its host, within the decision (``Reservation.decision``: on a server
database, the transaction of the decision's reads).  When one does not
fit (``LostRace``: a node changed since the view read it, another
scheduler's claim or a usage report), the consumption is forgotten, the
changed rows are read again, and the request is placed again with a
claim per instance as each host is chosen (``Reservation.claim_one``,
which says why a claim is refused): that node is re-read at the next
refresh, and the next host of the whole ranked list is tried; a request
that fails releases the claims it took.  Alternates are not claimed
(Nova's conductor claims them itself when it retries), nor are forced
hosts or nodes: they skip the filters, capacity included, as an
operator's override (Nova before Placement).

The driver never touches the HostTable, the plug-ins or the database:
the pipeline (``scheduler.engine.pipeline``) filters and weighs and hands
it a ``Ranking`` of HostStates; a ``Decision`` per request
(``scheduler.engine.decision``) consumes (host view, Placement view,
server group), claims through the reservation, and is the one undo of
every failure path: NoValidHost, a lost race, a caller given up on
(``decision_timeout``), a database or Placement error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from oslo_log import log as logging
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.drivers import base
from scheduler.engine import answer
from scheduler.engine import batching
from scheduler.engine import deadline
from scheduler.engine import decision as decision_lib
from scheduler.engine import live_migration
from scheduler.engine import reservation
from scheduler.objects import base as objects_base
from scheduler.observability import notifications
from scheduler.placement import refusals
from scheduler.resources import capacity

if TYPE_CHECKING:
    from scheduler.engine.pipeline import Ranking
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.objects.selection import Selection
    from scheduler.view.host_state import HostState

    # One list of Selections per instance, its chosen host first.
    Answer = list[list[Selection]]

LOG = logging.getLogger(__name__)

NOT_ENOUGH_HOSTS = 'There are not enough hosts available.'
# How every INFO line about a claim that lost a race begins (the load
# benchmark counts them).
LOST_RACE = reservation.LOST_RACE


class FilterScheduler(base.Scheduler):
    """Nova's FilterScheduler on the "all compute nodes" path."""

    def __init__(self, context: Any, notifier: Any = None) -> None:
        super().__init__(context, notifier)
        self.batcher = batching.Batcher(
            self.host_manager.lock, self._decide_batch,
            CONF.scheduler.max_batched_requests)

    def select_destinations(self, context: Any, spec_obj: RequestSpec,
                            instance_uuids: Sequence[str] | None = None,
                            return_alternates: bool = False) -> Answer:
        """Return one list of Selection per instance (chosen host first,
        then up to ``max_attempts - 1`` alternates when asked).

        Sends ``scheduler.select_destinations.start`` / ``.end``; raises
        NoValidHost when fewer hosts than instances can be found.
        Requests arriving while others are decided are decided together
        (``scheduler.engine.batching``), with the same answers as one by
        one in arrival order.
        """
        notifications.notify_select_destinations(
            self.notifier, context, spec_obj, 'start')
        selections = self.batcher.submit(_Request(
            context, spec_obj, instance_uuids, return_alternates,
            deadline.current()))
        notifications.notify_select_destinations(
            self.notifier, context, spec_obj, 'end')
        return selections

    # -- batches (scheduler.engine.batching) ---------------------------------

    def _decide_batch(self, tickets: Sequence[batching.Ticket]) -> None:
        """Give every ticket of a batch its outcome (the view's lock is
        held).  Requests given up while they waited (``decision_timeout``)
        are skipped; several requests are decided together
        (``_decide_together``), else one by one."""
        waiting = []
        for ticket in tickets:
            if _abandoned(ticket.request.deadline):
                ticket.fail(deadline.Abandoned())
            else:
                waiting.append(ticket)
        if len(waiting) > 1 and self.candidates.batches:
            self._decide_together(waiting)
        else:
            for ticket in waiting:
                self._decide_one(ticket)

    def _decide_one(self, ticket: batching.Ticket) -> None:
        """``_schedule`` for one ticket, under its own deadline."""
        request = ticket.request
        with deadline.acting_for(request.deadline):
            try:
                ticket.succeed(self._schedule(
                    request.context, request.spec_obj,
                    request.instance_uuids, request.return_alternates))
            except Exception as exc:
                ticket.fail(exc)

    def _decide_together(self, tickets: Sequence[batching.Ticket]) -> None:
        """One refresh of the view (hosts and candidate source), each
        request placed in turn on it (arrival order; its own candidates
        computed without a refresh; a request that fails fails alone,
        and the hosts are read again for the next one, without its
        consumption, which the candidate source gives back), then the
        claims of all in the decision: one transaction, or one Placement
        round trip (each request's claims collected as it is placed:
        ``claims_when_placed``).  After a lost race, or a request given
        up meanwhile, the requests whose claims were not committed are
        decided again, each on its own (``_decide_one``).  Each
        request's deadline is checked before the commit and settled
        after it, as ``_schedule`` does."""
        context = tickets[0].request.context
        decided: list[_Placed] = []
        committed: list[_Placed] = []
        early = self.candidates.claims_when_placed
        with deadline.acting_for(None):
            try:
                with self.reservation.decision(context, claiming=any(
                        self.candidates.claiming(t.request.spec_obj)
                        for t in tickets)) as atomic:
                    states: list[HostState] | None = self._read_hosts(
                        context, None)
                    for ticket in tickets:
                        if states is None:
                            states = self._read_hosts(context, None,
                                                      refresh=False)
                        placed = self._place_request(context, states,
                                                     ticket)
                        if placed is None:
                            states = None   # forgotten consumption
                            continue
                        decided.append(placed)
                        if early and placed.claiming:
                            placed.decision.claim(atomic)
                    if any(_abandoned(d.request.deadline)
                           for d in decided):
                        raise reservation.LostRace()
                    for placed in decided:
                        if placed.claiming and not early:
                            placed.decision.claim(atomic)
                        if not atomic:
                            committed.append(placed)
            except reservation.LostRace:
                _decide_again(committed, [
                    d for d in decided if d not in committed],
                    self._decide_one)
                return
            except Exception as exc:
                for placed in decided:
                    placed.decision.undo()
                    placed.ticket.fail(exc)
                return
        for placed in decided:
            placed.decision.committed()
            _settle(placed)

    def _place_request(self, context: Any, states: list[HostState],
                       ticket: batching.Ticket) -> _Placed | None:
        """Place one request of a batch (its candidates, then ``_place``)
        and build its Selections; a ``_Placed``, or None when it failed
        (the ticket then has its error, and the request's consumption is
        undone)."""
        request = ticket.request
        spec_obj = request.spec_obj
        decision = None
        try:
            self.candidates.select(spec_obj, states,
                                   self.host_manager.aggs_by_id.values(),
                                   refresh=False)
            live_migration.check_requested_destination(states, spec_obj)
            num = self.num_instances(spec_obj, request.instance_uuids)
            decision = self._decision(context, spec_obj, _instance_uuids(
                spec_obj, request.instance_uuids, num))
            ranking = self._place(decision, request.return_alternates,
                                  claim_each=False)
            selections = self._answer(decision.selected, ranking,
                                      request.return_alternates)
        except Exception as exc:
            if decision is not None:
                decision.undo()
            self.candidates.unconsume()
            ticket.fail(exc)
            return None
        return _Placed(ticket, decision, self.candidates.claiming(spec_obj),
                       selections)

    def best_host(self, context: Any,
                  spec_obj: RequestSpec) -> HostState | None:
        """The HostState the next decision for ``spec_obj`` would choose
        for its first instance (its random pick among the best
        ``host_subset_size`` included), or None when no host passes; the
        view is refreshed, nothing is consumed or claimed (the
        benchmark times the decision apart from its claim with it)."""
        with self.host_manager.lock:
            self._read_hosts(context, spec_obj)
            ranking = self.pipeline.ranking(spec_obj)
            ranking.rank(0, limit=CONF.filter_scheduler.host_subset_size)
            return ranking.first() if len(ranking) else None

    def _schedule(self, context: Any, spec_obj: RequestSpec,
                  instance_uuids: Sequence[str] | None,
                  return_alternates: bool) -> Answer:
        num = self.num_instances(spec_obj, instance_uuids)
        uuids = _instance_uuids(spec_obj, instance_uuids, num)
        claiming = self.candidates.claiming(spec_obj)
        decision = self._decision(context, spec_obj, uuids)
        try:
            with self.reservation.decision(context, claiming) as atomic:
                states = self._read_hosts(context, spec_obj)
                live_migration.check_requested_destination(states, spec_obj)
                ranking = self._place(decision, return_alternates,
                                      claim_each=False)
                if claiming:
                    decision.claim(atomic)
            decision.committed()
        except reservation.LostRace:
            LOG.info(LOST_RACE + '%s: a node changed since this view '
                     'read it (another scheduler\'s claim or a usage '
                     'report); placing the request again, one claim per '
                     'instance', ', '.join(
                         '%s:%s' % (s.host, s.nodename)
                         for s in decision.selected))
            decision.undo()
            decision = self._decision(context, spec_obj, uuids)
            ranking = self._place_claiming_each(decision, return_alternates)
        except deadline.Abandoned:
            # Before the decision's transaction committed (rolled back);
            # claims that committed on their own (SQLite, Placement) are
            # released.
            decision.abandon()
            raise
        except Exception:
            decision.undo()     # a database error
            raise
        if not decision.settle(claiming, deadline.finish):
            raise deadline.Abandoned()
        return self._answer(decision.selected, ranking, return_alternates)

    def _decision(self, context: Any, spec_obj: RequestSpec,
                  uuids: Sequence[str]) -> decision_lib.Decision:
        """The Decision of one request (``scheduler.engine.decision``)."""
        return decision_lib.Decision(self.host_manager, self.candidates,
                                     context, spec_obj, uuids)

    def _answer(self, selected: Sequence[HostState], ranking: Ranking,
                return_alternates: bool) -> Answer:
        """The Selections of ``selected`` with their alternates from
        ``ranking`` (``scheduler.engine.answer``)."""
        return answer.answer(selected, ranking, return_alternates,
                             self.candidates)

    def _read_hosts(self, context: Any, spec_obj: RequestSpec | None,
                    refresh: bool = True) -> list[HostState]:
        """The HostStates, refreshed, and the request's candidates taken
        by the candidate source (``spec_obj`` None: none yet), refreshed
        first with ``refresh``."""
        states = self.host_manager.get_all_host_states(context)
        self.candidates.select(spec_obj, states,
                               self.host_manager.aggs_by_id.values(),
                               refresh=refresh)
        return states

    def _place(self, decision: decision_lib.Decision,
               return_alternates: bool, claim_each: bool) -> Ranking:
        """Nova's loop: choose a host per instance of ``decision``'s
        request and consume from it (``Decision.consume``).

        With ``claim_each``, each chosen node is claimed before it is kept
        (``Decision.claim_best``).  Returns the Ranking whose best candidates
        are the alternates; raises NoValidHost (after undoing the
        decision) when fewer hosts than instances are found.
        """
        spec_obj = decision.spec_obj
        uuids = decision.uuids
        num = len(uuids)
        ranking = self.pipeline.ranking(spec_obj)
        max_hosts = CONF.scheduler.max_attempts if return_alternates else 1
        # The sorted hosts used after the last sort: the chosen ones, the
        # random pick's subset and the alternates.
        needed = max(max_hosts, CONF.filter_scheduler.host_subset_size) + num
        realternate = return_alternates and num > 1
        first_uuid = spec_obj.obj_get('instance_uuid')
        # The loop asks for the instance's amounts several times.
        with capacity.fixed_amounts(spec_obj):
            for index in range(num):
                # Which instance the filters see (Nova sets it per
                # instance: the anti-affinity filter lets an instance's own
                # host pass).
                _set_instance_uuid(spec_obj, uuids[index])
                final = index == num - 1 and not realternate
                # Claiming one by one walks the whole ranked list if need
                # be.
                limited = final and not claim_each
                ranking.rank(index, limit=needed if limited else None)
                if claim_each:
                    decision.claim_best(ranking, index)
                if not len(ranking):
                    break
                decision.consume(ranking.first(), index)
        if len(decision.selected) < num:
            refusals.log_refusal(ranking, self.candidates, spec_obj)
            _set_instance_uuid(spec_obj, first_uuid)
            LOG.debug('Found %d of %d requested host(s) for instance %s',
                      len(decision.selected), num, first_uuid)
            decision.undo()
            raise exception.NoValidHost(reason=NOT_ENOUGH_HOSTS)
        if realternate:
            # The hosts that could take one more instance: none of the
            # request's instances, each now on its host, is exempted
            # (nor taken for a move from there).
            _set_instance_uuid(spec_obj, None)
            ranking.rank(num - 1, pick=False, limit=needed)
        _set_instance_uuid(spec_obj, first_uuid)
        return ranking

    def _place_claiming_each(self, decision: decision_lib.Decision,
                             return_alternates: bool) -> Ranking:
        """``_place`` after a lost race, each instance's claim in a
        transaction of its own; on an error, the decision is undone (its
        claims would otherwise last ``claim_timeout``)."""
        self._read_hosts(decision.context, decision.spec_obj)
        try:
            return self._place(decision, return_alternates,
                               claim_each=True)
        except Exception:
            decision.undo()
            raise

    def run_periodic_tasks(self, context: Any) -> None:
        """Release the expired and superseded claims (the reservation's
        ``reconcile``)."""
        if CONF.scheduler.claim_resources:
            counts = self.reservation.reconcile(context)
            LOG.debug('Claims released: %(expired)d expired, '
                      '%(superseded)d superseded', counts)


@dataclasses.dataclass
class _Request:
    """A ``select_destinations`` call waiting in the batcher."""

    context: Any
    spec_obj: Any
    instance_uuids: Sequence[str] | None
    return_alternates: bool
    deadline: deadline.Deadline | None


@dataclasses.dataclass
class _Placed:
    """A request of a batch placed, its claims not committed yet."""

    ticket: batching.Ticket
    decision: decision_lib.Decision
    claiming: bool
    selections: list

    @property
    def request(self) -> _Request:
        return self.ticket.request


def _decide_again(committed: list[_Placed], undone: list[_Placed],
                  decide_one: Any) -> None:
    """After a batch's lost race: answer those whose claims committed
    on their own (no shared transaction), decide the others again
    (``decide_one(ticket)``)."""
    for placed in committed:
        _settle(placed)
    for placed in undone:
        placed.decision.undo()
    for placed in undone:
        decide_one(placed.ticket)


def _settle(placed: _Placed) -> None:
    """After the batch's commit: answer a request, or fail it when its
    caller was answered DatabaseUnavailable meanwhile
    (``Decision.settle``)."""
    request_deadline = placed.request.deadline
    if placed.decision.settle(placed.claiming, (
            request_deadline.finish if request_deadline is not None
            else lambda: True)):
        placed.ticket.succeed(placed.selections)
    else:
        placed.ticket.fail(deadline.Abandoned())


def _abandoned(request_deadline: deadline.Deadline | None) -> bool:
    return request_deadline is not None and request_deadline.abandoned


def _instance_uuids(spec_obj: RequestSpec,
                    instance_uuids: Sequence[str] | None,
                    num: int) -> list[str]:
    """One uuid per instance to claim for: the caller's, else the
    request's ``instance_uuid`` for the first and new ones after."""
    if instance_uuids:
        return list(instance_uuids)
    first = spec_obj.obj_get('instance_uuid') or uuidutils.generate_uuid()
    return [first] + [uuidutils.generate_uuid() for _ in range(num - 1)]


def _set_instance_uuid(spec_obj: RequestSpec, uuid: str | None) -> None:
    """``spec_obj.instance_uuid = uuid`` (unset with None), not recorded
    as a change.  ``uuid`` is one of the request's instance uuids, which
    the manager checked (or this driver made), so it is set as it is,
    without the UUID field's coercion (``objects.base.set_trusted``)."""
    if uuid is not None:
        objects_base.set_trusted(spec_obj, {'instance_uuid': uuid})
    elif spec_obj.obj_attr_is_set('instance_uuid'):
        delattr(spec_obj, '_obj_instance_uuid')
    spec_obj.obj_reset_changes(['instance_uuid'])
