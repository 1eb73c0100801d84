"""One compute node's allocation candidates, as Nova 34's HostState
carries them, and the one its claim takes.

Nova 34's scheduler gives each HostState ``allocation_candidates``: the
allocation requests of Placement's answer for that compute node, in
Placement's order.  ``NUMATopologyFilter`` and ``PciPassthroughFilter``
keep those whose ``mappings`` fit the request (``scheduler.filters.
filter_candidates``); the first one left is claimed, carried in the
Selection and consumed (``nova.scheduler.manager``: ``alloc_req =
host.allocation_candidates[0]``).  Here:

* ``HostCandidates`` is the list of one node for the view's current
  request (``PlacementView.select``), enumerated lazily, as far as it
  is read: the request of the root providers alone has one candidate
  (the node's own provider, when it has room); the others are those of
  ``trees.Plan`` anchored at the node that take something from its own
  tree, each once, in the plan's order (own-tree providers before
  sharing ones, then provider order; Placement's own order is a Python
  set's, unspecified).  The first is ``Plan.first``'s.
* **Bound.**  Placement returns every candidate (up to the ``limit``
  Nova sends, ``[scheduler] max_placement_results``, 1000 by default,
  over all nodes); Nova keeps each node's.  Here a node's list stops at
  ``MAX_PER_HOST`` (1000) candidates or after ``[placement]
  max_candidate_combinations`` combinations examined (logged), and is
  built only for a request whose PCI devices are in Placement
  (``wanted``), the only one whose candidates the filters can tell
  apart: the other requests never read one, so they keep the fast
  path.  It is read lazily: a host is decided at its first candidate
  that fits (``filters.filter_candidates``).
* ``next_request`` is the allocation request the next instance placed
  on a node takes: the first surviving candidate once the filters
  narrowed the node's list, else the node's first; ``consume`` counts
  it in the view.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler.placement import trees
from scheduler.placement.matching import Cut
from scheduler.placement.matching import Steps
from scheduler.resources import pci_placement

if TYPE_CHECKING:
    from scheduler.placement.view import PlacementView

LOG = logging.getLogger(__name__)

# The most allocation candidates kept for one compute node (Nova's
# default ``max_placement_results`` for a whole answer).
MAX_PER_HOST = 1000

AllocationRequest = dict[str, Any]


def wanted(spec_obj: Any) -> bool:
    """Whether the filters check ``spec_obj``'s candidates one by one:
    some of its PCI devices are requested from Placement (request groups
    of its flavor's PCI requests, ``[filter_scheduler]
    pci_in_placement``).  A candidate's mappings decide nothing else in
    Nova 34's NUMATopologyFilter and PciPassthroughFilter, so for any
    other request every candidate of a host gets the host's verdict, and
    the host is checked as a whole: the same outcome, without the
    lists."""
    return pci_placement.pci_groups(spec_obj)[1] > 0


class HostCandidates(filters.LazyCandidates):
    """The allocation candidates of compute node ``uuid`` for the
    current request of ``view`` (see the module), read lazily.  It must
    not outlive the request or a consumption on the node
    (``PlacementSource`` builds it anew then)."""

    def __init__(self, view: PlacementView, uuid: str) -> None:
        super().__init__(_requests(view, uuid))
        self.uuid = uuid


def _requests(view: PlacementView, uuid: str
              ) -> Iterator[AllocationRequest]:
    """The candidates of node ``uuid`` for ``view.current``, in order,
    at most ``MAX_PER_HOST``."""
    current = view.current
    forest = view.forest
    if forest is None or uuid not in forest.roots.row_of:
        return
    row = forest.roots.row_of[uuid]
    if current.group is not None:
        if _shared(view, 'fits', view._fits)[row]:
            yield {'allocations': {uuid: {'resources': dict(
                       current.group.resources)}},
                   'mappings': {'': [uuid]}}
        return
    if current.plan is not None:
        yield from _plan_requests(view, current.plan, row)


def _shared(view: PlacementView, name: str, compute: Any) -> Any:
    """``compute()``, kept for every node of the current request until
    the next consumption (what is computed over all providers once, not
    once per node)."""
    current = view.current
    consumed = sum(len(chosen) for chosen in current.chosen.values())
    if current.shared.get('consumed') != consumed:
        current.shared.clear()
        current.shared['consumed'] = consumed
    if name not in current.shared:
        current.shared[name] = compute()
    return current.shared[name]


def _plan_state(view: PlacementView, plan: trees.Plan) -> Any:
    """``(units, hosting, serving)`` of ``plan`` at the forest's use:
    its units, the root rows hosting, and the providers serving each
    unit at each of those (``Plan._serving``)."""
    units = plan.matching.units()
    _, hosting = plan.matching.reach(units)
    trees_ = [tree for tree in np.flatnonzero(hosting).tolist()
              if tree not in plan.cut]
    return units, hosting, plan._serving(units, trees_)


def _plan_requests(view: PlacementView, plan: trees.Plan, tree: int
                   ) -> Iterator[AllocationRequest]:
    """The distinct allocation requests of ``plan`` anchored at root row
    ``tree`` that take something from its own tree, within the plan's
    limit of combinations and ``MAX_PER_HOST``."""
    forest = plan.forest
    units, hosting, serving = _shared(
        view, 'plan', lambda: _plan_state(view, plan))
    if not hosting[tree] or tree in plan.cut:
        return
    steps = Steps(plan.limit)
    seen: set[Any] = set()
    found = plan._at(units, tree, serving, steps)
    try:
        for request in found:
            if not any(forest.tree_of[index] == tree and
                       forest.present[index]
                       for index in request.allocations):
                continue
            key = request.key()
            if key in seen:
                continue
            seen.add(key)
            yield request.body(forest)
            if len(seen) >= MAX_PER_HOST:
                return
    except Cut:
        LOG.info('%s: the allocation candidates of compute node %s were '
                 'listed up to the limit (%d kept)', plan.capped(1),
                 forest.provider(tree).uuid, len(seen))


def next_request(view: PlacementView, uuid: str, nth: int | None,
                 surviving: Sequence[AllocationRequest] | None
                 ) -> AllocationRequest:
    """``PlacementView.allocation_request``: with ``nth``, the one the
    ``nth`` instance placed on node ``uuid`` consumed, when there was
    one; else the first of ``surviving`` (the node's HostState's
    ``allocation_candidates``, which the filters narrowed) when given,
    else the node's first candidate.  KeyError when there is none."""
    chosen = view.current.chosen.get(uuid, [])
    if nth is not None and nth < len(chosen):
        return chosen[nth]
    if surviving is not None:
        if not surviving:
            raise KeyError(uuid)
        return surviving[0]
    current = view.current
    forest = view.forest
    if forest is None:
        raise KeyError(uuid)
    row = forest.roots.row_of[uuid]      # KeyError: not a provider
    if current.group is not None:
        return {'allocations': {uuid: {'resources': dict(
                    current.group.resources)}},
                'mappings': {'': [uuid]}}
    found = current.plan.first(row) if current.plan else None
    if found is None:
        raise KeyError(uuid)
    return found.body(forest)


def consume(view: PlacementView, uuid: str,
            surviving: Sequence[AllocationRequest] | None) -> None:
    """``PlacementView.consume``: count the allocation request
    ``next_request`` gives on node ``uuid`` (one more instance there) on
    every provider it takes from, and have those read again at the next
    refresh."""
    try:
        allocation_request = next_request(view, uuid, None, surviving)
    except KeyError:
        return
    view.current.chosen.setdefault(uuid, []).append(allocation_request)
    forest = view.forest
    assert forest is not None
    for rp_uuid, allocation in allocation_request['allocations'].items():
        if forest.index_of(rp_uuid) >= 0:
            forest.consume(rp_uuid, allocation['resources'])
        view.forget([rp_uuid])
