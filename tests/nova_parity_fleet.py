"""The fleet and the requests of the differential test against Nova 34's
own scheduler (``functional/test_nova_scheduler_parity.py``).

``Fleet.generate(rng)`` draws a fleet of compute nodes in two cells;
``Fleet.write(nova, api)`` writes it as Nova writes it: the compute
nodes, services, host mappings, aggregates (availability zones and an
isolated aggregate), instances and server groups with Nova's objects
(``nova``: the ``NovaDriver`` of ``nova_databases``), the resource
providers in Placement (``api``: a ``placement_api.PlacementAPI``) as
nova-compute's report client writes them (uuid of the compute node, name
its hypervisor hostname, VCPU / MEMORY_MB / DISK_GB with the node's
allocation ratios, ``OWNER_NOVA`` and ``COMPUTE_*`` traits, custom
traits and resource classes), a bandwidth child provider as Neutron makes
one, PCI devices as Nova 34 reports them with PCI in Placement (child
providers, and the PCI pools of the compute node row), NUMA topologies
on the rows with VCPU and PCPU inventories, host aggregates mirrored
as Placement aggregates of the same uuid, and the node's usage as one
consumer's allocation, equal to the usage on its compute node row.
Every node has a different free RAM, so that the RAM weigher never ties.

``case(rng, fleet)`` draws one request (the ``spec`` of the Nova
driver's ``decide``), ``placement_500(spec, answer)`` recognises the one
known difference and ``differences(answer, fleet)`` compares the two
outcomes of one ``decide``.  The fleet has at most 48 providers, far
fewer than 1000 (Nova's ``[scheduler] max_placement_results``), so
Nova's limit on allocation candidates never drops one.
"""

from __future__ import annotations

import dataclasses
import random
import uuid

CELL_HOSTS = {'cell1': 8, 'cell2': 4}
TRAITS = ('CUSTOM_PAR_A', 'CUSTOM_PAR_B', 'CUSTOM_PAR_C')
GPU = 'CUSTOM_PAR_GPU'
ISOLATED = 'CUSTOM_PAR_ISO'
BANDWIDTH = 'NET_BW_EGR_KILOBIT_PER_SEC'
PORT_TRAITS = ('CUSTOM_PHYSNET_PAR', 'CUSTOM_VNIC_TYPE_NORMAL')
ZONES = ('par-az1', 'par-az2')
# Traits nova-compute's libvirt driver reports on every node here.
COMPUTE_TRAITS = ('OWNER_NOVA', 'COMPUTE_NET_ATTACH_INTERFACE',
                  'COMPUTE_VOLUME_ATTACH_WITH_TAG', 'HW_CPU_X86_AVX2')
PCI_VENDOR, PCI_PRODUCT = '8086', '1563'
PCI_RC = 'CUSTOM_PCI_%s_%s' % (PCI_VENDOR, PCI_PRODUCT)
PCI_TRAITS = ('COMPUTE_MANAGED_PCI_DEVICE', 'OWNER_NOVA')
# ``[pci] alias`` of both schedulers (Nova builds the PCI requests).
ALIAS = {'name': 'par-nic', 'vendor_id': PCI_VENDOR,
         'product_id': PCI_PRODUCT, 'device_type': 'type-PCI'}
GROUPS = {'affinity': ('affinity', 1), 'anti-affinity':
          ('anti-affinity', 2), 'empty-affinity': ('affinity', 0),
          'empty-anti-affinity': ('anti-affinity', 0)}


