"""Host filters: the plug-in contract, the handler and the loader.

A filter is a ``BaseHostFilter`` subclass implementing
``host_passes(host_state, spec_obj) -> bool`` (Nova's contract),
registered by class name in the ``scheduler.filters`` entry-point
namespace and enabled by name in ``[filter_scheduler] enabled_filters``
(docs/plugins.rst).  Over a ``HostTable`` the handler runs each filter in
its fastest exact form: ``host_mask``, else ``memo_key``, else
``filter_all`` (docs/fast-forms.rst).
"""

import typing
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from oslo_log import log as logging

from scheduler import exception
from scheduler import loadables
from scheduler.filters import forms
from scheduler.observability import metrics
from scheduler.view.rebuild import CHECK_TYPE_HINT
from scheduler.view.rebuild import is_rebuild

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState
    from scheduler.view.host_table import HostTable

LOG = logging.getLogger(__name__)

NAMESPACE = 'scheduler.filters'


class BaseHostFilter:
    """Base class for host filters."""

    # Run only for the first instance of a multi-instance request.
    run_filter_once_per_request: typing.ClassVar[bool] = False
    # Run on a rebuild with a new image (``_nova_check_type`` hint, in
    # the shape of Nova's rebuild: ``scheduler.view.rebuild``).
    RUN_ON_REBUILD: typing.ClassVar[bool] = False
    # The verdict on a host depends only on the request and that host's
    # HostState (its own fields, aggregates and instances), and on the
    # request's group hosts only for the hosts they name: between two
    # instances of a request, only the hosts consumed from are filtered
    # again (``host_local``).  False by default: a plug-in may read
    # anything.
    HOST_LOCAL: typing.ClassVar[bool] = False

    def host_passes(self, host_state: 'HostState',
                    spec_obj: 'RequestSpec') -> bool:
        """Return True when ``host_state`` can take ``spec_obj``."""
        raise NotImplementedError()

    def run_filter_for_index(self, index: int) -> bool:
        """Whether to run for instance ``index`` (0-based) of a request."""
        return not (self.run_filter_once_per_request and index > 0)

    def passes_all(self, spec_obj: 'RequestSpec') -> bool:
        """Whether every host passes for ``spec_obj`` as it is now (a
        group filter for a request without a group of its policy), so
        that the handler need not run the filter over the table's rows;
        False (the default) when the hosts must be looked at."""
        return False

    def _filter_one(self, host_state: 'HostState',
                    spec_obj: 'RequestSpec') -> bool:
        if not self.RUN_ON_REBUILD and is_rebuild(spec_obj, [host_state]):
            return True
        return self.host_passes(host_state, spec_obj)

    def filter_all(self, host_states: Iterable['HostState'],
                   spec_obj: 'RequestSpec') -> Iterator['HostState']:
        """Yield the hosts that pass this filter."""
        for host_state in host_states:
            if self._filter_one(host_state, spec_obj):
                yield host_state

    def host_mask(self, table: 'HostTable', rows: npt.NDArray[np.intp],
                  spec_obj: 'RequestSpec') -> npt.NDArray[np.bool_] | None:
        """Vectorised ``host_passes``: a bool array, one per row of
        ``rows`` (an intp array into ``table``), or None when this filter
        has no vectorised form (the default)."""
        return None

    def memo_key(self, spec_obj: 'RequestSpec') -> Hashable | None:
        """A hashable key capturing all of ``spec_obj`` that
        ``host_passes`` reads, so its results can be cached per host; None
        (the default) when there is none or ``host_passes`` has side
        effects."""
        return None

    def memo_scope(self, spec_obj: 'RequestSpec'
                   ) -> str | tuple[str, ...] | None:
        """What of the host ``host_passes`` reads for this request, when
        ``memo_key`` gives a key: ``aggregates.AGGREGATE_METADATA`` (the
        metadata of its aggregates), a tuple of public data attribute
        names, or None (the default: anything but the service)."""
        return None

    def apply_limits(self, host_state: 'HostState',
                     spec_obj: 'RequestSpec') -> None:
        """Write into ``host_state.limits`` what ``host_passes`` writes
        for a passing host (nothing by default).  Called for the hosts the
        driver returns when the filter ran as ``host_mask``."""

    # What ``explain_group`` says by default (None: "rejected by <name>").
    explain_label: typing.ClassVar[str | None] = None

    def explain(self, host_state: 'HostState',
                spec_obj: 'RequestSpec') -> str:
        """One line saying why ``host_state`` fails this filter, in the
        filter's own terms and units (``scheduler-manage explain``; never
        called while scheduling).  Only asked of a failing host."""
        return 'rejected by %s' % type(self).__name__

    def explain_group(self, host_state: 'HostState',
                      spec_obj: 'RequestSpec') -> str:
        """A short label grouping the hosts that fail this filter for the
        same kind of reason (``2 down``, ``1 insufficient RAM``)."""
        return self.explain_label or 'rejected by %s' % type(self).__name__


