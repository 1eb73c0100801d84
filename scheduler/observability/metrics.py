"""The service's Prometheus metrics: their definitions and their recording.

Recording is off until ``enable()``, which ``SchedulerService.start``
calls when ``[prometheus] bind`` is set: until then each recording
function returns at once, and nothing is written anywhere.  Once on, in
a process whose environment names ``PROMETHEUS_MULTIPROC_DIR`` (the
launcher sets it before it forks the workers), each value lives in that
directory's files of this process, which the parent's endpoint
(``scheduler.observability.server``) adds up over every worker.

The callers record through small functions: ``decision`` (the
manager), ``decision_started`` and ``no_valid_host`` (the manager, on
the decision's thread), ``filtered`` (the filter handler), ``view_due``,
``host_view`` and ``view_read`` (the host view's refresh) and
``lost_race`` (the reservations).  docs/metrics.rst lists the metrics.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

# The environment variable naming the directory of the workers' files
# (prometheus_client's multiprocess mode).
MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'

# The outcomes of a decision (label ``outcome``).
SUCCESS = 'success'
NO_VALID_HOST = 'no_valid_host'
INVALID = 'invalid'
DATABASE_UNAVAILABLE = 'database_unavailable'
PLACEMENT_UNAVAILABLE = 'placement_unavailable'
ERROR = 'error'
OUTCOMES = (SUCCESS, NO_VALID_HOST, INVALID, DATABASE_UNAVAILABLE,
            PLACEMENT_UNAVAILABLE, ERROR)
# The label ``filter`` of a NoValidHost no filter caused: no host left
# by the prefilter (forced, ignored or requested hosts), none known, a
# requested destination refused, or every claim refused.
NO_FILTER = 'none'
# The reads of the host view (label ``read``; docs/refresh.rst).
CHANGES_READ = 'changes'
FULL_READ = 'full'

# Seconds between two settings of the host view's gauges in a process
# (computing them costs about 30 us at 10,000 hosts; a scrape comes
# every 10 s or so).
VIEW_INTERVAL = 1.0

# Bucket bounds in seconds: a decision takes milliseconds (about 2 ms at
# 10,000 hosts, without the RPC), a full read of a large view seconds.
DECISION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                    0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
READ_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                0.25, 0.5, 1.0, 2.5, 5.0, 10.0)



class _Metrics:
    """Every metric of the service, on a registry of this process."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry
        from prometheus_client import Counter
        from prometheus_client import Gauge
        from prometheus_client import Histogram
        registry = self.registry = CollectorRegistry()

        def view_gauge(name: str, documentation: str) -> Gauge:
            # The latest value a live worker set (a worker's file goes
            # with it: ``mark_process_dead``).
            return Gauge(name, documentation + ' (as a recent decision saw '
                         'it).', multiprocess_mode='livemostrecent',
                         registry=registry)
        self.decision_seconds = Histogram(
            'scheduler_decision_duration_seconds',
            'Seconds a select_destinations call took, from the RPC '
            'endpoint taking it to its reply or error (every outcome).',
            buckets=DECISION_BUCKETS, registry=registry)
        self.decisions = Counter(
            'scheduler_decisions',
            'select_destinations calls, by outcome.', ['outcome'],
            registry=registry)
        self.instances_placed = Counter(
            'scheduler_instances_placed',
            'Instances given a host by a successful select_destinations.',
            registry=registry)
        self.no_valid_host = Counter(
            'scheduler_no_valid_host',
            'Decisions that raised NoValidHost while placing, by the filter '
            'that emptied the list of hosts ("none": no filter did).',
            ['filter'], registry=registry)
        self.hosts_removed = Counter(
            'scheduler_filter_removed_hosts',
            'Hosts removed by each filter, over every filter run.',
            ['filter'], registry=registry)
        self.hosts_known = view_gauge(
            'scheduler_hosts_known', 'Compute nodes in the host view')
        self.hosts_up = view_gauge(
            'scheduler_hosts_up',
            'Compute nodes whose compute service is up: not forced down, '
            'heard from within service_down_time')
        self.hosts_disabled = view_gauge(
            'scheduler_hosts_disabled',
            'Compute nodes whose compute service is disabled')
        self.view_staleness = view_gauge(
            'scheduler_view_staleness_seconds',
            'Seconds since the host view was read, when a decision used it')
        self.view_read_seconds = Histogram(
            'scheduler_view_read_duration_seconds',
            'Seconds a read of the host view took, by read: "changes" (the '
            'rows changed since the previous read) or "full".', ['read'],
            buckets=READ_BUCKETS, registry=registry)
        self.claim_races_lost = Counter(
            'scheduler_claim_races_lost',
            'Claims refused because another scheduler or a usage report '
            'changed a node since the view read it.', registry=registry)
        # Label children made once (each outcome and read shows from the
        # start, at 0); those of filters as each filter first runs.
        self.outcomes = {outcome: self.decisions.labels(outcome=outcome)
                         for outcome in OUTCOMES}
        self.reads = {read: self.view_read_seconds.labels(read=read)
                      for read in (CHANGES_READ, FULL_READ)}
        self.removed_by: dict[str, Any] = {}
        # When the view's gauges are due again (``time.monotonic()``).
        self.view_due = 0.0


