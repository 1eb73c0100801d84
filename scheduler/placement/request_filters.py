"""Nova's request filters: what the scheduler adds to the allocation
candidates query before it asks (``nova.scheduler.request_filter``,
Nova 34.0.0), over the host aggregates of the view.

``apply(query, spec_obj, aggregates, conf)`` changes a ResourceRequest
(``scheduler.placement.request.for_scheduling``) as Nova's filters change
the RequestSpec before Nova translates it, in Nova's order:

1. tenant isolation (``[scheduler] limit_tenants_to_placement_aggregate``):
   the aggregates with a ``filter_tenant_id*`` metadata key whose value
   is the request's project become one ``member_of=in:``; with
   ``placement_aggregate_required_for_tenants`` and none, the request
   fails (NoValidHost, as Nova's RequestFilterFailed ends);
2. availability zone (always): the aggregates whose
   ``availability_zone`` metadata is the requested zone become one
   ``member_of=in:`` (none: no restriction, as Nova);
3. image type (``query_placement_for_image_type_support``): unless the
   instance boots from volume, ``root_required`` gets
   ``COMPUTE_IMAGE_TYPE_<DISK_FORMAT>``;
4. disabled computes (always): ``root_required`` forbids
   ``COMPUTE_STATUS_DISABLED``;
5. isolated aggregates (``enable_isolated_aggregate_filtering``): an
   aggregate with ``trait:<T> = required`` metadata for a trait the
   request does not require is forbidden (``member_of=!in:``);
6. image metadata (``image_metadata_prefilter``): ``hw_cdrom_bus``,
   ``hw_disk_bus``, ``hw_video_model``, ``hw_vif_model``,
   ``hw_architecture``, ``hw_emulation_architecture`` and
   ``hw_viommu_model`` become root traits (none when one of them names
   no known trait, as Nova gives up then);
7. accelerators: a flavor with ``accel:device_profile`` requires
   ``COMPUTE_ACCELERATORS`` on the root.

Nova's filters for routed networks, remote-managed ports, packed
virtqueues, ephemeral encryption, virtio sound, vTPM secret security and
the ``OWNER_NOVA`` trait are not applied yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any

import os_traits
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement import request as request_lib

if TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec

LOG = logging.getLogger(__name__)

TENANT_METADATA_KEY = 'filter_tenant_id'
AZ_METADATA_KEY = 'availability_zone'
TRAIT_METADATA_PREFIX = 'trait:'

# Image property -> the prefix of the trait its value names.
IMAGE_TRAIT_PREFIXES = {
    'hw_cdrom_bus': 'COMPUTE_STORAGE_BUS',
    'hw_disk_bus': 'COMPUTE_STORAGE_BUS',
    'hw_video_model': 'COMPUTE_GRAPHICS_MODEL',
    'hw_vif_model': 'COMPUTE_NET_VIF_MODEL',
    'hw_architecture': 'HW_ARCH',
    'hw_emulation_architecture': 'COMPUTE_ARCH',
    'hw_viommu_model': 'COMPUTE_VIOMMU',
}


def apply(query: request_lib.ResourceRequest, spec_obj: Any,
          aggregates: Iterable[Any], conf: Any) -> None:
    """Apply Nova's request filters to ``query`` (see the module).
    ``aggregates``: every host aggregate (``uuid``, ``metadata``).

    :raises NoValidHost: tenant isolation requires an aggregate and the
        project has none.
    """
    aggregates = list(aggregates)
    options = conf.scheduler
    if options.limit_tenants_to_placement_aggregate:
        _tenant(query, spec_obj, aggregates,
                options.placement_aggregate_required_for_tenants)
    _availability_zone(query, spec_obj, aggregates)
    if options.query_placement_for_image_type_support:
        _image_type(query, spec_obj)
    query.root_forbidden.add(os_traits.COMPUTE_STATUS_DISABLED)
    if options.enable_isolated_aggregate_filtering:
        _isolated(query, aggregates)
    if options.image_metadata_prefilter:
        _image_metadata(query, spec_obj)
    extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
    if extra_specs.get('accel:device_profile'):
        query.root_required.add(os_traits.COMPUTE_ACCELERATORS)


def _metadata(aggregate: Any) -> dict[str, str]:
    return aggregate.obj_get('metadata') or {}


def _require(query: request_lib.ResourceRequest, uuids: Iterable[str]
             ) -> None:
    query.group().member_of.append(sorted(uuids))


def _tenant(query: request_lib.ResourceRequest, spec_obj: RequestSpec,
            aggregates: list[Any], required: bool) -> None:
    project = spec_obj.obj_get('project_id')
    found = {aggregate.uuid for aggregate in aggregates
             if any(key.startswith(TENANT_METADATA_KEY) and value == project
                    for key, value in _metadata(aggregate).items())}
    if found:
        _require(query, found)
    elif required:
        LOG.warning('Tenant %s has no available aggregates', project)
        raise exception.NoValidHost(
            reason='Scheduling failed: No hosts available for tenant')


def _availability_zone(query: request_lib.ResourceRequest,
                       spec_obj: RequestSpec, aggregates: list[Any]
                       ) -> None:
    zone = spec_obj.obj_get('availability_zone')
    if not zone:
        return
    found = {aggregate.uuid for aggregate in aggregates
             if _metadata(aggregate).get(AZ_METADATA_KEY) == zone}
    if found:
        _require(query, found)


def _image_type(query: request_lib.ResourceRequest, spec_obj: RequestSpec
                ) -> None:
    if spec_obj.obj_get('is_bfv'):
        return
    image = spec_obj.obj_get('image')
    disk_format = image.obj_get('disk_format') if image is not None else None
    if not disk_format:
        return
    trait = 'COMPUTE_IMAGE_TYPE_%s' % disk_format.upper()
    if not hasattr(os_traits, trait):
        LOG.error('Computed trait name %r is not valid; is os-traits up to '
                  'date?', trait)
        return
    query.root_required.add(trait)


def _isolated(query: request_lib.ResourceRequest, aggregates: list[Any]
              ) -> None:
    required = set().union(*(group.required
                             for group in query.groups.values()))
    wanted = {TRAIT_METADATA_PREFIX + trait for trait in required}
    isolated = {aggregate.uuid for aggregate in aggregates
                if any(key.startswith(TRAIT_METADATA_PREFIX) and
                       value == 'required' and key not in wanted
                       for key, value in _metadata(aggregate).items())}
    if isolated:
        query.group().forbidden_aggregates |= isolated


def _image_metadata(query: request_lib.ResourceRequest,
                    spec_obj: RequestSpec) -> None:
    image = spec_obj.obj_get('image')
    props = image.obj_get('properties') if image is not None else None
    if props is None:
        return
    traits = []
    for name, prefix in IMAGE_TRAIT_PREFIXES.items():
        value = props.obj_get(name)
        if value is None:
            continue
        trait = '%s_%s' % (prefix, str(value).replace('-', '_').upper())
        if not hasattr(os_traits, trait):
            LOG.error('Computed trait name %r is not valid; is os-traits '
                      'up to date?', trait)
            return
        traits.append(trait)
    query.root_required.update(traits)
