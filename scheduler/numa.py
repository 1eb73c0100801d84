"""Host NUMA topologies, and fitting an instance's NUMA topology onto them.

Units: memory in **MiB**, page sizes in **KiB**, CPUs as host CPU ids.
``parse_host_topology`` reads ``compute_nodes.numa_topology`` (Nova's
primitive or a plain form), ``fit_instance_to_host`` is Nova's
``numa_fit_instance_to_host`` (Ocata, with the Pike emulator threads and
the Train ``pcpuset`` split), ``usage_from_instance`` its accounting and
``consume_numa_and_pci`` the consumption.  The rules, and what is not
implemented, are described in docs/numa.rst.
"""

import dataclasses
import functools
import json

from oslo_log import log as logging

from scheduler import exception
from scheduler import pci

LOG = logging.getLogger(__name__)

MEMPAGES_SMALL = -1
MEMPAGES_LARGE = -2
MEMPAGES_ANY = -3

CPU_POLICY_DEDICATED = 'dedicated'
CPU_POLICY_SHARED = 'shared'
THREAD_POLICY_PREFER = 'prefer'
THREAD_POLICY_ISOLATE = 'isolate'
THREAD_POLICY_REQUIRE = 'require'
EMULATOR_THREADS_ISOLATE = 'isolate'

# Upper bound on the cell pairs tried by one fit (see step 2 above).
MAX_SEARCH_STEPS = 20000

FORMAT_PRIMITIVE = 'primitive'
FORMAT_PLAIN = 'plain'

_DATA = 'nova_object.data'
_KIB_PER_MIB = 1024


class InvalidNUMATopology(exception.Invalid):
    """A ``numa_topology`` value that cannot be read."""

    msg_fmt = 'Invalid host NUMA topology: %(reason)s'


@dataclasses.dataclass(frozen=True)
class MemPages:
    """Pages of one size in one cell: counts of pages of ``size_kb`` KiB."""

    size_kb: int
    total: int
    used: int = 0
    reserved: int = 0

    @property
    def free(self):
        return self.total - self.used - self.reserved

    @property
    def free_kb(self):
        return self.free * self.size_kb


@dataclasses.dataclass(frozen=True)
class HostNUMACell:
    """One host NUMA cell (memory in MiB)."""

    id: int
    cpuset: frozenset
    memory: int
    cpu_usage: int = 0
    memory_usage: int = 0
    pinned_cpus: frozenset = frozenset()
    siblings: tuple = ()
    mempages: tuple = ()
    pcpuset: frozenset | None = None

    @property
    def avail_memory(self):
        """Memory not used by guests, MiB (negative when overcommitted)."""
        return self.memory - self.memory_usage

    def usable_cpus(self, pinned):
        """The CPUs a pinned (``pinned`` True) or unpinned guest may use."""
        if pinned and self.pcpuset is not None:
            return self.pcpuset
        return self.cpuset

    @property
    def free_pcpus(self):
        """CPUs a pinned guest could still get."""
        return self.usable_cpus(True) - self.pinned_cpus

    @property
    def threads_per_core(self):
        return max((len(group) for group in self.siblings), default=1)

    def core_of(self, cpu):
        """The sibling group holding ``cpu`` (``{cpu}`` when none)."""
        for group in self.siblings:
            if cpu in group:
                return group
        return frozenset((cpu,))


@dataclasses.dataclass(frozen=True)
class HostNUMATopology:
    """A host's NUMA cells; ``fmt`` and ``raw`` remember the stored shape
    so that ``topology_to_raw`` can write it back."""

    cells: tuple
    fmt: str = FORMAT_PLAIN
    raw: str | None = dataclasses.field(default=None, compare=False,
                                        repr=False)


# -- parsing ----------------------------------------------------------------

def _int(data, key, default=None):
    value = data.get(key)
    if value is None:
        if default is None:
            raise InvalidNUMATopology(reason='a cell has no %r' % key)
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidNUMATopology(reason='%s=%r is not a number'
                                  % (key, value))
    return int(value)


