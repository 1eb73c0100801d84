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
"""

from __future__ import annotations

import dataclasses
import uuid as uuid_lib

from keystoneauth1 import adapter
from keystoneauth1 import session
from keystoneauth1 import token_endpoint

NOVA_MICROVERSION = '1.36'


class PlacementError(AssertionError):
    """Placement answered with an unexpected status."""


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
            'DISK_GB': one(self.disk_gb, self.disk_allocation_ratio)}


class PlacementAPI:
    """Placement's REST API, as a test uses it (see the module)."""

    def __init__(self, url: str, microversion: str = NOVA_MICROVERSION):
        self.url = url
        self.client = adapter.Adapter(
            session.Session(auth=token_endpoint.Token(url, 'admin')),
            service_type='placement', default_microversion=microversion,
            raise_exc=False)

    def _call(self, method, path, expected, **kwargs):
        reply = self.client.request(path, method, **kwargs)
        if reply.status_code not in expected:
            raise PlacementError('%s %s: %d %s' % (
                method, path, reply.status_code, reply.text[:500]))
        return reply

    def _json(self, method, path, expected=(200,), **kwargs):
        reply = self._call(method, path, expected, **kwargs)
        return reply.json() if reply.content else None

    # -- as nova-compute ---------------------------------------------------

    def add_compute(self, node: ComputeProvider) -> None:
        """Create ``node``'s provider, then its inventory and traits (a
        custom trait is created first)."""
        self._call('POST', '/resource_providers', (200, 201),
                   json={'uuid': node.uuid, 'name': node.name})
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

    def add_provider(self, provider) -> None:
        """Write a ``scheduler.placement.candidates.Provider``: the
        provider, its custom resource classes and traits, inventories,
        traits, aggregates, and its usages as one consumer's
        allocation."""
        self._call('POST', '/resource_providers', (200, 201),
                   json={'uuid': provider.uuid, 'name': provider.name})
        for rc in provider.inventories:
            if rc.startswith('CUSTOM_'):
                self._call('PUT', '/resource_classes/%s' % rc, (201, 204))
        for trait in provider.traits:
            if trait.startswith('CUSTOM_'):
                self._call('PUT', '/traits/%s' % trait, (201, 204))
        path = '/resource_providers/%s' % provider.uuid
        generation = self._json('PUT', path + '/inventories', json={
            'resource_provider_generation': 0,
            'inventories': {
                rc: {'total': i.total, 'reserved': i.reserved,
                     'min_unit': i.min_unit,
                     'max_unit': i.total if i.max_unit is None
                     else i.max_unit,
                     'step_size': i.step_size,
                     'allocation_ratio': i.allocation_ratio}
                for rc, i in provider.inventories.items()},
        })['resource_provider_generation']
        generation = self._json('PUT', path + '/traits', json={
            'resource_provider_generation': generation,
            'traits': sorted(provider.traits)})['resource_provider_generation']
        self._json('PUT', path + '/aggregates', json={
            'resource_provider_generation': generation,
            'aggregates': sorted(provider.aggregates)})
        used = {rc: amount for rc, amount in provider.usages.items()
                if amount}
        if used:
            status = self.claim(str(uuid_lib.uuid4()), {'allocations': {
                provider.uuid: {'resources': used}}}, str(uuid_lib.uuid4()),
                str(uuid_lib.uuid4()))
            if status != 204:
                raise PlacementError('the usages of %s were refused'
                                     % provider.name)

    def ensure(self, traits=(), resource_classes=()) -> None:
        """Create custom traits and resource classes (a request naming
        an unknown one is a 400)."""
        for trait in traits:
            self._call('PUT', '/traits/%s' % trait, (201, 204))
        for rc in resource_classes:
            self._call('PUT', '/resource_classes/%s' % rc, (201, 204))

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
        body = dict(allocation_request, project_id=project_id,
                    user_id=user_id, consumer_generation=consumer_generation)
        return self._call('PUT', '/allocations/%s' % consumer, (204, 409),
                          json=body,
                          microversion=NOVA_MICROVERSION).status_code

    def allocations(self, consumer: str) -> dict:
        return self._json('GET', '/allocations/%s' % consumer)
