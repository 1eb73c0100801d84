"""A test's hands on a real Placement: resource providers written as
nova-compute writes them, and the calls Nova's scheduler makes.

``PlacementAPI(url)`` talks to a ``noauth2`` Placement (the
``placement_server`` fixture) through keystoneauth1, with the token
``admin`` and microversion 1.36 (Nova 34's) unless told otherwise.

A compute node's provider is what nova-compute's resource tracker
creates: its uuid is the compute node's uuid and its name the node's
hypervisor hostname; its inventory has VCPU, MEMORY_MB (MiB) and
DISK_GB (GiB), each with ``total``, ``reserved``, ``min_unit`` 1,
``max_unit`` the total, ``step_size`` 1 and the allocation ratio; its
traits include the virt driver's capabilities (``COMPUTE_*``).

The REST calls are the benchmark's
(``scheduler_tools.bench.placement_rest``),
which writes providers the same way.
"""

from __future__ import annotations

import dataclasses
import uuid as uuid_lib

from scheduler_tools.bench import placement_rest as rest
from scheduler_tools.bench.placement_rest import NOVA_MICROVERSION
from scheduler_tools.bench.placement_rest import PlacementError

__all__ = ['NOVA_MICROVERSION', 'ComputeProvider', 'PlacementAPI',
           'PlacementError']


@dataclasses.dataclass
class ComputeProvider:
    """A compute node's resource provider (memory in MiB, disk in GiB)."""

    name: str
    vcpus: int = 16
    memory_mb: int = 65536
    disk_gb: int = 1000
    cpu_allocation_ratio: float = 16.0
    ram_allocation_ratio: float = 1.5
    disk_allocation_ratio: float = 1.0
    reserved_host_memory_mb: int = 512
    traits: tuple[str, ...] = ('COMPUTE_NET_ATTACH_INTERFACE',)
    # Custom resource classes and their totals (``CUSTOM_*``: created
    # first, as an Ironic node's or a device's are).
    custom: tuple[tuple[str, int], ...] = ()
    uuid: str = dataclasses.field(
        default_factory=lambda: str(uuid_lib.uuid4()))

    def inventories(self) -> dict:
        def one(total, ratio, reserved=0):
            return {'total': total, 'reserved': reserved, 'min_unit': 1,
                    'max_unit': total, 'step_size': 1,
                    'allocation_ratio': ratio}
        return {
            'VCPU': one(self.vcpus, self.cpu_allocation_ratio),
            'MEMORY_MB': one(self.memory_mb, self.ram_allocation_ratio,
                             self.reserved_host_memory_mb),
            'DISK_GB': one(self.disk_gb, self.disk_allocation_ratio),
            **{rc: one(total, 1.0) for rc, total in self.custom}}


