"""Fleet capacity, the trace's flavor mix and the capacity lower bound.

Resources are ``RESOURCES``: vCPUs, RAM in MiB, disk in GiB and GPUs, in
that order, the last axis of every array here.  GPUs are whole PCI
devices (``gpus``), with no allocation ratio (1.0), 0 on a fleet without
GPUs; an array of three columns (written before GPUs were counted) reads
as one without GPUs (``widen``).

``FleetCapacity``
    Per compute node (in fleet order, i.e. ``compute_nodes.id`` order):
    the physical capacity and the allocation ratios the scheduler applies
    to it, resolved as the service resolves them
    (``host_state.resolve_allocation_ratio``: the row's ratio, else
    ``[DEFAULT] *_allocation_ratio``, else ``initial_*_allocation_ratio``:
    Nova's 4.0 / 1.0 / 1.0).  Its
    ``limits`` (capacity x ratio) are what the scheduler lets instances
    use; a node's GPUs are the devices of its GPU pools.
``lower_bound``
    The fewest nodes that could hold a demand at once: for each resource
    the smallest ``k`` such that the ``k`` largest nodes' limits add up
    to the demand, then the largest ``k`` over the resources.  On
    identical nodes it is ``ceil(max over resources of demand / limit)``.
    It ignores how instances split (no packing could need fewer nodes),
    so hosts in use / bound >= 1 measures how far a placement is from
    perfect packing.  A demand beyond the whole fleet extends it with
    nodes as large as the largest.  A resource no node has (GPUs on a
    fleet without any) is not counted.
``trace_demand``
    What a trace's VMs hold at each event if every one of them is
    placed: the demand behind the bound a fleet is sized from.
``FlavorMix``
    The sizes the trace asks for and each one's share of its instances,
    against which stranded capacity is measured.
"""

import dataclasses
import math

import numpy as np

from scheduler.view.host_state import resolve_allocation_ratio

RESOURCES = ('vcpus', 'memory_mb', 'disk_gb', 'gpus')
GPU = RESOURCES.index('gpus')
RATIO_NAMES = ('cpu_allocation_ratio', 'ram_allocation_ratio',
               'disk_allocation_ratio')
# PCI devices are not overcommitted.
GPU_RATIO = 1.0


def widen(values, fill=0.0):
    """``values`` as a float array whose last axis has every RESOURCES
    column, missing ones (GPUs of a 3-column array) set to ``fill``."""
    values = np.asarray(values, dtype=float)
    missing = len(RESOURCES) - values.shape[-1]
    if missing <= 0:
        return values
    pad = [(0, 0)] * (values.ndim - 1) + [(0, missing)]
    return np.pad(values, pad, constant_values=fill)


@dataclasses.dataclass(frozen=True, eq=False)
class FleetCapacity:
    """The nodes of a fleet, ``n`` of them, in fleet order.

    ``physical``: ``(n, 4)`` float array of vCPUs, MiB, GiB and GPUs;
    ``ratios``: ``(n, 4)`` float array of the resolved allocation ratios
    (GPUs: 1.0).  Three-column arrays are widened (``widen``).
    """

    physical: np.ndarray
    ratios: np.ndarray

    def __post_init__(self):
        width = len(RESOURCES)
        object.__setattr__(self, 'physical',
                           widen(self.physical).reshape(-1, width))
        object.__setattr__(self, 'ratios', widen(
            self.ratios, GPU_RATIO).reshape(-1, width))

    @classmethod
    def _build(cls, physical, ratios):
        """From rows of RESOURCES values and of RATIO_NAMES ratios (the
        GPUs' ratio is added by ``__post_init__``)."""
        return cls(np.asarray(physical, dtype=float).reshape(
                       -1, len(RESOURCES)),
                   np.asarray(ratios, dtype=float).reshape(
                       -1, len(RATIO_NAMES)))

    @classmethod
    def from_nodes(cls, nodes):
        """From objects with ``vcpus``, ``memory_mb``, ``local_gb``,
        ``gpus`` and resolved ``*_allocation_ratio`` (agent NodeUsages)."""
        nodes = list(nodes)
        return cls._build(
            [(n.vcpus, n.memory_mb, n.local_gb, n.gpus) for n in nodes],
            [tuple(getattr(n, name) for name in RATIO_NAMES)
             for n in nodes])

    @classmethod
    def from_specs(cls, specs):
        """From fleet HostSpecs, their ratios resolved as the service
        resolves a row's (unset: the configuration's, else Nova's)."""
        return cls._build(
            [(spec.vcpus, spec.memory_mb, spec.local_gb, spec.gpus)
             for spec in specs],
            [tuple(resolve_allocation_ratio(name, getattr(spec, name))
                   for name in RATIO_NAMES) for spec in specs])

    @property
    def size(self):
        """Number of nodes."""
        return len(self.physical)

    @property
    def limits(self):
        """``(n, 4)``: capacity x allocation ratio of each node."""
        return self.physical * self.ratios

    def totals(self):
        """``(4,)``: the fleet's limits added up."""
        return self.limits.sum(axis=0)

    @property
    def gpus(self):
        """The fleet's GPUs in all."""
        return int(self.physical[:, GPU].sum())

    def effective_ratios(self):
        """``{ratio name: value}``, the value a float when every node has
        the same ratio, else ``{'min': x, 'max': y}``."""
        found = {}
        for column, name in enumerate(RATIO_NAMES):
            values = self.ratios[:, column]
            low, high = float(values.min()), float(values.max())
            found[name] = low if low == high else {'min': low, 'max': high}
        return found


