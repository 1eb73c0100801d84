"""A large multi-create in Placement mode: one request for many instances.

``measure_multi_create`` times one ``select_destinations`` of
``MULTI_CREATE`` new instances (a small flavor) on the driver of
``placement_decisions``, claims included (``POST /allocations`` in
parallel chunks: ``scheduler.placement.bulk_claims``), against
``MULTI_CREATE_TARGET_S``; side by side, the same allocations written by
Placement alone, in one ``POST /allocations`` of them all (``_post``),
which is what one transaction for the whole request costs.  Every
allocation written is deleted afterwards.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from typing import Any

from scheduler_tools import seed
from scheduler_tools.bench.placement_rest import call

# Instances of the request (with ``--smoke``: fewer), and the seconds
# its decision should take.
MULTI_CREATE = 1000
SMOKE_MULTI_CREATE = 150
MULTI_CREATE_TARGET_S = 5.0
# Connections deleting the allocations afterwards.
CLEANUP_THREADS = 4


def measure_multi_create(api: Any, driver: Any, ctx: Any,
                         count: int = MULTI_CREATE) -> dict[str, Any]:
    """``multi_create_s``: our decision of ``count`` instances, claims
    included; ``multi_create_one_post_s``: Placement writing the same
    allocations in one ``POST /allocations``; the count, the target and
    whether it is met.  Seconds."""
    spec = seed.make_spec(num_instances=count, memory_mb=64, vcpus=1,
                          root_gb=1, project_id='bench', user_id='bench')
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    began = time.perf_counter()
    driver.select_destinations(ctx, spec, uuids)
    ours = time.perf_counter() - began
    held = {consumer: call(api, 'GET', '/allocations/%s' % consumer,
                           expected=(200,)).json()['allocations']
            for consumer in uuids}
    _delete(api, uuids)
    again = {str(uuid.uuid4()): allocations for allocations in held.values()}
    began = time.perf_counter()
    call(api, 'POST', '/allocations', expected=(204,), json={
        consumer: {'allocations': {rp: {'resources': a['resources']}
                                   for rp, a in allocations.items()},
                   'project_id': 'bench', 'user_id': 'bench',
                   'consumer_generation': None}
        for consumer, allocations in again.items()})
    one_post = time.perf_counter() - began
    _delete(api, list(again))
    return {'multi_create': count, 'multi_create_s': round(ours, 2),
            'multi_create_one_post_s': round(one_post, 2),
            'multi_create_target_s': MULTI_CREATE_TARGET_S,
            'multi_create_meets_target': ours <= MULTI_CREATE_TARGET_S}


def _delete(api: Any, consumers: list[str]) -> None:
    with concurrent.futures.ThreadPoolExecutor(CLEANUP_THREADS) as pool:
        list(pool.map(lambda consumer: call(
            api, 'DELETE', '/allocations/%s' % consumer,
            expected=(204, 404)), consumers))
