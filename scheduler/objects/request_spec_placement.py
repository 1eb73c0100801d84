"""What a ``RequestSpec`` asks that only Placement can check.

``placement_only_requests(spec)`` backs
``RequestSpec.placement_only_requests``: flavor extra specs Nova turns
into Placement resources or traits, image traits, request groups, and the
features of ``_PLACEMENT_FEATURES`` that no filter of ours checks.
"""

import re
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from oslo_utils import strutils

# Flavor extra spec keys Nova reads as Placement requests (its pattern):
# ``resources`` or ``trait``, an optional group suffix, ``:``, a name.
_PLACEMENT_KEY = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$')
# Placement's resource class names: standard ones and CUSTOM_*.
_RESOURCE_CLASS = re.compile(r'^[A-Z0-9_]+$')

# A test of a flavor extra spec or image property value: (value, the
# image properties) -> whether the feature is asked for.
_Test = Callable[[Any, dict], bool]


def _amount(value: Any) -> int:
    """A resource amount: a positive integer, or 0 for what Nova ignores
    (not an integer, negative)."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def _true(value: Any, props: dict) -> bool:
    return strutils.bool_from_string(value)


def _set(value: Any, props: dict) -> bool:
    return value != ''


def _equals(wanted: str) -> _Test:
    def test(value: Any, props: dict) -> bool:
        return str(value).lower() == wanted
    return test


def _uefi_and_true(value: Any, props: dict) -> bool:
    """Nova ignores ``hw_firmware_stateless`` unless the firmware is
    UEFI."""
    return props.get('hw_firmware_type') == 'uefi' and _true(value, props)


# Features Nova asks Placement for (a resource or a trait) and no filter
# checks: (flavor extra spec, image property, test of a value, what).
_PLACEMENT_FEATURES: tuple[tuple[str | None, str | None, _Test, str], ...] = (
    ('hw:mem_encryption', 'hw_mem_encryption', _true,
     'memory encryption (resource MEM_ENCRYPTION_CONTEXT)'),
    ('hw:pmem', None, _set,
     'persistent memory (resources PMEM_NAMESPACE_*)'),
    ('hw:tpm_version', 'hw_tpm_version', _set,
     'an emulated TPM (traits COMPUTE_SECURITY_TPM_*)'),
    ('os:secure_boot', 'os_secure_boot', _equals('required'),
     'UEFI secure boot (trait COMPUTE_SECURITY_UEFI_SECURE_BOOT)'),
    ('hw:maxphysaddr_mode', 'hw_maxphysaddr_mode', _set,
     'a physical address mode (traits COMPUTE_ADDRESS_SPACE_*)'),
    (None, 'hw_firmware_stateless', _uefi_and_true,
     'stateless firmware (trait COMPUTE_SECURITY_STATELESS_FIRMWARE)'),
    ('hw:pci_numa_affinity_policy', 'hw_pci_numa_affinity_policy',
     _equals('socket'),
     'socket PCI NUMA affinity (trait COMPUTE_SOCKET_PCI_NUMA_AFFINITY)'),
)


def placement_only_requests(spec: Any) -> list[str]:
    """What ``spec`` (a RequestSpec) asks that only Placement can check,
    as readable strings (the rules: ``RequestSpec.placement_only_requests``).
    """
    asked = list(_extra_spec_placement_requests(spec))
    asked += ['image trait %s required' % trait
              for trait in _image_props(spec).get('traits_required')
              or ()]
    for group in spec.get('requested_resources', []):
        asked += group.needs()
    params = spec.obj_get('request_level_params')
    if params is not None:
        asked += params.needs()
    asked += [what for what, wanted in _placement_features(spec)
              if wanted]
    return asked


def _extra_specs(spec: Any) -> dict:
    flavor = spec.obj_get('flavor')
    return (flavor.obj_get('extra_specs') if flavor is not None
            else None) or {}


def _extra_spec_placement_requests(spec: Any) -> Iterator[str]:
    for key, value in sorted(_extra_specs(spec).items()):
        match = _PLACEMENT_KEY.match(key)
        if match is None:
            continue
        prefix, suffix, name = match.groups()
        if prefix == 'trait' and value in ('required', 'forbidden'):
            yield '%s=%s' % (key, value)
        elif prefix == 'resources' and _resource_needs_placement(
                spec, suffix, name, value):
            yield '%s=%s' % (key, value)


def _resource_needs_placement(spec: Any, suffix: str | None, name: str,
                              value: Any) -> bool:
    """Whether ``resources<suffix>:<name>=<value>`` asks Placement for
    something: a positive amount of a valid class name, unless it is
    a VCPU / MEMORY_MB / DISK_GB override of the unsuffixed group no
    larger than what the flavor asks (Nova ignores bad names and
    amounts with a warning)."""
    amount = _amount(value)
    if not amount or not _RESOURCE_CLASS.match(name):
        return False
    standard = {'VCPU': spec.vcpus, 'MEMORY_MB': spec.memory_mb,
                'DISK_GB': spec.local_disk_gb}
    return suffix is not None or amount > standard.get(name, -1)


def _image_props(spec: Any) -> dict:
    image = spec.obj_get('image')
    props = image.obj_get('properties') if image is not None else None
    return props.set_properties() if props is not None else {}


def _placement_features(spec: Any) -> Iterator[tuple[str, bool]]:
    """``(what, wanted)`` for each entry of _PLACEMENT_FEATURES."""
    extra_specs = _extra_specs(spec)
    props = _image_props(spec)
    for spec_key, prop_key, test, what in _PLACEMENT_FEATURES:
        values = [extra_specs.get(spec_key), props.get(prop_key)]
        yield what, any(test(value, props) for value in values
                        if value is not None)
