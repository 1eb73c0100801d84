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
(``scheduler.live_migration``): an unknown host raises
ComputeHostNotFound, a down, disabled or too small one NoValidHost with
the reason.
Alternates (Queens): each instance's list is completed with other hosts in
weight order, not selected for this request, up to ``max_attempts`` hosts
in all.  Decisions of one process are serialised by the host manager's
lock, so concurrent requests never consume the same capacity twice here.

With ``[scheduler] claim_resources`` (the default), the chosen nodes'
vCPUs, RAM and local disk (root + ephemeral, as the consumption) are
claimed in the database before they are returned (``scheduler.db.claims``):
other workers and services sharing the database can never together
overcommit them.  The host manager runs the claims' own check first
(``ClaimCapacityFilter``), so a host the claim would refuse is never
ranked, whatever filters are enabled.  The claims of a request are taken
together, all or none, once every instance has its host, in the
transaction of the decision's reads on a server database
(``claims.decision_transaction``).  When one does not fit (a node
changed since the view read it: another scheduler's claim, or a usage
report), the consumption is forgotten, the changed rows are read again,
and the request is placed again with a claim per instance as each host is
chosen: a refused claim is explained from the node's row as it is now
(a race at INFO; a refusal the view did not foresee at WARNING), that
node is re-read at the next refresh, and the next host of the whole
ranked list is tried; a request that fails releases the claims it took.
Alternates are not claimed (Nova's conductor claims them itself when it
retries), nor are forced hosts or nodes: they skip the filters, capacity
included, as an operator's override (Nova before Placement).

