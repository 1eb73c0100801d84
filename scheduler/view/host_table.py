"""HostTable: a columnar view of the HostStates for vectorised filters
and weighers.

Row ``i`` of every column describes ``table.states[i]`` (in
``compute_nodes.id`` order).  ``sync`` copies changed HostStates,
``memo`` caches plug-in results per request key and host, and
``rows_with_instance`` finds the hosts running an instance; keeping it
current costs O(changed hosts).  A HostTable is not thread-safe: the
HostManager's lock guards it.  See docs/refresh.rst and
docs/fast-forms.rst.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import typing
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.resources import aggregates
from scheduler.resources import ratios
from scheduler.view import memo_scopes
from scheduler.view import servicegroup

if typing.TYPE_CHECKING:
    from scheduler.view.host_state import HostState

_T = typing.TypeVar('_T')
# A ``memo`` scope: AGGREGATE_METADATA or attribute names.
_Scope = str | tuple[str, ...]
_Fn = Callable[['HostState'], typing.Any]

MEMO_KEYS = 64
# How many row changes ``rows_changed_since`` remembers.
CHANGE_LOG = 4096
# ``memo`` scope: the function reads only the ``metadata`` of the host's
# aggregates (in the host's order).
AGGREGATE_METADATA = aggregates.AGGREGATE_METADATA
_EPOCH = datetime.datetime(1970, 1, 1)
_NO_HEARTBEAT = np.iinfo(np.int64).min


def _ratio(name: str) -> Callable[[HostState], float]:
    return lambda state: ratios.host_allocation_ratio(state, name)


def _service_flag(name: str) -> Callable[[HostState], bool]:
    return lambda state: bool(state.service and state.service.get(name))


def _heartbeat_us(state: HostState) -> int:
    """Microseconds since the epoch of the last heartbeat, or
    ``_NO_HEARTBEAT``."""
    last = servicegroup.last_heartbeat(state.service or {})
    if last is None:
        return _NO_HEARTBEAT
    since = last - _EPOCH   # exact: ``since // timedelta(microseconds=1)``
    return (since.days * 86400 + since.seconds) * 1000000 + since.microseconds


# column name -> (dtype, value of a HostState).  Sizes as in HostState:
# RAM and free disk in MiB, total disk in GiB, CPUs in vCPUs.
RESOURCE_COLUMNS = {
    'free_ram_mb': (np.float64, lambda s: s.free_ram_mb),
    'total_usable_ram_mb': (np.float64, lambda s: s.total_usable_ram_mb),
    'free_disk_mb': (np.float64, lambda s: s.free_disk_mb),
    'total_usable_disk_gb': (np.float64, lambda s: s.total_usable_disk_gb),
    'memory_mb_used': (np.float64, lambda s: s.memory_mb_used),
    'local_gb_used': (np.float64, lambda s: s.local_gb_used),
    'vcpus_total': (np.float64, lambda s: s.vcpus_total),
    'vcpus_used': (np.float64, lambda s: s.vcpus_used),
    'num_instances': (np.float64, lambda s: s.num_instances),
    'num_io_ops': (np.float64, lambda s: s.num_io_ops),
    'failed_builds': (np.float64, lambda s: s.failed_builds),
    'hypervisor_version': (np.float64, lambda s: s.hypervisor_version or 0),
    'cpu_allocation_ratio': (np.float64, _ratio('cpu_allocation_ratio')),
    'ram_allocation_ratio': (np.float64, _ratio('ram_allocation_ratio')),
    'disk_allocation_ratio': (np.float64, _ratio('disk_allocation_ratio')),
    'whole_node': (bool, lambda s: s.WHOLE_NODE),
}
# Columns of the host's ``service`` (the ``services`` row, a dict).
SERVICE_COLUMNS = {
    'has_service': (bool, lambda s: bool(s.service)),
    'disabled': (bool, _service_flag('disabled')),
    'forced_down': (bool, _service_flag('forced_down')),
    'heartbeat_us': (np.int64, _heartbeat_us),
}
COLUMNS = {**RESOURCE_COLUMNS, **SERVICE_COLUMNS}
# The columns a consumption changes (``consume_from_request`` of
# HostState and IronicNodeState): ``sync(part='usage')`` copies these.
USAGE_COLUMNS = ('free_ram_mb', 'free_disk_mb', 'memory_mb_used',
                 'local_gb_used', 'vcpus_used', 'num_instances', 'num_io_ops')
# The columns each ``part`` of ``HostTable.sync`` copies.
SYNCED = {'all': tuple(COLUMNS), 'service': tuple(SERVICE_COLUMNS),
          'usage': USAGE_COLUMNS}


_NO_UUIDS: frozenset[str] = frozenset()


def _uuids(instances: Iterable[str]) -> frozenset[str]:
    """The uuids of an ``instances`` dict, as a frozenset (one shared
    empty one: most hosts of a large view run nothing we track)."""
    return frozenset(instances) if instances else _NO_UUIDS


class HostTable:
    """Columns over a fixed list of HostStates.

    ``states``: the HostStates, row order; ``columns``: ``{name: ndarray}``
    (see ``COLUMNS``).  Two int64 version arrays tell caches what changed:
    ``row_version`` is bumped by every ``sync`` except a service-only one
    (a heartbeat), ``aggregate_version`` only when the host's aggregates
    changed.
    """

    def __init__(self, states: Iterable[HostState]) -> None:
        self.states = list(states)
        self.row_of = {(s.host, s.nodename): i
                       for i, s in enumerate(self.states)}
        self.rows_by_host = collections.defaultdict(list)
        for row, state in enumerate(self.states):
            self.rows_by_host[state.host].append(row)
        size = len(self.states)
        self.all_rows = np.arange(size, dtype=np.intp)
        self.row_version = np.zeros(size, dtype=np.int64)
        self.aggregate_version = np.zeros(size, dtype=np.int64)
        self.columns = {
            name: np.fromiter((get(s) for s in self.states), dtype=dtype,
                              count=size)
            for name, (dtype, get) in COLUMNS.items()}
        # (column array, getter) of the columns ``sync`` copies.
        self._copied = {part: [(self.columns[name], COLUMNS[name][1])
                               for name in names]
                        for part, names in SYNCED.items()}
        self._memos: dict[object, collections.OrderedDict] = {}
        self._groupings: dict[_Scope, _Grouping] = {}
        # Bumped with any version: ``memo`` reuses the codes it gave for
        # the same rows array while it has not moved.
        self._stamp = 0
        # The row of each bump of ``_stamp``, newest last.
        self._changes: collections.deque[int] = collections.deque(
            maxlen=CHANGE_LOG)
        # Bumped when any host's aggregates change (``per_table``).
        self._aggregate_stamp = 0
        self._per_table: dict[tuple[object, Hashable], tuple] = {}
        self._last_codes: dict[_Scope, tuple] = {}
        self._row_uuids = [_uuids(s.instances) for s in self.states]
        self._uuid_rows: collections.defaultdict[str, set[int]] = (
            collections.defaultdict(set))
        for row, uuids in enumerate(self._row_uuids):
            for uuid in uuids:
                self._uuid_rows[uuid].add(row)

    def __len__(self) -> int:
        return len(self.states)

    def matches(self, states: Sequence[HostState]) -> bool:
        """Whether this table has exactly ``states``, in this order."""
        return (len(states) == len(self.states) and
                all(a is b for a, b in zip(states, self.states,
                                           strict=True)))

    # -- keeping it current ------------------------------------------------

    def sync(self, states: Iterable[HostState], part: str = 'all') -> None:
        """Copy the columns of ``states`` (HostStates of this table).

        ``part``: ``'all'`` (bumps ``row_version``), ``'aggregates'``
        (also bumps ``aggregate_version``), ``'usage'`` (copies the
        ``USAGE_COLUMNS`` only, after a consumption; bumps
        ``row_version``) or ``'service'`` (copies the service columns
        only; no version changes).  O(len(states)).
        """
        copied = self._copied['all' if part == 'aggregates' else part]
        for state in states:
            row = self.row_of.get((state.host, state.nodename))
            if row is None or self.states[row] is not state:
                continue
            for column, get in copied:
                column[row] = get(state)
            if part == 'service':
                continue
            self.row_version[row] += 1
            self._stamp += 1
            self._changes.append(row)
            if part == 'aggregates':
                self.aggregate_version[row] += 1
                self._aggregate_stamp += 1
            self._reindex_instances(row, _uuids(state.instances))

    def _reindex_instances(self, row: int, uuids: frozenset[str]) -> None:
        old = self._row_uuids[row]
        if old == uuids:
            return
        for uuid in old - uuids:
            rows = self._uuid_rows[uuid]
            rows.discard(row)
            if not rows:
                del self._uuid_rows[uuid]
        for uuid in uuids - old:
            self._uuid_rows[uuid].add(row)
        self._row_uuids[row] = uuids

    @property
    def stamp(self) -> int:
        """A counter of the row changes (``sync`` but of the service
        columns only), for ``rows_changed_since``."""
        return self._stamp

    def rows_changed_since(self, stamp: int) -> np.ndarray | None:
        """The rows changed since ``stamp`` was the table's ``stamp`` (an
        intp array, maybe with repeats), or None when more than
        ``CHANGE_LOG`` changes happened since."""
        count = self._stamp - stamp
        if count < 0 or count > len(self._changes):
            return None
        return np.fromiter(itertools.islice(reversed(self._changes), count),
                           dtype=np.intp, count=count)

    # -- reading -----------------------------------------------------------

    def states_at(self, rows: Iterable[int]) -> list[HostState]:
        """The HostStates of ``rows`` (an iterable of row numbers)."""
        states = self.states
        return [states[row] for row in rows]

    def rows_of(self, states: Iterable[HostState]) -> np.ndarray:
        """Row numbers of ``states`` (HostStates of this table), as an
        intp array in the given order."""
        row_of = self.row_of
        return np.fromiter((row_of[(s.host, s.nodename)] for s in states),
                           dtype=np.intp)

    def host_rows(self, hosts: Iterable[str]) -> np.ndarray:
        """Sorted array of the rows of every node of the service hosts
        ``hosts`` (exact names)."""
        hosts = list(hosts)
        if len(hosts) == 1:
            # A host's rows are listed in increasing order.
            return np.array(self.rows_by_host.get(hosts[0], ()),
                            dtype=np.intp)
        found = [row for host in hosts
                 for row in self.rows_by_host.get(host, ())]
        return np.unique(np.asarray(found, dtype=np.intp))

    def rows_with_instance(self, uuid: str) -> Collection[int]:
        """The rows whose ``instances`` hold ``uuid`` (a set, maybe
        empty)."""
        return self._uuid_rows.get(uuid, ())

    def instance_counts(self, uuids: Iterable[str]) -> np.ndarray:
        """int array over all rows: how many of ``uuids`` each host runs
        (the keys of its ``instances``)."""
        counts = np.zeros(len(self.states), dtype=np.int64)
        for uuid in set(uuids):
            for row in self._uuid_rows.get(uuid, ()):
                counts[row] += 1
        return counts

    def heartbeat_age_us(self, now: datetime.datetime,
                         rows: np.ndarray | None = None) -> np.ndarray:
        """int64 array: microseconds between ``now`` (naive UTC) and each
        host's last heartbeat (of ``rows``, an intp array, else of every
        row), as ``servicegroup.service_is_up`` measures it (absolute
        value); hosts without one get the largest int64."""
        now_us = (now - _EPOCH) // datetime.timedelta(microseconds=1)
        beats = self.columns['heartbeat_us']
        if rows is not None:
            beats = beats[rows]
        age = np.abs(now_us - beats)
        age[beats == _NO_HEARTBEAT] = np.iinfo(np.int64).max
        return age

    def up_mask(self, now: datetime.datetime,
                rows: np.ndarray | None = None) -> np.ndarray:
        """bool array: which hosts (of ``rows``, an intp array, else every
        row) have a compute service that is up at ``now`` (naive UTC), as
        ``servicegroup.service_is_up`` decides: not forced down,
        heartbeat within ``service_down_time``."""
        columns = self.columns
        has_service, forced_down = (columns['has_service'],
                                    columns['forced_down'])
        if rows is not None:
            has_service, forced_down = has_service[rows], forced_down[rows]
        return (has_service & ~forced_down &
                (self.heartbeat_age_us(now, rows) <=
                 servicegroup.service_down_time() * 1000000))

    def memo(self, owner: object, key: Hashable, fn: _Fn, rows: np.ndarray,
             dtype: npt.DTypeLike = bool,
             scope: _Scope | None = None) -> np.ndarray:
        """``fn(state)`` for the HostStates of ``rows``, as an array.

        Results are kept per ``(owner, key)``; ``key`` must capture
        everything besides the HostState that ``fn`` depends on.
        ``scope`` says what of the HostState ``fn`` reads:

        * None: anything but the host's ``service`` (whose changes bump no
          version); a row is recomputed when its ``row_version`` changed;
        * ``AGGREGATE_METADATA``: only the ``metadata`` of its aggregates;
        * a tuple of attribute names: only those public data attributes
          (as ``attributes.public_attribute`` reads them).

        With a scope, ``fn`` runs once per distinct value of that part
        (equal types and contents) among ``rows``, on one of its hosts.
        ``fn`` may raise; results computed before the exception stay
        cached.
        """
        if scope is None:
            return self._memo_rows(owner, key, fn, rows, dtype)
        grouping = self._grouping(scope)
        codes = self._codes(scope, grouping, rows)
        entry = self._memo_entry(owner, (scope, key),
                                 lambda: _GroupResults(dtype))
        values, known = entry.arrays(grouping)
        missing = ~known[codes]
        if missing.any():
            missing_rows = rows[missing]
            todo, first = np.unique(codes[missing], return_index=True)
            for code, at in zip(todo.tolist(), first.tolist(),
                                strict=True):
                values[code] = fn(self.states[missing_rows[at]])
                known[code] = True
        return values[codes]

    def per_table(self, owner: object, key: Hashable, fn: _Fn,
                  dtype: npt.DTypeLike = float) -> np.ndarray | np.generic:
        """``fn(state)`` for every row, where ``fn`` reads only the
        metadata of the host's aggregates (a weigher's multiplier): a
        scalar when every row has the same value, else an array over all
        rows; computed again only after some host's aggregates changed.
        A caller indexes an array with its rows and uses a scalar as is,
        which saves a gather per weigher and decision."""
        cached = self._per_table.get((owner, key))
        if cached is not None and cached[0] == self._aggregate_stamp:
            return cached[1]
        values: np.ndarray | np.generic
        values = self.memo(owner, key, fn, self.all_rows, dtype=dtype,
                           scope=AGGREGATE_METADATA)
        if len(values) and (values == values[0]).all():
            values = values.dtype.type(values[0])
        if len(self._per_table) >= MEMO_KEYS:
            self._per_table.clear()
        self._per_table[(owner, key)] = (self._aggregate_stamp, values)
        return values

    def _codes(self, scope: _Scope, grouping: _Grouping,
               rows: np.ndarray) -> np.ndarray:
        """``grouping.codes_at(rows)``, reused for the same ``rows`` array
        (the weighers of one weighing share it) until a sync."""
        last = self._last_codes.get(scope)
        if last is not None and last[0] is rows and last[1] == self._stamp:
            return last[2]
        codes = grouping.codes_at(rows, self.states)
        self._last_codes[scope] = (rows, self._stamp, codes)
        return codes

    def _memo_entry(self, owner: object, key: Hashable,
                    make: Callable[[], _T]) -> _T:
        """The cached entry ``(owner, key)``, made by ``make()`` when
        missing; least recently used keys beyond ``MEMO_KEYS`` dropped."""
        cache = self._memos.setdefault(owner, collections.OrderedDict())
        entry = cache.get(key)
        if entry is None:
            entry = cache[key] = make()
            if len(cache) > MEMO_KEYS:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return entry

    def _memo_rows(self, owner: object, key: Hashable, fn: _Fn,
                   rows: np.ndarray, dtype: npt.DTypeLike) -> np.ndarray:
        size = len(self.states)
        values, seen = self._memo_entry(
            owner, key, lambda: (np.zeros(size, dtype=dtype),
                                 np.full(size, -1, dtype=np.int64)))
        current = self.row_version
        stale = rows[seen[rows] != current[rows]]
        states = self.states
        for row in stale.tolist():
            values[row] = fn(states[row])
            seen[row] = current[row]
        return values[rows]

    def _grouping(self, scope: _Scope) -> _Grouping:
        """The ``_Grouping`` of a memo scope.  A tuple of several
        attributes groups by the codes of each attribute's own grouping,
        so each attribute's values are read and compared once for all
        the scopes that name it."""
        grouping = self._groupings.get(scope)
        if grouping is None:
            size = len(self.states)
            if scope == AGGREGATE_METADATA:
                grouping = _Grouping(size, self.aggregate_version,
                                     signature=memo_scopes.aggregate_metadata)
            elif len(scope) == 1:
                grouping = _Grouping(size, self.row_version,
                                     signature=memo_scopes.attribute(scope[0]))
            else:
                grouping = _Grouping(
                    size, self.row_version,
                    parts=[self._grouping((name,)) for name in scope])
            self._groupings[scope] = grouping
        return grouping


class _Grouping:
    """Hosts with equal values of one part (a ``memo`` scope) share a
    code: ``codes_at(rows)`` gives them, computing the value only for rows
    whose version changed since.  The value is ``signature(state)``, or
    the tuple of the codes of the ``parts`` groupings.  When more values
    were seen than twice the rows, or a part's codes started over, the
    codes start over (a new ``generation``), so values that keep changing
    cannot grow it without bound."""

    def __init__(self, size: int, versions: np.ndarray,
                 signature: _Fn | None = None,
                 parts: Sequence[_Grouping] = ()) -> None:
        self.signature = signature
        self.parts = parts
        self.part_generations: list[int] | None = None
        self.versions = versions    # the table's array, updated in place
        self.codes = np.zeros(size, dtype=np.intp)
        self.seen = np.full(size, -1, dtype=np.int64)
        self.values: dict[typing.Any, int] = {}
        self.generation = 0
        self.max_values = 2 * size + MEMO_KEYS

    def _start_over(self) -> None:
        self.values.clear()
        self.seen[:] = -1
        self.generation += 1

    def codes_at(self, rows: np.ndarray,
                 states: Sequence[HostState]) -> np.ndarray:
        part_codes = [part.codes_at(rows, states) for part in self.parts]
        generations = [part.generation for part in self.parts]
        if generations != self.part_generations:
            if self.part_generations is not None:
                self._start_over()
            self.part_generations = generations
        stale = self.seen[rows] != self.versions[rows]
        if len(self.values) + np.count_nonzero(stale) > self.max_values:
            self._start_over()
            stale[:] = True
        stale_rows = rows[stale].tolist()
        signatures: Iterable[typing.Any]
        if self.parts:
            signatures = zip(*(codes[stale].tolist()
                               for codes in part_codes), strict=True)
        else:
            signature_of = self.signature
            assert signature_of is not None  # given when there are no parts
            signatures = (signature_of(states[row]) for row in stale_rows)
        values, codes, seen, versions = (self.values, self.codes, self.seen,
                                         self.versions)
        for row, signature in zip(stale_rows, signatures, strict=True):
            codes[row] = values.setdefault(signature, len(values))
            seen[row] = versions[row]
        return codes[rows]


class _GroupResults:
    """A scoped memo's results, one per code of a ``_Grouping``."""

    def __init__(self, dtype: npt.DTypeLike) -> None:
        self.dtype = dtype
        self.generation: int | None = None
        self.values: np.ndarray | None = None
        self.known: np.ndarray | None = None

    def arrays(self, grouping: _Grouping) -> tuple[np.ndarray, np.ndarray]:
        """``(values, known)`` sized for the grouping's codes; emptied
        when its codes started over."""
        size = len(grouping.values)
        if self.generation != grouping.generation:
            self.generation = grouping.generation
            self.values = np.zeros(size, dtype=self.dtype)
            self.known = np.zeros(size, dtype=bool)
        else:
            assert self.values is not None and self.known is not None
            if len(self.values) < size:
                grow = size - len(self.values)
                self.values = np.concatenate(
                    (self.values, np.zeros(grow, dtype=self.dtype)))
                self.known = np.concatenate((self.known,
                                             np.zeros(grow, dtype=bool)))
        return self.values, self.known

