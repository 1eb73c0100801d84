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
allocations, stay in Placement afterwards.  The REST helpers are also
the tests' (``tests/placement_api.py``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from keystoneauth1 import adapter
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session
from keystoneauth1 import token_endpoint

from scheduler.placement import candidates
from scheduler.placement import database
from scheduler.placement import provider_trees
from scheduler.placement import query
from scheduler.placement import trees
from scheduler.placement.candidates import Inventory
from scheduler.placement.candidates import Provider
from scheduler.resources import ratios
from scheduler_tools import seed
from scheduler_tools.bench import PLACEMENT
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

# Nova 34 asks Placement for allocation candidates at this microversion.
NOVA_MICROVERSION = '1.36'
# What the placement mode runs unless the option is given
# (bench.Settings fields); ``--smoke`` then makes it shorter.
DEFAULTS = {'hosts': [1000, 10000, 50000], 'requests': 40, 'warmup': 4}
SMOKE = {'hosts': [200], 'requests': 10, 'warmup': 4,
         'time_budget_s': 30.0}
# Threads writing the providers (gunicorn's workers answer them).
SEED_THREADS = 12
# Speed-up floor (Placement's p50 / ours) by number of providers.
SPEEDUP_TARGETS = {10000: 100.0}
# Capacity freed in Placement without a generation bump (a server
# deleted): how many frees are timed per size, how often the view is
# refreshed meanwhile (as decisions would), the bound on the p99 of the
# time until it is seen, and how long to wait before giving up.
FREED_ROUNDS = 20
FREED_POLL_S = 0.01
FREED_BOUND_MS = 1000.0
FREED_TIMEOUT_S = 10

# nova-compute's reserved_host_memory_mb default (MiB); it reserves no
# vCPU and no disk by default.
RESERVED_HOST_MEMORY_MB = 512
# Traits the libvirt driver reports on every compute node (standard
# traits: Placement knows them).
COMPUTE_TRAITS = ('COMPUTE_NODE', 'COMPUTE_NET_ATTACH_INTERFACE',
                  'COMPUTE_VOLUME_ATTACH_WITH_TAG', 'COMPUTE_DEVICE_TAGGING',
                  'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW')
# CPU flags of ``cpu_info`` -> the trait the libvirt driver reports.
CPU_FEATURE_TRAITS = {'sse4.1': 'HW_CPU_X86_SSE41',
                      'sse4.2': 'HW_CPU_X86_SSE42', 'avx': 'HW_CPU_X86_AVX',
                      'avx2': 'HW_CPU_X86_AVX2', 'aes': 'HW_CPU_X86_AESNI',
                      'avx512f': 'HW_CPU_X86_AVX512F',
                      'asimd': 'HW_CPU_AARCH64_ASIMD'}
# nova-compute sets it on the provider of a disabled compute service.
DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
# An operator's trait on the hosts with SSDs (``stats['storage']``).
CUSTOM_TRAIT = 'CUSTOM_STORAGE_SSD'
# Share of the providers that carry one allocation (their used amounts).
USED_SHARE = 0.5
# The zone whose aggregate the ``member_of`` query names (30% of hosts).
QUERY_ZONE = 'az2'
# Share of the compute nodes with a physical GPU (a child provider of
# ``VGPUS_PER_GPU`` VGPU) and share with Neutron's bandwidth providers
# (agent, then bridge: ``BANDWIDTH_KBPS`` each way); drawn apart.
GPU_SHARE = 0.2
BANDWIDTH_SHARE = 0.2
VGPUS_PER_GPU = 16
BANDWIDTH_KBPS = 10_000_000
# Traits Neutron's Open vSwitch agent reports: on the agent, the vnic
# types it supports; on a bridge, its physnet's and those vnic types.
VNIC_TRAIT = 'CUSTOM_VNIC_TYPE_NORMAL'
PHYSNET_TRAIT = 'CUSTOM_PHYSNET_PUBLIC'
# The suffix of a port's request group is its uuid (Nova 34).
QOS_PORT = str(uuid.uuid5(uuid.NAMESPACE_URL, 'scheduler-bench-qos-port'))


