"""The hw:/os: translation of ``scheduler.placement.hardware``, a test
per rule (``tests/functional/test_placement_request.py`` compares it
with Nova's own over generated flavors and images).
"""


import pytest

from scheduler.placement import cpu_pinning
from scheduler.placement import hardware_features
from scheduler.placement.hardware import HardwareRequest
from scheduler.placement.hardware import HardwareRequestError

HT = 'HW_CPU_HYPERTHREADING'
UEFI = {'hw_firmware_type': 'uefi'}


def refused(call, *args):
    with pytest.raises(HardwareRequestError) as caught:
        call(*args)
    return caught.value.nova_exception


# -- CPU pinning --------------------------------------------------------------

def test_no_policy_asks_nothing():
    assert cpu_pinning.pinning_request(4, {}, {}) == HardwareRequest()


@pytest.mark.parametrize('specs, image', [
    ({'hw:cpu_policy': 'shared'}, {}),
    ({}, {'hw_cpu_policy': 'shared'}),
    ({'hw:cpu_policy': ''}, {}),
])
def test_shared_asks_nothing(specs, image):
    assert cpu_pinning.pinning_request(4, specs, image) == HardwareRequest()


@pytest.mark.parametrize('specs, image', [
    ({'hw:cpu_policy': 'dedicated'}, {}),
    ({}, {'hw_cpu_policy': 'dedicated'}),
    ({'hw:cpu_policy': 'dedicated'}, {'hw_cpu_policy': 'shared'}),
    ({'hw:cpu_policy': 'dedicated'}, {'hw_cpu_policy': 'mixed'}),
    ({'hw:cpu_policy': ''}, {'hw_cpu_policy': 'dedicated'}),
])
def test_dedicated_asks_pcpus(specs, image):
    assert cpu_pinning.pinning_request(4, specs, image) == HardwareRequest(
        pcpus=4, cpu_pinning_requested=True)


def test_dedicated_emulator_threads_isolate_adds_a_pcpu():
    asked = cpu_pinning.pinning_request(4, {
        'hw:cpu_policy': 'dedicated',
        'hw:emulator_threads_policy': 'isolate'}, {})
    assert (asked.pcpus, asked.vcpus) == (5, None)


def test_emulator_threads_share_adds_nothing():
    asked = cpu_pinning.pinning_request(4, {
        'hw:cpu_policy': 'dedicated', 'hw:emulator_threads_policy': 'share'},
        {})
    assert asked.pcpus == 4


def test_emulator_threads_isolate_without_pinning_adds_nothing():
    assert cpu_pinning.pinning_request(
        4, {'hw:emulator_threads_policy': 'isolate'}, {}) == HardwareRequest()


@pytest.mark.parametrize('mask, pcpus', [
    ('0-1', 2), ('^0', 3), ('^0-2', 1), ('0,2,3', 3), ('0-3,^1,^3', 2),
    (' 1 , , 2', 2)])
def test_mixed_dedicated_mask(mask, pcpus):
    asked = cpu_pinning.pinning_request(4, {
        'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': mask}, {})
    assert asked == HardwareRequest(pcpus=pcpus, vcpus=4 - pcpus)


def test_mixed_emulator_isolate_adds_a_pcpu_not_taken_from_vcpus():
    asked = cpu_pinning.pinning_request(4, {
        'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0',
        'hw:emulator_threads_policy': 'isolate'}, {})
    assert (asked.pcpus, asked.vcpus) == (4, 1)


@pytest.mark.parametrize('specs, image, pcpus', [
    ({'hw:cpu_realtime_mask': '^0'}, {}, 3),
    ({'hw:cpu_realtime_mask': '^0'}, {'hw_cpu_realtime_mask': '^0-2'}, 1),
    ({}, {'hw_cpu_realtime_mask': '2'}, 1),
    ({'hw:emulator_threads_policy': 'share'}, {}, 4),
])
def test_mixed_realtime_mask(specs, image, pcpus):
    specs = {'hw:cpu_policy': 'mixed', 'hw:cpu_realtime': 'yes', **specs}
    asked = cpu_pinning.pinning_request(4, specs, image)
    assert (asked.pcpus, asked.vcpus) == (pcpus, 4 - pcpus)