Rows and HostStates: the hosts travel as row arrays of the host manager's
``HostTable``, filtered and weighed in vectorised form; the per-host
plug-in contract is used for filters and weighers without one, with the
same answers (see ``scheduler.filters`` and ``scheduler.weights``).
"""

import contextlib

import numpy as np
from oslo_log import log as logging
from oslo_utils import uuidutils

from scheduler import exception
from scheduler import live_migration
from scheduler import notifications
from scheduler.conf import CONF
from scheduler.db import claims
from scheduler.db import source
from scheduler.drivers import base
from scheduler.host_state import HostState
from scheduler.objects import selection as selection_obj
from scheduler.resources import capacity

LOG = logging.getLogger(__name__)

NOT_ENOUGH_HOSTS = 'There are not enough hosts available.'
# How every INFO line about a claim that lost a race begins (the load
# benchmark counts them).
LOST_RACE = 'Lost a claim race on '


class FilterScheduler(base.Scheduler):
    """Nova's FilterScheduler on the "all compute nodes" path."""

    def select_destinations(self, context, spec_obj, instance_uuids=None,
                            return_alternates=False):
        """Return one list of Selection per instance (chosen host first,
        then up to ``max_attempts - 1`` alternates when asked).

        Sends ``scheduler.select_destinations.start`` / ``.end``; raises
        NoValidHost when fewer hosts than instances can be found.
        """
        notifications.notify_select_destinations(
            self.notifier, context, spec_obj, 'start')
        with self.host_manager.lock:
            selections = self._schedule(context, spec_obj, instance_uuids,
                                        return_alternates)
        notifications.notify_select_destinations(
            self.notifier, context, spec_obj, 'end')
        return selections

    def _schedule(self, context, spec_obj, instance_uuids,
                  return_alternates):
        manager = self.host_manager
        num = self.num_instances(spec_obj, instance_uuids)
        uuids = _instance_uuids(spec_obj, instance_uuids, num)
        max_hosts = CONF.scheduler.max_attempts if return_alternates else 1
        claiming = CONF.scheduler.claim_resources and not _forced(spec_obj)
        group = spec_obj.get('instance_group')
        group_hosts = group.host_list() if group is not None else None
        try:
            placed = self._place_and_claim(context, spec_obj, uuids,
                                           return_alternates, claiming)
        except _LostRace as lost:
            LOG.info(LOST_RACE + '%s: a node changed since this view '
                     'read it (another scheduler\'s claim or a usage '
                     'report); placing the request again, one claim per '
                     'instance', ', '.join(
                         '%s:%s' % (s.host, s.nodename)
                         for s in lost.selected))
            manager.forget_consumption(lost.selected)
            if group is not None:
                group.hosts = group_hosts
                group.obj_reset_changes(['hosts'])
            manager.get_all_host_states(context)
            placed = self._place(context, spec_obj, uuids,
                                 return_alternates, claim_each=True)
        else:
            if claiming:
                manager.keep_consumption(placed[0])
        selected, rows, limit_filters = placed
        # Enough hosts for every list, even if all chosen ones come first.
        alternates = manager.table.states_at(rows[:max_hosts + num])
        for state in selected + alternates:
            for host_filter in limit_filters:
                host_filter.apply_limits(state, spec_obj)
        return self._selections(selected, alternates, max_hosts)

    def _place_and_claim(self, context, spec_obj, uuids, return_alternates,
                         claiming):
        """Refresh the hosts, place every instance (``_place``) and, when
        ``claiming``, claim the chosen nodes all together, in one
        transaction (``claims.decision_transaction``).  Returns what
        ``_place`` returns; raises _LostRace (with the consumption still
        held) when another scheduler took room first, everything the
        transaction wrote then being rolled back."""
        transaction = (claims.decision_transaction(context) if claiming
                       else contextlib.nullcontext())
        selected = []
        try:
            with transaction as connection:
                states = self.host_manager.get_all_host_states(context)
                live_migration.check_requested_destination(states, spec_obj)
                placed = self._place(context, spec_obj, uuids,
                                     return_alternates, claim_each=False)
                selected = placed[0]
                if claiming:
                    self._claim_all(context, connection, spec_obj,
                                    selected, uuids)
        except claims.RACE_ERRORS as exc:
            raise _LostRace(selected) from exc
        return placed

    def _place(self, context, spec_obj, uuids, return_alternates,
               claim_each):
        """Nova's loop: choose a host per instance and consume from it.

        With ``claim_each``, each chosen node is claimed before it is kept
        (``_claim_first``).  Returns ``(selected HostStates, sorted rows
        for the alternates, filters whose limits to apply)``; raises
        NoValidHost (after forgetting the consumption and releasing the
        claims taken) when fewer hosts than instances are found.
        """
        manager = self.host_manager
        num = len(uuids)
        rows = manager.table.all_rows
        selected = []
        limit_filters = []
        max_hosts = CONF.scheduler.max_attempts if return_alternates else 1
        # The sorted hosts used after the last sort: the chosen ones, the
        # random pick's subset and the alternates.
        needed = max(max_hosts, CONF.filter_scheduler.host_subset_size) + num
        realternate = return_alternates and num > 1
        multipliers = manager.weight_multipliers()
        for index in range(num):
            final = index == num - 1 and not realternate
            # Claiming one by one walks the whole ranked list if need be.
            limited = final and not claim_each
            rows = self._get_sorted_rows(spec_obj, rows, index,
                                         limit_filters, multipliers,
                                         limit=needed if limited else None)
            if claim_each:
                rows = self._claim_first(context, spec_obj, rows,
                                         uuids[index])
            if not len(rows):
                break
            chosen = manager.table.states[rows[0]]
            manager.consume(chosen, spec_obj)
            group = spec_obj.get('instance_group')
            if group is not None:
                group.add_host(chosen.host)
            selected.append(chosen)
        if len(selected) < num:
            self._release(context, selected, spec_obj, num,
                          uuids[:len(selected)] if claim_each else [])
        if realternate:
            rows = self._get_sorted_rows(spec_obj, rows, num - 1,
                                         limit_filters, multipliers,
                                         pick=False, limit=needed)
        return selected, rows, limit_filters

    @staticmethod
    def _claim_all(context, connection, spec_obj, selected, uuids):
        """Claim the request's chosen nodes, all or none: in the decision's
        transaction on ``connection`` (``claims.claim_many_in``), or
        without one in a transaction of their own (``claims.claim_many``).
        Raises one of ``claims.RACE_ERRORS`` when another scheduler took
        room first."""
        amounts = capacity.claim_amounts(spec_obj)
        wanted = [(state.compute_id, uuid, *amounts, state.host)
                  for state, uuid in zip(selected, uuids, strict=True)]
        if connection is not None:
            claims.claim_many_in(connection, wanted)
        elif not claims.claim_many(context, wanted):
            raise claims.NoRoom()

    def _claim_first(self, context, spec_obj, rows, instance_uuid):
        """Claim the first host of ``rows``; when the claim is refused,
        say why (``_refusal``), drop the host and try the next.  Returns
        ``rows`` from the claimed host on (empty when none could be
        claimed)."""
        amounts = capacity.claim_amounts(spec_obj)
        table = self.host_manager.table
        while len(rows):
            state = table.states[rows[0]]
            if claims.claim(context, state.compute_id, instance_uuid,
                            *amounts):
                return rows
            _log_refusal(context, state, amounts)
            self.host_manager.forget_consumption([state])
            rows = rows[1:]
        return rows

    def _release(self, context, selected, spec_obj, num, claimed_uuids):
        if claimed_uuids:
            claims.release_many(context, claimed_uuids)
        self.host_manager.forget_consumption(selected)
        LOG.debug('Found %d of %d requested host(s) for instance %s',
                  len(selected), num, spec_obj.obj_get('instance_uuid'))
        raise exception.NoValidHost(reason=NOT_ENOUGH_HOSTS)

    def _get_sorted_rows(self, spec_obj, rows, index, limit_filters,
                         multipliers, pick=True, limit=None):
        """Filter and weigh the table ``rows``; with ``pick``, the random
        choice among the best ``host_subset_size`` comes first.  Filters
        that ran in vectorised form are added to ``limit_filters``.  With
        ``limit``, only the best rows are sorted and returned (enough for
        a last sort: the full order only matters as the next input).
        ``multipliers``: the request's ``weight_multipliers``."""
        manager = self.host_manager
        rows, ran = manager.get_filtered_rows(rows, spec_obj, index)
        limit_filters.extend(f for f in ran if f not in limit_filters)
        if not len(rows):
            return rows
        rows, weights = manager.get_weighed_rows(rows, spec_obj, limit,
                                                 multipliers)
        if CONF.filter_scheduler.shuffle_best_same_weighed_hosts:
            rows = self._shuffle_best(rows, weights)
        if not pick:
            return rows
        subset = min(CONF.filter_scheduler.host_subset_size, len(rows))
        chosen = self.random.choice(range(subset))
        return np.concatenate((rows[chosen:chosen + 1],
                               np.delete(rows, chosen)))

    def _shuffle_best(self, rows, weights):
        """Shuffle the rows tied at the best weight (a prefix)."""
        ties = int(np.count_nonzero(weights == weights[0]))
        best = rows[:ties].tolist()
        self.random.shuffle(best)
        return np.concatenate((np.asarray(best, dtype=rows.dtype),
                               rows[ties:]))

    def run_periodic_tasks(self, context):
        """Release the expired and superseded claims
        (``claims.reconcile``)."""
        if CONF.scheduler.claim_resources:
            counts = claims.reconcile(context)
            LOG.debug('Claims released: %(expired)d expired, '
                      '%(superseded)d superseded', counts)

    @staticmethod
    def _selections(selected, alternates, max_hosts):
        """One list of Selection per instance: its chosen host, then the
        best alternates of the same cell that no instance was given.

        A host in several lists (an alternate of every instance, or
        chosen for several) is one Selection object in all of them:
        Selections are values, built once per host (building one is most
        of this method's cost), and the RPC layer serialises each list
        in full."""
        made = {}

        def selection(state):
            key = (state.host, state.nodename)
            if key not in made:
                made[key] = selection_obj.Selection.from_host_state(state)
            return made[key]

        chosen_keys = {(s.host, s.nodename) for s in selected}
        result = []
        for state in selected:
            picks = [selection(state)]
            for alt in alternates:
                if len(picks) >= max_hosts:
                    break
                if (alt.cell_uuid == state.cell_uuid and
                        (alt.host, alt.nodename) not in chosen_keys):
                    picks.append(selection(alt))
            result.append(picks)
        return result