class PlacementError(BenchError):
    """Placement answered with an unexpected status, or not at all."""


# ------------------------------------------------------------ REST API --

def client(url: str, microversion: str = NOVA_MICROVERSION) -> Any:
    """A keystoneauth1 Adapter on a ``noauth2`` Placement at ``url`` (the
    token ``admin``), at ``microversion``; it raises no exception on an
    HTTP error status (``call`` checks it)."""
    return adapter.Adapter(
        session.Session(auth=token_endpoint.Token(url, 'admin')),
        service_type='placement', default_microversion=microversion,
        raise_exc=False)


def call(api: Any, method: str, path: str,
         expected: Iterable[int] = (200,), **kwargs: Any) -> Any:
    """One request through ``api`` (``client``); the response, or
    PlacementError when its status is not ``expected`` or Placement
    cannot be reached."""
    from keystoneauth1 import exceptions

    try:
        reply = api.request(path, method, **kwargs)
    except exceptions.ConnectionError as exc:
        raise PlacementError('%s %s: %s' % (method, path, exc)) from exc
    if reply.status_code not in tuple(expected):
        raise PlacementError('%s %s: %d %s' % (
            method, path, reply.status_code, reply.text[:500]))
    return reply


def call_json(api: Any, method: str, path: str,
              expected: Iterable[int] = (200,), **kwargs: Any) -> Any:
    """``call``'s JSON body (None when empty)."""
    reply = call(api, method, path, expected, **kwargs)
    return reply.json() if reply.content else None


def ensure(api: Any, traits: Iterable[str] = (),
           resource_classes: Iterable[str] = ()) -> None:
    """Create custom traits and resource classes (``PUT /traits/{name}``,
    ``PUT /resource_classes/{name}``, microversion 1.7+), as Nova does
    before it sets them on a provider: a request naming an unknown one
    is a 400."""
    for trait in traits:
        call(api, 'PUT', '/traits/%s' % trait, (201, 204))
    for rc in resource_classes:
        call(api, 'PUT', '/resource_classes/%s' % rc, (201, 204))


def inventory_body(inventory: Inventory) -> dict[str, Any]:
    """One resource class of ``PUT /resource_providers/{uuid}/
    inventories`` (``max_unit`` None: the total)."""
    return {'total': inventory.total, 'reserved': inventory.reserved,
            'min_unit': inventory.min_unit,
            'max_unit': inventory.effective_max_unit,
            'step_size': inventory.step_size,
            'allocation_ratio': inventory.allocation_ratio}


def compute_inventories(vcpus: int, memory_mb: int, disk_gb: int,
                        cpu_allocation_ratio: float,
                        ram_allocation_ratio: float,
                        disk_allocation_ratio: float,
                        reserved_host_memory_mb: int =
                        RESERVED_HOST_MEMORY_MB) -> dict[str, Inventory]:
    """A compute node's inventory as nova-compute's resource tracker
    reports it: VCPU, MEMORY_MB (MiB, ``reserved_host_memory_mb``
    reserved) and DISK_GB (GiB), each with ``min_unit`` 1, ``max_unit``
    the total (one instance is never larger than the node), ``step_size``
    1 and the node's allocation ratio."""
    def one(total: int, ratio: float, reserved: int = 0) -> Inventory:
        return Inventory(total=total, reserved=reserved, min_unit=1,
                         max_unit=total, step_size=1,
                         allocation_ratio=ratio)
    return {'VCPU': one(vcpus, cpu_allocation_ratio),
            'MEMORY_MB': one(memory_mb, ram_allocation_ratio,
                             reserved_host_memory_mb),
            'DISK_GB': one(disk_gb, disk_allocation_ratio)}