@dataclasses.dataclass
class Host:
    """One compute node (memory in MiB, disk in GiB)."""

    name: str
    cell: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    cpu_allocation_ratio: float
    vcpus_used: int
    memory_mb_used: int
    traits: tuple[str, ...]
    gpus: int
    bandwidth: int
    # Two NUMA cells, half of the CPUs dedicated (PCPU), half shared.
    numa: bool
    # PCI devices (PFs of ALIAS's vendor and product), one provider each.
    pci: int
    uuid: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    # The PCI device providers, once written.
    pci_providers: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Fleet:
    hosts: list[Host]
    zones: dict[str, list[str]]
    isolated: list[str]
    groups: dict[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def generate(cls, rng: random.Random) -> Fleet:
        count = sum(CELL_HOSTS.values())
        # Distinct free RAM: 16 GiB + a distinct multiple of 512 MiB.
        free = rng.sample(range(count * 3), count)
        hosts = []
        cells = [cell for cell, n in CELL_HOSTS.items() for _ in range(n)]
        for index, cell in enumerate(cells):
            used = rng.choice((0, 2048, 8192))
            numa = rng.random() < 0.5
            hosts.append(Host(
                name='par-host%02d' % index, cell=cell,
                vcpus=rng.choice((8, 16) if numa else (4, 8, 16)),
                memory_mb=16384 + 512 * free[index] + used,
                disk_gb=rng.choice((40, 200, 1000)),
                cpu_allocation_ratio=rng.choice((1.0, 2.0, 4.0)),
                vcpus_used=used // 2048, memory_mb_used=used,
                traits=tuple(t for t in TRAITS if rng.random() < 0.4),
                gpus=rng.choice((0, 0, 1, 2)),
                bandwidth=rng.choice((0, 0, 5000, 10000)), numa=numa,
                pci=rng.choice((0, 0, 1, 2))))
        names = [host.name for host in hosts]
        zone1 = sorted(rng.sample(names, count // 2))
        zones = {ZONES[0]: zone1,
                 ZONES[1]: sorted(set(names) - set(zone1))}
        return cls(hosts, zones, sorted(rng.sample(names, 2)))

    def write(self, nova, api) -> None:
        """Write the fleet with Nova's objects and into Placement."""
        api.ensure(TRAITS + (ISOLATED,) + PORT_TRAITS, (GPU,))
        for host in self.hosts:
            _write_host(nova, api, host)
        aggregates: dict[str, list[str]] = {}
        for zone, names in self.zones.items():
            _aggregate(nova, zone + '-agg', names,
                       {'availability_zone': zone}, aggregates)
        _aggregate(nova, 'par-isolated', self.isolated,
                   {'trait:' + ISOLATED: 'required'}, aggregates)
        by_name = {host.name: host for host in self.hosts}
        for name, uuids in aggregates.items():
            rp = by_name[name].uuid
            api._json('PUT', '/resource_providers/%s/aggregates' % rp,
                      json={'resource_provider_generation':
                            api.provider(rp)['generation'],
                            'aggregates': sorted(uuids)})
        for name, (policy, members) in GROUPS.items():
            uuids = []
            for host in sorted(by_name)[1:1 + 4 * members:4]:
                uuids.append(str(uuid.uuid4()))
                nova.request('add_instance', cell=by_name[host].cell,
                             uuid=uuids[-1], host=host)
            self.groups[name] = nova.request(
                'add_group', name='par-' + name, policy=policy,
                members=uuids)['uuid']


def _numa_cells(host: Host) -> list[dict]:
    """Two cells of the same memory, sharing the shared CPUs evenly, with
    all the dedicated CPUs but one in cell 0: a request for dedicated
    CPUs in one cell fits cell 0 only, so a PCI device of cell 1 does
    not fit it (``numa_node`` of the device = its index modulo 2)."""
    shared, dedicated = host.vcpus // 2, host.vcpus // 2
    cpus = list(range(host.vcpus))
    return [{'cpuset': cpus[:shared // 2],
             'pcpuset': cpus[shared:shared + dedicated - 1],
             'memory': host.memory_mb // 2},
            {'cpuset': cpus[shared // 2:shared],
             'pcpuset': cpus[shared + dedicated - 1:],
             'memory': host.memory_mb - host.memory_mb // 2}]


def _write_host(nova, api, host: Host) -> None:
    extra = {}
    if host.numa:
        extra['numa_topology'] = nova.request(
            'numa_topology', cells=_numa_cells(host))
    nova.request(
        'add_compute', cell=host.cell, host=host.name, uuid=host.uuid,
        vcpus=host.vcpus, memory_mb=host.memory_mb, local_gb=host.disk_gb,
        vcpus_used=host.vcpus_used, memory_mb_used=host.memory_mb_used,
        cpu_allocation_ratio=host.cpu_allocation_ratio, **extra)

    def one(total, ratio=1.0):
        return {'total': total, 'reserved': 0, 'min_unit': 1,
                'max_unit': total, 'step_size': 1, 'allocation_ratio': ratio}

    inventories = {'VCPU': one(host.vcpus, host.cpu_allocation_ratio),
                   'MEMORY_MB': one(host.memory_mb),
                   'DISK_GB': one(host.disk_gb)}
    if host.gpus:
        inventories[GPU] = one(host.gpus)
    if host.numa:
        # nova-compute's libvirt driver with cpu_shared_set and
        # cpu_dedicated_set: VCPU from the shared CPUs, PCPU (ratio 1)
        # from the dedicated ones.
        inventories['VCPU'] = one(host.vcpus // 2, host.cpu_allocation_ratio)
        inventories['PCPU'] = one(host.vcpus // 2)
    api._call('POST', '/resource_providers', (200,),
              json={'uuid': host.uuid, 'name': host.name})
    path = '/resource_providers/%s' % host.uuid
    generation = api._json('PUT', path + '/inventories', json={
        'resource_provider_generation': 0, 'inventories': inventories,
    })['resource_provider_generation']
    api._json('PUT', path + '/traits', json={
        'resource_provider_generation': generation,
        'traits': list(COMPUTE_TRAITS + host.traits)})
    if host.bandwidth:
        api.add_child(host.uuid, host.name + ':ens1',
                      {BANDWIDTH: host.bandwidth}, PORT_TRAITS)
    if host.pci:
        _write_pci(nova, api, host)
    if host.memory_mb_used:
        api.claim(str(uuid.uuid4()), {'allocations': {host.uuid: {
            'resources': {'VCPU': host.vcpus_used,
                          'MEMORY_MB': host.memory_mb_used}}}},
            'project-0', 'user-0')


def _write_pci(nova, api, host: Host) -> None:
    """The PCI devices as Nova 34 reports them with PCI in Placement
    (``nova.compute.pci_placement_translator``): one child provider per
    physical device, named ``<hypervisor hostname>_<PCI address>``, with
    one ``CUSTOM_PCI_<VENDOR>_<PRODUCT>`` and the traits
    ``COMPUTE_MANAGED_PCI_DEVICE`` and ``OWNER_NOVA``; the compute node's
    PCI stats have one pool per device, tagged with its provider."""
    pools = []
    for index in range(host.pci):
        rp = api.add_child(host.uuid, '%s_0000:81:00.%d' % (host.name, index),
                           {PCI_RC: 1}, PCI_TRAITS)
        host.pci_providers.append(rp)
        pools.append({'vendor_id': PCI_VENDOR, 'product_id': PCI_PRODUCT,
                      'numa_node': index % 2 if host.numa else None,
                      'count': 1, 'tags': {'dev_type': 'type-PCI',
                                           'rp_uuid': rp}})
    nova.request('set_pci_pools', cell=host.cell, host=host.name,
                 node=host.name, pools=pools)


def _aggregate(nova, name, hosts, metadata, aggregates) -> None:
    made = nova.request('add_aggregate', name=name, hosts=hosts,
                        metadata=metadata)
    for host in hosts:
        aggregates.setdefault(host, []).append(made['uuid'])


def case(rng: random.Random, fleet: Fleet) -> dict:
    """One request: a flavor with ``resources:`` / ``trait:`` extra specs
    (required and forbidden traits, the isolated aggregate's trait, a
    custom resource class unsuffixed or in a numbered group with a
    ``group_policy``, ``hw:cpu_policy=dedicated``, ``hw:numa_nodes``, a
    ``pci_passthrough:alias``), maybe an availability zone, a server
    group, a port with bandwidth and physnet traits, and 1 to 3
    instances."""
    extra = {}
    for trait in TRAITS:
        pick = rng.random()
        if pick < 0.12:
            extra['trait:' + trait] = 'required'
        elif pick < 0.16:
            extra['trait:' + trait] = 'forbidden'
    if rng.random() < 0.08:
        extra['trait:' + ISOLATED] = 'required'
    pick = rng.random()
    if pick < 0.08:
        extra['resources:' + GPU] = '1'
    elif pick < 0.14:
        extra['resources1:' + GPU] = '1'
        extra['group_policy'] = rng.choice(('isolate', 'none'))
    if rng.random() < 0.25:
        extra['hw:cpu_policy'] = 'dedicated'
    if rng.random() < 0.15:
        extra['hw:numa_nodes'] = '2'
    if rng.random() < 0.25:
        extra['pci_passthrough:alias'] = 'par-nic:%d' % rng.choice((1, 1, 2))
    spec = {'vcpus': rng.choice((2, 4) if 'hw:numa_nodes' in extra
                                else (1, 2, 4, 8)),
            'memory_mb': rng.choice((512, 2048, 4096, 8192, 16384)),
            'root_gb': rng.choice((1, 20, 100)), 'extra_specs': extra,
            'num_instances': rng.choice((1, 1, 1, 2, 3))}
    if rng.random() < 0.3:
        spec['availability_zone'] = rng.choice(ZONES)
    if rng.random() < 0.25:
        spec['group'] = fleet.groups[rng.choice(sorted(GROUPS))]
    if rng.random() < 0.15:
        spec['port_requests'] = [{
            'resources': {BANDWIDTH: rng.choice((1000, 6000))},
            'required': list(PORT_TRAITS),
            'requester_id': str(uuid.UUID(int=rng.getrandbits(128)))}]
    return spec


def features(spec: dict) -> list[str]:
    """What a request asks, by name (for the test's summary)."""
    names = {'trait:': 'traits', 'resources:': 'custom resource class',
             'resources1:': 'numbered group', 'hw:cpu_policy': 'PCPU',
             'hw:numa_nodes': 'two NUMA nodes',
             'pci_passthrough:alias': 'PCI in Placement'}
    found = {label for key in spec['extra_specs'] for prefix, label
             in names.items() if key.startswith(prefix)}
    found |= {label for key, label in (
        ('availability_zone', 'zone'), ('group', 'server group'),
        ('port_requests', 'bandwidth port')) if key in spec}
    if spec['num_instances'] > 1:
        found.add('several instances')
    return sorted(found)


def _shape(outcome: dict, devices: dict[str, str]) -> dict:
    picks = outcome['selections']
    return {
        'novalidhost': outcome['novalidhost'],
        'chosen': [p[0]['host'] for p in picks],
        'alternates': [[alt['host'] for alt in p[1:]] for p in picks],
        'allocations': [sorted(devices.get(rp, rp) for rp
                               in p[0]['allocations']) for p in picks]}


# Nova 34's SchedulerManager.select_destinations, when Placement errs on
# the VCPU fallback query of a request for dedicated CPUs: the report
# client returns (None, None, None), which ``if res:`` takes for an
# answer, and ``alloc_reqs.extend(None)`` raises (nova/scheduler/
# manager.py, select_destinations): an RPC error, not NoValidHost.
NOVA_FALLBACK_ERROR = "TypeError: 'NoneType' object is not iterable"


def placement_500(spec: dict, answer: dict) -> bool:
    """Whether Nova's NoValidHost comes from Placement 16.0.0's own error
    on a forbidden trait in the unsuffixed group once any provider is
    nested (the fleet's bandwidth providers are): Placement passes the
    traits' names where their ids are needed and answers 500 on
    PostgreSQL (``docs/placement.rst``, "Where Placement 16.0.0 itself
    errs"), so Nova 34 finds no candidate; this service computes the
    candidates itself and keeps the rule.  With ``hw:cpu_policy=dedicated``
    Nova 34 then fails with ``NOVA_FALLBACK_ERROR`` instead."""
    forbidden = [name.split(':', 1)[1] for name, value
                 in spec['extra_specs'].items()
                 if name.startswith('trait:') and value == 'forbidden']
    nova = answer['nova']
    errors = nova['placement_errors']
    failed = nova['novalidhost'] or nova.get('error') == NOVA_FALLBACK_ERROR
    return bool(forbidden) and failed and bool(errors) and all(
        ' 500 ' in error and 'invalid input syntax for type integer' in
        error and any(trait in error for trait in forbidden)
        for error in errors)


def _unfit_first_claim(answer: dict) -> list[str] | None:
    """The providers of this service's claim for the first instance when
    they are none of the allocation candidates Nova 34's filters kept
    for that host (per-candidate NUMA and PCI filtering: Nova claims the
    first survivor); None when they are one, or nothing was claimed."""
    picks = answer['ours']['selections']
    survivors = answer['nova'].get('survivors')
    if not picks or not survivors:
        return None
    first = picks[0][0]
    kept = survivors[0].get(first['host'])
    if kept is None or first['allocations'] in kept:
        return None
    return first['allocations']


def differences(answer: dict, fleet: Fleet) -> dict[str, tuple]:
    """The kinds in which the two outcomes of one ``decide`` differ,
    each with (ours, Nova's): ``novalidhost``, ``chosen`` (the hosts
    chosen, one per instance), ``alternates`` (the other hosts that
    passed the filters in the chosen host's cell, in weight order: Nova
    and this service return them all with ``max_attempts`` larger than
    the fleet) and ``allocations`` (the providers of the claimed
    allocation requests, a host's PCI device providers being one: which
    of a host's devices Nova claims is Placement's order of the host's
    allocation requests, which Placement 16.0.0 leaves undefined: it
    builds them in a set of objects hashed on resource class names,
    whose order changes with each Placement worker's hash seed; but the
    first instance's claim must be one of the candidates Nova's filters
    kept for its host)."""
    errors = (answer['ours'].get('error'), answer['nova'].get('error'))
    if any(errors):
        return {'error': errors}
    devices = {rp: 'a PCI device of ' + host.name for host in fleet.hosts
               for rp in host.pci_providers}
    ours = _shape(answer['ours'], devices)
    nova = _shape(answer['nova'], devices)
    unfit = _unfit_first_claim(answer)
    if unfit:
        ours['allocations'] = ['not a candidate Nova kept: %s' % unfit]
    kinds = ('novalidhost',) if ours['novalidhost'] != nova[
        'novalidhost'] else tuple(k for k in ('chosen', 'alternates',
                                              'allocations')
                                  if ours[k] != nova[k])
    return {kind: (ours[kind], nova[kind]) for kind in kinds}