def _cpus(data, key, default=()):
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(
            isinstance(cpu, int) and not isinstance(cpu, bool)
            for cpu in value):
        raise InvalidNUMATopology(reason='%s=%r is not a list of CPU ids'
                                  % (key, value))
    return frozenset(value)


def _data(entry):
    if not isinstance(entry, dict):
        raise InvalidNUMATopology(reason='%r is not an object' % (entry,))
    data = entry.get(_DATA, entry)
    if not isinstance(data, dict):
        raise InvalidNUMATopology(reason='%r is not an object' % (entry,))
    return data


def _cell_from_dict(entry):
    data = _data(entry)
    siblings = data.get('siblings') or []
    mempages = data.get('mempages') or []
    if not isinstance(siblings, list) or not isinstance(mempages, list):
        raise InvalidNUMATopology(reason='siblings and mempages must be '
                                  'lists')
    pcpuset = None
    if data.get('pcpuset') is not None:
        pcpuset = _cpus(data, 'pcpuset')
    pages = []
    for page in mempages:
        page = _data(page)
        pages.append(MemPages(size_kb=_int(page, 'size_kb'),
                              total=_int(page, 'total'),
                              used=_int(page, 'used', 0),
                              reserved=_int(page, 'reserved', 0)))
    groups = [_cpus({'siblings': group}, 'siblings') for group in siblings]
    return HostNUMACell(
        id=_int(data, 'id'), cpuset=_cpus(data, 'cpuset'),
        memory=_int(data, 'memory'), cpu_usage=_int(data, 'cpu_usage', 0),
        memory_usage=_int(data, 'memory_usage', 0),
        pinned_cpus=_cpus(data, 'pinned_cpus'),
        siblings=tuple(sorted((group for group in groups if group),
                              key=min)),
        mempages=tuple(pages), pcpuset=pcpuset)


def _topology_from_dict(value, raw_text):
    if _DATA in value:
        fmt = FORMAT_PRIMITIVE
        data = value[_DATA]
    elif 'cells' in value:
        fmt = FORMAT_PLAIN
        data = value
    else:
        raise InvalidNUMATopology(reason='no "cells" in %r' % (value,))
    if not isinstance(data, dict) or not isinstance(data.get('cells'), list):
        raise InvalidNUMATopology(reason='"cells" is not a list')
    cells = tuple(_cell_from_dict(cell) for cell in data['cells'])
    if len({cell.id for cell in cells}) != len(cells):
        raise InvalidNUMATopology(reason='duplicate cell ids')
    return HostNUMATopology(cells=cells, fmt=fmt, raw=raw_text)


@functools.lru_cache(maxsize=4096)
def _parse_text(text):
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidNUMATopology(reason='not JSON: %s' % exc) from exc
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidNUMATopology(reason='not a JSON object')
    return _topology_from_dict(value, text)


def parse_host_topology(value):
    """The HostNUMATopology of a ``numa_topology`` value, or None.

    ``value``: None or ``''`` (no topology: None), a JSON string, its
    decoded dict, or a HostNUMATopology (returned as is).  Raises
    ``InvalidNUMATopology`` when it cannot be read.
    """
    if value is None or value == '':
        return None
    if isinstance(value, HostNUMATopology):
        return value
    if isinstance(value, bytes):
        value = value.decode('utf-8')
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, dict):
        return _topology_from_dict(value, json.dumps(value))
    raise InvalidNUMATopology(reason='unexpected %s' % type(value).__name__)


# -- writing back -----------------------------------------------------------

def _cell_fields(cell):
    fields = {'id': cell.id, 'cpuset': sorted(cell.cpuset),
              'memory': cell.memory, 'cpu_usage': cell.cpu_usage,
              'memory_usage': cell.memory_usage,
              'pinned_cpus': sorted(cell.pinned_cpus),
              'siblings': [sorted(group) for group in cell.siblings]}
    if cell.pcpuset is not None:
        fields['pcpuset'] = sorted(cell.pcpuset)
    return fields


def _page_fields(page):
    return {'size_kb': page.size_kb, 'total': page.total, 'used': page.used,
            'reserved': page.reserved}


def _primitive(name, version, data):
    return {'nova_object.name': name, 'nova_object.namespace': 'nova',
            'nova_object.version': version, _DATA: data,
            'nova_object.changes': sorted(data)}


