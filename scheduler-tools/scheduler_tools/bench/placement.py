"""Placement mode: Placement's ``GET /allocation_candidates`` against ours.

On the Placement given (``--placement-url``, ``noauth2``, holding no
resource provider) and its database (``--placement-database``, only
read), ``run`` takes the sizes in increasing order and, for each:

1. writes the providers that bring Placement to that size through its
   REST API, as nova-compute writes them (``seed_providers``, from
   ``SEED_THREADS`` threads): the sizes share one fleet, so ``seed_s``
   is the time of the providers added for that size;
2. reads them all back with ``scheduler.placement.database.
   read_providers`` (``load_ms``) into a ``ProviderTable``;
3. asks both the same ``queries()``, cycled (``--warmup`` of them first,
   not timed): Placement at microversion 1.36 (Nova 34's) without
   ``limit``, so that every provider is considered, timed at the client
   up to the reply's body read (not parsed); ours through
   ``our_candidates``, the step the decision will follow;
4. counts the queries whose candidates (the providers of the allocation
   requests) differ: ``mismatches``, which must be 0;
4b. does 3 and 4 again for ``tree_queries()``, the requests that take
   from child providers (a vGPU flavor, a port with a minimum bandwidth
   policy), answered by ``scheduler.placement.trees`` over every
   provider, comparing whole allocation requests (``trees_*``);
5. times our decisions in Placement mode over the same fleet
   (``measure_decisions``): a FilterScheduler with ``[scheduler]
   use_placement`` on a temporary SQLite database of the compute nodes
   whose providers these are, without the claim (``decision_*``:
   refresh, candidates, filters and weighers) and with it
   (``decision_claim_*``: one ``PUT /allocations`` more), and the
   decisions of a vGPU flavor (``trees_decision_*``);
6. deletes the allocations of ``FREED_ROUNDS`` of those instances one by
   one, as Nova frees a deleted server's (no provider generation moves),
   and times how long the view takes to hold the freed usage
   (``freed_*``, against ``FREED_BOUND_MS``), one full read of the usage
   watch (``usage_read_*``), and the first decisions again with the
   usage watch stopped (``decision_unwatched_*``: its cost).

The fleet is that of ``workload.generate_hosts``; ``GPU_SHARE`` of its
compute nodes have a physical GPU provider (VGPU inventory) under their
own, as the libvirt driver reports it, and ``BANDWIDTH_SHARE`` the
providers of Neutron's Open vSwitch agent and bridge (minimum bandwidth
inventories and physnet / vnic type traits), as the Neutron agent
reports them.

A row per size (``measure``, ``measure_decisions``, ``run``): ``hosts``
(compute nodes: root providers), ``providers`` (children included),
``seeded``, ``seed_s``, ``load_ms``, ``placement_*``,
``ours_*`` and ``ours_unshaped_*`` (without the shaping into Placement's
body), ``decision_*`` and ``decision_claim_*`` latencies in ms
(``report.percentiles_ms``), ``load_view_s``, ``speedup`` (Placement's
p50 / our decision's), ``target_speedup``, ``meets_target``,
``mismatches``, ``candidates_mean``, and for the tree queries
``trees_requests``, ``trees_placement_*``, ``trees_ours_*``,
``trees_mismatches``, ``trees_candidates_mean``, ``trees_decision_*``
and ``trees_speedup``; ``freed_*``, ``freed_bound_ms``,
``freed_meets_bound``, ``usage_read_*`` and ``decision_unwatched_*``.
The providers, and the decisions'
allocations, stay in Placement afterwards.

Its parts: ``placement_rest`` (Placement's REST API, also the tests':
``tests/placement_api.py``), ``placement_fleet`` (the providers and
their seeding), ``placement_compare`` (the queries, both answers timed
and compared), ``placement_decisions`` (our decisions in Placement
mode), ``placement_freed`` (the freed capacity) and ``placement_table``
(the rows printed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from scheduler.placement import database
from scheduler_tools.bench import PLACEMENT
from scheduler_tools.bench import BenchError
from scheduler_tools.bench.placement_compare import measure
from scheduler_tools.bench.placement_decisions import measure_decisions
from scheduler_tools.bench.placement_fleet import CUSTOM_TRAIT
from scheduler_tools.bench.placement_fleet import PHYSNET_TRAIT
from scheduler_tools.bench.placement_fleet import SEED_THREADS
from scheduler_tools.bench.placement_fleet import VNIC_TRAIT
from scheduler_tools.bench.placement_fleet import generate_providers
from scheduler_tools.bench.placement_fleet import seed_providers
from scheduler_tools.bench.placement_rest import call_json
from scheduler_tools.bench.placement_rest import client
from scheduler_tools.bench.placement_rest import ensure

# What the placement mode runs unless the option is given
# (bench.Settings fields); ``--smoke`` then makes it shorter.
DEFAULTS = {'hosts': [1000, 10000, 50000], 'requests': 40, 'warmup': 4}
SMOKE = {'hosts': [200], 'requests': 10, 'warmup': 4,
         'time_budget_s': 30.0}
# Speed-up floor (Placement's p50 / ours) by number of providers.
SPEEDUP_TARGETS = {10000: 100.0}


def require(url: str | None, database_url: str | None) -> tuple[str, str]:
    """``(url, database_url)``; BenchError unless both the Placement and
    its database are given."""
    if url and database_url:
        return url, database_url
    missing = [option for option, value in (
        ('--placement-url', url), ('--placement-database', database_url))
        if not value]
    raise BenchError('--mode placement needs %s (a noauth2 Placement '
                     'holding no resource provider, and the SQLAlchemy '
                     'URL of its database)' % ' and '.join(missing))


def check_empty(api: Any, engine: Any, url: str) -> None:
    """BenchError unless Placement and its database hold no provider."""
    held = call_json(api, 'GET', '/resource_providers')['resource_providers']
    if held:
        raise BenchError('the Placement at %s holds %d resource provider(s);'
                         ' --mode placement needs one without any (it '
                         'writes its own)' % (url, len(held)))
    try:
        with engine.connect() as connection:
            stored = len(database.read_providers(connection))
    except sa.exc.SQLAlchemyError as exc:
        raise BenchError("cannot read Placement's database "
                         '(--placement-database): %s'
                         % str(exc).splitlines()[0]) from exc
    if stored:
        raise BenchError('--placement-database holds %d resource '
                         'provider(s) but the Placement at %s none: is it '
                         "that Placement's database?" % (stored, url))


def run(settings: Any, placement_url: str | None,
        database_url: str | None,
        emit: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
    """Measure every size of ``settings.hosts`` (increasing) on the
    Placement at ``placement_url`` and its database ``database_url`` (see
    the module); ``emit(row)`` as each row is measured.  Returns the
    rows."""
    url, database_url = require(placement_url, database_url)
    sizes = sorted(set(settings.hosts))
    api = client(url)
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    rows = []
    try:
        check_empty(api, engine, url)
        ensure(api, traits=[CUSTOM_TRAIT, VNIC_TRAIT, PHYSNET_TRAIT])
        written: set[str] = set()
        for size in sizes:
            # Only the uuids stay: the generated providers would weigh on
            # the garbage collector while ours are timed.
            added = generate_providers(size, settings.seed)[len(written):]
            seeded = len(added)
            started = time.monotonic()
            seed_providers(url, added, progress=settings.progress,
                           label='%s %s providers: seeding' % (
                               PLACEMENT, '{:,}'.format(size)))
            seed_s = time.monotonic() - started
            written.update(provider.uuid for provider in added)
            del added
            row = measure(api, engine, written, settings)
            row.update(seeded=seeded, seed_s=round(seed_s, 2),
                       seed_threads=SEED_THREADS)
            row.update(measure_decisions(url, database_url, size, settings))
            _speedup(row)
            rows.append(row)
            if emit is not None:
                emit(row)
    finally:
        engine.dispose()
    return rows


def _speedup(row: dict[str, Any]) -> None:
    """``speedup``: Placement's p50 over our decision's (candidates,
    filters and weighers, no claim), against ``SPEEDUP_TARGETS`` (by
    number of compute nodes); ``trees_speedup`` the same for the tree
    queries and the vGPU flavor's decisions."""
    for prefix in ('', 'trees_'):
        ours = row[prefix + 'decision_p50_ms']
        row[prefix + 'speedup'] = (
            round(row[prefix + 'placement_p50_ms'] / ours, 1) if ours
            else None)
    row['target_speedup'] = SPEEDUP_TARGETS.get(row['hosts'])
    row['meets_target'] = (None if row['target_speedup'] is None else
                           row['speedup'] is not None and
                           row['speedup'] >= row['target_speedup'])
