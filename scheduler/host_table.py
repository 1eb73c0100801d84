"""HostTable: a columnar view of the HostStates for vectorised filters
and weighers.

The HostManager keeps one HostTable over its HostStates, in
``compute_nodes.id`` order.  Row ``i`` of every column describes
``table.states[i]``; filters and weighers that have a vectorised form
(``host_mask`` / ``weigh_rows``) read the columns for an array of row
numbers instead of calling Python once per host.  The plain per-host
contract (``host_passes`` / ``_weigh_object``) stays the reference: every
vectorised form computes exactly what it does, host by host.

Keeping it current costs O(changed hosts), never O(hosts):

* ``sync(states)`` copies the numeric columns of the given HostStates and
  bumps their row versions; the HostManager calls it for every HostState
  it refreshes from the database, consumes, or whose aggregates or
  instances change;
* ``memo(owner, key, fn, rows)`` caches per-host results of a plug-in's
  Python function for one request key (an extra-spec set, an image
  property set...), recomputing only the rows whose version changed since
  (at most ``MEMO_KEYS`` keys per owner, least recently used dropped);
* ``rows_with_instance(uuid)`` answers "which hosts run this instance" from
  an index kept per row, for the server-group filters and weighers.

A change in the set of nodes builds a new table (O(hosts), rare).  A
HostTable is not thread-safe: the HostManager's lock guards it.
"""

import collections
import datetime

import numpy as np

from scheduler import servicegroup
from scheduler.filters import utils

MEMO_KEYS = 64
_EPOCH = datetime.datetime(1970, 1, 1)
_NO_HEARTBEAT = np.iinfo(np.int64).min


def _ratio(name):
    return lambda state: utils.host_allocation_ratio(state, name)


def _service_flag(name):
    return lambda state: bool(state.service and state.service.get(name))


def _heartbeat_us(state):
    """Microseconds since the epoch of the last heartbeat, or
    ``_NO_HEARTBEAT``."""
    last = servicegroup.last_heartbeat(state.service or {})
    if last is None:
        return _NO_HEARTBEAT
    return (last - _EPOCH) // datetime.timedelta(microseconds=1)


# column name -> (dtype, value of a HostState).  Sizes as in HostState:
# RAM and free disk in MiB, total disk in GiB, CPUs in vCPUs.
RESOURCE_COLUMNS = {
    'free_ram_mb': (np.float64, lambda s: s.free_ram_mb),
    'total_usable_ram_mb': (np.float64, lambda s: s.total_usable_ram_mb),
    'free_disk_mb': (np.float64, lambda s: s.free_disk_mb),
    'total_usable_disk_gb': (np.float64, lambda s: s.total_usable_disk_gb),
    'vcpus_total': (np.float64, lambda s: s.vcpus_total),
    'vcpus_used': (np.float64, lambda s: s.vcpus_used),
    'num_instances': (np.float64, lambda s: s.num_instances),
    'num_io_ops': (np.float64, lambda s: s.num_io_ops),
    'failed_builds': (np.float64, lambda s: s.failed_builds),
    'hypervisor_version': (np.float64, lambda s: s.hypervisor_version or 0),
    'cpu_allocation_ratio': (np.float64, _ratio('cpu_allocation_ratio')),
    'ram_allocation_ratio': (np.float64, _ratio('ram_allocation_ratio')),
    'disk_allocation_ratio': (np.float64, _ratio('disk_allocation_ratio')),
}
# Columns of the host's ``service`` (the ``services`` row, a dict).
SERVICE_COLUMNS = {
    'has_service': (bool, lambda s: bool(s.service)),
    'disabled': (bool, _service_flag('disabled')),
    'forced_down': (bool, _service_flag('forced_down')),
    'heartbeat_us': (np.int64, _heartbeat_us),
}
COLUMNS = {**RESOURCE_COLUMNS, **SERVICE_COLUMNS}


