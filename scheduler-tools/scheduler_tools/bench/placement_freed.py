"""Capacity freed in Placement without a generation bump: how long
the Placement view takes to see it.

Deleting a server's allocations (``DELETE /allocations/{consumer}``, as
Nova frees them) moves no provider generation; ``measure_freed`` times
how long the driver's view takes to hold the freed usage, against
``FREED_BOUND_MS``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from scheduler_tools.bench import BenchError
from scheduler_tools.bench.placement_rest import call
from scheduler_tools.bench.placement_rest import call_json

# Capacity freed in Placement without a generation bump (a server
# deleted): how many frees are timed per size, how often the view is
# refreshed meanwhile (as decisions would), the bound on the p99 of the
# time until it is seen, and how long to wait before giving up.
FREED_ROUNDS = 20
FREED_POLL_S = 0.01
FREED_BOUND_MS = 1000.0
FREED_TIMEOUT_S = 10


def measure_freed(api: Any, driver: Any, consumers: Sequence[str],
                  rounds: int = FREED_ROUNDS) -> list[float]:
    """How long capacity freed in Placement stays unseen: for each of the
    first ``rounds`` ``consumers`` (instances the driver claimed), ms
    from the return of its ``DELETE /allocations/{consumer}`` (which
    bumps no provider generation) until the driver's Placement view,
    refreshed as a decision refreshes it every ``FREED_POLL_S``, holds
    the provider's usage without it (as decisions arriving then would
    see it).  Raises BenchError when one is not seen within
    ``FREED_TIMEOUT_S``."""
    view = driver.candidates.view
    latencies = []
    for consumer in consumers[:rounds]:
        held = call_json(api, 'GET', '/allocations/%s' % consumer)[
            'allocations']
        rp_uuid, allocation = next(iter(held.items()))
        memory_mb = allocation['resources']['MEMORY_MB']
        with driver.host_manager.lock:
            view.refresh()
            before = _memory_used(view, rp_uuid)
        call(api, 'DELETE', '/allocations/%s' % consumer, expected=(204,))
        begin = time.perf_counter()
        while True:
            with driver.host_manager.lock:
                view.refresh()
                if _memory_used(view, rp_uuid) <= before - memory_mb:
                    break
            if time.perf_counter() - begin > FREED_TIMEOUT_S:
                raise BenchError('capacity freed in Placement on %s was '
                                 'not seen within %d s'
                                 % (rp_uuid, FREED_TIMEOUT_S))
            time.sleep(FREED_POLL_S)
        latencies.append((time.perf_counter() - begin) * 1000.0)
    return latencies


def _memory_used(view: Any, rp_uuid: str) -> int:
    table = view.forest.roots
    return table.providers[table.row_of[rp_uuid]].usages.get('MEMORY_MB', 0)
