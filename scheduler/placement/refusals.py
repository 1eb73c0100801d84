"""Why a request refused in Placement mode had no allocation candidate:
``scheduler.placement.misses`` over the Placement view's current request.

``log_refusal`` is what the filter scheduler calls when it refuses a
request (NoValidHost): the filters' counts (Nova's log lines), then, in
Placement mode and only when no compute node is an allocation candidate
of the request any more, one INFO line naming the requirements that
eliminate compute nodes, with counts, and the nearest misses.
``explain_view`` is the whole explanation (``scheduler-manage
explain``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement import misses
from scheduler.placement.query import Request
from scheduler.placement.view import PlacementView

LOG = logging.getLogger(__name__)


def current_request(view: PlacementView) -> tuple[Request, Any] | None:
    """The query of the view's current candidates and its plan (None on
    the fast path); None when the query was refused (no candidate
    computed; logged by the view)."""
    current = view.current
    if current.group is not None:
        return Request(groups={'': current.group}), None
    if current.plan is not None:
        return current.plan.request, current.plan
    return None


def hosting_of(plan: Any) -> np.ndarray | None:
    """``plan.hosts()``; None when its search was cut (NoValidHost)."""
    try:
        return np.asarray(plan.hosts(), dtype=bool)
    except exception.NoValidHost:
        return None


def explain_view(view: PlacementView, top: int = misses.TOP
                 ) -> misses.Misses | None:
    """The Misses of the view's current request at its current use;
    None when its query was refused."""
    found = current_request(view)
    if found is None:
        return None
    request, plan = found
    hosting = None if plan is None else hosting_of(plan)
    assert view.forest is not None
    return misses.explain(view.forest, request, top, hosting)


def log_refusal(ranking: Any, source: Any, spec_obj: Any) -> None:
    """Log the refusal of ``spec_obj``: the filters' counts
    (``ranking.log_refusal``, a ``scheduler.engine.pipeline.Ranking``),
    then at INFO, in Placement mode (``source`` a PlacementSource), why
    the request has no allocation candidate left: the requirements that
    eliminate compute nodes, with counts, and the nearest misses
    (``Misses.summary``).  Nothing more is computed when some compute
    node is still a candidate (other filters refused the request), for a
    rebuild (no candidate is asked) or for a query Placement refuses
    (logged already)."""
    ranking.log_refusal()
    view = getattr(source, 'view', None)
    if not isinstance(view, PlacementView) or not source.claiming(spec_obj):
        return
    found = current_request(view)
    if found is None:
        return
    request, plan = found
    forest = view.forest
    assert forest is not None
    if plan is None:
        current = view.current
        assert current.group is not None and current.static is not None
        hosting = forest.roots.fits_capacity(current.group) & current.static
    else:
        hosting = hosting_of(plan)
    if hosting is not None and hosting.any():
        return
    found_misses = misses.explain(forest, request, 3,
                                  None if plan is None else hosting)
    LOG.info("No allocation candidate for the request with instance ID "
             "'%s': %s", spec_obj.obj_get('instance_uuid'),
             found_misses.summary())