def _fresh_dict(topology):
    cells = []
    for cell in topology.cells:
        pages = [_page_fields(page) for page in cell.mempages]
        fields = _cell_fields(cell)
        if topology.fmt == FORMAT_PRIMITIVE:
            fields['mempages'] = [_primitive('NUMAPagesTopology', '1.1', p)
                                  for p in pages]
            cells.append(_primitive(
                'NUMACell', '1.4' if cell.pcpuset is not None else '1.2',
                fields))
        else:
            fields['mempages'] = pages
            cells.append(fields)
    if topology.fmt == FORMAT_PRIMITIVE:
        return _primitive('NUMATopology', '1.2', {'cells': cells})
    return {'cells': cells}


def topology_to_dict(topology):
    """The topology as a JSON-able dict in its own shape (``fmt``).

    When it was parsed from JSON, that JSON is the template: only the
    usage fields (``cpu_usage``, ``memory_usage``, ``pinned_cpus``, pages
    ``used``) are replaced, every other key is kept.
    """
    if topology.raw is None:
        return _fresh_dict(topology)
    value = json.loads(topology.raw)
    data = value.get(_DATA, value)
    if len(data['cells']) != len(topology.cells):
        return _fresh_dict(topology)
    for entry, cell in zip(data['cells'], topology.cells, strict=True):
        cell_data = entry.get(_DATA, entry)
        cell_data['cpu_usage'] = cell.cpu_usage
        cell_data['memory_usage'] = cell.memory_usage
        cell_data['pinned_cpus'] = sorted(cell.pinned_cpus)
        by_size = {page.size_kb: page for page in cell.mempages}
        for page_entry in cell_data.get('mempages') or []:
            page_data = page_entry.get(_DATA, page_entry)
            page = by_size.get(page_data.get('size_kb'))
            if page is not None:
                page_data['used'] = page.used
        if _DATA in entry:
            changes = set(entry.get('nova_object.changes') or [])
            changes.update(('cpu_usage', 'memory_usage', 'pinned_cpus'))
            entry['nova_object.changes'] = sorted(changes)
    return value


def topology_to_raw(topology, like):
    """``topology`` in the type of ``like`` (the value it was read from):
    a JSON string for a string, a dict for a dict, else the object."""
    if topology is None:
        return None
    if isinstance(like, (str, bytes)):
        return json.dumps(topology_to_dict(topology), sort_keys=True)
    if isinstance(like, dict):
        return topology_to_dict(topology)
    return topology


# -- instance cells ---------------------------------------------------------