def write_provider(api: Any, provider: Provider) -> int:
    """Write ``provider`` (its custom traits and classes must exist,
    ``ensure``; its parent too, for a child provider) as nova-compute's
    report client does: ``POST /resource_providers`` (its generation in
    the reply: microversion 1.20+; with its ``parent_provider_uuid``),
    then its inventories, traits and aggregates (each ``PUT``
    with the generation the previous one returned; the last two only
    when it has some, 1.19+).  Returns the provider's generation."""
    created = {'uuid': provider.uuid, 'name': provider.name}
    if provider.parent_uuid:
        created['parent_provider_uuid'] = provider.parent_uuid
    generation = call_json(api, 'POST', '/resource_providers',
                           json=created)['generation']
    path = '/resource_providers/%s' % provider.uuid
    for part, body in (
            ('inventories', {rc: inventory_body(inventory) for rc, inventory
                             in provider.inventories.items()}),
            ('traits', sorted(provider.traits)),
            ('aggregates', sorted(provider.aggregates))):
        if body or part == 'inventories':
            generation = call_json(api, 'PUT', '%s/%s' % (path, part), json={
                'resource_provider_generation': generation, part: body,
            })['resource_provider_generation']
    return generation


def claim(api: Any, consumer: str, allocation_request: Mapping[str, Any],
          project_id: str, user_id: str,
          consumer_generation: int | None = None) -> int:
    """``PUT /allocations/{consumer}`` of one allocation request, as
    ``nova.scheduler.utils.claim_resources``; returns the status, 204
    when claimed, 409 when refused (capacity, or a concurrent update).
    Always at Nova's microversion (1.38 and later also ask for a
    ``consumer_type``)."""
    body = dict(allocation_request, project_id=project_id, user_id=user_id,
                consumer_generation=consumer_generation)
    return call(api, 'PUT', '/allocations/%s' % consumer, (204, 409),
                json=body, microversion=NOVA_MICROVERSION).status_code


def write_usages(api: Any, provider: Provider) -> None:
    """``provider.usages`` (the amounts that are not 0) as one new
    consumer's allocation; PlacementError when refused."""
    used = {rc: amount for rc, amount in provider.usages.items() if amount}
    if not used:
        return
    status = claim(api, str(uuid.uuid4()), {'allocations': {
        provider.uuid: {'resources': used}}}, str(uuid.uuid4()),
        str(uuid.uuid4()))
    if status != 204:
        raise PlacementError('the usages of %s were refused' % provider.name)


# --------------------------------------------------------------- fleet --

