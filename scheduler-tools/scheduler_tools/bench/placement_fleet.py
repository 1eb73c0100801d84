"""The placement mode's provider fleet, and its seeding into Placement.

The providers of ``workload.generate_hosts`` as nova-compute and
Neutron's Open vSwitch agent report them (``generate_providers``): each
compute node's (``provider_of``, ``compute_inventories``), ``GPU_SHARE``
of them with a physical GPU's under it and ``BANDWIDTH_SHARE`` with the
agent's and its bridge's (``children_of``).  ``seed_providers`` writes
them through Placement's REST API (``placement_rest``), a level of the
trees at a time.
"""

from __future__ import annotations

import concurrent.futures
import random
import threading
import uuid
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from scheduler.placement.candidates import Inventory
from scheduler.placement.candidates import Provider
from scheduler.resources import ratios
from scheduler_tools import seed
from scheduler_tools.bench import workload
from scheduler_tools.bench.placement_rest import client
from scheduler_tools.bench.placement_rest import write_provider
from scheduler_tools.bench.placement_rest import write_usages

# Threads writing the providers (gunicorn's workers answer them).
SEED_THREADS = 12

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