class HostTable:
    """Columns over a fixed list of HostStates.

    ``states``: the HostStates, row order; ``columns``: ``{name: ndarray}``
    (see ``COLUMNS``).  Two int64 version arrays tell caches what changed:
    ``row_version`` is bumped by every ``sync`` except a service-only one
    (a heartbeat), ``aggregate_version`` only when the host's aggregates
    changed.
    """

    def __init__(self, states):
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
        self._memos = {}
        self._row_uuids = [frozenset(s.instances) for s in self.states]
        self._uuid_rows = collections.defaultdict(set)
        for row, uuids in enumerate(self._row_uuids):
            for uuid in uuids:
                self._uuid_rows[uuid].add(row)

    def __len__(self):
        return len(self.states)

    def matches(self, states):
        """Whether this table has exactly ``states``, in this order."""
        return (len(states) == len(self.states) and
                all(a is b for a, b in zip(states, self.states,
                                           strict=True)))

    # -- keeping it current ------------------------------------------------

    def sync(self, states, part='all'):
        """Copy the columns of ``states`` (HostStates of this table).

        ``part``: ``'all'`` (bumps ``row_version``), ``'aggregates'``
        (also bumps ``aggregate_version``) or ``'service'`` (copies the
        service columns only; no version changes).  O(len(states)).
        """
        columns = SERVICE_COLUMNS if part == 'service' else COLUMNS
        for state in states:
            row = self.row_of.get((state.host, state.nodename))
            if row is None or self.states[row] is not state:
                continue
            for name, (_dtype, get) in columns.items():
                self.columns[name][row] = get(state)
            if part == 'service':
                continue
            self.row_version[row] += 1
            if part == 'aggregates':
                self.aggregate_version[row] += 1
            self._reindex_instances(row, frozenset(state.instances))

    def _reindex_instances(self, row, uuids):
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

    # -- reading -----------------------------------------------------------

    def states_at(self, rows):
        """The HostStates of ``rows`` (an iterable of row numbers)."""
        states = self.states
        return [states[row] for row in rows]

    def rows_of(self, states):
        """Row numbers of ``states`` (HostStates of this table), as an
        intp array in the given order."""
        row_of = self.row_of
        return np.fromiter((row_of[(s.host, s.nodename)] for s in states),
                           dtype=np.intp)

    def host_rows(self, hosts):
        """Sorted array of the rows of every node of the service hosts
        ``hosts`` (exact names)."""
        found = [row for host in hosts
                 for row in self.rows_by_host.get(host, ())]
        return np.unique(np.asarray(found, dtype=np.intp))

    def rows_with_instance(self, uuid):
        """The rows whose ``instances`` hold ``uuid`` (a set, maybe
        empty)."""
        return self._uuid_rows.get(uuid, ())

    def instance_counts(self, uuids):
        """int array over all rows: how many of ``uuids`` each host runs
        (the keys of its ``instances``)."""
        counts = np.zeros(len(self.states), dtype=np.int64)
        for uuid in set(uuids):
            for row in self._uuid_rows.get(uuid, ()):
                counts[row] += 1
        return counts

    def heartbeat_age_us(self, now):
        """int64 array: microseconds between ``now`` (naive UTC) and each
        host's last heartbeat, as ``servicegroup.service_is_up`` measures
        it (absolute value); hosts without one get the largest int64."""
        now_us = (now - _EPOCH) // datetime.timedelta(microseconds=1)
        beats = self.columns['heartbeat_us']
        age = np.abs(now_us - beats)
        age[beats == _NO_HEARTBEAT] = np.iinfo(np.int64).max
        return age

    def memo(self, owner, key, fn, rows, dtype=bool, versions=None):
        """``fn(state)`` for the HostStates of ``rows``, as an array.

        Results are kept per ``(owner, key)``: a row is recomputed only
        when its version changed since (``versions``: ``row_version``, the
        default, or ``aggregate_version`` for a function of the host's
        aggregates only).  ``key`` must capture everything besides the
        HostState that ``fn`` depends on; ``fn`` must not read the
        host's ``service``, whose changes bump no version.  ``fn`` may
        raise; rows computed before the exception stay cached.
        """
        current = self.row_version if versions is None else versions
        cache = self._memos.setdefault(owner, collections.OrderedDict())
        entry = cache.get(key)
        if entry is None:
            entry = (np.zeros(len(self.states), dtype=dtype),
                     np.full(len(self.states), -1, dtype=np.int64))
            cache[key] = entry
            if len(cache) > MEMO_KEYS:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        values, seen = entry
        stale = rows[seen[rows] != current[rows]]
        states = self.states
        for row in stale.tolist():
            values[row] = fn(states[row])
            seen[row] = current[row]
        return values[rows]
