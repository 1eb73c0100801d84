"""The Placement resources and traits that a flavor's ``hw:``/``os:``
extra specs and an image's properties ask for, by Nova 34's rules.

A setting usually exists twice: as the flavor extra spec ``hw:NAME``
(``os:NAME``) and as the image property ``hw_NAME`` (``os_NAME``).  An
empty value counts as unset.

CPU pinning (``pinning_request``):

* ``cpu_policy``: ``shared``, ``dedicated`` or ``mixed``.  An invalid
  value on either side is refused.  A flavor policy wins over the
  image's, but a flavor saying ``shared`` refuses an image saying
  ``dedicated`` or ``mixed``, and a flavor saying ``mixed`` refuses an
  image saying ``dedicated``; without a flavor policy the image's
  applies.  ``dedicated`` asks one PCPU per flavor vCPU instead of
  VCPUs.  ``mixed`` asks as many PCPUs as the flavor's
  ``hw:cpu_dedicated_mask`` selects (else, under ``hw:cpu_realtime``,
  as many as the realtime mask selects) and VCPUs for the rest.
* ``hw:emulator_threads_policy`` (flavor only): ``share`` or
  ``isolate``; ``isolate`` adds one PCPU to a pinned request.
* ``cpu_thread_policy``: ``prefer``, ``isolate`` or ``require``.  A
  flavor policy wins; one other than ``prefer`` refuses a different
  image policy, and so does an empty one (the exception to the rule
  above).  Without a flavor policy the image's applies.  ``require``
  requires and ``isolate`` forbids ``HW_CPU_HYPERTHREADING``, whatever
  the CPU policy.
* CPU masks are lists of CPU numbers, ``a-b`` ranges and ``^`` excluded
  numbers or ranges; a mask starting with ``^`` excludes from all the
  flavor's vCPUs.  The dedicated mask must select some but not all of
  the flavor's vCPUs, and only those.  The realtime mask (the image's
  before the flavor's; all vCPUs without one) must select some of the
  flavor's vCPUs, and only those, and not all of them unless an
  emulator threads policy is set.

Other features (``feature_request``), checked in this order:

* ``mem_encryption`` (flavor: a boolean string, image: a boolean): when
  either side is true, both sides that are set must agree, and
  ``mem_encryption_model`` (both sides that are set must agree; default
  ``amd-sev``) picks the model and its required trait; one
  MEM_ENCRYPTION_CONTEXT is asked.  The image must have
  ``hw_firmware_type`` ``uefi``, and a ``hw_machine_type``, when set,
  must contain ``q35``; ``amd-sev-snp`` and ``intel-tdx`` also need
  stateless firmware, and ``intel-tdx`` a ``hw_video_model`` of
  ``none``.
* ``hw:pmem`` (flavor only): comma-separated labels; each asks one of
  the resource class ``CUSTOM_PMEM_NAMESPACE_<LABEL>`` (the label
  upper-cased, each run of other characters than letters and digits
  made ``_``).
* ``tpm_version`` (``1.2``/``2.0``) and ``tpm_model`` (``tpm-tis``, the
  default, or ``tpm-crb``, which needs 2.0): each is the flavor's or
  the image's, which must agree when both are set; the model's and the
  version's traits are required.
* ``pci_numa_affinity_policy``: both sides that are set must agree;
  ``socket`` requires ``COMPUTE_SOCKET_PCI_NUMA_AFFINITY``.
* ``os:secure_boot`` (``required``, ``disabled``, ``optional``) and
  ``maxphysaddr_mode`` (``passthrough``, ``emulate``): both sides that
  are set must agree; secure boot ``required`` and either address space
  mode require their trait.
* ``hw_firmware_stateless`` (image only) requires
  ``COMPUTE_SECURITY_STATELESS_FIRMWARE`` when true and the firmware is
  ``uefi``.

A refused request raises ``HardwareRequestError``, which names the
exception Nova raises in its ``nova_exception``.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import os_resource_classes as orc
import os_traits
from oslo_utils import strutils

from scheduler import exception

ExtraSpecs = Mapping[str, str]
ImageProps = Mapping[str, Any]

CPU_POLICIES = ('dedicated', 'shared', 'mixed')
THREAD_POLICIES = ('prefer', 'isolate', 'require')
EMULATOR_THREADS_POLICIES = ('share', 'isolate')
PCI_NUMA_POLICIES = ('required', 'legacy', 'preferred', 'socket')
TPM_VERSION_TRAITS = {
    '1.2': os_traits.COMPUTE_SECURITY_TPM_1_2,
    '2.0': os_traits.COMPUTE_SECURITY_TPM_2_0,
}
TPM_MODEL_TRAITS = {
    'tpm-tis': os_traits.COMPUTE_SECURITY_TPM_TIS,
    'tpm-crb': os_traits.COMPUTE_SECURITY_TPM_CRB,
}
DEFAULT_TPM_MODEL = 'tpm-tis'
DEFAULT_MEM_ENCRYPTION_MODEL = 'amd-sev'

# A flavor CPU policy and the image CPU policies it refuses.
CPU_POLICY_REFUSES = {
    'dedicated': (),
    'mixed': ('dedicated',),
    'shared': ('dedicated', 'mixed'),
}
# The thread policies that ask something of HW_CPU_HYPERTHREADING.
THREAD_POLICY_TRAIT = {'require': 'required', 'isolate': 'forbidden'}


class MemEncryptionModel(NamedTuple):
    trait: str
    needs_stateless_firmware: bool
    needs_no_video: bool


MEM_ENCRYPTION_MODELS = {
    'amd-sev': MemEncryptionModel(os_traits.HW_CPU_X86_AMD_SEV, False, False),
    'amd-sev-es': MemEncryptionModel(os_traits.HW_CPU_X86_AMD_SEV_ES,
                                     False, False),
    'amd-sev-snp': MemEncryptionModel(os_traits.HW_CPU_X86_AMD_SEV_SNP,
                                      True, False),
    'intel-tdx': MemEncryptionModel(os_traits.HW_CPU_X86_INTEL_TDX,
                                    True, True),
}
MEM_ENCRYPTION_FIRMWARE = 'uefi'
MEM_ENCRYPTION_MACHINE_TYPE = 'q35'


class ChoiceSetting(NamedTuple):
    """A setting with a closed set of values, each requiring a trait or
    nothing (``None``)."""

    prefix: str
    name: str
    traits: Mapping[str, str | None]


SECURE_BOOT = ChoiceSetting('os', 'secure_boot', {
    'required': os_traits.COMPUTE_SECURITY_UEFI_SECURE_BOOT,
    'disabled': None,
    'optional': None,
})
MAXPHYSADDR_MODE = ChoiceSetting('hw', 'maxphysaddr_mode', {
    'passthrough': os_traits.COMPUTE_ADDRESS_SPACE_PASSTHROUGH,
    'emulate': os_traits.COMPUTE_ADDRESS_SPACE_EMULATED,
})


class HardwareRequestError(exception.InvalidRequestSpec):
    """A refused request (an InvalidRequestSpec); ``nova_exception`` is
    the name of the class Nova raises for it (``FlavorImageConflict``,
    ``Invalid``...)."""

    def __init__(self, nova_exception: str, message: str) -> None:
        super().__init__(message)
        self.nova_exception = nova_exception


@dataclasses.dataclass
class HardwareRequest:
    """What the hw:/os: extra specs and image properties ask Placement for."""

    # PCPU amount for the unsuffixed group, None: no pinning translation
    pcpus: int | None = None
    # VCPU amount Nova sets explicitly (the 'mixed' policy), None: none
    vcpus: int | None = None
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required_traits: set[str] = dataclasses.field(default_factory=set)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)
    cpu_pinning_requested: bool = False


# A step of ``feature_request``: adds what it asks to the request.
FeatureStep = Callable[[HardwareRequest, ExtraSpecs, ImageProps], None]


# -- public -------------------------------------------------------------------

def pinning_request(vcpus: int, extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> HardwareRequest:
    """The CPU pinning part of a request of ``vcpus`` vCPUs.

    ``extra_specs`` are the flavor's extra specs (strings),
    ``image_props`` the image's properties by ImageMetaProps field name.
    The result has ``pcpus`` set for a ``dedicated`` or ``mixed`` CPU
    policy (``vcpus`` too for ``mixed``), ``cpu_pinning_requested`` for
    ``dedicated``, and ``HW_CPU_HYPERTHREADING`` required or forbidden
    by the thread policy.

    :raises HardwareRequestError: an invalid CPU, thread or emulator
        threads policy (``InvalidCPUAllocationPolicy``,
        ``InvalidCPUThreadAllocationPolicy``,
        ``InvalidEmulatorThreadsPolicy``); an image policy the flavor
        refuses (``ImageCPUPinningForbidden``,
        ``ImageCPUThreadPolicyForbidden``); for ``mixed``, a mask that
        does not parse (``Invalid``) or selects the wrong CPUs
        (``InvalidMixedInstanceDedicatedMask``,
        ``RealtimeMaskNotFoundOrInvalid``).
    """
    policy = _cpu_policy(extra_specs, image_props)
    thread_policy = _thread_policy(extra_specs, image_props)
    emulator_policy = _emulator_threads_policy(extra_specs)
    request = HardwareRequest()
    _add_trait(request, os_traits.HW_CPU_HYPERTHREADING,
               THREAD_POLICY_TRAIT.get(thread_policy or ''))
    if policy == 'dedicated':
        request.cpu_pinning_requested = True
        pinned = vcpus
    elif policy == 'mixed':
        pinned = _mixed_pinned_count(vcpus, extra_specs, image_props,
                                     emulator_policy)
        request.vcpus = vcpus - pinned
    else:
        return request
    if emulator_policy == 'isolate':
        pinned += 1
    request.pcpus = pinned
    return request


def feature_request(extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> HardwareRequest:
    """The memory encryption, persistent memory, vTPM, PCI NUMA
    affinity, secure boot, address space and stateless firmware part of
    a request (``pcpus`` and ``vcpus`` stay None).

    ``extra_specs`` and ``image_props`` as for ``pinning_request``.
    ``resources`` maps resource classes to amounts
    (MEM_ENCRYPTION_CONTEXT, CUSTOM_PMEM_NAMESPACE_*).

    :raises HardwareRequestError: flavor and image disagree
        (``FlavorImageConflict``, ``ImagePCINUMAPolicyForbidden``); an
        invalid value (``Invalid``, ``InvalidPCINUMAAffinity``);
        memory encryption on an image that cannot have it
        (``FlavorImageConflict``, ``InvalidMachineType``,
        ``StatelessFirmwareRequired``, ``InvalidVideoMode``).
    """
    request = HardwareRequest()
    for step in FEATURE_STEPS:
        step(request, extra_specs, image_props)
    return request


# -- reading settings ---------------------------------------------------------

def _both(extra_specs: ExtraSpecs, image_props: ImageProps, name: str,
          prefix: str = 'hw') -> tuple[Any, Any]:
    """The flavor's and the image's value of a setting (None: unset)."""
    return (extra_specs.get('%s:%s' % (prefix, name)),
            image_props.get('%s_%s' % (prefix, name)))


def _agreed(extra_specs: ExtraSpecs, image_props: ImageProps, name: str,
            prefix: str = 'hw') -> Any:
    """The flavor's value of a setting, else the image's; refused when
    both are set (not empty) and differ."""
    flavor, image = _both(extra_specs, image_props, name, prefix)
    if flavor and image and flavor != image:
        raise HardwareRequestError(
            'FlavorImageConflict',
            'The flavor asks %s:%s=%s, the image %s_%s=%s.'
            % (prefix, name, flavor, prefix, name, image))
    return flavor or image


def _check_choice(value: Any, allowed: Any, nova_exception: str,
                  what: str) -> None:
    if value not in allowed:
        raise HardwareRequestError(
            nova_exception, '%s %r is not one of %s.'
            % (what, value, ', '.join(allowed)))


# -- CPU pinning --------------------------------------------------------------

def _cpu_policy(extra_specs: ExtraSpecs,
                image_props: ImageProps) -> str | None:
    flavor, image = _both(extra_specs, image_props, 'cpu_policy')
    for value in (flavor, image):
        if value:
            _check_choice(value, CPU_POLICIES, 'InvalidCPUAllocationPolicy',
                          'The CPU policy')
    if flavor in CPU_POLICY_REFUSES:
        if image in CPU_POLICY_REFUSES[flavor]:
            raise HardwareRequestError(
                'ImageCPUPinningForbidden',
                'The flavor CPU policy %s refuses the image CPU policy %s.'
                % (flavor, image))
        return flavor
    return image if image in CPU_POLICIES else None


def _thread_policy(extra_specs: ExtraSpecs,
                   image_props: ImageProps) -> str | None:
    flavor, image = _both(extra_specs, image_props, 'cpu_thread_policy')
    for value in (flavor, image):
        if value:
            _check_choice(value, THREAD_POLICIES,
                          'InvalidCPUThreadAllocationPolicy',
                          'The CPU thread policy')
    if flavor is None or flavor == 'prefer':
        return flavor or image
    if image and image != flavor:
        raise HardwareRequestError(
            'ImageCPUThreadPolicyForbidden',
            'The flavor CPU thread policy %r refuses the image CPU thread '
            'policy %s.' % (flavor, image))
    return flavor


def _emulator_threads_policy(extra_specs: ExtraSpecs) -> str | None:
    policy = extra_specs.get('hw:emulator_threads_policy')
    if not policy:
        return None
    _check_choice(policy, EMULATOR_THREADS_POLICIES,
                  'InvalidEmulatorThreadsPolicy',
                  'The emulator threads policy')
    return policy


def _mixed_pinned_count(vcpus: int, extra_specs: ExtraSpecs,
                        image_props: ImageProps,
                        emulator_policy: str | None) -> int:
    """How many of a ``mixed`` request's vCPUs are pinned."""
    dedicated = _dedicated_cpus(vcpus, extra_specs)
    realtime = _realtime_cpus(vcpus, extra_specs, image_props,
                              emulator_policy)
    return len(dedicated or realtime or ())


