"""Nova's ``max_placement_results``: at most that many compute nodes.

Nova asks ``GET /allocation_candidates`` with ``limit=[scheduler]
max_placement_results`` (1000 by default; lifted for a requested host
of several nodes and for the ``group``, ``same_host`` and
``different_host`` hints: ``scheduler.placement.request.
for_scheduling``), and considers only the compute nodes of the
candidates Placement returns.  Placement 16.0.0 computes every
candidate, then (``RequestWideSearchContext.limit_results``) keeps the
first ``limit`` allocation requests of its list, which is the iteration
order of a Python ``set`` of allocation requests (hashed on their
providers' internal ids, resource class names and amounts, so it changes
with each Placement process's hash seed), or a random sample of them with
its ``[placement] randomize_allocation_candidates``; the provider
summaries are cut to the trees those allocation requests use.

With ``[placement] apply_max_placement_results`` the view does the same
with an order of its own, which it can reproduce: the first ``limit``
compute nodes that are candidates when the request's candidates are
computed, in root provider order (``resource_providers.id``); one
allocation request per compute node counts (Placement's list may hold
several per tree, hence fewer compute nodes).  Later instances of the
request are placed among those compute nodes only, as in Nova.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler.placement import trees
from scheduler.placement.provider_trees import Forest
from scheduler.placement.query import Params
from scheduler.placement.query import Request


def max_results(conf: Any) -> int | None:
    """The ``limit`` a request's query starts with: ``[scheduler]
    max_placement_results`` with ``[placement]
    apply_max_placement_results``, else None (every compute node)."""
    if conf.placement.apply_max_placement_results:
        return int(conf.scheduler.max_placement_results)
    return None


def query_limit(params: Params) -> int | None:
    """The ``limit`` of the query ``params`` (its first value), None
    when there is none.  ``query.Request.from_query`` has checked it."""
    if isinstance(params, Mapping):
        value = params.get('limit')
        values = [value] if isinstance(value, str) else list(value or ())
    else:
        values = [value for name, value in params if name == 'limit']
    return int(values[0]) if values else None


def first(mask: np.ndarray, count: int) -> np.ndarray:
    """``mask`` (bool, over the root rows) with only its first ``count``
    True rows left True."""
    kept = np.zeros_like(mask)
    kept[np.flatnonzero(mask)[:count]] = True
    return kept


class LimitedPlan(trees.Plan):
    """A ``trees.Plan`` whose hosts are, at most, the first ``count``
    compute nodes it hosts the first time it is asked (``hosts`` or
    ``first``), before any instance of the request is consumed."""

    def __init__(self, forest: Forest, request: Request, count: int
                 ) -> None:
        super().__init__(forest, request)
        self.count = count
        self.allowed: np.ndarray | None = None

    def _allowed(self, hosting: np.ndarray | None = None) -> np.ndarray:
        if self.allowed is None:
            if hosting is None:
                hosting = super().hosts()
            self.allowed = first(hosting, self.count)
        return self.allowed

    def hosts(self) -> np.ndarray:
        """``Plan.hosts`` among the compute nodes kept."""
        hosting = super().hosts()
        return hosting & self._allowed(hosting.copy())

    def first(self, tree: int) -> trees.AllocationRequest | None:
        """``Plan.first``; None for a compute node not kept."""
        if not self._allowed()[tree]:
            return None
        return super().first(tree)