class LazyCandidates(Sequence[typing.Any]):
    """A host's allocation candidates read from ``source`` (an iterator
    of allocation request dicts) as far as they are asked for: what
    ``HostState.allocation_candidates`` holds in Placement mode."""

    def __init__(self, source: Iterator[typing.Any]) -> None:
        self._source: Iterator[typing.Any] | None = source
        self._found: list[typing.Any] = []

    def _fill(self, count: int | None) -> None:
        """Read until ``count`` candidates are known (None: all)."""
        while self._source is not None and (
                count is None or len(self._found) < count):
            found = next(self._source, None)
            if found is None:
                self._source = None
            else:
                self._found.append(found)

    @typing.overload
    def __getitem__(self, index: int) -> typing.Any: ...

    @typing.overload
    def __getitem__(self, index: slice) -> Sequence[typing.Any]: ...

    def __getitem__(self, index: int | slice) -> typing.Any:
        self._fill(index + 1 if isinstance(index, int) and index >= 0
                   else None)
        return self._found[index]

    def __len__(self) -> int:
        self._fill(None)
        return len(self._found)

    def __bool__(self) -> bool:
        self._fill(1)
        return bool(self._found)

    def __iter__(self) -> Iterator[typing.Any]:
        index = 0
        while True:
            self._fill(index + 1)
            if index >= len(self._found):
                return
            yield self._found[index]
            index += 1

    def __repr__(self) -> str:
        return '<%s: %d read%s>' % (
            type(self).__name__, len(self._found),
            '' if self._source is None else ', more maybe')


def filter_candidates(
        host_state: 'HostState',
        fits: typing.Callable[[typing.Any], object]) -> bool:
    """Nova 34's ``CandidateFilterMixin.filter_candidates``: keep in
    ``host_state.allocation_candidates`` (Placement mode; see HostState)
    the allocation candidates for which ``fits(mappings)`` is true
    (``mappings``: the candidate's ``{group suffix: [provider uuid]}``),
    in their order, and return whether any is left.  Only the
    candidates needed to answer are checked now, the others when read
    (``LazyCandidates``: a host is decided at its first fitting one).
    Without candidates (None: not Placement mode, or a request they are
    not kept for) the host is checked as a whole: ``fits(None)``."""
    candidates = host_state.allocation_candidates
    if candidates is None:
        return bool(fits(None))
    kept = LazyCandidates(candidate for candidate in candidates
                          if fits(candidate['mappings']))
    host_state.allocation_candidates = kept
    return bool(kept)