def _dedicated_cpus(vcpus: int, extra_specs: ExtraSpecs) -> set[int] | None:
    mask = extra_specs.get('hw:cpu_dedicated_mask')
    if not mask:
        return None
    cpus = _mask_cpus(mask, vcpus)
    everything = set(range(vcpus))
    if not cpus or cpus >= everything or not cpus <= everything:
        raise HardwareRequestError(
            'InvalidMixedInstanceDedicatedMask',
            'hw:cpu_dedicated_mask %r must select some but not all of the '
            '%d vCPUs of the flavor, and no others.' % (mask, vcpus))
    return cpus


def _realtime_cpus(vcpus: int, extra_specs: ExtraSpecs,
                   image_props: ImageProps,
                   emulator_policy: str | None) -> set[int] | None:
    if not strutils.bool_from_string(extra_specs.get('hw:cpu_realtime')):
        return None
    flavor_mask, image_mask = _both(extra_specs, image_props,
                                    'cpu_realtime_mask')
    mask = image_mask or flavor_mask
    everything = set(range(vcpus))
    cpus = _mask_cpus(mask, vcpus) if mask else set(everything)
    if (not cpus or not cpus <= everything or
            (cpus == everything and not emulator_policy)):
        raise HardwareRequestError(
            'RealtimeMaskNotFoundOrInvalid',
            'The realtime mask %r must select some of the %d vCPUs of the '
            'flavor, and no others, and leave one out unless an emulator '
            'threads policy is set.' % (mask, vcpus))
    return cpus


