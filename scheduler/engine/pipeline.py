"""Prefilter -> filter -> weigh -> pick, over the host view's table.

``Pipeline`` loads the filters and weighers and runs them over the
``HostTable`` of a host view (``scheduler.view.host_manager.HostManager``),
in vectorised form where a plug-in has one, or over HostState lists
(``get_filtered_hosts`` / ``get_weighed_hosts``), with the same answers.
``Pipeline.ranking`` starts the ``Ranking`` of one request: the NumPy
row array of its candidates, narrowed and sorted instance after
instance; a driver sees HostStates only.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler import weights
from scheduler.conf import CONF
from scheduler.engine import candidates
from scheduler.engine import moves
from scheduler.view.host_manager import HostManager
from scheduler.view.host_state import HostState
from scheduler.weights.weighing import Weighing

if TYPE_CHECKING:
    from scheduler.objects.request_spec import Destination
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_table import HostTable

LOG = logging.getLogger(__name__)

# How many of the best weighed hosts a DEBUG line lists.
LOGGED_WEIGHED = 20


class _Default(enum.Enum):
    CLAIMS_CHECK = enum.auto()


# ``Pipeline``'s default check: the claims' own (candidates.claims_check).
CLAIMS_CHECK = _Default.CLAIMS_CHECK


def enabled_filter_names() -> list[str]:
    """The filter names in use: ``baremetal_enabled_filters`` with
    ``use_baremetal_filters`` under the ``ironic_host_manager`` (the only
    host manager of Nova's that read it), else ``enabled_filters``."""
    fs = CONF.filter_scheduler
    if (fs.use_baremetal_filters and
            CONF.scheduler.host_manager == 'ironic_host_manager'):
        return fs.baremetal_enabled_filters
    return fs.enabled_filters


class Pipeline:
    """The filters and weighers, run over ``view.table`` (``view``: the
    host manager, whose lock the caller holds)."""

    def __init__(self, view: HostManager,
                 rng: random.Random | None = None,
                 check: filters.BaseHostFilter | None | _Default = (
                     CLAIMS_CHECK)) -> None:
        """Load the plug-ins.  ``check``: the candidate source's filter,
        run before the enabled ones (``scheduler.engine.candidates``:
        Placement's candidates, or, by default, the claims' own capacity
        check with ``[scheduler] claim_resources``), or None.  Raises
        SchedulerHostFilterNotFound / ClassNotFound for a bad plug-in
        name."""
        self.view = view
        self.random = rng or random.Random(CONF.scheduler.random_seed)
        self.filter_handler = filters.HostFilterHandler()
        self.enabled_filters = filters.load_filters(
            CONF.filter_scheduler.available_filters,
            enabled_filter_names())
        if isinstance(check, _Default):
            check = candidates.claims_check()
        self.filters = list(self.enabled_filters)
        if check is not None:
            self.filters.insert(0, check)
        self.weight_handler = weights.HostWeightHandler()
        self.weighers = weights.load_weighers(
            CONF.filter_scheduler.weight_classes)

    def ranking(self, spec_obj: Any) -> Ranking:
        """The ranking of one request over the view's current table."""
        return Ranking(self, spec_obj)

    # -- over HostState lists ------------------------------------------------

    def get_filtered_hosts(self, hosts: list[HostState], spec_obj: Any,
                           index: int = 0) -> list[HostState]:
        """Hosts that pass the pre-filters, the claims' capacity check
        (``ClaimCapacityFilter``, with ``[scheduler] claim_resources``)
        and the enabled filters.

        Forced hosts or nodes skip the filters (unless the request is a
        rebuild check); an ignored, forced-away or non-requested host is
        never returned.  The source host of a move (resize, migration,
        evacuation) is removed first by ``moves.exclude_source``.
        """
        hosts, forced = prefilter(hosts, spec_obj)
        if forced or not hosts:
            return hosts
        return self.filter_handler.get_filtered_objects(
            self.filters, hosts, spec_obj, index)

    def get_weighed_hosts(self, hosts: list[HostState],
                          spec_obj: Any) -> list[Any]:
        """WeighedHost list, best first (see ``scheduler.weights``)."""
        return self.weight_handler.get_weighed_objects(
            self.weighers, hosts, spec_obj)

    # -- over the table ------------------------------------------------------

    def get_filtered_rows(self, rows: np.ndarray, spec_obj: Any,
                          index: int = 0) -> filters.Filtered:
        """``get_filtered_hosts`` over ``view.table``: ``rows`` is an intp
        array of candidate rows.  Returns a ``filters.Filtered``: the
        passing rows, the filters whose ``apply_limits`` the hosts
        returned need and the filters' counts (see
        ``HostFilterHandler.get_filtered_rows``)."""
        table = self.view.table
        if _needs_prefilter(table, spec_obj):
            hosts, forced = prefilter(table.states_at(rows), spec_obj)
            rows = table.rows_of(hosts)
            if forced or not hosts:
                return filters.Filtered(rows, [], [])
        return self.filter_handler.get_filtered_rows(
            self.filters, table, rows, spec_obj, index)

    def get_weighed_rows(self, rows: np.ndarray, spec_obj: Any,
                         limit: int | None = None,
                         multipliers: list | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, weights)`` sorted best first, over ``view.table``;
        with ``limit``, only the best; ``multipliers`` from
        ``weight_multipliers`` (see ``get_weighed_rows`` of
        ``scheduler.weights.HostWeightHandler``)."""
        return self.weight_handler.get_weighed_rows(
            self.weighers, self.view.table, rows, spec_obj, limit,
            multipliers)

    def weighing(self, rows: np.ndarray, spec_obj: Any,
                 multipliers: list | None = None) -> Weighing:
        """The ``Weighing`` of ``rows`` over ``view.table`` (see
        ``weighing`` of ``scheduler.weights.HostWeightHandler``)."""
        return self.weight_handler.weighing(
            self.weighers, self.view.table, rows, spec_obj, multipliers)

    def weight_multipliers(self) -> list:
        """The weighers' multipliers over ``view.table``, for the
        weighings of one request (aggregates do not change while the
        view's lock is held)."""
        return self.weight_handler.table_multipliers(self.weighers,
                                                     self.view.table)


class Ranking:
    """The candidates of one request, best first: a row array of the
    view's table, narrowed by each instance's filtering (sequential
    narrowing, as Nova's loop).

    Between two instances of a request only the hosts consumed from
    change.  When every weigher is ``host_local`` (and its multipliers
    are known per table) and no pre-filter applies, the ranking keeps its
    ``Weighing``: the next instance filters those hosts again with the
    ``host_local`` filters (the others run over every candidate), weighs
    only them again and re-ranks, with the same result as filtering and
    weighing every candidate (docs/multi-instance.rst)."""

    def __init__(self, pipeline: Pipeline, spec_obj: Any) -> None:
        self.pipeline = pipeline
        self.spec_obj = spec_obj
        self.table: HostTable = pipeline.view.table
        self._rows = self.table.all_rows
        # Filters that ran in vectorised form: their limits to apply.
        self.limit_filters: list = []
        self.multipliers = pipeline.weight_multipliers()
        self._may_update = (
            all(m is not None for m in self.multipliers) and
            all(weights.host_local(w) for w in pipeline.weighers) and
            not _needs_prefilter(self.table, spec_obj))
        # The whole ranking of the last instance, kept (``_may_update``).
        self._weighing: Weighing | None = None
        # The weights of ``_rows``, best first, when not kept.
        self._sorted_weights = np.zeros(0)
        self._stamp = 0
        # The filters' counts when the last filtering left no host.
        self.refusal: list[tuple[str, int, int]] | None = None

    @property
    def rows(self) -> np.ndarray:
        """The candidate rows, best first."""
        if self._weighing is not None:
            return self._weighing.rows
        return self._rows

    def rank(self, index: int, pick: bool = True,
             limit: int | None = None) -> None:
        """Filter and weigh the candidates for instance ``index``; with
        ``pick``, the random choice among the best ``host_subset_size``
        comes first.  With ``limit``, only the best are sorted and kept
        (enough for a last sort: the full order only matters as the next
        input) unless the ranking is kept for the next instance anyway."""
        changed = self._changed()
        if changed is None or not self._rank_changed(index, changed):
            self._rank_all(index, limit)
        self._stamp = self.table.stamp
        if not len(self):
            return
        if LOG.isEnabledFor(logging.DEBUG):
            self._log_weighed(self._weights())
        if CONF.filter_scheduler.shuffle_best_same_weighed_hosts:
            self._shuffle_best(self._weights())
        if pick:
            subset = min(CONF.filter_scheduler.host_subset_size, len(self))
            self._move_to_front(self.pipeline.random.choice(range(subset)))

    def _log_weighed(self, weights: np.ndarray) -> None:
        """Log the best weighed hosts with their weights, as Nova's
        ``Weighed [WeighedHost [host: ..., weight: ...], ...]`` (at most
        ``LOGGED_WEIGHED`` of them, and how many more)."""
        shown = min(len(self), LOGGED_WEIGHED)
        hosts = ', '.join(
            'WeighedHost [host: %r, weight: %s]' % (state, weight)
            for state, weight in zip(self.best(shown), weights[:shown],
                                     strict=True))
        LOG.debug('Weighed [%s]%s', hosts,
                  ' and %d more' % (len(self) - shown)
                  if len(self) > shown else '')

    def _changed(self) -> np.ndarray | None:
        """The rows of the hosts changed since the last instance's ranking
        (all nodes of each such host: the group hosts name hosts), or
        None when the ranking is not kept or the table cannot tell."""
        if self._weighing is None:
            return None
        changed = self.table.rows_changed_since(self._stamp)
        if changed is None:
            return None
        states = self.table.states
        return self.table.host_rows({states[row].host for row in changed})

    def _weights(self) -> np.ndarray:
        """The candidates' total weights, best first."""
        if self._weighing is not None:
            return self._weighing.sorted_totals
        return self._sorted_weights

    def _rank_all(self, index: int, limit: int | None) -> None:
        """Filter and weigh every candidate."""
        pipeline = self.pipeline
        rows, ran, history = pipeline.get_filtered_rows(
            self.rows, self.spec_obj, index)
        self._add_limit_filters(ran, history, len(rows))
        self._weighing = None
        if self._may_update and limit is None:
            weighing = pipeline.weighing(rows, self.spec_obj,
                                         self.multipliers)
            weighing.sort()
            self._weighing = weighing
        elif not len(rows):
            self._rows = rows
            self._sorted_weights = np.zeros(0)
        else:
            self._rows, self._sorted_weights = pipeline.get_weighed_rows(
                rows, self.spec_obj, limit, self.multipliers)

    def _rank_changed(self, index: int, changed: np.ndarray) -> bool:
        """Filter and weigh again only what ``changed`` may have changed
        (see the class); False when only ranking every candidate again
        gives Nova's result (a NaN weight).  The candidates' row array
        is only built when a filter that is not ``host_local`` runs."""
        weighing = self._weighing
        assert weighing is not None  # ``changed`` comes from ``_changed``
        found = self.pipeline.filter_handler.get_filtered_changed(
            self.pipeline.filters, self.table, lambda: weighing.rows,
            len(weighing), self.spec_obj, index,
            weighing.live_rows(changed))
        self._add_limit_filters(found.ran, found.history, found.passing)
        return weighing.update(found.changed, found.removed)

    def log_refusal(self) -> None:
        """Log, as Nova does, the filter that left no host for the
        request's instance (``filters.log_refusal``), when the last
        filtering left none; the driver calls it when it refuses the
        request."""
        if self.refusal:
            filters.log_refusal(self.spec_obj, self.refusal)

    def _add_limit_filters(self, ran: Sequence[filters.BaseHostFilter],
                           history: list[tuple[str, int, int]],
                           passing: int) -> None:
        """Keep the filters whose limits to apply, and the filters'
        counts when they left no row (``passing``: how many passed;
        ``refusal``)."""
        self.limit_filters.extend(f for f in ran
                                  if f not in self.limit_filters)
        self.refusal = None if passing else history

    def _shuffle_best(self, weights: np.ndarray) -> None:
        """Shuffle the candidates tied at the best weight (a prefix)."""
        ties = int(np.count_nonzero(weights == weights[0]))
        permutation = list(range(ties))
        self.pipeline.random.shuffle(permutation)
        order = np.asarray(permutation, dtype=np.intp)
        if self._weighing is not None:
            self._weighing.permute_prefix(order)
        else:
            self._rows = np.concatenate(
                (self._rows[:ties][order], self._rows[ties:]))

    def _move_to_front(self, position: int) -> None:
        if self._weighing is not None:
            self._weighing.move_to_front(position)
        elif position:
            rows = self._rows
            self._rows = np.concatenate((rows[position:position + 1],
                                         np.delete(rows, position)))

    def __len__(self) -> int:
        if self._weighing is not None:
            return len(self._weighing)
        return len(self._rows)

    def first(self) -> HostState:
        """The best candidate (the ranking must not be empty)."""
        return self.table.states[self._head(1)[0]]

    def drop_first(self) -> None:
        """Remove the best candidate (its claim was refused)."""
        if self._weighing is not None:
            self._weighing.drop_first()
        else:
            self._rows = self._rows[1:]

    def best(self, count: int) -> list[HostState]:
        """The first ``count`` candidates."""
        return self.table.states_at(self._head(count))

    def _head(self, count: int) -> np.ndarray:
        if self._weighing is not None:
            return self._weighing.head(count)
        return self._rows[:count]

    def apply_limits(self, states: Sequence[HostState]) -> None:
        """Write the ``limits`` of the filters that ran in vectorised
        form on ``states``."""
        for state in states:
            for host_filter in self.limit_filters:
                host_filter.apply_limits(state, self.spec_obj)


def _needs_prefilter(table: HostTable, spec_obj: RequestSpec) -> bool:
    """Whether ``prefilter`` may change anything for this request: one
    of its fields is set, the instance already runs on a host of
    ``table`` (a move, see ``moves.exclude_source``), or it carries a
    ``_nova_check_type`` hint (``moves.check_type`` decides it, and
    logs one it ignores)."""
    uuid = spec_obj.obj_get('instance_uuid')
    return bool(spec_obj.get('requested_destination') is not None or
                spec_obj.get('ignore_hosts') or
                spec_obj.get('force_hosts') or
                spec_obj.get('force_nodes') or
                spec_obj.get_scheduler_hint(moves.SOURCE_HOST_HINT) or
                spec_obj.get_scheduler_hint(moves.CHECK_TYPE_HINT) or
                (uuid and table.rows_with_instance(uuid)))


def prefilter(hosts: list[HostState], spec_obj: RequestSpec
              ) -> tuple[list[HostState], bool]:
    """Apply requested_destination, the move source and ignore/force.
    Returns ``(hosts, forced)``; ``forced`` means the filters are skipped
    (forced hosts or nodes, unless ``moves.check_type`` honours the
    request's ``_nova_check_type``: a confirmed rebuild, or a move)."""
    kind = moves.check_type(hosts, spec_obj)
    hosts = _apply_requested_destination(hosts, spec_obj)
    hosts = moves.exclude_source(hosts, spec_obj, kind)
    hosts, forced = _apply_ignore_and_force(hosts, spec_obj)
    return hosts, forced and kind is None


def _apply_requested_destination(hosts: list[HostState],
                                 spec_obj: RequestSpec) -> list[HostState]:
    """Keep the host (and node, when given) of ``requested_destination``;
    its ``aggregates`` entries (comma lists of aggregate uuids) must each
    match one of the host's aggregates; its ``cell``, when given, must be
    the host's cell (``HostState.cell_uuid``), as Nova (Pike and later)
    only looks at the requested cell's hosts."""
    dest = spec_obj.get('requested_destination')
    if dest is None:
        return hosts
    cell = dest.obj_get('cell')
    if cell is not None:
        wanted = cell.obj_get('uuid')
        hosts = [h for h in hosts if h.cell_uuid == wanted]
        if not hosts:
            LOG.info('Requested cell %s has no host here', wanted)
            return []
    result = [h for h in hosts if _matches_destination(h, dest)]
    if dest.obj_get('host') or dest.obj_get('node'):
        LOG.info('Requested destination %s:%s matched %d node(s)',
                 dest.obj_get('host'), dest.obj_get('node'), len(result))
    return result


def _matches_destination(host_state: HostState, dest: Destination) -> bool:
    host = dest.obj_get('host')
    node = dest.obj_get('node')
    if host and host_state.host != host:
        return False
    if node and host_state.nodename != node:
        return False
    wanted = dest.obj_get('aggregates') or []
    if wanted:
        have = {agg.obj_get('uuid') for agg in host_state.aggregates}
        return all(have & set(entry.split(',')) for entry in wanted)
    return True


def _apply_ignore_and_force(hosts: list[HostState], spec_obj: RequestSpec
                            ) -> tuple[list[HostState], bool]:
    """Apply ignore_hosts, force_hosts (case-insensitive host names) and
    force_nodes (exact node names).  Returns ``(hosts, forced)``."""
    ignore = {h.lower() for h in spec_obj.get('ignore_hosts', [])}
    force_hosts = {h.lower() for h in spec_obj.get('force_hosts', [])}
    force_nodes = set(spec_obj.get('force_nodes', []))
    if ignore:
        hosts = [h for h in hosts if h.host.lower() not in ignore]
        LOG.debug('Host filter ignoring hosts: %s', ', '.join(sorted(ignore)))
    if force_hosts:
        hosts = [h for h in hosts if h.host.lower() in force_hosts]
    if force_nodes:
        hosts = [h for h in hosts if h.nodename in force_nodes]
    return hosts, bool(force_hosts or force_nodes)
