"""Fitting an instance's NUMA topology onto a host's, and its accounting.

``fit_instance_to_host`` is Nova's ``numa_fit_instance_to_host`` (Ocata,
with the Pike emulator threads and the Train ``pcpuset`` split),
``usage_from_instance`` its accounting and ``consume_numa_and_pci`` the
consumption.  Host topologies are read by
``scheduler.resources.numa_topology``.  Units: memory in MiB,
page sizes in KiB, CPUs as host CPU ids.  The rules, and what is not
implemented, are described in docs/numa.rst.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

from oslo_log import log as logging

from scheduler import exception
from scheduler.resources import pci_pools
from scheduler.resources.numa_topology import HostNUMACell
from scheduler.resources.numa_topology import HostNUMATopology
from scheduler.resources.numa_topology import parse_host_topology
from scheduler.resources.numa_topology import topology_to_raw

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

# Upper bound on the cell pairs tried by one fit (docs/numa.rst, step 2).
MAX_SEARCH_STEPS = 20000

_KIB_PER_MIB = 1024


# -- instance cells ---------------------------------------------------------

def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(name, default)
    elif hasattr(obj, 'obj_get'):
        value = obj.obj_get(name, default)
    else:
        value = getattr(obj, name, default)
    return default if value is None else value


def is_pinned(instance_cell: Any) -> bool:
    """Whether the cell asks for dedicated (pinned) CPUs."""
    return _get(instance_cell, 'cpu_policy') == CPU_POLICY_DEDICATED


@dataclasses.dataclass(frozen=True)
class _CellFit:
    host_index: int
    pagesize: int | None
    pinning: tuple = ()          # (guest vCPU, host CPU) pairs
    reserved: frozenset = frozenset()


def _choose_pagesize(host_cell: HostNUMACell, wanted: int,
                     memory_mb: int) -> int | None:
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


def _free_cores(host_cell: HostNUMACell, usable: frozenset[int]
                ) -> list[tuple[list[int], list[int]]]:
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


def _pick_pcpus(host_cell: HostNUMACell, needed: int,
                thread_policy: str | None) -> list[int] | None:
    """``needed`` free host CPUs for a pinned guest, in the order they
    will be given to its vCPUs, or None (thread policies:
    docs/numa.rst)."""
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


def _ratio(limits: Any, name: str) -> float | None:
    value = _get(limits, name)
    return None if value is None else float(value)


def _fit_cell(host_index: int, host_cell: HostNUMACell, instance_cell: Any,
              limits: Any, reserved_cpus: int) -> _CellFit | None:
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


def _search(host: HostNUMATopology, instance_cells: list[Any], limits: Any,
            reserved_on_first: int,
            accept: Callable[[list[_CellFit]], bool]
            ) -> list[_CellFit] | None:
    """The first assignment (in permutation order) whose every pair fits
    and that ``accept(fits)`` approves; a list of _CellFit or None."""
    memo: dict[tuple[int, int], _CellFit | None] = {}
    used = [False] * len(host.cells)
    chosen: list[_CellFit] = []
    steps = [0]

    def pair(host_index: int, cell_index: int) -> _CellFit | None:
        key = (host_index, cell_index)
        if key not in memo:
            memo[key] = _fit_cell(
                host_index, host.cells[host_index], instance_cells[cell_index],
                limits, reserved_on_first if cell_index == 0 else 0)
        return memo[key]

    def place(cell_index: int) -> bool:
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


def fit_instance_to_host(host_topology: Any, instance_topology: Any,
                         limits: Any = None, pci_requests: Any = None,
                         pci_stats: Any = None,
                         provider_mapping: Any = None) -> Any:
    """The instance topology fitted onto the host, or None
    (docs/numa.rst, "Fitting").

    ``host_topology``: anything ``parse_host_topology`` accepts (an
    unreadable value raises ``InvalidNUMATopology``);
    ``instance_topology``: an ``InstanceNUMATopology``; ``limits``: a
    ``NUMATopologyLimits`` (or a dict with its two ratios) or None;
    ``pci_requests``: ``InstancePCIRequests`` or a list of requests;
    ``pci_stats``: the host's PCI pools (anything ``pci_pools.parse_pools``
    accepts); ``provider_mapping``: an allocation candidate's
    ``mappings``, which decide the pools of PCI requests in Placement
    (``pci_pools.support_requests``; Nova 34), or None.  Never changes
    its arguments.
    """
    host = parse_host_topology(host_topology)
    instance_cells = list(_get(instance_topology, 'cells', []))
    if host is None or not instance_cells:
        return None
    if len(host.cells) < len(instance_cells):
        return None
    requests = pci_pools.request_list(pci_requests)
    pools = None
    if requests:
        if pci_stats is None:
            return None
        pools = pci_pools.parse_pools(pci_stats)

    def accept(fits: list[_CellFit]) -> bool:
        if not requests:
            return True
        return pci_pools.support_requests(
            pools, requests, [host.cells[fit.host_index].id for fit in fits],
            provider_mapping)

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

def _cell_usage(host_cell: HostNUMACell, instance_cell: Any,
                sign: int) -> HostNUMACell:
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


def usage_from_instance(host_topology: Any, fitted: Any,
                        free: bool = False) -> HostNUMATopology | None:
    """The host topology after adding (``free`` False) or removing the
    usage of ``fitted`` (a topology returned by ``fit_instance_to_host``,
    whose cell ids are host cell ids).  Returns a new HostNUMATopology."""
    host = parse_host_topology(host_topology)
    if host is None or fitted is None:
        return host
    sign = -1 if free else 1
    by_id: dict[int, list[Any]] = {}
    for instance_cell in _get(fitted, 'cells', []):
        by_id.setdefault(_get(instance_cell, 'id'), []).append(instance_cell)
    cells = []
    for host_cell in host.cells:
        for instance_cell in by_id.get(host_cell.id, ()):
            host_cell = _cell_usage(host_cell, instance_cell, sign)
        cells.append(host_cell)
    return dataclasses.replace(host, cells=tuple(cells))


def host_has_hyperthreading(host_topology: Any) -> bool:
    """Whether some cell has a sibling group of more than one CPU (what
    Nova's NUMATopologyFilter checks for the ``require`` thread policy)."""
    host = parse_host_topology(host_topology)
    return host is not None and any(len(group) > 1 for cell in host.cells
                                    for group in cell.siblings)


# -- consumption ------------------------------------------------------------

def consume_numa_and_pci(host_state: Any, spec_obj: Any) -> Any:
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

    In Placement mode both follow the host's first surviving allocation
    candidate (``host_state.allocation_candidates[0]``, the one claimed):
    its ``mappings`` decide the PCI pools, as Nova 34 consumes with the
    claimed candidate's mappings.

    Returns the fitted InstanceNUMATopology (or None).  The request is not
    changed.  Never raises: as Nova's consume, a problem (no fit, no
    devices, an unreadable column) is logged as a warning and the rest of
    the consumption stands; the compute node's claim has the last word.
    """
    requested = spec_obj.obj_get('numa_topology')
    requests = pci_pools.request_list(spec_obj.obj_get('pci_requests'))
    if not host_state.pci_stats:
        requests = []
    fitted = None
    try:
        mapping = (_claimed_mapping(host_state)
                   if requested is not None or requests else None)
        if requested is not None and host_state.numa_topology:
            host = parse_host_topology(host_state.numa_topology)
            fitted = fit_instance_to_host(
                host, requested, limits=host_state.limits.get('numa_topology'),
                pci_requests=requests, pci_stats=host_state.pci_stats,
                provider_mapping=mapping)
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
            pools = pci_pools.parse_pools(host_state.pci_stats)
            pci_pools.apply_requests(
                pools, requests, fitted.cells if fitted is not None else None,
                mapping)
            host_state.pci_stats = pci_pools.pools_to_raw(pools,
                                                    host_state.pci_stats)
    except (exception.SchedulerException, ValueError, TypeError,
            KeyError) as exc:
        LOG.warning('%(host)s: could not record the NUMA/PCI usage of '
                    'instance %(uuid)s: %(error)s',
                    {'host': host_state,
                     'uuid': spec_obj.obj_get('instance_uuid'),
                     'error': exc})
    return fitted


def _claimed_mapping(host_state: Any) -> Any:
    """The ``mappings`` of the allocation candidate claimed on the host
    (its first surviving one), or None outside Placement mode."""
    candidates = getattr(host_state, 'allocation_candidates', None)
    if not candidates:
        return None
    return candidates[0].get('mappings')
