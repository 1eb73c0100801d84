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
   ``COMPUTE_ACCELERATORS`` on the root;
8. packed virtqueues (always): ``hw:virtio_packed_ring`` (a boolean
   string) or the image's ``hw_virtio_packed_ring`` true requires
   ``COMPUTE_NET_VIRTIO_PACKED``;
9. ephemeral encryption (always): ``hw:ephemeral_encryption`` or the
   image's ``hw_ephemeral_encryption`` true requires
   ``COMPUTE_EPHEMERAL_ENCRYPTION``, and the format
   ``ephemeral_encryption_format`` (``plain``, ``luks``, ``luksv2``),
   when given, ``COMPUTE_EPHEMERAL_ENCRYPTION_<FORMAT>``;
10. virtio sound (always): a ``sound_model`` (``sb16``, ``es1370``,
    ``pcspk``, ``ac97``, ``ich6``, ``ich9``, ``usb``, ``virtio``) of
    ``virtio`` requires ``COMPUTE_SOUND_MODEL_VIRTIO``;
11. vTPM secret security (always): an instance with a vTPM
    (``tpm_version``) requires ``COMPUTE_SECURITY_TPM_SECRET_SECURITY_``
    ``USER``, ``HOST`` or ``DEPLOYMENT`` as the flavor's
    ``hw:tpm_secret_security`` says (flavor only; default ``user``);
    another value fails the request (NoValidHost, as Nova's
    RequestFilterFailed ends);
12. routed networks (``query_placement_for_routed_network_aggregates``):
    the aggregates of the requested networks' segments become
    ``member_of=in:`` lists;
13. remote-managed ports (always): ``COMPUTE_REMOTE_MANAGED_PORTS`` for
    a ``remote-managed`` port; 12 and 13 ask Neutron
    (``scheduler.placement.request_filters_neutron``) and run between
    filters 8 and 9, in Nova's order;
14. ``OWNER_NOVA`` (always, last; ``scheduler.placement.
    request_filters_owner``): once every nova-compute reports
    service version 73 or later (``scheduler.placement.
    compute_versions``), ``root_required`` gets ``OWNER_NOVA``, and so
    does every request group of a PCI request from a flavor alias (its
    suffix is ``<request_id>-<n>``, as Nova names the PCI groups); a
    request already requiring it is left as it is.  Below 73 Nova logs a
    warning for every request; here once per minimum version seen.