def _mask_cpus(mask: str, vcpus: int) -> set[int]:
    """The CPUs of a mask; one starting with ``^`` excludes from all
    ``vcpus``."""
    if mask.strip().startswith('^'):
        mask = '0-%d,%s' % (vcpus - 1, mask)
    return parse_cpu_set(mask)


def parse_cpu_set(spec: str) -> set[int]:
    """The CPU numbers of a comma-separated list of numbers (``3``),
    ranges (``2-5``) and exclusions (``^3``, ``^2-5``); empty items are
    skipped.  Exclusions apply to the whole list.

    :raises HardwareRequestError: (``Invalid``) an item that is not a
        number or a range, or a range that ends before it starts.
    """
    selected: set[int] = set()
    excluded: set[int] = set()
    for item in (part.strip() for part in spec.split(',')):
        if not item:
            continue
        start, dash, end = item.partition('-')
        target = selected
        if start.startswith('^'):
            target = excluded
            start = start[1:]
        if not dash:
            target.add(_cpu_number(start, item))
            continue
        first, last = _cpu_number(start, item), _cpu_number(end, item)
        if first > last:
            raise HardwareRequestError(
                'Invalid', 'The CPU range %r ends before it starts.' % item)
        target.update(range(first, last + 1))
    return selected - excluded


