"""Reference placement policies, simulated in-process on the same trace
and fleet as the service, to show how well the service packs.

A simulation walks the same events as the service replay
(``loop.EventLoop``: the same requests from the same grouping, the same
departures, deletions before arrivals at equal times) on the same nodes
with the same limits (capacity x the allocation ratios the service
resolves, ``capacity.FleetCapacity``), but decides in memory: no RPC, no
database.  An instance fits a node when, for vCPUs, RAM, disk and GPUs,
what the node's instances use plus the instance's size stays within the
node's limit, and the size is within the node's physical capacity (the
service's claims and RamFilter/DiskFilter/CoreFilter arithmetic; for
GPUs, PciPassthroughFilter's: enough free devices, any model, as the
replay's GPU alias matches every model, ``gpus``).  The
instances of a request are placed one after the other, each seeing the
ones before; when one does not fit, the whole request is refused
(NoValidHost) and nothing of it stays, as the service answers.
Availability zones and server groups are not simulated.

Policies (each a function ``(free, size, candidates, limits) -> index``
over NumPy arrays, None when no node fits):

``first-fit``
    The first node, in fleet order (``compute_nodes.id`` order, the
    order nodes were seeded in), where the instance fits.
``best-fit``
    Among the nodes where the instance fits, the one whose tightest
    resource is left smallest after placement: for node ``h`` and each
    resource ``r`` the instance asks for (size > 0; for an instance of
    size 0, every resource some node has), the fraction of ``h``'s limit
    left free, ``(free[h, r] - size[r]) / limit[h, r]``; the node with
    the smallest minimum over ``r`` of that fraction, the first in fleet
    order on a tie.
"""

import numpy as np

from scheduler_tools.replay import agent
from scheduler_tools.replay import gpu_figures
from scheduler_tools.replay import loop
from scheduler_tools.replay import metrics

FIRST_FIT = 'first-fit'
BEST_FIT = 'best-fit'


def _fitting(free, size, candidates):
    """Indices of the ``candidates`` nodes whose ``free`` ``(n, 4)``
    holds ``size`` ``(4,)``, in fleet order."""
    return np.flatnonzero(candidates & (free >= size).all(axis=1))


def first_fit(free, size, candidates, limits):
    """The first fitting node (see the module docstring), or None."""
    fitting = _fitting(free, size, candidates)
    return int(fitting[0]) if len(fitting) else None


def best_fit(free, size, candidates, limits):
    """The fitting node whose tightest resource is left smallest (see
    the module docstring), or None."""
    fitting = _fitting(free, size, candidates)
    if not len(fitting):
        return None
    asked = size > 0
    if not asked.any():
        # an instance of size 0: every resource some node has
        asked = (limits > 0).any(axis=0)
    left = ((free[fitting][:, asked] - size[asked])
            / limits[fitting][:, asked])
    return int(fitting[np.argmin(left.min(axis=1))])


POLICIES = {FIRST_FIT: first_fit, BEST_FIT: best_fit}


class Simulation(loop.EventLoop):
    """One reference policy's run of ``requests`` on ``capacity`` (a
    FleetCapacity) with the trace's ``mix`` (a FlavorMix)."""

    def __init__(self, requests, capacity, mix, policy):
        super().__init__(requests, metrics.Ledger(
            capacity, mix, metrics.arrival_window(requests)))
        self.choose = POLICIES[policy]
        self.limits = capacity.limits
        self.physical = capacity.physical
        self.free = self.limits.copy()
        self.used = np.zeros_like(self.limits)
        self.running = np.zeros(capacity.size, dtype=np.int64)
        self._candidates = {}

    def candidates(self, size):
        """``(n,)`` bool: nodes whose physical capacity holds ``size``."""
        key = tuple(size)
        if key not in self._candidates:
            self._candidates[key] = (self.physical >= size).all(axis=1)
        return self._candidates[key]

    def place(self, request):
        size = np.asarray(request.first.resources, dtype=float)
        candidates = self.candidates(size)
        chosen = []
        for _ in request.vms:
            index = self.choose(self.free, size, candidates, self.limits)
            if index is None:
                for taken in chosen:
                    self.free[taken] += size
                return None
            self.free[index] -= size
            chosen.append(index)
        for index in chosen:
            self.used[index] += size
            self.running[index] += 1
        return [agent.Placed(vm, None, None, None, index)
                for vm, index in zip(request.vms, chosen, strict=True)]

    def remove(self, record):
        self.free[record.index] += record.vm.resources
        self.used[record.index] -= record.vm.resources
        self.running[record.index] -= 1

    def node_state(self, index):
        return self.used[index], self.running[index]


def simulate(requests, capacity, mix, policy):
    """Run ``policy`` (a POLICIES name) and return ``{'summary':
    Ledger.summary() with its GPUs (gpu_figures), 'series': {'time_s',
    'hosts_in_use'}}``."""
    simulation = Simulation(requests, capacity, mix, policy)
    simulation.run()
    arrays = simulation.ledger.series.arrays()
    summary = gpu_figures.add_figures(simulation.ledger.summary(),
                                      simulation.ledger)
    return {'summary': summary,
            'series': {name: arrays[name]
                       for name in ('time_s', 'hosts_in_use')}}


def simulate_all(requests, capacity, mix, policies=tuple(POLICIES)):
    """``{policy: simulate(...)}`` for each of ``policies``, in order."""
    return {policy: simulate(requests, capacity, mix, policy)
            for policy in policies}
