"""A placed request's answer: one list of Selection per instance.

``answer`` takes the HostStates a request's instances were placed on and
the Ranking whose best remaining candidates are their alternates (Nova's
Queens alternates: other hosts in weight order, of the same cell, not
chosen for this request, up to ``[scheduler] max_attempts`` hosts per
list when the caller asks for them), writes the limits of the filters
that ran in vectorised form on every host returned, and builds the
Selections (``scheduler.objects.selection``), each carrying the
candidate source's allocation request for its host in Placement mode.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from scheduler.conf import CONF
from scheduler.engine import candidates
from scheduler.objects import selection as selection_obj
from scheduler.view.host_state import HostState


def answer(selected: Sequence[HostState], ranking: Any,
           return_alternates: bool, source: candidates.CandidateSource
           ) -> list[list[Any]]:
    """The Selections of ``selected`` (one HostState per instance), each
    list its chosen host first, then, with ``return_alternates``, up to
    ``max_attempts - 1`` alternates from ``ranking``
    (``scheduler.engine.pipeline.Ranking``); limits written."""
    max_hosts = CONF.scheduler.max_attempts if return_alternates else 1
    # Enough hosts for every list, even if all chosen ones come first.
    alternates = ranking.best(max_hosts + len(selected))
    # Each host once (limits depend on the host only), chosen or not.
    returned = {id(state): state for state in [*selected, *alternates]}
    ranking.apply_limits(list(returned.values()))
    return selections(selected, alternates, max_hosts, source)


def selections(selected: Sequence[HostState],
               alternates: Sequence[HostState], max_hosts: int,
               source: candidates.CandidateSource) -> list[list[Any]]:
    """One list of Selection per instance: its chosen host, then the
    best ``alternates`` of the same cell that no instance was given, at
    most ``max_hosts`` in all.

    A host in several lists (an alternate of every instance) is one
    Selection object in all of them: Selections are values, built once
    per host (building one is most of the cost), and the RPC layer
    serialises each list in full.  In Placement mode each carries its
    host's allocation request (``allocation_request``, JSON, and its
    microversion: ``CandidateSource.allocation_request``): the ``nth``
    instance chosen on a host has a Selection of its own, carrying the
    allocation request that instance took (as Nova 34's each claimed
    one), which nova-conductor reads the PCI devices' providers from."""
    made: dict[tuple[str, str, int], Any] = {}

    def selection(state: HostState, nth: int = 0) -> Any:
        key = (state.host, state.nodename, nth)
        if key not in made:
            made[key] = selection_obj.Selection.from_host_state(state)
            request = source.allocation_request(state, nth)
            if request is not None:
                (made[key].allocation_request,
                 made[key].allocation_request_version) = request
        return made[key]

    chosen_keys = {(s.host, s.nodename) for s in selected}
    # The alternates no instance was given, best first, by cell.
    spare: dict[Any, list[HostState]] = collections.defaultdict(list)
    for alt in alternates:
        if (alt.host, alt.nodename) not in chosen_keys:
            spare[alt.cell_uuid].append(alt)
    placed: collections.Counter[tuple[str, str]] = collections.Counter()
    result = []
    for state in selected:
        nth = placed[state.host, state.nodename]
        placed[state.host, state.nodename] += 1
        result.append([selection(state, nth)] + [
            selection(alt)
            for alt in spare[state.cell_uuid][:max_hosts - 1]])
    return result