class HostFilterHandler:
    """Runs a list of filter instances over hosts (Nova's handler)."""

    def get_filtered_objects(self, filters: typing.Sequence[BaseHostFilter],
                             hosts: Iterable['HostState'],
                             spec_obj: 'RequestSpec',
                             index: int = 0) -> list['HostState']:
        """Return the list of hosts that pass every filter.

        ``filters`` are instances, applied in order; ``index`` is the
        instance ordinal within the request.  Logs the per-filter counts
        when a filter removes every host, and records them
        (``metrics.filtered``: hosts removed per filter, and which one
        emptied the list).
        """
        hosts = list(hosts)
        history = []
        for host_filter in filters:
            if not host_filter.run_filter_for_index(index):
                continue
            name = type(host_filter).__name__
            before = len(hosts)
            # A filter returning None (Nova's contract) stops filtering.
            hosts = list(host_filter.filter_all(hosts, spec_obj) or [])
            history.append((name, before, len(hosts)))
            LOG.debug('Filter %s returned %d host(s)', name, len(hosts))
            if not hosts:
                log_refusal(spec_obj, history)
                break
        metrics.filtered(history)
        return hosts


    def get_filtered_rows(self, filters: typing.Sequence[BaseHostFilter],
                          table: 'HostTable', rows: npt.NDArray[np.intp],
                          spec_obj: 'RequestSpec', index: int = 0
                          ) -> 'Filtered':
        """``get_filtered_objects`` over a HostTable.

        ``rows``: intp array of candidate rows, in order.  Returns a
        ``Filtered``: the passing rows, order kept, the filters that ran
        as ``host_mask`` (whose ``apply_limits`` the driver calls for the
        hosts it returns), and the per-filter counts.  An empty result
        is logged at DEBUG only: whether it refuses the request is the
        driver's to say (``log_refusal``), as the hosts an instance
        already placed leaves for its alternates may be none.
        """
        history = []
        ran: list[BaseHostFilter] = []
        # Only a request carrying the hint costs the HostStates' lookup.
        rebuild = (spec_obj.get_scheduler_hint(CHECK_TYPE_HINT) is not None
                   and is_rebuild(spec_obj, table.states_at(rows)))
        for host_filter in filters:
            if not host_filter.run_filter_for_index(index):
                continue
            before = len(rows)
            if not (rebuild and not host_filter.RUN_ON_REBUILD):
                rows = self._filter_rows(host_filter, table, rows, spec_obj,
                                         ran)
            history.append((type(host_filter).__name__, before, len(rows)))
            if not len(rows):
                LOG.debug('Filter %s returned 0 hosts', history[-1][0])
                break
        metrics.filtered(history)
        return Filtered(rows, ran, history)

    def get_filtered_changed(self, filters: typing.Sequence[BaseHostFilter],
                             table: 'HostTable',
                             candidates: typing.Callable[
                                 [], npt.NDArray[np.intp]],
                             count: int, spec_obj: 'RequestSpec',
                             index: int, changed: npt.NDArray[np.intp]
                             ) -> 'Refiltered':
        """``get_filtered_rows`` for a later instance of a request whose
        ``count`` candidate rows (``candidates()``, an intp array) all
        passed these filters for the previous instance, of which only
        the hosts of ``changed`` (a subset) changed since: a
        ``host_local`` filter runs over those only, with the same result
        (docs/multi-instance.rst).  ``candidates`` is called only when a
        filter that is not ``host_local`` runs (or a rebuild check).
        Returns a ``Refiltered``: the rows of ``changed`` that still
        pass, the candidate rows that no longer do, the filters that ran
        as ``host_mask`` and the per-filter counts.
        """
        history = []
        ran: list[BaseHostFilter] = []
        rows = None         # the candidates, once a filter needed them
        failed: list[npt.NDArray[np.intp]] = []
        rebuild = (spec_obj.get_scheduler_hint(CHECK_TYPE_HINT) is not None
                   and is_rebuild(spec_obj, table.states_at(candidates())))
        for host_filter in filters:
            if not host_filter.run_filter_for_index(index):
                continue
            before = count
            if rebuild and not host_filter.RUN_ON_REBUILD:
                pass
            elif host_local(host_filter) or _passes_all(host_filter,
                                                        spec_obj):
                passed = self._filter_rows(host_filter, table, changed,
                                           spec_obj, ran)
                if len(passed) < len(changed):
                    lost = np.setdiff1d(changed, passed)
                    count -= len(lost)
                    if rows is None:
                        failed.append(lost)
                    else:
                        rows = rows[~np.isin(rows, lost)]
                    changed = passed
            else:
                if rows is None:
                    rows = forms.without(candidates(), failed)
                rows = self._filter_rows(host_filter, table, rows, spec_obj,
                                         ran)
                count = len(rows)
                if count < before:
                    changed = changed[forms.member(changed, rows, len(table))]
            history.append((type(host_filter).__name__, before, count))
            if not count:
                LOG.debug('Filter %s returned 0 hosts', history[-1][0])
                break
        metrics.filtered(history)
        if rows is None:
            removed = (np.concatenate(failed) if failed
                       else np.zeros(0, dtype=np.intp))
        else:
            everyone = candidates()
            removed = everyone[~forms.member(everyone, rows,
                                                 len(table))]
        return Refiltered(changed, removed, ran, history, count)

    def _filter_rows(self, host_filter: BaseHostFilter, table: 'HostTable',
                     rows: npt.NDArray[np.intp], spec_obj: 'RequestSpec',
                     ran: list[BaseHostFilter]) -> npt.NDArray[np.intp]:
        found = forms.forms(host_filter)
        if found.passes_all and host_filter.passes_all(spec_obj):
            ran.append(host_filter)
            return rows
        mask = None
        if found.host_mask:
            mask = host_filter.host_mask(table, rows, spec_obj)
        if mask is not None:
            ran.append(host_filter)
            return rows[mask]
        key = None
        if found.memo_key:
            key = host_filter.memo_key(spec_obj)
        if key is not None:
            scope = None
            if found.memo_scope:
                scope = host_filter.memo_scope(spec_obj)
            return rows[table.memo(
                host_filter, key,
                lambda state: host_filter.host_passes(state, spec_obj),
                rows, scope=scope)]
        states = table.states_at(rows)
        for earlier in ran:
            # A per-host filter may read the limits (JsonFilter's
            # ``$limits``): write those the vectorised filters skipped.
            for state in states:
                earlier.apply_limits(state, spec_obj)
        passed = host_filter.filter_all(states, spec_obj)
        return table.rows_of(passed or [])