def lower_bound(demand, limits):
    """The capacity lower bound of each demand on nodes of ``limits``.

    :param demand: ``(T, 4)`` (or ``(4,)``) resources held: vCPUs, MiB,
        GiB, GPUs.
    :param limits: ``(n, 4)`` capacity x allocation ratio of each node.
    :returns: ``(T,)`` int array (an int for one demand): nodes needed at
        the least (see the module docstring); 0 for no demand.
    """
    demand = widen(demand)
    single = demand.ndim == 1
    demand = demand.reshape(-1, len(RESOURCES))
    limits = widen(limits).reshape(-1, len(RESOURCES))
    bound = np.zeros(len(demand), dtype=np.int64)
    for column in range(len(RESOURCES)):
        sizes = np.sort(limits[:, column])[::-1]
        if len(sizes) == 0 or sizes[0] <= 0:
            continue  # a resource no node has cannot be placed anywhere
        bound = np.maximum(bound, _nodes_needed(demand[:, column], sizes))
    return int(bound[0]) if single else bound


def _nodes_needed(wanted, sizes):
    """Fewest of the ``sizes`` (sorted, largest first) whose sum reaches
    each ``wanted``; beyond them all, more of the largest."""
    reach = np.cumsum(sizes)
    needed = np.searchsorted(reach, wanted, side='left') + 1
    needed[wanted <= 0] = 0
    beyond = wanted > reach[-1]
    needed[beyond] = len(sizes) + np.ceil(
        (wanted[beyond] - reach[-1]) / sizes[0]).astype(np.int64)
    return needed


def bound_for_shape(peak_demand, shape_limits):
    """Nodes of one shape (``(4,)`` limits) needed for ``peak_demand``
    (``(4,)``): ``ceil(max over resources of demand / limit)``."""
    return lower_bound(peak_demand, np.asarray([shape_limits], dtype=float))


def trace_demand(requests):
    """What the trace's VMs hold over time if all are placed.

    Every VM of a request holds its size from the request's ``time_s``
    until ``time_s + lifetime_s`` (forever without a lifetime); at equal
    times departures come first, as in the replay.

    :returns: ``(times, demand)``: ``(E,)`` seconds and ``(E, 4)`` held
        after each event (vCPUs, MiB, GiB, GPUs).
    """
    times, kinds, sizes = [], [], []
    for request in requests:
        for vm in request.vms:
            times.append(request.time_s)
            kinds.append(1)
            sizes.append(vm.resources)
            if vm.lifetime_s is not None:
                times.append(request.time_s + vm.lifetime_s)
                kinds.append(0)
                sizes.append(tuple(-value for value in vm.resources))
    times = np.asarray(times, dtype=float)
    order = np.lexsort((np.asarray(kinds), times))
    held = np.cumsum(np.asarray(sizes, dtype=float).reshape(
        -1, len(RESOURCES))[order], axis=0)
    return times[order], held


def fleet_size_for(factor, bound_peak):
    """Hosts of a fleet ``factor`` times the peak bound (at least 1)."""
    return max(1, math.ceil(factor * bound_peak - 1e-9))


@dataclasses.dataclass(frozen=True, eq=False)
class FlavorMix:
    """The sizes a trace asks for: ``sizes`` ``(m, 4)`` (vCPUs, MiB,
    GiB, GPUs), ``shares`` ``(m,)`` each size's fraction of the
    instances."""

    sizes: np.ndarray
    shares: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, 'sizes', widen(self.sizes).reshape(
            -1, len(RESOURCES)))

    @classmethod
    def from_requests(cls, requests):
        """The mix of the instances of ``requests``."""
        counts = {}
        for request in requests:
            size = request.first.resources
            counts[size] = counts.get(size, 0) + request.num_instances
        if not counts:
            return cls(np.zeros((0, len(RESOURCES))), np.zeros(0))
        sizes = np.asarray(list(counts), dtype=float)
        shares = np.asarray(list(counts.values()), dtype=float)
        return cls(sizes, shares / shares.sum())

    def misfit(self, free):
        """``(share, none)`` for a node with ``free`` ``(4,)`` resources:
        the share of the mix's instances that do not fit in it, and
        whether none of the sizes fits."""
        fits = (self.sizes <= widen(free)).all(axis=1)
        return float(self.shares[~fits].sum()), not fits.any()
