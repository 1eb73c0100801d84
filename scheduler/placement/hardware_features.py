"""The memory encryption, persistent memory, vTPM, PCI NUMA affinity,
secure boot, address space and stateless firmware that a flavor's
extra specs and an image's properties ask Placement for, by Nova 34's
rules (see ``scheduler.placement.hardware`` for how a setting is read).

Checked in this order (``feature_request``):

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

"""

from __future__ import annotations

import collections
from collections.abc import Callable
from collections.abc import Mapping
from typing import NamedTuple

import os_resource_classes as orc
import os_traits
from oslo_utils import strutils

from scheduler.placement.hardware import ExtraSpecs
from scheduler.placement.hardware import HardwareRequest
from scheduler.placement.hardware import HardwareRequestError
from scheduler.placement.hardware import ImageProps
from scheduler.placement.hardware import agreed
from scheduler.placement.hardware import both
from scheduler.placement.hardware import check_choice

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


# A step of ``feature_request``: adds what it asks to the request.
FeatureStep = Callable[[HardwareRequest, ExtraSpecs, ImageProps], None]


def feature_request(extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> HardwareRequest:
    """The memory encryption, persistent memory, vTPM, PCI NUMA
    affinity, secure boot, address space and stateless firmware part of
    a request (``pcpus`` and ``vcpus`` stay None).

    ``extra_specs`` and ``image_props`` as for
    ``scheduler.placement.cpu_pinning.pinning_request``.
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



def _mem_encryption(request: HardwareRequest, extra_specs: ExtraSpecs,
                    image_props: ImageProps) -> None:
    flavor_text, image = both(extra_specs, image_props, 'mem_encryption')
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
    check_choice(name, MEM_ENCRYPTION_MODELS, 'Invalid',
                  'The memory encryption model')
    model = MEM_ENCRYPTION_MODELS[name]
    _check_mem_encryption_image(name, model, image_props)
    request.resources[orc.MEM_ENCRYPTION_CONTEXT] = 1
    request.required_traits.add(model.trait)


def _mem_encryption_model_name(extra_specs: ExtraSpecs,
                               image_props: ImageProps) -> str:
    flavor, image = both(extra_specs, image_props, 'mem_encryption_model')
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
    version = agreed(extra_specs, image_props, 'tpm_version')
    if version is None:
        return
    check_choice(version, TPM_VERSION_TRAITS, 'Invalid', 'The TPM version')
    model = agreed(extra_specs, image_props, 'tpm_model')
    if model is None:
        model = DEFAULT_TPM_MODEL
    check_choice(model, TPM_MODEL_TRAITS, 'Invalid', 'The TPM model')
    if model == 'tpm-crb' and version != '2.0':
        raise HardwareRequestError(
            'Invalid', 'The TPM model tpm-crb needs TPM version 2.0.')
    request.required_traits.update(
        (TPM_MODEL_TRAITS[model], TPM_VERSION_TRAITS[version]))


def _pci_numa_affinity(request: HardwareRequest, extra_specs: ExtraSpecs,
                       image_props: ImageProps) -> None:
    flavor, image = both(extra_specs, image_props,
                          'pci_numa_affinity_policy')
    if flavor and image and flavor != image:
        raise HardwareRequestError(
            'ImagePCINUMAPolicyForbidden',
            'The flavor PCI NUMA affinity policy %s refuses the image '
            'policy %s.' % (flavor, image))
    policy = flavor or image
    if policy:
        check_choice(policy, PCI_NUMA_POLICIES, 'InvalidPCINUMAAffinity',
                      'The PCI NUMA affinity policy')
    if policy == 'socket':
        request.required_traits.add(os_traits.COMPUTE_SOCKET_PCI_NUMA_AFFINITY)


def _choice_step(setting: ChoiceSetting) -> FeatureStep:
    def step(request: HardwareRequest, extra_specs: ExtraSpecs,
             image_props: ImageProps) -> None:
        value = agreed(extra_specs, image_props, setting.name,
                        setting.prefix)
        if value is None:
            return
        check_choice(value, setting.traits, 'Invalid',
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