_metrics: _Metrics | None = None
# The filter that emptied the list of hosts in this thread's decision.
_decision = threading.local()


def enable() -> CollectorRegistry:
    """Record from now on in this process (in the files of the directory
    of ``MULTIPROC_ENV`` when it is set); returns the registry of this
    process's own values."""
    global _metrics
    from prometheus_client import values
    if os.environ.get(MULTIPROC_ENV) and not values.ValueClass._multiprocess:
        # prometheus_client chooses where values live when it is first
        # imported: here, before the directory was named.
        values.ValueClass = values.get_value_class()
    _metrics = _Metrics()
    return _metrics.registry


def disable() -> None:
    """Record nothing from now on (the values kept are dropped)."""
    global _metrics
    _metrics = None


def enabled() -> bool:
    """Whether recording is on in this process."""
    return _metrics is not None


def decision(outcome: str, seconds: float, placed: int = 0) -> None:
    """One select_destinations call ended with ``outcome`` (one of
    ``OUTCOMES``) after ``seconds`` (float), having placed ``placed``
    instances."""
    m = _metrics
    if m is None:
        return
    m.decision_seconds.observe(seconds)
    m.outcomes[outcome].inc()
    if placed:
        m.instances_placed.inc(placed)


def decision_started() -> None:
    """A decision starts placing on this thread (the one that runs the
    filters)."""
    if _metrics is not None:
        _decision.emptied_by = None


def filtered(history: Sequence[tuple[str, int, int]]) -> None:
    """The filters of one filtering ran: ``(filter name, hosts before,
    hosts after)`` each, in order (the last one emptied the list when it
    left no host of some)."""
    m = _metrics
    if m is None or not history:
        return
    removed_by = m.removed_by
    for name, before, after in history:
        child = removed_by.get(name)
        if child is None:
            child = removed_by[name] = m.hosts_removed.labels(filter=name)
        if before != after:
            child.inc(before - after)
    name, before, after = history[-1]
    _decision.emptied_by = name if before and not after else None


def no_valid_host() -> None:
    """The decision placing on this thread raised NoValidHost: counted
    by the filter that last emptied its list of hosts (``filtered``)."""
    m = _metrics
    if m is None:
        return
    name = getattr(_decision, 'emptied_by', None) or NO_FILTER
    m.no_valid_host.labels(filter=name).inc()


def view_due() -> bool:
    """Whether the gauges of the host view are to be set now
    (``host_view``): recording is on, and they were not set in the last
    ``VIEW_INTERVAL`` seconds in this process."""
    m = _metrics
    if m is None:
        return False
    now = time.monotonic()
    if now < m.view_due:
        return False
    m.view_due = now + VIEW_INTERVAL
    return True


def host_view(known: int, up: int, disabled: int,
              staleness: float) -> None:
    """The host view a decision uses: ``known`` compute nodes, ``up`` and
    ``disabled`` of them, read ``staleness`` seconds ago."""
    m = _metrics
    if m is None:
        return
    m.hosts_known.set(known)
    m.hosts_up.set(up)
    m.hosts_disabled.set(disabled)
    m.view_staleness.set(staleness)


def view_read(read: str, seconds: float) -> None:
    """The host view was read (``CHANGES_READ`` or ``FULL_READ``) in
    ``seconds``."""
    m = _metrics
    if m is not None:
        m.reads[read].observe(seconds)


def lost_race() -> None:
    """A claim lost a race (logged with ``reservation.LOST_RACE``)."""
    m = _metrics
    if m is not None:
        m.claim_races_lost.inc()