class _LostRace(Exception):
    """The claims of a request lost a race: ``selected`` are the
    HostStates whose consumption is to be forgotten."""

    def __init__(self, selected):
        super().__init__()
        self.selected = selected


def _log_refusal(context, state, amounts):
    """Log why the claim of ``amounts`` on ``state``'s node was refused,
    from the node's row as it is now: a race (the row's use differs from
    what this view holds: another scheduler's claim or a usage report
    came in between; INFO), or a claim refused although this view agreed
    with the database (WARNING: the candidate check and the claim
    disagree, which should never happen)."""
    try:
        row = source.get_source().compute_node_get(context,
                                                   state.compute_id)
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
        LOG.info(LOST_RACE + '%s:%s: it changed since this view read it '
                 '(another scheduler\'s claim or a usage report); it lacks '
                 '%s; trying the next host',
                 state.host, state.nodename, lacking)
    else:
        LOG.warning('The claim on %s:%s was refused although this view '
                    'agrees with the database; it lacks %s; trying the '
                    'next host', state.host, state.nodename, lacking)


def _instance_uuids(spec_obj, instance_uuids, num):
    """One uuid per instance to claim for: the caller's, else the
    request's ``instance_uuid`` for the first and new ones after."""
    if instance_uuids:
        return list(instance_uuids)
    first = spec_obj.obj_get('instance_uuid') or uuidutils.generate_uuid()
    return [first] + [uuidutils.generate_uuid() for _ in range(num - 1)]


def _forced(spec_obj):
    return bool(spec_obj.get('force_hosts') or spec_obj.get('force_nodes'))