# The per-host methods a fast form must stand for.
_REFERENCE = forms.REFERENCE


def host_local(host_filter: BaseHostFilter) -> bool:
    """Whether ``host_filter`` is ``HOST_LOCAL``, as declared by the class
    defining how it filters or a subclass of it (a plug-in overriding
    ``host_passes`` of a built-in filter is not assumed local)."""
    return bool(host_filter.HOST_LOCAL) and forms.forms(host_filter).host_local


def _passes_all(host_filter: BaseHostFilter,
                spec_obj: 'RequestSpec') -> bool:
    """``host_filter.passes_all(spec_obj)``, when declared by the class
    defining how the filter filters (or a subclass of it)."""
    return forms.forms(host_filter).passes_all and host_filter.passes_all(
        spec_obj)


class Refiltered(typing.NamedTuple):
    """What ``HostFilterHandler.get_filtered_changed`` returns."""

    changed: npt.NDArray[np.intp]
    removed: npt.NDArray[np.intp]
    ran: list[BaseHostFilter]
    history: list[tuple[str, int, int]]
    # How many candidates pass.
    passing: int


class Filtered(typing.NamedTuple):
    """What ``HostFilterHandler.get_filtered_rows`` returns."""

    rows: npt.NDArray[np.intp]
    ran: list[BaseHostFilter]
    # ``(filter name, hosts before, hosts after)`` of each filter run.
    history: list[tuple[str, int, int]]


def log_refusal(spec_obj: 'RequestSpec',
                history: list[tuple[str, int, int]]) -> None:
    """Log, at INFO as Nova does, the filter that left no host for a
    request it refuses, and the counts of every filter of ``history``."""
    LOG.info('Filter %s returned 0 hosts', history[-1][0])
    LOG.info("Filtering removed all hosts for the request with "
             "instance ID '%s'. Filter results: %s; %s",
             spec_obj.obj_get('instance_uuid'),
             ['%s: (start: %d, end: %d)' % h for h in history],
             removal_summary(history))


def removal_summary(history: list[tuple[str, int, int]]) -> str:
    """``0/4 hosts available: 2 ComputeFilter, 1 RamFilter``: the hosts
    each filter of ``history`` (``(name, start, end)``) removed, most
    first (counts only: no host is named)."""
    if not history:
        return '0/0 hosts available'
    removed: dict[str, int] = {}
    for name, start, end in history:
        if start > end:
            removed[name] = removed.get(name, 0) + start - end
    groups = sorted(removed.items(), key=lambda item: (-item[1], item[0]))
    text = '%d/%d hosts available' % (history[-1][2], history[0][1])
    if groups:
        text += ': ' + ', '.join('%d %s' % (count, name)
                                 for name, count in groups)
    return text


def all_filters() -> list[type[BaseHostFilter]]:
    """Every filter class registered in the ``scheduler.filters``
    namespace (the default of ``available_filters``)."""
    return list(loadables.entry_point_classes(NAMESPACE).values())


def load_filters(available_filters: Iterable[str],
                 enabled_filters: typing.Sequence[str]
                 ) -> list[BaseHostFilter]:
    """Instantiate the enabled filters, once each, in configured order.

    ``available_filters``: names or dotted paths (classes or functions
    returning classes).  ``enabled_filters``: class names.  Raises
    SchedulerHostFilterNotFound naming every enabled filter that is not
    available.
    """
    classes = loadables.resolve(available_filters, NAMESPACE, BaseHostFilter)
    by_name = {cls.__name__: cls for cls in classes
               if not cls.__name__.startswith('_')}
    missing = [name for name in enabled_filters if name not in by_name]
    if missing:
        raise exception.SchedulerHostFilterNotFound(
            filter_name=', '.join(missing))
    return [by_name[name]() for name in enabled_filters]