def aggregate_uuid(name: str) -> str:
    """The uuid of the fleet's aggregate ``name`` (``seed.bulk_seed``'s:
    Nova mirrors a host aggregate into Placement by its uuid)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def provider_of(host: workload.BenchHost, used: bool) -> Provider:
    """``host`` as nova-compute reports it to Placement: the compute
    node's uuid (as ``workload.compute_node_row``) and hypervisor
    hostname, ``compute_inventories`` with the node's ratios (else
    Nova's, ``ratios.resolve_allocation_ratio``), the driver's traits
    (and ``DISABLED_TRAIT`` when its service is disabled, Nova 20+),
    its aggregates and zone aggregate; ``used``: its used vCPUs, MiB and
    GiB as usages."""
    spec = host.spec
    features = host.cpu_info.get('features', ())
    traits = set(COMPUTE_TRAITS)
    traits.update(CPU_FEATURE_TRAITS[flag] for flag in features
                  if flag in CPU_FEATURE_TRAITS)
    if host.disabled:
        traits.add(DISABLED_TRAIT)
    if host.stats.get('storage') == 'ssd':
        traits.add(CUSTOM_TRAIT)
    names = list(spec.aggregates)
    if spec.availability_zone:
        names.append(seed.AZ_AGGREGATE_PREFIX + spec.availability_zone)
    cpu, ram, disk = (ratios.resolve_allocation_ratio(name,
                                                      getattr(spec, name))
                      for name in seed.RATIO_NAMES)
    inventories = compute_inventories(spec.vcpus, spec.memory_mb,
                                      spec.local_gb, cpu, ram, disk)
    usages = ({'VCPU': host.vcpus_used, 'MEMORY_MB': host.memory_mb_used,
               'DISK_GB': host.local_gb_used} if used else {})
    return Provider(
        uuid=str(uuid.uuid5(uuid.NAMESPACE_DNS, spec.host)),
        name=spec.nodename, inventories=inventories,
        usages={rc: amount for rc, amount in usages.items() if amount},
        traits=frozenset(traits),
        aggregates=frozenset(aggregate_uuid(name) for name in names))


def _child(root: Provider, parent: Provider, name: str,
           inventories: Mapping[str, Inventory],
           traits: Iterable[str] = (),
           usages: Mapping[str, int] | None = None) -> Provider:
    return Provider(uuid=str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                    name=name, inventories=inventories,
                    usages=dict(usages or {}), traits=frozenset(traits),
                    parent_uuid=parent.uuid, root_uuid=root.uuid)


def children_of(root: Provider, gpu: bool, bandwidth: bool,
                vgpus_used: int = 0) -> list[Provider]:
    """The child providers of compute node ``root``, parents first: with
    ``gpu``, the physical GPU's (``VGPUS_PER_GPU`` VGPU, ``vgpus_used``
    of them used) named after its PCI address as the libvirt driver
    names it; with ``bandwidth``, Neutron's Open vSwitch agent provider
    and, under it, its bridge's (``BANDWIDTH_KBPS`` of
    NET_BW_EGR_KILOBIT_PER_SEC and NET_BW_IGR_KILOBIT_PER_SEC, kbit/s),
    named as Neutron names them."""
    found = []
    if gpu:
        found.append(_child(
            root, root, '%s_pci_0000_81_00_0' % root.name,
            {'VGPU': Inventory(total=VGPUS_PER_GPU, max_unit=VGPUS_PER_GPU)},
            usages={'VGPU': vgpus_used} if vgpus_used else None))
    if bandwidth:
        agent = _child(root, root, '%s:Open vSwitch agent' % root.name, {},
                       [VNIC_TRAIT])
        rate = Inventory(total=BANDWIDTH_KBPS, max_unit=BANDWIDTH_KBPS)
        found += [agent, _child(
            root, agent, '%s:Open vSwitch agent:br-ex' % root.name,
            {'NET_BW_EGR_KILOBIT_PER_SEC': rate,
             'NET_BW_IGR_KILOBIT_PER_SEC': rate},
            [PHYSNET_TRAIT, VNIC_TRAIT])]
    return found


def generate_providers(count: int, seed_value: int = 0) -> list[Provider]:
    """The providers of ``workload.generate_hosts(count, seed_value)``:
    each compute node's, ``USED_SHARE`` of them with usages, followed by
    its child providers (``children_of``: ``GPU_SHARE`` of them with a
    GPU, ``BANDWIDTH_SHARE`` with bandwidth providers).  Those of a
    smaller ``count`` come first, in the same order."""
    rng = random.Random('placement-usages:%s' % seed_value)
    found: list[Provider] = []
    for host in workload.generate_hosts(count, seed_value):
        root = provider_of(host, rng.random() < USED_SHARE)
        gpu, bandwidth = (rng.random() < GPU_SHARE,
                          rng.random() < BANDWIDTH_SHARE)
        found.append(root)
        found += children_of(root, gpu, bandwidth,
                             rng.randrange(VGPUS_PER_GPU // 2))
    return found


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


def seed_providers(url: str, providers: Sequence[Provider],
                   threads: int = SEED_THREADS, progress: bool = True,
                   label: str = 'seeding') -> None:
    """Write ``providers`` (``write_provider`` and ``write_usages``) into
    the Placement at ``url`` from ``threads`` threads, each with its own
    client, a level of the trees at a time (roots, then their children,
    then theirs), so that a parent exists before its children; the first
    failure stops the rest and is raised."""
    from tqdm import tqdm

    local = threading.local()

    def write(provider: Provider) -> None:
        api = getattr(local, 'api', None)
        if api is None:
            api = local.api = client(url)
        write_provider(api, provider)
        write_usages(api, provider)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool, tqdm(
            total=len(providers), desc=label, unit='rp', leave=False,
            disable=not progress) as bar:
        for level in _levels(providers):
            futures = [pool.submit(write, provider) for provider in level]
            try:
                for future in concurrent.futures.as_completed(futures):
                    future.result()
                    bar.update(1)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise


def _levels(providers: Sequence[Provider]) -> list[list[Provider]]:
    """``providers`` by depth in their trees (roots first), each level
    in the given order."""
    depth: dict[str, int] = {}
    levels: list[list[Provider]] = []
    for provider in providers:
        level = (0 if provider.parent_uuid is None
                 else depth.get(provider.parent_uuid, 0) + 1)
        depth[provider.uuid] = level
        while len(levels) <= level:
            levels.append([])
        levels[level].append(provider)
    return levels


# ------------------------------------------------------------- measure --

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


def _prefixed(prefix: str, latencies_ms: Sequence[float]) -> dict:
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
    row.update(_prefixed('ours_unshaped_', unshaped.latencies_ms))
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
    fields.update(_prefixed('placement_', theirs.latencies_ms))
    fields.update(_prefixed('ours_', ours.latencies_ms))
    return {prefix + name: value for name, value in fields.items()}


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


@contextlib.contextmanager
def placement_mode(url: str, database_url: str) -> Iterator[None]:
    """``[scheduler] use_placement`` on the Placement at ``url`` (noauth2,
    through ``auth_type = admin_token``) and its database, for the
    decisions measured in this process; the options are restored after."""
    from scheduler.conf import CONF

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
        finally:
            driver.stop()
    row = {'load_view_s': round(load_view_s, 2),
           'freed_bound_ms': FREED_BOUND_MS}
    row.update(_prefixed('decision_', ranked))
    row.update(_prefixed('decision_claim_', decided))
    row.update(_prefixed('trees_decision_', gpu))
    row.update(_prefixed('decision_unwatched_', unwatched))
    row.update(_prefixed('freed_', freed))
    row.update(_prefixed('usage_read_', usage_read))
    row['freed_requests'] = len(freed)
    row['freed_meets_bound'] = row['freed_p99_ms'] <= FREED_BOUND_MS
    return row


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


# --------------------------------------------------------------- table --

def print_table(rows: Sequence[Mapping[str, Any]], console: Any = None
                ) -> None:
    """Print the placement rows as a rich table."""
    import sys

    from rich.console import Console
    from rich.table import Table

    fmt = report._fmt
    if console is None:
        console = Console(width=None if sys.stdout.isatty() else 150)
    table = Table(
        title='scheduler-bench placement: GET /allocation_candidates '
              '(microversion %s, no limit), Placement against ours'
              % NOVA_MICROVERSION,
        caption='seeding: s to write the providers added for this size '
                'through the REST API (%d threads); load: read_providers '
                "from Placement's database, ms; latencies in ms over the "
                'same requests (Placement: at the client); speed-up: '
                'Placement p50 / decision p50, times (/ target); '
                'mismatches: requests whose candidate providers differ; '
                'ours: our candidates shaped as Placement\'s body; '
                'unshaped: without the shaping; decision: refresh, '
                'candidates, filters and weighers in Placement mode; '
                '+claim: the decision with its PUT /allocations'
                % SEED_THREADS)
    for name in ('hosts', 'providers', 'req', 'seeding s', 'load ms',
                 'Placement p50', 'Placement p99', 'ours p50',
                 'unshaped p50', 'decision p50', 'decision p99',
                 '+claim p50', 'speed-up', 'mismatches', 'meets'):
        table.add_column(name, justify='right')
    for row in rows:
        requests = str(row['requests']) + ('*' if row['truncated'] else '')
        speedup = report._pair(row['speedup'], row['target_speedup'], 0)
        table.add_row(
            '{:,}'.format(row['hosts']), '{:,}'.format(row['providers']),
            requests, fmt(row['seed_s']),
            fmt(row['load_ms']), fmt(row['placement_p50_ms'], 2),
            fmt(row['placement_p99_ms'], 2), fmt(row['ours_p50_ms'], 2),
            fmt(row['ours_unshaped_p50_ms'], 2),
            fmt(row['decision_p50_ms'], 2), fmt(row['decision_p99_ms'], 2),
            fmt(row['decision_claim_p50_ms'], 2), speedup,
            ('[red]%d[/]' if row['mismatches'] else '%d')
            % row['mismatches'], report._verdict(row))
    console.print(table)
    _print_trees(rows, console)
    _print_freed(rows, console)
    if any(row['truncated'] for row in rows):
        console.print('* stopped by the time budget (--time-budget)')


def _print_trees(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """The tree queries' part of the rows, as a second table."""
    fmt = report._fmt
    _print(console, 'provider trees: a vGPU flavor and a port with a '
                    'minimum bandwidth policy',
           'whole allocation requests compared (mismatches); decision: the '
           'vGPU flavor in Placement mode, no claim; speed-up: Placement '
           'p50 / decision p50',
           ('hosts', 'providers', 'req', 'Placement p50', 'Placement p99',
            'ours p50', 'ours p99', 'decision p50', 'decision p99',
            'speed-up', 'mismatches'),
           [('{:,}'.format(row['hosts']), '{:,}'.format(row['providers']),
             str(row['trees_requests']),
             fmt(row['trees_placement_p50_ms'], 2),
             fmt(row['trees_placement_p99_ms'], 2),
             fmt(row['trees_ours_p50_ms'], 2),
             fmt(row['trees_ours_p99_ms'], 2),
             fmt(row['trees_decision_p50_ms'], 2),
             fmt(row['trees_decision_p99_ms'], 2),
             fmt(row['trees_speedup'], 1),
             ('[red]%d[/]' if row['trees_mismatches'] else '%d')
             % row['trees_mismatches']) for row in rows])


