"""Our decisions in Placement mode over the placement mode's fleet.

``measure_decisions`` runs a FilterScheduler with ``[scheduler]
use_placement`` (``placement_mode``) on a temporary SQLite database of
the fleet's compute nodes and times its decisions: without and with the
claim, with the usage watch stopped, for a vGPU flavor; then a full read
of the usage watch, the freed capacity (``placement_freed``) and one
request for many instances (``placement_multi``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from keystoneauth1 import loading as ks_loading

from scheduler.placement import database
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import workload
from scheduler_tools.bench.placement_compare import prefixed
from scheduler_tools.bench.placement_freed import FREED_BOUND_MS
from scheduler_tools.bench.placement_freed import FREED_ROUNDS
from scheduler_tools.bench.placement_freed import measure_freed
from scheduler_tools.bench.placement_multi import MULTI_CREATE
from scheduler_tools.bench.placement_multi import SMOKE_MULTI_CREATE
from scheduler_tools.bench.placement_multi import measure_multi_create
from scheduler_tools.bench.placement_rest import client


@contextlib.contextmanager
def placement_mode(url: str, database_url: str) -> Iterator[None]:
    """``[scheduler] use_placement`` on the Placement at ``url`` (noauth2,
    through ``auth_type = admin_token``) and its database, for the
    decisions measured in this process; the options are restored after."""
    from scheduler.conf import CONF
    from scheduler.conf import placement

    placement.register_client_opts(CONF)
    if 'token' not in CONF.placement:
        CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
            'admin_token'), group='placement')
    overrides = [('use_placement', True, 'scheduler'),
                 ('auth_type', 'admin_token', 'placement'),
                 ('endpoint', url, 'placement'),
                 ('token', 'admin', 'placement'),
                 ('connection', database_url, 'placement_database')]
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    try:
        yield
    finally:
        for name, _, group in overrides:
            CONF.clear_override(name, group)


def measure_decisions(url: str, database_url: str, size: int,
                      settings: Any) -> dict[str, Any]:
    """The decisions of the Placement mode over ``size`` compute nodes
    whose providers are the Placement's (``workload.generate_hosts``, as
    ``generate_providers``): a FilterScheduler in Placement mode on a
    temporary SQLite database of those nodes, the same single-instance
    ``plain`` requests timed twice: ``decision_*`` (the view's refresh,
    the candidates, the filters and weighers: ``best_host``) and
    ``decision_claim_*`` (``select_destinations``, which claims each
    instance in Placement with one ``PUT /allocations``), and as many
    requests for new instances with a vGPU flavor (``resources:VGPU=1``)
    without the claim (``trees_decision_*``: their candidates come from
    provider trees).
    Latencies in ms; ``load_view_s``: the driver's first load of the
    view."""
    from scheduler import drivers

    hosts = workload.generate_hosts(size, settings.seed)
    bench = workload.Workload(hosts, settings.seed)
    warmup = bench.requests(1, settings.warmup, 'placement-warmup', 'plain')
    measured = bench.requests(1, settings.requests, 'placement', 'plain')
    # The vGPU flavor's requests are new instances (an instance placed
    # already would be a move).
    gpu_warmup = bench.requests(1, settings.warmup, 'placement-gpu-warmup',
                                'plain')
    gpu_measured = bench.requests(1, settings.requests, 'placement-gpu',
                                  'plain')
    for request in warmup + measured + gpu_warmup + gpu_measured:
        request.spec.user_id = 'bench'
    for request in gpu_warmup + gpu_measured:
        request.spec.flavor.extra_specs = {'resources:VGPU': '1'}
    with inprocess.temporary_sqlite() as ctx, placement_mode(url,
                                                             database_url):
        workload.seed_hosts(ctx, hosts)
        started = time.perf_counter()
        driver = drivers.load_driver(ctx, name='filter_scheduler')
        load_view_s = time.perf_counter() - started
        try:
            for request in warmup:
                driver.best_host(ctx, request.spec)
            ranked = _latencies_ms(lambda request: driver.best_host(
                ctx, request.spec), measured)
            # The same decisions again at once, the usage watch stopped
            # (its cost, side by side), then watched again.
            driver.candidates.view.watch.stop()
            unwatched = _latencies_ms(lambda request: driver.best_host(
                ctx, request.spec), measured)
            driver.candidates.view.watch_usages(
                driver.candidates.view.watch.interval)
            decided = _latencies_ms(
                lambda request: driver.select_destinations(
                    ctx, request.spec, request.instance_uuids), measured)
            freed = measure_freed(client(url), driver, [
                request.instance_uuids[0] for request in measured])
            usage_read = _latencies_ms(lambda _: _read_usages(driver),
                                       measured[:FREED_ROUNDS])
            for request in gpu_warmup:
                driver.best_host(ctx, request.spec)
            gpu = _latencies_ms(lambda request: driver.best_host(
                ctx, request.spec), gpu_measured)
            multi = measure_multi_create(client(url), driver, ctx, (
                SMOKE_MULTI_CREATE if settings.smoke else MULTI_CREATE))
        finally:
            driver.stop()
    row = {'load_view_s': round(load_view_s, 2),
           'freed_bound_ms': FREED_BOUND_MS, **multi}
    row.update(prefixed('decision_', ranked))
    row.update(prefixed('decision_claim_', decided))
    row.update(prefixed('trees_decision_', gpu))
    row.update(prefixed('decision_unwatched_', unwatched))
    row.update(prefixed('freed_', freed))
    row.update(prefixed('usage_read_', usage_read))
    row['freed_requests'] = len(freed)
    row['freed_meets_bound'] = row['freed_p99_ms'] <= FREED_BOUND_MS
    return row


def _read_usages(driver: Any) -> None:
    """One full read of the usage watch: every provider's usage read
    and compared with the view (what it does when anything changed)."""
    watch = driver.candidates.view.watch
    with watch.engine.connect() as connection:
        usages = database.read_usages(connection)
    watch.reconcile(usages)


def _latencies_ms(call: Callable[[Any], Any], requests: Sequence[Any]
                  ) -> list[float]:
    latencies = []
    for request in requests:
        begin = time.perf_counter()
        call(request)
        latencies.append((time.perf_counter() - begin) * 1000.0)
    return latencies