def _get(obj, name, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(name, default)
    elif hasattr(obj, 'obj_get'):
        value = obj.obj_get(name, default)
    else:
        value = getattr(obj, name, default)
    return default if value is None else value


def is_pinned(instance_cell):
    """Whether the cell asks for dedicated (pinned) CPUs."""
    return _get(instance_cell, 'cpu_policy') == CPU_POLICY_DEDICATED


@dataclasses.dataclass(frozen=True)
class _CellFit:
    host_index: int
    pagesize: int | None
    pinning: tuple = ()          # (guest vCPU, host CPU) pairs
    reserved: frozenset = frozenset()


def _choose_pagesize(host_cell, wanted, memory_mb):
    """The host page size (KiB) to back ``memory_mb`` with, or None."""
    sizes = sorted(page.size_kb for page in host_cell.mempages)
    if wanted == MEMPAGES_SMALL:
        candidates = sizes[:1]
    elif wanted == MEMPAGES_LARGE:
        candidates = list(reversed(sizes[1:]))
    elif wanted == MEMPAGES_ANY:
        candidates = list(reversed(sizes))
    else:
        candidates = [wanted]
    memory_kb = memory_mb * _KIB_PER_MIB
    by_size = {page.size_kb: page for page in host_cell.mempages}
    for size in candidates:
        page = by_size.get(size)
        if page is None or size <= 0:
            continue
        if memory_kb % size == 0 and memory_kb <= page.free_kb:
            return size
    return None


def _free_cores(host_cell, usable):
    """``[(threads, free threads)]`` per physical core of ``usable`` CPUs,
    each a sorted list, in CPU order."""
    free = usable - host_cell.pinned_cpus
    cores = []
    seen = set()
    for group in host_cell.siblings:
        threads = sorted(group & usable)
        if threads:
            seen.update(threads)
            cores.append(threads)
    cores.extend([cpu] for cpu in usable - seen)
    cores.sort(key=lambda threads: threads[0])
    return [(threads, [cpu for cpu in threads if cpu in free])
            for threads in cores]


def _pick_pcpus(host_cell, needed, thread_policy):
    """``needed`` free host CPUs for a pinned guest, in the order they
    will be given to its vCPUs, or None (thread policies: module
    docstring)."""
    cores = _free_cores(host_cell, host_cell.usable_cpus(True))
    if thread_policy == THREAD_POLICY_ISOLATE:
        whole = [threads for threads, free in cores
                 if free and len(free) == len(threads)]
        if len(whole) < needed:
            return None
        return [threads[0] for threads in whole[:needed]]
    require = thread_policy == THREAD_POLICY_REQUIRE
    if require and host_cell.threads_per_core < 2:
        return None
    for threads_no in sorted({len(free) for _, free in cores if free},
                             reverse=True):
        if require and threads_no < 2:
            break
        usable = [free for _, free in cores if len(free) >= threads_no]
        if threads_no * len(usable) >= needed:
            return [cpu for free in usable for cpu in free[:threads_no]][
                :needed]
    if require:
        return None
    everything = [cpu for _, free in cores for cpu in free]
    return everything[:needed] if len(everything) >= needed else None


def _ratio(limits, name):
    value = _get(limits, name)
    return None if value is None else float(value)


def _fit_cell(host_index, host_cell, instance_cell, limits, reserved_cpus):
    """How ``instance_cell`` fits on ``host_cell``: a _CellFit, or None."""
    memory = _get(instance_cell, 'memory', 0)
    vcpus = sorted(_get(instance_cell, 'cpuset', ()))
    wanted_pagesize = _get(instance_cell, 'pagesize')
    cpu_policy = _get(instance_cell, 'cpu_policy')
    if cpu_policy not in (None, CPU_POLICY_SHARED, CPU_POLICY_DEDICATED):
        return None
    pinned = cpu_policy == CPU_POLICY_DEDICATED
    pagesize = None
    if wanted_pagesize:
        pagesize = _choose_pagesize(host_cell, wanted_pagesize, memory)
        if pagesize is None:
            return None
    elif memory > host_cell.memory:
        return None
    if not pinned:
        reserved_cpus = 0
    needed = len(vcpus) + reserved_cpus
    if needed > len(host_cell.usable_cpus(pinned)):
        return None
    if pinned:
        if host_cell.avail_memory < memory:
            return None
        chosen = _pick_pcpus(host_cell, needed,
                             _get(instance_cell, 'cpu_thread_policy'))
        if chosen is None:
            return None
        return _CellFit(host_index, pagesize,
                        tuple(zip(vcpus, chosen[:len(vcpus)], strict=True)),
                        frozenset(chosen[len(vcpus):]))
    if limits is not None:
        ram_ratio = _ratio(limits, 'ram_allocation_ratio')
        cpu_ratio = _ratio(limits, 'cpu_allocation_ratio')
        if ram_ratio is not None and (host_cell.memory_usage + memory >
                                      host_cell.memory * ram_ratio):
            return None
        if cpu_ratio is not None and (host_cell.cpu_usage + len(vcpus) >
                                      len(host_cell.cpuset) * cpu_ratio):
            return None
    return _CellFit(host_index, pagesize)


class _SearchExhausted(Exception):
    pass


def _search(host, instance_cells, limits, reserved_on_first, accept):
    """The first assignment (in permutation order) whose every pair fits
    and that ``accept(fits)`` approves; a list of _CellFit or None."""
    memo = {}
    used = [False] * len(host.cells)
    chosen = []
    steps = [0]

    def pair(host_index, cell_index):
        key = (host_index, cell_index)
        if key not in memo:
            memo[key] = _fit_cell(
                host_index, host.cells[host_index], instance_cells[cell_index],
                limits, reserved_on_first if cell_index == 0 else 0)
        return memo[key]

    def place(cell_index):
        if cell_index == len(instance_cells):
            return accept(chosen)
        for host_index in range(len(host.cells)):
            if used[host_index]:
                continue
            steps[0] += 1
            if steps[0] > MAX_SEARCH_STEPS:
                raise _SearchExhausted()
            fit = pair(host_index, cell_index)
            if fit is None:
                continue
            used[host_index] = True
            chosen.append(fit)
            if place(cell_index + 1):
                return True
            chosen.pop()
            used[host_index] = False
        return False

    try:
        return list(chosen) if place(0) else None
    except _SearchExhausted:
        LOG.debug('Gave up fitting %d NUMA cells after %d steps',
                  len(instance_cells), MAX_SEARCH_STEPS)
        return None


def fit_instance_to_host(host_topology, instance_topology, limits=None,
                         pci_requests=None, pci_stats=None):
    """The instance topology fitted onto the host, or None (module
    docstring, "Fitting").

    ``host_topology``: anything ``parse_host_topology`` accepts (an
    unreadable value raises ``InvalidNUMATopology``);
    ``instance_topology``: an ``InstanceNUMATopology``; ``limits``: a
    ``NUMATopologyLimits`` (or a dict with its two ratios) or None;
    ``pci_requests``: ``InstancePCIRequests`` or a list of requests;
    ``pci_stats``: the host's PCI pools (anything ``pci.parse_pools``
    accepts).  Never changes its arguments.
    """
    host = parse_host_topology(host_topology)
    instance_cells = list(_get(instance_topology, 'cells', []))
    if host is None or not instance_cells:
        return None
    if len(host.cells) < len(instance_cells):
        return None
    requests = pci.request_list(pci_requests)
    pools = None
    if requests:
        if pci_stats is None:
            return None
        pools = pci.parse_pools(pci_stats)

    def accept(fits):
        if not requests:
            return True
        return pci.support_requests(
            pools, requests, [host.cells[fit.host_index].id for fit in fits])

    reserved = 1 if (_get(instance_topology, 'emulator_threads_policy') ==
                     EMULATOR_THREADS_ISOLATE) else 0
    fits = _search(host, instance_cells, limits, reserved, accept)
    if fits is None:
        return None
    fitted = instance_topology.obj_clone()
    for cell, fit in zip(fitted.cells, fits, strict=True):
        cell.id = host.cells[fit.host_index].id
        if fit.pagesize is not None:
            cell.pagesize = fit.pagesize
        if is_pinned(cell):
            cell.cpu_pinning_raw = {str(vcpu): pcpu
                                    for vcpu, pcpu in fit.pinning}
            cell.cpuset_reserved = set(fit.reserved) if fit.reserved \
                else None
    return fitted


# -- accounting -------------------------------------------------------------

def _cell_usage(host_cell, instance_cell, sign):
    memory = _get(instance_cell, 'memory', 0)
    vcpus = len(_get(instance_cell, 'cpuset', ()))
    reserved = set(_get(instance_cell, 'cpuset_reserved', ()) or ())
    thread_policy = _get(instance_cell, 'cpu_thread_policy')
    pinned = is_pinned(instance_cell)
    isolate = pinned and thread_policy == THREAD_POLICY_ISOLATE

    cpu_delta = vcpus
    if isolate:
        cpu_delta *= host_cell.threads_per_core
    cpu_delta += len(reserved)
    cpu_usage = host_cell.cpu_usage
    if not pinned or host_cell.pcpuset is None:
        cpu_usage = max(0, cpu_usage + sign * cpu_delta)

    pinned_cpus = host_cell.pinned_cpus
    if pinned:
        cpus = set(_get(instance_cell, 'cpu_pinning_raw', {}).values())
        cpus |= reserved
        if isolate:
            cpus = set().union(*(host_cell.core_of(cpu) for cpu in cpus))
        pinned_cpus = (pinned_cpus | cpus) if sign > 0 else \
            (pinned_cpus - cpus)

    mempages = host_cell.mempages
    pagesize = _get(instance_cell, 'pagesize')
    if pagesize and pagesize > 0:
        mempages = tuple(
            dataclasses.replace(page, used=max(
                0, page.used + sign * memory * _KIB_PER_MIB // page.size_kb))
            if page.size_kb == pagesize else page
            for page in mempages)
    return dataclasses.replace(
        host_cell, cpu_usage=cpu_usage,
        memory_usage=max(0, host_cell.memory_usage + sign * memory),
        pinned_cpus=frozenset(pinned_cpus), mempages=mempages)


def usage_from_instance(host_topology, fitted, free=False):
    """The host topology after adding (``free`` False) or removing the
    usage of ``fitted`` (a topology returned by ``fit_instance_to_host``,
    whose cell ids are host cell ids).  Returns a new HostNUMATopology."""
    host = parse_host_topology(host_topology)
    if host is None or fitted is None:
        return host
    sign = -1 if free else 1
    by_id = {}
    for instance_cell in _get(fitted, 'cells', []):
        by_id.setdefault(_get(instance_cell, 'id'), []).append(instance_cell)
    cells = []
    for host_cell in host.cells:
        for instance_cell in by_id.get(host_cell.id, ()):
            host_cell = _cell_usage(host_cell, instance_cell, sign)
        cells.append(host_cell)
    return dataclasses.replace(host, cells=tuple(cells))


def host_has_hyperthreading(host_topology):
    """Whether some cell has a sibling group of more than one CPU (what
    Nova's NUMATopologyFilter checks for the ``require`` thread policy)."""
    host = parse_host_topology(host_topology)
    return bool(host) and any(len(group) > 1 for cell in host.cells
                              for group in cell.siblings)


# -- consumption ------------------------------------------------------------

def consume_numa_and_pci(host_state, spec_obj):
    """Virtually take the request's NUMA and PCI resources on the host
    (as Nova's HostState consumption does); call it from
    ``HostState.consume_from_request`` under the host's lock.

    * When both the host and the request have a NUMA topology, the request
      is fitted with ``host_state.limits['numa_topology']`` (when a filter
      set it) and the host's PCI pools, and ``host_state.numa_topology``
      becomes the topology with that usage added, in its stored shape.
    * When the request has PCI requests and the host has pools, the
      devices are taken from ``host_state.pci_stats`` (on the fitted NUMA
      cells when there are some), written back in the stored shape.

    Returns the fitted InstanceNUMATopology (or None).  The request is not
    changed.  Never raises: as Nova's consume, a problem (no fit, no
    devices, an unreadable column) is logged as a warning and the rest of
    the consumption stands; the compute node's claim has the last word.
    """
    requested = spec_obj.obj_get('numa_topology')
    requests = pci.request_list(spec_obj.obj_get('pci_requests'))
    if not host_state.pci_stats:
        requests = []
    fitted = None
    try:
        if requested is not None and host_state.numa_topology:
            host = parse_host_topology(host_state.numa_topology)
            fitted = fit_instance_to_host(
                host, requested, limits=host_state.limits.get('numa_topology'),
                pci_requests=requests, pci_stats=host_state.pci_stats)
            if fitted is None:
                LOG.warning('%(host)s: the NUMA topology of instance '
                            '%(uuid)s no longer fits; its NUMA usage is not '
                            'recorded', {'host': host_state,
                                         'uuid': spec_obj.obj_get(
                                             'instance_uuid')})
            else:
                host_state.numa_topology = topology_to_raw(
                    usage_from_instance(host, fitted),
                    host_state.numa_topology)
        if requests:
            pools = pci.parse_pools(host_state.pci_stats)
            pci.apply_requests(pools, requests,
                               fitted.cells if fitted is not None else None)
            host_state.pci_stats = pci.pools_to_raw(pools,
                                                    host_state.pci_stats)
    except (exception.SchedulerException, ValueError, TypeError,
            KeyError) as exc:
        LOG.warning('%(host)s: could not record the NUMA/PCI usage of '
                    'instance %(uuid)s: %(error)s',
                    {'host': host_state,
                     'uuid': spec_obj.obj_get('instance_uuid'),
                     'error': exc})
    return fitted