def test_mixed_dedicated_mask_before_realtime_mask():
    asked = cpu_pinning.pinning_request(4, {
        'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0',
        'hw:cpu_realtime': 'true', 'hw:cpu_realtime_mask': '^0'}, {})
    assert (asked.pcpus, asked.vcpus) == (1, 3)


def test_mixed_without_mask_asks_only_vcpus():
    asked = cpu_pinning.pinning_request(4, {'hw:cpu_policy': 'mixed'}, {})
    assert (asked.pcpus, asked.vcpus) == (0, 4)
    assert not asked.cpu_pinning_requested


@pytest.mark.parametrize('specs, image, wish', [
    ({'hw:cpu_thread_policy': 'require'}, {}, 'required'),
    ({'hw:cpu_thread_policy': 'isolate'}, {}, 'forbidden'),
    ({}, {'hw_cpu_thread_policy': 'require'}, 'required'),
    ({}, {'hw_cpu_thread_policy': 'isolate'}, 'forbidden'),
    # a flavor's prefer wins over the image's policy
    ({'hw:cpu_thread_policy': 'prefer'}, {'hw_cpu_thread_policy': 'isolate'},
     None),
    ({'hw:cpu_thread_policy': 'require'}, {'hw_cpu_thread_policy': 'require'},
     'required'),
    ({'hw:cpu_thread_policy': 'prefer'}, {}, None),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}, {},
     'forbidden'),
])
def test_thread_policy_trait(specs, image, wish):
    asked = cpu_pinning.pinning_request(2, specs, image)
    assert asked.required_traits == ({HT} if wish == 'required' else set())
    assert asked.forbidden_traits == ({HT} if wish == 'forbidden' else set())


@pytest.mark.parametrize('specs, image, error', [
    ({'hw:cpu_policy': 'bogus'}, {}, 'InvalidCPUAllocationPolicy'),
    ({}, {'hw_cpu_policy': 'bogus'}, 'InvalidCPUAllocationPolicy'),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'dedicated'},
     'ImageCPUPinningForbidden'),
    ({'hw:cpu_policy': 'shared'}, {'hw_cpu_policy': 'mixed'},
     'ImageCPUPinningForbidden'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0'},
     {'hw_cpu_policy': 'dedicated'}, 'ImageCPUPinningForbidden'),
    ({'hw:cpu_thread_policy': 'bogus'}, {},
     'InvalidCPUThreadAllocationPolicy'),
    ({'hw:cpu_thread_policy': 'require'}, {'hw_cpu_thread_policy': 'isolate'},
     'ImageCPUThreadPolicyForbidden'),
    ({'hw:cpu_thread_policy': 'isolate'}, {'hw_cpu_thread_policy': 'prefer'},
     'ImageCPUThreadPolicyForbidden'),
    ({'hw:emulator_threads_policy': 'bogus'}, {},
     'InvalidEmulatorThreadsPolicy'),
    # the CPU policy is checked first
    ({'hw:cpu_policy': 'bogus', 'hw:emulator_threads_policy': 'bogus'}, {},
     'InvalidCPUAllocationPolicy'),
])
def test_pinning_refused(specs, image, error):
    assert refused(cpu_pinning.pinning_request, 4, specs, image) == error


