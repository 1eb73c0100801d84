"""Placement's ``GET /allocation_candidates`` timed against ours.

The queries asked of both (``queries``: the root providers answer them;
``tree_queries``: they take from child providers), our answer
(``our_candidates``) and Placement's (``placement_candidates``), both
timed over the same queries and their candidates compared (``measure``:
a size's row without its seeding and decision fields).
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from scheduler.placement import candidates
from scheduler.placement import database
from scheduler.placement import provider_trees
from scheduler.placement import query
from scheduler.placement import trees
from scheduler.placement.candidates import Provider
from scheduler_tools import seed
from scheduler_tools.bench import PLACEMENT
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench.placement_fleet import CUSTOM_TRAIT
from scheduler_tools.bench.placement_fleet import DISABLED_TRAIT
from scheduler_tools.bench.placement_fleet import PHYSNET_TRAIT
from scheduler_tools.bench.placement_fleet import VNIC_TRAIT
from scheduler_tools.bench.placement_fleet import aggregate_uuid
from scheduler_tools.bench.placement_rest import NOVA_MICROVERSION
from scheduler_tools.bench.placement_rest import call

# The zone whose aggregate the ``member_of`` query names (30% of hosts).
QUERY_ZONE = 'az2'
# The suffix of a port's request group is its uuid (Nova 34).
QOS_PORT = str(uuid.uuid5(uuid.NAMESPACE_URL, 'scheduler-bench-qos-port'))


def queries() -> list[dict[str, str]]:
    """Nova-like ``GET /allocation_candidates`` queries: a small and a
    large flavor, one requiring ``CUSTOM_TRAIT``, one in the aggregate
    of zone ``QUERY_ZONE`` (``member_of=in:``, as Nova's availability
    zone request filter).  Each forbids ``COMPUTE_STATUS_DISABLED`` on
    the root provider (``root_required``), as Nova 34's compute status
    request filter does; no ``limit``."""
    small = 'VCPU:1,MEMORY_MB:512,DISK_GB:10'
    enabled = {'root_required': '!' + DISABLED_TRAIT}
    return [
        dict(enabled, resources=small),
        dict(enabled, resources='VCPU:16,MEMORY_MB:65536,DISK_GB:500'),
        dict(enabled, resources='VCPU:2,MEMORY_MB:4096,DISK_GB:40',
             required=CUSTOM_TRAIT),
        dict(enabled, resources=small, member_of='in:' + aggregate_uuid(
            seed.AZ_AGGREGATE_PREFIX + QUERY_ZONE)),
    ]


def tree_queries() -> list[dict[str, str]]:
    """The queries of Nova 34 that take from child providers: a flavor
    with ``resources:VGPU=1`` (the unsuffixed group, spread over the
    compute node and its GPU) and a small flavor with a port that has a
    minimum bandwidth policy (its request group suffixed by its uuid,
    ``group_policy=none``); both with the compute status filter's
    ``root_required=!COMPUTE_STATUS_DISABLED``, as Nova 34 asks."""
    port = QOS_PORT
    return [
        {'resources': 'VCPU:2,MEMORY_MB:4096,DISK_GB:40,VGPU:1',
         'root_required': '!' + DISABLED_TRAIT},
        {'resources': 'VCPU:1,MEMORY_MB:512,DISK_GB:10',
         'resources_' + port: 'NET_BW_EGR_KILOBIT_PER_SEC:1000,'
                              'NET_BW_IGR_KILOBIT_PER_SEC:1000',
         'required_' + port: '%s,%s' % (PHYSNET_TRAIT, VNIC_TRAIT),
         'root_required': '!' + DISABLED_TRAIT, 'group_policy': 'none'},
    ]


def cycle(items: Sequence[Any], count: int) -> list[Any]:
    """``count`` items, going round ``items``."""
    return [items[index % len(items)] for index in range(count)]


def our_candidates(forest: provider_trees.Forest,
                   params: Mapping[str, str]) -> dict[str, Any]:
    """Our answer to one ``GET /allocation_candidates`` query (``params``
    as Placement's query string), Placement's body at microversion 1.36,
    as the Placement view computes it: over the root providers alone
    (``candidates.allocation_candidates``) when ``provider_trees.root_group``
    says they answer it, else over the provider trees
    (``trees.allocation_candidates``)."""
    request = query.Request.from_query(params)
    group = provider_trees.root_group(request, forest)
    if group is None:
        return trees.allocation_candidates(forest, request)
    return candidates.allocation_candidates(forest.roots, group)


def placement_candidates(api: Any, params: Mapping[str, str]) -> Any:
    """Placement's reply (not parsed) to ``GET /allocation_candidates``
    with ``params``, at ``api``'s microversion."""
    return call(api, 'GET', '/allocation_candidates', params=dict(params))


def candidate_uuids(body: Mapping[str, Any]) -> frozenset[str]:
    """The providers of an allocation candidates body's allocation
    requests."""
    return frozenset(rp for request in body['allocation_requests']
                     for rp in request['allocations'])


def allocation_requests(body: Mapping[str, Any]) -> frozenset[str]:
    """An allocation candidates body's allocation requests, each as
    canonical JSON (keys sorted, each ``mappings`` list sorted): equal
    sets, the same allocation requests."""
    return frozenset(
        json.dumps({'allocations': request['allocations'],
                    'mappings': {suffix: sorted(providers) for
                                 suffix, providers in
                                 request.get('mappings', {}).items()}},
                   sort_keys=True)
        for request in body['allocation_requests'])


@dataclasses.dataclass
class Answers:
    """Latencies (ms) of the queries answered and their candidates."""

    latencies_ms: list[float] = dataclasses.field(default_factory=list)
    uuids: list[frozenset[str]] = dataclasses.field(default_factory=list)
    truncated: bool = False


def time_queries(answer: Callable[[Mapping[str, str]], Any],
                 digest: Callable[[Any], frozenset[str]],
                 queries_: Sequence[Mapping[str, str]],
                 budget_s: float | None = None,
                 bar: Any = None) -> Answers:
    """Time ``answer(query)`` for each query (ms; ``digest`` of its
    result, the candidates' uuids, is taken after the clock stops);
    after ``inprocess.MIN_REQUESTS`` queries, stop once ``budget_s``
    seconds have passed (``--time-budget``, as the other modes)."""
    answers = Answers()
    started = time.monotonic()
    for done, params in enumerate(queries_):
        if (budget_s is not None and done >= inprocess.MIN_REQUESTS and
                time.monotonic() - started > budget_s):
            answers.truncated = True
            break
        begin = time.perf_counter()
        result = answer(params)
        answers.latencies_ms.append((time.perf_counter() - begin) * 1000.0)
        answers.uuids.append(digest(result))
        del result      # not kept while the next one is timed
        if bar is not None:
            bar.update(1)
    return answers


def prefixed(prefix: str, latencies_ms: Sequence[float]) -> dict:
    return {prefix + name: value for name, value
            in report.percentiles_ms(list(latencies_ms)).items()}


def measure(api: Any, engine: Any, written: Collection[str],
            settings: Any) -> dict[str, Any]:
    """The figures of one size (``written``: the uuids of the providers
    in Placement): the row without its seeding fields (see the
    module)."""
    with engine.connect() as connection:
        begin = time.perf_counter()
        roots, children = database.read_trees(connection)
        load_ms = (time.perf_counter() - begin) * 1000.0
    read = list(roots.values()) + list(children.values())
    if {p.uuid for p in read} != set(written):
        raise BenchError('--placement-database holds %d providers, not the '
                         '%d written through --placement-url: is it that '
                         "Placement's database?" % (len(read), len(written)))
    forest = provider_trees.Forest(candidates.ProviderTable(roots.values()),
                          candidates.ProviderTable(children.values()))
    label = '%s %s providers' % (PLACEMENT, '{:,}'.format(len(read)))
    theirs, ours, compared = _compare(
        api, lambda params: our_candidates(forest, params), candidate_uuids,
        queries(), settings, label)
    # Without the shaping into Placement's body: the providers only.
    unshaped = time_queries(
        lambda params: _root_candidates(forest, params),
        lambda found: frozenset(p.uuid for p in found),
        cycle(queries(), len(compared)))
    row: dict[str, Any] = {
        'mode': PLACEMENT, 'hosts': len(roots), 'providers': len(read),
        'microversion': NOVA_MICROVERSION,
        'load_ms': round(load_ms, 3), 'truncated': theirs.truncated}
    row.update(_answers('', theirs, ours, compared))
    row.update(prefixed('ours_unshaped_', unshaped.latencies_ms))
    theirs, ours, compared = _compare(
        api, lambda params: our_candidates(forest, params),
        allocation_requests, tree_queries(), settings, label + ', trees')
    row.update(_answers('trees_', theirs, ours, compared))
    row['truncated'] |= theirs.truncated
    return row


def _root_candidates(forest: provider_trees.Forest, params: Mapping[str, str]
                     ) -> list[Provider]:
    """The candidate providers of a query the root providers answer
    (``provider_trees.root_group``), not shaped as Placement's body."""
    group = provider_trees.root_group(query.Request.from_query(params), forest)
    if group is None:
        raise BenchError('%s needs provider trees' % dict(params))
    return forest.roots.candidates(group)


def _compare(api: Any, ours_of: Callable[[Mapping[str, str]], Any],
             digest: Callable[[Any], frozenset[str]],
             shapes: Sequence[Mapping[str, str]], settings: Any,
             label: str) -> tuple[Answers, Answers, list[tuple[Any, Any]]]:
    """Warm both up, then time Placement's answers to ``shapes`` (cycled,
    ``--requests`` of them, within the time budget) and ours to the
    queries Placement answered; returns both Answers and their digests
    side by side."""
    for params in cycle(shapes, settings.warmup):
        ours_of(params)
        placement_candidates(api, params)
    measured = cycle(shapes, settings.requests)
    with inprocess.progress_bar(len(measured), label + ': Placement',
                                settings.progress) as bar:
        theirs = time_queries(
            lambda params: placement_candidates(api, params),
            lambda reply: digest(reply.json()), measured,
            settings.time_budget_s, bar)
    measured = measured[:len(theirs.latencies_ms)]
    with inprocess.progress_bar(len(measured), label + ': ours',
                                settings.progress) as bar:
        ours = time_queries(ours_of, digest, measured, bar=bar)
    return theirs, ours, list(zip(theirs.uuids, ours.uuids, strict=True))


def _answers(prefix: str, theirs: Answers, ours: Answers,
             compared: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """The fields of one set of queries: ``requests``, ``mismatches``,
    ``candidates_mean`` and both sides' latencies, each name after
    ``prefix``."""
    fields = {
        'requests': len(compared),
        'mismatches': sum(a != b for a, b in compared),
        'candidates_mean': round(sum(len(a) for a, _ in compared) /
                                 max(1, len(compared)), 1)}
    fields.update(prefixed('placement_', theirs.latencies_ms))
    fields.update(prefixed('ours_', ours.latencies_ms))
    return {prefix + name: value for name, value in fields.items()}