class PlacementAPI:
    """Placement's REST API, as a test uses it (see the module)."""

    def __init__(self, url: str, microversion: str = NOVA_MICROVERSION):
        self.url = url
        self.client = rest.client(url, microversion)

    def _call(self, method, path, expected, **kwargs):
        return rest.call(self.client, method, path, expected, **kwargs)

    def _json(self, method, path, expected=(200,), **kwargs):
        return rest.call_json(self.client, method, path, expected, **kwargs)

    # -- as nova-compute ---------------------------------------------------

    def add_compute(self, node: ComputeProvider) -> None:
        """Create ``node``'s provider, then its inventory and traits (a
        custom trait is created first)."""
        self._call('POST', '/resource_providers', (200, 201),
                   json={'uuid': node.uuid, 'name': node.name})
        self.ensure(resource_classes=[rc for rc, _ in node.custom])
        generation = self.provider(node.uuid)['generation']
        generation = self._json(
            'PUT', '/resource_providers/%s/inventories' % node.uuid,
            json={'resource_provider_generation': generation,
                  'inventories': node.inventories()},
        )['resource_provider_generation']
        for trait in node.traits:
            if trait.startswith('CUSTOM_'):     # created first, as Nova does
                self._call('PUT', '/traits/%s' % trait, (201, 204))
        self._json('PUT', '/resource_providers/%s/traits' % node.uuid,
                   json={'resource_provider_generation': generation,
                         'traits': list(node.traits)})

    def add_child(self, parent_uuid: str, name: str, inventories: dict,
                  traits: tuple[str, ...] = ()) -> str:
        """Create a child provider of ``parent_uuid`` (as Neutron creates
        a port's bandwidth provider under the compute node's, or
        nova-compute a VGPU one) with ``inventories`` ({resource class:
        total}, ratio 1) and ``traits`` (custom ones created first);
        returns its uuid."""
        child = str(uuid_lib.uuid4())
        self._call('POST', '/resource_providers', (200, 201), json={
            'uuid': child, 'name': name,
            'parent_provider_uuid': parent_uuid})
        self.ensure([t for t in traits if t.startswith('CUSTOM_')],
                    [rc for rc in inventories if rc.startswith('CUSTOM_')])
        path = '/resource_providers/%s' % child
        generation = self._json('PUT', path + '/inventories', json={
            'resource_provider_generation': 0,
            'inventories': {rc: {'total': total, 'max_unit': total}
                            for rc, total in inventories.items()},
        })['resource_provider_generation']
        self._json('PUT', path + '/traits', json={
            'resource_provider_generation': generation,
            'traits': list(traits)})
        return child

    def in_aggregate(self, rp_uuid: str, aggregate_uuid: str) -> None:
        """Put a provider in aggregate ``aggregate_uuid`` (as nova-api
        mirrors a host aggregate, by the same uuid)."""
        path = '/resource_providers/%s/aggregates' % rp_uuid
        self._json('PUT', path, json={
            'resource_provider_generation':
                self.provider(rp_uuid)['generation'],
            'aggregates': [aggregate_uuid]})

    def add_traits(self, rp_uuid: str, *traits: str) -> None:
        """Add ``traits`` to a provider's (as nova-compute adds
        COMPUTE_STATUS_DISABLED when its service is disabled)."""
        path = '/resource_providers/%s/traits' % rp_uuid
        current = self._json('GET', path)
        self._json('PUT', path, json={
            'resource_provider_generation':
                current['resource_provider_generation'],
            'traits': sorted(set(current['traits']) | set(traits))})

    def add_provider(self, provider) -> None:
        """Write a ``scheduler.placement.candidates.Provider``: the
        provider, its custom resource classes and traits, inventories,
        traits, aggregates, and its usages as one consumer's
        allocation."""
        self.ensure([t for t in provider.traits if t.startswith('CUSTOM_')],
                    [rc for rc in provider.inventories
                     if rc.startswith('CUSTOM_')])
        rest.write_provider(self.client, provider)
        rest.write_usages(self.client, provider)

    def add_tree_provider(self, provider) -> str | None:
        """Write a ``scheduler.placement.candidates.Provider`` that may
        be a child (``parent_uuid`` set: created under its parent, as
        nova-compute creates a NUMA, PCI or VGPU provider and Neutron a
        bandwidth one) or a sharing provider (the trait
        ``MISC_SHARES_VIA_AGGREGATE`` and an aggregate, as an operator
        sets up shared storage); then its inventories, traits,
        aggregates, and its usages as one consumer's allocation.
        Returns that consumer's uuid (None when nothing is used)."""
        self.ensure([t for t in provider.traits if t.startswith('CUSTOM_')],
                    [rc for rc in provider.inventories
                     if rc.startswith('CUSTOM_')])
        body = {'uuid': provider.uuid, 'name': provider.name}
        if provider.parent_uuid:
            body['parent_provider_uuid'] = provider.parent_uuid
        generation = self._json('POST', '/resource_providers', (200,),
                                json=body)['generation']
        path = '/resource_providers/%s' % provider.uuid
        for part, value in (
                ('inventories', {rc: rest.inventory_body(inventory)
                                 for rc, inventory
                                 in provider.inventories.items()}),
                ('traits', sorted(provider.traits)),
                ('aggregates', sorted(provider.aggregates))):
            if value:
                generation = self._json('PUT', '%s/%s' % (path, part), json={
                    'resource_provider_generation': generation,
                    part: value})['resource_provider_generation']
        used = {rc: n for rc, n in provider.usages.items() if n}
        if not used:
            return None
        consumer = str(uuid_lib.uuid4())
        status = self.claim(consumer, {'allocations': {
            provider.uuid: {'resources': used}}}, str(uuid_lib.uuid4()),
            str(uuid_lib.uuid4()))
        if status != 204:
            raise PlacementError('the usages of %s were refused'
                                 % provider.name)
        return consumer

    def delete(self, providers, consumers=()) -> None:
        """Delete the allocations of ``consumers``, then ``providers``
        (``Provider``s, children before their parents)."""
        for consumer in consumers:
            self._call('DELETE', '/allocations/%s' % consumer, (204, 404))
        depth = {provider.uuid: 0 for provider in providers}
        parents = {provider.uuid: provider.parent_uuid
                   for provider in providers}
        for rp_uuid in depth:
            up = parents.get(rp_uuid)
            while up:
                depth[rp_uuid] += 1
                up = parents.get(up)
        for rp_uuid in sorted(depth, key=depth.get, reverse=True):
            self._call('DELETE', '/resource_providers/%s' % rp_uuid,
                       (204, 404))

    def ensure(self, traits=(), resource_classes=()) -> None:
        """Create custom traits and resource classes (a request naming
        an unknown one is a 400)."""
        rest.ensure(self.client, traits, resource_classes)

    # -- reads ---------------------------------------------------------------

    def provider(self, rp_uuid: str) -> dict:
        return self._json('GET', '/resource_providers/%s' % rp_uuid)

    def usages(self, rp_uuid: str) -> dict:
        """``{resource class: amount used}`` of one provider."""
        return self._json('GET', '/resource_providers/%s/usages'
                          % rp_uuid)['usages']

    def allocation_candidates(self, **params) -> dict:
        """``GET /allocation_candidates`` with ``params`` (``resources=
        'VCPU:1,MEMORY_MB:512'``, ``required=``, ``member_of=``,
        ``limit=``...): ``{'allocation_requests': [...],
        'provider_summaries': {...}}``."""
        return self._json('GET', '/allocation_candidates', params=params)

    # -- as Nova's scheduler ----------------------------------------------

    def claim(self, consumer: str, allocation_request: dict,
              project_id: str, user_id: str,
              consumer_generation: int | None = None) -> int:
        """``PUT /allocations/{consumer}`` of one allocation request (as
        ``nova.scheduler.utils.claim_resources``); returns the status,
        204 when claimed, 409 when refused (capacity, or a concurrent
        update).  Always at Nova's microversion (1.38 and later also ask
        for a ``consumer_type``)."""
        return rest.claim(self.client, consumer, allocation_request,
                          project_id, user_id, consumer_generation)

    def allocations(self, consumer: str) -> dict:
        return self._json('GET', '/allocations/%s' % consumer)