@pytest.mark.parametrize('specs, error', [
    ({'hw:cpu_dedicated_mask': '0-3'}, 'InvalidMixedInstanceDedicatedMask'),
    ({'hw:cpu_dedicated_mask': '^0-3'}, 'InvalidMixedInstanceDedicatedMask'),
    ({'hw:cpu_dedicated_mask': '0,7'}, 'InvalidMixedInstanceDedicatedMask'),
    ({'hw:cpu_dedicated_mask': 'x'}, 'Invalid'),
    ({'hw:cpu_dedicated_mask': '3-1'}, 'Invalid'),
    ({'hw:cpu_dedicated_mask': '-1'}, 'Invalid'),
    ({'hw:cpu_realtime': 'yes'}, 'RealtimeMaskNotFoundOrInvalid'),
    ({'hw:cpu_realtime': 'yes', 'hw:cpu_realtime_mask': '^0-3'},
     'RealtimeMaskNotFoundOrInvalid'),
    ({'hw:cpu_realtime': 'yes', 'hw:cpu_realtime_mask': '5'},
     'RealtimeMaskNotFoundOrInvalid'),
    ({'hw:cpu_realtime': 'yes', 'hw:cpu_realtime_mask': '^x'}, 'Invalid'),
    # the realtime mask is read even when a dedicated mask is set
    ({'hw:cpu_dedicated_mask': '0', 'hw:cpu_realtime': 'yes',
      'hw:cpu_realtime_mask': '9'}, 'RealtimeMaskNotFoundOrInvalid'),
])
def test_mixed_masks_refused(specs, error):
    specs = {'hw:cpu_policy': 'mixed', **specs}
    assert refused(cpu_pinning.pinning_request, 4, specs, {}) == error


def test_masks_are_ignored_without_mixed():
    specs = {'hw:cpu_policy': 'dedicated', 'hw:cpu_dedicated_mask': 'x',
             'hw:cpu_realtime': 'yes', 'hw:cpu_realtime_mask': 'x'}
    assert cpu_pinning.pinning_request(2, specs, {}).pcpus == 2


@pytest.mark.parametrize('spec, cpus', [
    ('', set()), ('3', {3}), ('1-3', {1, 2, 3}), ('0-5,^2-3,^5', {0, 1, 4}),
    ('^1,0-2', {0, 2}), (' 2 ,,4 ', {2, 4})])
def test_parse_cpu_set(spec, cpus):
    assert cpu_pinning.parse_cpu_set(spec) == cpus


# -- the other features -------------------------------------------------------

def test_no_feature_asks_nothing():
    assert hardware_features.feature_request({}, {}) == HardwareRequest()


@pytest.mark.parametrize('specs, image, trait', [
    ({'hw:mem_encryption': 'true'}, UEFI, 'HW_CPU_X86_AMD_SEV'),
    ({}, {**UEFI, 'hw_mem_encryption': True}, 'HW_CPU_X86_AMD_SEV'),
    ({'hw:mem_encryption': 'yes', 'hw:mem_encryption_model': 'amd-sev-es'},
     {**UEFI, 'hw_machine_type': 'pc-q35-8.2'}, 'HW_CPU_X86_AMD_SEV_ES'),
    ({'hw:mem_encryption': '1'},
     {**UEFI, 'hw_mem_encryption_model': 'amd-sev-snp',
      'hw_firmware_stateless': True}, 'HW_CPU_X86_AMD_SEV_SNP'),
    ({}, {**UEFI, 'hw_mem_encryption': True, 'hw_video_model': 'none',
          'hw_mem_encryption_model': 'intel-tdx',
          'hw_firmware_stateless': True}, 'HW_CPU_X86_INTEL_TDX'),
])
def test_mem_encryption(specs, image, trait):
    asked = hardware_features.feature_request(specs, image)
    assert asked.resources == {'MEM_ENCRYPTION_CONTEXT': 1}
    assert trait in asked.required_traits


@pytest.mark.parametrize('specs, image', [
    ({'hw:mem_encryption': 'false'}, UEFI),
    ({'hw:mem_encryption_model': 'amd-sev'}, UEFI),
    ({}, {'hw_mem_encryption': False}),
])
def test_mem_encryption_off(specs, image):
    assert hardware_features.feature_request(specs, image) == HardwareRequest()