Filters 8 to 11 read a setting as ``scheduler.placement.hardware`` does,
as Nova 34's ``nova.virt.hardware`` helpers: the two boolean flags
conflict when the flavor and the image both set them (even to an empty
or false flavor value) and differ; the other settings conflict when
both are non-empty and differ.  A conflict raises ``HardwareRequestError``
``FlavorImageConflict``, a value outside the lists above ``Invalid`` (an
image value Nova's enum fields would refuse is refused here).  They
have no option, as in Nova.

What filters 12 to 14 read outside the request comes in ``Lookups``:
the minimum compute version, the Neutron client (None when ``[neutron]``
is not configured: filters 12 and 13 are skipped, logged at start) and
the aggregates of a resource provider (the Placement view's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Iterable
from typing import TYPE_CHECKING
from typing import Any

import os_traits
from oslo_log import log as logging
from oslo_utils import strutils

from scheduler import exception
from scheduler.placement import compute_versions
from scheduler.placement import hardware
from scheduler.placement import hardware_features
from scheduler.placement import neutron as neutron_lib
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters_neutron as neutron_filters
from scheduler.placement import request_filters_owner as owner_filter
from scheduler.placement.hardware import ExtraSpecs
from scheduler.placement.hardware import ImageProps

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

EPHEMERAL_ENCRYPTION_FORMAT_TRAITS = {
    'plain': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_PLAIN,
    'luks': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_LUKS,
    'luksv2': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_LUKSV2,
}
# Nova's SoundModelType values.
SOUND_MODELS = ('sb16', 'es1370', 'pcspk', 'ac97', 'ich6', 'ich9', 'usb',
                'virtio')
TPM_SECRET_SECURITY_TRAITS = {
    'user': os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER,
    'host': os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST,
    'deployment': os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT,
}
DEFAULT_TPM_SECRET_SECURITY = 'user'


def _no_aggregates(uuid: str) -> frozenset[str] | None:
    return None


@dataclasses.dataclass(frozen=True)
class Lookups:
    """What filters 12 to 14 read outside the request (see the module):
    ``min_compute_version()``, the minimum nova-compute service version
    (0: unknown); ``neutron``, a NeutronClient or None;
    ``provider_aggregates(uuid)``, a resource provider's aggregate uuids
    (None: no such provider).  The defaults know nothing: no Neutron, no
    ``OWNER_NOVA``."""

    min_compute_version: Callable[[], int] = lambda: 0
    neutron: neutron_lib.NeutronClient | None = None
    provider_aggregates: neutron_filters.ProviderAggregates = _no_aggregates

    def with_providers(self, provider_aggregates:
                       neutron_filters.ProviderAggregates) -> Lookups:
        """These lookups with ``provider_aggregates``."""
        return dataclasses.replace(self,
                                   provider_aggregates=provider_aggregates)


def forest_aggregates(forest: Any) -> neutron_filters.ProviderAggregates:
    """``provider_aggregates`` over a ``provider_trees.Forest``."""
    def provider_aggregates(uuid: str) -> frozenset[str] | None:
        index = forest.index_of(uuid)
        if index < 0:
            return None
        found: frozenset[str] = forest.provider(index).aggregates
        return found
    return provider_aggregates


def lookups_from_config(conf: Any) -> Lookups:
    """The Lookups of ``conf``: the minimum compute version read from
    the cells (kept a minute), and Neutron's client when ``[neutron]`` is
    configured (else a warning: filters 12 and 13 are skipped)."""
    neutron = None
    if neutron_lib.configured(conf):
        neutron = neutron_lib.NeutronClient(conf)
    elif conf.scheduler.query_placement_for_routed_network_aggregates:
        LOG.error('[scheduler] query_placement_for_routed_network_'
                  'aggregates is set but [neutron] is not configured (no '
                  'auth_type nor endpoint_override): routed networks and '
                  'remote-managed ports are not filtered')
    else:
        LOG.warning('[neutron] is not configured (no auth_type nor '
                    'endpoint_override): remote-managed ports are not '
                    'filtered (Nova\'s remote_managed_ports_filter)')
    return Lookups(min_compute_version=compute_versions.MinComputeVersion(),
                   neutron=neutron)


def apply(query: request_lib.ResourceRequest, spec_obj: Any,
          aggregates: Iterable[Any], conf: Any,
          lookups: Lookups | None = None) -> None:
    """Apply Nova's request filters to ``query`` (see the module).
    ``aggregates``: every host aggregate (``uuid``, ``metadata``);
    ``lookups``: what filters 12 to 14 read (default: nothing known).

    :raises NoValidHost: tenant isolation requires an aggregate and the
        project has none; a vTPM secret security Nova does not support;
        a routed network's aggregates cannot be found.
    :raises HardwareRequestError: see filters 8 to 11.
    :raises PortNotFound, NeutronUnavailable: a requested port cannot be
        read (``scheduler.placement.neutron``).
    :raises SegmentProviderNotFound: Placement has no provider for a
        routed network's segment (``request_filters_neutron``).
    """
    lookups = lookups or Lookups()
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
    image_props = _image_properties(spec_obj)
    query.root_required.update(packed_virtqueue_traits(extra_specs,
                                                       image_props))
    _neutron(query, spec_obj, options, lookups)
    for root_traits in FLAVOR_IMAGE_FILTERS[1:]:
        query.root_required.update(root_traits(extra_specs, image_props))
    owner_filter.owner_nova(query, spec_obj, lookups.min_compute_version)


def _neutron(query: request_lib.ResourceRequest, spec_obj: Any,
             options: Any, lookups: Lookups) -> None:
    """Filters 12 and 13 (none without a Neutron client)."""
    if lookups.neutron is None:
        return
    ports = neutron_filters.Ports(lookups.neutron)
    if options.query_placement_for_routed_network_aggregates:
        neutron_filters.routed_networks(query, spec_obj, ports,
                                        lookups.provider_aggregates)
    neutron_filters.remote_managed_ports(query, spec_obj, ports)


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


# -- filters 8 to 11: flavor and image settings as root traits ---------------

def _image_properties(spec_obj: Any) -> ImageProps:
    """The image's properties (an ImageMetaProps, whose ``get`` is
    Nova's), or none when the request has no image."""
    image = spec_obj.obj_get('image')
    props = image.obj_get('properties') if image is not None else None
    return props if props is not None else {}


def _flag(extra_specs: ExtraSpecs, image_props: ImageProps,
          name: str) -> bool:
    """Whether ``hw:<name>`` (a boolean string, anything else false) or
    the image's boolean ``hw_<name>`` asks for a feature.

    :raises HardwareRequestError: FlavorImageConflict when both are set
        and differ.
    """
    flavor_text, image = hardware.both(extra_specs, image_props, name)
    flavor = (None if flavor_text is None
              else strutils.bool_from_string(flavor_text))
    image = None if image is None else strutils.bool_from_string(image)
    if flavor is not None and image is not None and flavor != image:
        raise hardware.HardwareRequestError(
            'FlavorImageConflict',
            'The flavor asks hw:%s=%s, the image hw_%s=%s.'
            % (name, flavor_text, name, image))
    return bool(flavor or image)


def packed_virtqueue_traits(extra_specs: ExtraSpecs,
                            image_props: ImageProps) -> set[str]:
    """Nova's ``packed_virtqueue_filter``: ``COMPUTE_NET_VIRTIO_PACKED``
    when ``virtio_packed_ring`` is true (see the module).

    :raises HardwareRequestError: FlavorImageConflict.
    """
    if _flag(extra_specs, image_props, 'virtio_packed_ring'):
        return {os_traits.COMPUTE_NET_VIRTIO_PACKED}
    return set()


def ephemeral_encryption_traits(extra_specs: ExtraSpecs,
                                image_props: ImageProps) -> set[str]:
    """Nova's ``ephemeral_encryption_filter``:
    ``COMPUTE_EPHEMERAL_ENCRYPTION`` and the format's trait when
    ``ephemeral_encryption`` is true (see the module).

    :raises HardwareRequestError: FlavorImageConflict; Invalid for an
        unknown format.
    """
    if not _flag(extra_specs, image_props, 'ephemeral_encryption'):
        return set()
    traits = {os_traits.COMPUTE_EPHEMERAL_ENCRYPTION}
    name = hardware.agreed(extra_specs, image_props,
                           'ephemeral_encryption_format')
    if name:
        hardware.check_choice(name, EPHEMERAL_ENCRYPTION_FORMAT_TRAITS,
                              'Invalid', 'The ephemeral encryption format')
        traits.add(EPHEMERAL_ENCRYPTION_FORMAT_TRAITS[name])
    return traits


def virtio_sound_traits(extra_specs: ExtraSpecs,
                        image_props: ImageProps) -> set[str]:
    """Nova's ``virtio_sound_filter``: ``COMPUTE_SOUND_MODEL_VIRTIO``
    for the ``virtio`` sound model, none for the others.

    :raises HardwareRequestError: FlavorImageConflict; Invalid for an
        unknown model.
    """
    model = hardware.agreed(extra_specs, image_props, 'sound_model')
    if model:
        hardware.check_choice(model, SOUND_MODELS, 'Invalid',
                              'The sound device model')
    if model == 'virtio':
        return {os_traits.COMPUTE_SOUND_MODEL_VIRTIO}
    return set()


def tpm_secret_security_traits(extra_specs: ExtraSpecs,
                               image_props: ImageProps) -> set[str]:
    """Nova's ``tpm_secret_security_filter``: for an instance with a
    vTPM, the trait of the flavor's ``hw:tpm_secret_security``.

    :raises HardwareRequestError: the vTPM settings conflict
        (FlavorImageConflict) or are invalid (Invalid), as for the
        vTPM's own traits (``scheduler.placement.hardware_features``).
    :raises NoValidHost: a secret security Nova does not support.
    """
    vtpm = hardware.HardwareRequest()
    hardware_features._vtpm(vtpm, extra_specs, image_props)
    if not vtpm.required_traits:
        return set()
    security = (extra_specs.get('hw:tpm_secret_security') or
                DEFAULT_TPM_SECRET_SECURITY)
    trait = TPM_SECRET_SECURITY_TRAITS.get(security)
    if trait is None:
        LOG.warning('TPM secret security %r is not supported.', security)
        raise exception.NoValidHost(
            reason='Scheduling failed: TPM secret security %r is not '
                   'supported.' % security)
    return {trait}


# Filters 8 to 11, in Nova's order: the first refusal wins.
FLAVOR_IMAGE_FILTERS: tuple[
    Callable[[ExtraSpecs, ImageProps], set[str]], ...] = (
    packed_virtqueue_traits,
    ephemeral_encryption_traits,
    virtio_sound_traits,
    tpm_secret_security_traits,
)
