"""Placement's REST API as nova-compute and Nova's scheduler call it.

A client on a ``noauth2`` Placement (``client``, ``call``,
``call_json``), custom traits and resource classes (``ensure``), a
provider written as nova-compute's report client writes it
(``write_provider``, ``write_usages``) and a claim as Nova's scheduler
makes it (``claim``): the placement mode's, and the tests'
(``tests/placement_api.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from keystoneauth1 import adapter
from keystoneauth1 import session
from keystoneauth1 import token_endpoint

from scheduler.placement.candidates import Inventory
from scheduler.placement.candidates import Provider
from scheduler_tools.bench import BenchError

# Nova 34 asks Placement for allocation candidates at this microversion.
NOVA_MICROVERSION = '1.36'


class PlacementError(BenchError):
    """Placement answered with an unexpected status, or not at all."""


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
