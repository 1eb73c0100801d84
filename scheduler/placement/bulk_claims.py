"""The claims of a large multi-instance request, in parallel chunks.

Placement writes one ``POST /allocations`` in one transaction (all or
none), but its time grows faster than its size: on a two-worker
Placement 16.0.0 on PostgreSQL, 100 new consumers take about 0.7 s and
1,000 about 12 s.  ``claim_all`` therefore sends the claims of a request
in chunks of at most ``CHUNK`` instances, on up to ``LANES`` connections
at once.  Two lanes never write to the same resource provider (the
instances are laned by the providers they take from, which are
connected when they share one), so Placement's provider generations do
not make concurrent chunks refuse each other.

The consumers may be those of several requests, each with its own
project and user (a batch of requests decided together,
``scheduler.placement.reservation``).  The request keeps its all-or-none
semantics: when a chunk is refused
(409), holds a consumer that has allocations already, or fails, the
others are stopped and every chunk written is deleted before the
outcome is returned; an uncertain chunk is raised as ``ClaimUncertain``
(with the attempts of that chunk only) for the caller to settle.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from scheduler.engine import deadline
from scheduler.placement import client as client_lib

LOG = logging.getLogger(__name__)

# Instances per ``POST /allocations``, and connections at once (a
# Placement under gunicorn serves as many requests at once as it has
# workers: two by default).
CHUNK = 100
LANES = 2


def lanes(requests: Mapping[str, dict[str, Any]], count: int
          ) -> list[list[str]]:
    """The consumers of ``requests`` (``{consumer: allocation request}``)
    in at most ``count`` lanes, no provider in two lanes, the largest
    groups first to even the lanes out; consumers keep their order."""
    parent: dict[str, str] = {}

    def root(rp: str) -> str:
        while parent.setdefault(rp, rp) != rp:
            parent[rp] = parent[parent[rp]]
            rp = parent[rp]
        return rp

    for request in requests.values():
        first, *others = list(request['allocations']) or ['']
        for rp in others:
            parent[root(rp)] = root(first)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for consumer, request in requests.items():
        groups[root(next(iter(request['allocations']), ''))].append(
            consumer)
    laned: list[list[str]] = [[] for _ in range(min(count, len(groups)))]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(laned, key=len).extend(group)
    order = {consumer: index for index, consumer in enumerate(requests)}
    return [sorted(lane, key=order.__getitem__) for lane in laned]


class _Lanes:
    """One request's chunks on their lanes, and what they wrote."""

    def __init__(self, client: client_lib.PlacementClient,
                 requests: Mapping[str, dict[str, Any]], project_id: str,
                 user_id: str,
                 owners: Mapping[str, client_lib.Owner] | None) -> None:
        self.client = client
        self.requests = requests
        self.project_id = project_id
        self.user_id = user_id
        self.owners = owners
        self.written: list[str] = []
        self.outcome: bool | None = True
        self.error: client_lib.ClaimUncertain | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def run(self, lane: list[str]) -> None:
        """Write ``lane``'s chunks in order until one fails or another
        lane's did."""
        for start in range(0, len(lane), CHUNK):
            if self._stop.is_set():
                return
            chunk = lane[start:start + CHUNK]
            try:
                claimed = self.client.claim_all(
                    {consumer: self.requests[consumer] for consumer in chunk},
                    self.project_id, self.user_id, self.owners)
            except client_lib.ClaimUncertain as exc:
                self._fail(None, exc)
                return
            if not claimed:
                self._fail(claimed, None)
                return
            with self._lock:
                self.written += chunk

    def _fail(self, outcome: bool | None,
              error: client_lib.ClaimUncertain | None) -> None:
        with self._lock:
            if self.error is None and self.outcome:
                self.outcome, self.error = outcome, error
        self._stop.set()


def claim_all(client: client_lib.PlacementClient,
              requests: Mapping[str, dict[str, Any]], project_id: str,
              user_id: str,
              owners: Mapping[str, client_lib.Owner] | None = None
              ) -> bool | None:
    """``PlacementClient.claim_all`` of ``requests`` in chunks on lanes
    (see the module; ``owners``: as ``PlacementClient.claim_all``'s,
    the consumers of several requests in one): True when every instance
    is claimed; False (a refusal) or None (an instance holds allocations
    already) with none kept.  Raises ClaimUncertain (the chunks written
    are deleted first), or PlacementUnavailable when a written chunk
    cannot be deleted."""
    if len(requests) <= CHUNK:
        return client.claim_all(requests, project_id, user_id, owners)
    work = _Lanes(client, requests, project_id, user_id, owners)
    laned = lanes(requests, LANES)
    decision = deadline.current()

    def run(lane: list[str]) -> None:
        with deadline.acting_for(decision):     # bounds, and moves, it
            work.run(lane)

    with concurrent.futures.ThreadPoolExecutor(
            len(laned), thread_name_prefix='placement-claims') as pool:
        list(pool.map(run, laned))
    if work.outcome and work.error is None:
        return True
    LOG.info('Deleting the %d claims already written of a request of %d '
             'instances that Placement did not take whole',
             len(work.written), len(requests))
    for consumer in work.written:
        client.delete_allocations(consumer)
    if work.error is not None:
        raise work.error
    return work.outcome