def _print_freed(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """Freed capacity and the usage watch's cost, as a third table."""
    fmt = report._fmt
    _print(console, 'capacity freed in Placement without a generation bump '
                    '(DELETE /allocations/{consumer})',
           'freed: ms from the DELETE until the view holds the freed usage, '
           'refreshed every %d ms as decisions would (%d frees); usage '
           'read: one read of every usage by the usage watch and its '
           'comparison with the view, ms; decision: as in the first table, '
           'with the usage watch running and stopped'
           % (FREED_POLL_S * 1000, FREED_ROUNDS),
           ('hosts', 'freed p50', 'freed p99', 'freed max', 'bound',
            'usage read p50', 'decision p50 watched', 'decision p50 stopped',
            'meets'),
           [('{:,}'.format(row['hosts']), fmt(row['freed_p50_ms'], 1),
             fmt(row['freed_p99_ms'], 1), fmt(row['freed_max_ms'], 1),
             fmt(row['freed_bound_ms'], 0), fmt(row['usage_read_p50_ms'], 1),
             fmt(row['decision_p50_ms'], 2),
             fmt(row['decision_unwatched_p50_ms'], 2),
             'yes' if row['freed_meets_bound'] else '[red]no[/]')
            for row in rows])


def _print(console: Any, title: str, caption: str, columns: Sequence[str],
           cells: Iterable[Sequence[str]]) -> None:
    """A rich table of right-justified ``columns`` and rows ``cells``."""
    from rich.table import Table

    table = Table(title=title, caption=caption)
    for name in columns:
        table.add_column(name, justify='right')
    for row in cells:
        table.add_row(*row)
    console.print(table)