def _cpu_number(text: str, item: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise HardwareRequestError(
            'Invalid', 'The CPU list item %r is not a CPU number or range.'
            % item) from None


def _add_trait(request: HardwareRequest, trait: str,
               wish: str | None) -> None:
    if wish == 'required':
        request.required_traits.add(trait)
    elif wish == 'forbidden':
        request.forbidden_traits.add(trait)


# -- the other features -------------------------------------------------------

def _mem_encryption(request: HardwareRequest, extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> None:
    flavor_text, image = _both(extra_specs, image_props, 'mem_encryption')
    flavor = (None if flavor_text is None
              else strutils.bool_from_string(flavor_text))
    if not flavor and not image:
        return
    if flavor is not None and image is not None and flavor != image:
        raise HardwareRequestError(
            'FlavorImageConflict',
            'The flavor asks hw:mem_encryption=%s, the image '
            'hw_mem_encryption=%s.' % (flavor_text, image))
    name = _mem_encryption_model_name(extra_specs, image_props)
    _check_choice(name, MEM_ENCRYPTION_MODELS, 'Invalid',
                  'The memory encryption model')
    model = MEM_ENCRYPTION_MODELS[name]
    _check_mem_encryption_image(name, model, image_props)
    request.resources[orc.MEM_ENCRYPTION_CONTEXT] = 1
    request.required_traits.add(model.trait)


def _mem_encryption_model_name(extra_specs: ExtraSpecs,
                               image_props: ImageProps) -> str:
    flavor, image = _both(extra_specs, image_props, 'mem_encryption_model')
    if flavor is not None and image is not None and flavor != image:
        raise HardwareRequestError(
            'FlavorImageConflict',
            'The flavor asks hw:mem_encryption_model=%s, the image '
            'hw_mem_encryption_model=%s.' % (flavor, image))
    return image or flavor or DEFAULT_MEM_ENCRYPTION_MODEL


def _check_mem_encryption_image(name: str, model: MemEncryptionModel,
                                image_props: ImageProps) -> None:
    if image_props.get('hw_firmware_type') != MEM_ENCRYPTION_FIRMWARE:
        raise HardwareRequestError(
            'FlavorImageConflict',
            'Memory encryption needs the image property hw_firmware_type '
            '%s.' % MEM_ENCRYPTION_FIRMWARE)
    machine_type = image_props.get('hw_machine_type')
    if (machine_type is not None and
            MEM_ENCRYPTION_MACHINE_TYPE not in machine_type):
        raise HardwareRequestError(
            'InvalidMachineType',
            'Memory encryption %s needs a %s machine type, not %r.'
            % (name, MEM_ENCRYPTION_MACHINE_TYPE, machine_type))
    if model.needs_stateless_firmware and not _stateless_firmware(
            image_props):
        raise HardwareRequestError(
            'StatelessFirmwareRequired',
            'Memory encryption %s needs the image property '
            'hw_firmware_stateless true.' % name)
    if model.needs_no_video and image_props.get('hw_video_model') != 'none':
        raise HardwareRequestError(
            'InvalidVideoMode',
            'Memory encryption %s needs the image property hw_video_model '
            'none.' % name)


def _vpmems(request: HardwareRequest, extra_specs: ExtraSpecs,
            image_props: ImageProps) -> None:
    labels = (label.strip()
              for label in (extra_specs.get('hw:pmem') or '').split(','))
    counts = collections.Counter(
        orc.normalize_name('PMEM_NAMESPACE_' + label)
        for label in labels if label)
    request.resources.update(counts)


def _vtpm(request: HardwareRequest, extra_specs: ExtraSpecs,
          image_props: ImageProps) -> None:
    version = _agreed(extra_specs, image_props, 'tpm_version')
    if version is None:
        return
    _check_choice(version, TPM_VERSION_TRAITS, 'Invalid', 'The TPM version')
    model = _agreed(extra_specs, image_props, 'tpm_model')
    if model is None:
        model = DEFAULT_TPM_MODEL
    _check_choice(model, TPM_MODEL_TRAITS, 'Invalid', 'The TPM model')
    if model == 'tpm-crb' and version != '2.0':
        raise HardwareRequestError(
            'Invalid', 'The TPM model tpm-crb needs TPM version 2.0.')
    request.required_traits.update(
        (TPM_MODEL_TRAITS[model], TPM_VERSION_TRAITS[version]))


def _pci_numa_affinity(request: HardwareRequest, extra_specs: ExtraSpecs,
                       image_props: ImageProps) -> None:
    flavor, image = _both(extra_specs, image_props,
                          'pci_numa_affinity_policy')
    if flavor and image and flavor != image:
        raise HardwareRequestError(
            'ImagePCINUMAPolicyForbidden',
            'The flavor PCI NUMA affinity policy %s refuses the image '
            'policy %s.' % (flavor, image))
    policy = flavor or image
    if policy:
        _check_choice(policy, PCI_NUMA_POLICIES, 'InvalidPCINUMAAffinity',
                      'The PCI NUMA affinity policy')
    if policy == 'socket':
        request.required_traits.add(os_traits.COMPUTE_SOCKET_PCI_NUMA_AFFINITY)


def _choice_step(setting: ChoiceSetting) -> FeatureStep:
    def step(request: HardwareRequest, extra_specs: ExtraSpecs,
             image_props: ImageProps) -> None:
        value = _agreed(extra_specs, image_props, setting.name,
                        setting.prefix)
        if value is None:
            return
        _check_choice(value, setting.traits, 'Invalid',
                      '%s:%s' % (setting.prefix, setting.name))
        trait = setting.traits[value]
        if trait:
            request.required_traits.add(trait)
    return step


def _stateless_firmware(image_props: ImageProps) -> bool:
    """Whether the image asks for stateless firmware (only UEFI has)."""
    return bool(image_props.get('hw_firmware_stateless') is not None and
                image_props.get('hw_firmware_type') == 'uefi' and
                image_props.get('hw_firmware_stateless'))


def _stateless_firmware_step(request: HardwareRequest,
                             extra_specs: ExtraSpecs,
                             image_props: ImageProps) -> None:
    if _stateless_firmware(image_props):
        request.required_traits.add(
            os_traits.COMPUTE_SECURITY_STATELESS_FIRMWARE)


# In Nova's order: the first refusal wins.
FEATURE_STEPS: tuple[FeatureStep, ...] = (
    _mem_encryption,
    _vpmems,
    _vtpm,
    _pci_numa_affinity,
    _choice_step(SECURE_BOOT),
    _choice_step(MAXPHYSADDR_MODE),
    _stateless_firmware_step,
)