@pytest.mark.parametrize('specs, image, error', [
    ({'hw:mem_encryption': 'true'}, {**UEFI, 'hw_mem_encryption': False},
     'FlavorImageConflict'),
    ({'hw:mem_encryption': 'no'}, {**UEFI, 'hw_mem_encryption': True},
     'FlavorImageConflict'),
    ({'hw:mem_encryption': 'true', 'hw:mem_encryption_model': 'amd-sev'},
     {**UEFI, 'hw_mem_encryption_model': 'amd-sev-es'},
     'FlavorImageConflict'),
    ({'hw:mem_encryption': 'true'}, {}, 'FlavorImageConflict'),
    ({'hw:mem_encryption': 'true'}, {'hw_firmware_type': 'bios'},
     'FlavorImageConflict'),
    ({'hw:mem_encryption': 'true', 'hw:mem_encryption_model': 'bogus'}, UEFI,
     'Invalid'),
    ({'hw:mem_encryption': 'true'}, {**UEFI, 'hw_machine_type': 'pc'},
     'InvalidMachineType'),
    ({'hw:mem_encryption': 'true', 'hw:mem_encryption_model': 'amd-sev-snp'},
     UEFI, 'StatelessFirmwareRequired'),
    ({'hw:mem_encryption': 'true', 'hw:mem_encryption_model': 'intel-tdx'},
     {**UEFI, 'hw_firmware_stateless': True}, 'InvalidVideoMode'),
])
def test_mem_encryption_refused(specs, image, error):
    assert refused(hardware_features.feature_request, specs, image) == error


@pytest.mark.parametrize('pmem, resources', [
    ('small', {'CUSTOM_PMEM_NAMESPACE_SMALL': 1}),
    ('small, large,small', {'CUSTOM_PMEM_NAMESPACE_SMALL': 2,
                            'CUSTOM_PMEM_NAMESPACE_LARGE': 1}),
    ('4gb.a,4GB_a , ,', {'CUSTOM_PMEM_NAMESPACE_4GB_A': 2}),
    (' , ', {}),
])
def test_vpmems_counted_per_resource_class(pmem, resources):
    assert hardware_features.feature_request(
        {'hw:pmem': pmem}, {}).resources == resources


@pytest.mark.parametrize('specs, image, traits', [
    ({'hw:tpm_version': '2.0'}, {},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_TIS'}),
    ({}, {'hw_tpm_version': '1.2'},
     {'COMPUTE_SECURITY_TPM_1_2', 'COMPUTE_SECURITY_TPM_TIS'}),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-crb'},
     {'hw_tpm_version': '2.0'},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB'}),
    ({'hw:tpm_version': '2.0'}, {'hw_tpm_model': 'tpm-crb'},
     {'COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB'}),
    ({'hw:tpm_model': 'tpm-crb'}, {}, set()),
])
def test_vtpm_traits(specs, image, traits):
    request = hardware_features.feature_request(specs, image)
    assert request.required_traits == traits


@pytest.mark.parametrize('specs, image', [
    ({'hw:tpm_version': '2.0'}, {'hw_tpm_version': '1.2'}),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-tis'},
     {'hw_tpm_model': 'tpm-crb'}),
    ({'hw:tpm_version': '3.0'}, {}),
    ({'hw:tpm_version': '2.0', 'hw:tpm_model': 'bogus'}, {}),
    ({'hw:tpm_version': '1.2', 'hw:tpm_model': 'tpm-crb'}, {}),
])
def test_vtpm_refused(specs, image):
    assert refused(hardware_features.feature_request, specs, image) in (
        'FlavorImageConflict', 'Invalid')


@pytest.mark.parametrize('specs, image, traits', [
    ({'os:secure_boot': 'required'}, {},
     {'COMPUTE_SECURITY_UEFI_SECURE_BOOT'}),
    ({}, {'os_secure_boot': 'required'},
     {'COMPUTE_SECURITY_UEFI_SECURE_BOOT'}),
    ({'os:secure_boot': 'optional'}, {}, set()),
    ({'os:secure_boot': 'disabled'}, {'os_secure_boot': 'disabled'}, set()),
    ({'hw:maxphysaddr_mode': 'passthrough'}, {},
     {'COMPUTE_ADDRESS_SPACE_PASSTHROUGH'}),
    ({}, {'hw_maxphysaddr_mode': 'emulate'},
     {'COMPUTE_ADDRESS_SPACE_EMULATED'}),
    ({'hw:pci_numa_affinity_policy': 'socket'}, {},
     {'COMPUTE_SOCKET_PCI_NUMA_AFFINITY'}),
    ({}, {'hw_pci_numa_affinity_policy': 'socket'},
     {'COMPUTE_SOCKET_PCI_NUMA_AFFINITY'}),
    ({'hw:pci_numa_affinity_policy': 'preferred'}, {}, set()),
    ({}, {**UEFI, 'hw_firmware_stateless': True},
     {'COMPUTE_SECURITY_STATELESS_FIRMWARE'}),
    ({}, {**UEFI, 'hw_firmware_stateless': False}, set()),
    ({}, {'hw_firmware_type': 'bios', 'hw_firmware_stateless': True}, set()),
])
def test_feature_traits(specs, image, traits):
    asked = hardware_features.feature_request(specs, image)
    assert asked == HardwareRequest(required_traits=traits)


@pytest.mark.parametrize('specs, image, error', [
    ({'os:secure_boot': 'required'}, {'os_secure_boot': 'disabled'},
     'FlavorImageConflict'),
    ({'os:secure_boot': 'bogus'}, {}, 'Invalid'),
    ({'hw:maxphysaddr_mode': 'emulate'},
     {'hw_maxphysaddr_mode': 'passthrough'}, 'FlavorImageConflict'),
    ({'hw:maxphysaddr_mode': 'bogus'}, {}, 'Invalid'),
    ({'hw:pci_numa_affinity_policy': 'socket'},
     {'hw_pci_numa_affinity_policy': 'legacy'},
     'ImagePCINUMAPolicyForbidden'),
    ({'hw:pci_numa_affinity_policy': 'bogus'}, {}, 'InvalidPCINUMAAffinity'),
    # memory encryption is checked before the vTPM
    ({'hw:mem_encryption': 'true', 'hw:tpm_version': '3.0'}, {},
     'FlavorImageConflict'),
])
def test_features_refused(specs, image, error):
    assert refused(hardware_features.feature_request, specs, image) == error


def test_features_combine():
    asked = hardware_features.feature_request(
        {'hw:mem_encryption': 'on', 'hw:pmem': 'a,b', 'hw:tpm_version': '2.0',
         'os:secure_boot': 'required'},
        {**UEFI, 'hw_firmware_stateless': True,
         'hw_maxphysaddr_mode': 'emulate'})
    assert asked.resources == {'MEM_ENCRYPTION_CONTEXT': 1,
                               'CUSTOM_PMEM_NAMESPACE_A': 1,
                               'CUSTOM_PMEM_NAMESPACE_B': 1}
    assert asked.required_traits == {
        'HW_CPU_X86_AMD_SEV', 'COMPUTE_SECURITY_TPM_2_0',
        'COMPUTE_SECURITY_TPM_TIS', 'COMPUTE_SECURITY_UEFI_SECURE_BOOT',
        'COMPUTE_ADDRESS_SPACE_EMULATED',
        'COMPUTE_SECURITY_STATELESS_FIRMWARE'}
    assert asked.forbidden_traits == set()
    assert (asked.pcpus, asked.vcpus) == (None, None)
