"""ComputeCapabilitiesFilter: flavor extra specs against host capabilities."""

import json

import fakes
import pytest

from scheduler.filters import compute_capabilities_filter as ccf

CPU_INFO = json.dumps({'vendor': 'Intel', 'arch': 'x86_64',
                       'topology': {'cores': 4, 'threads': 2},
                       'features': ['aes', 'mmx', 'vmx']})


def _passes(extra_specs, **host_attrs):
    host = fakes.fake_host_state(**host_attrs)
    spec = fakes.fake_spec(extra_specs=extra_specs)
    return ccf.ComputeCapabilitiesFilter().host_passes(host, spec)


def test_compute_filter_passes_without_extra_specs():
    assert _passes({})
    spec = fakes.fake_spec()
    del spec.flavor.extra_specs  # unset on the object
    assert ccf.ComputeCapabilitiesFilter().host_passes(
        fakes.fake_host_state(), spec)


def test_compute_filter_fails_without_capabilities():
    assert not _passes({'capabilities:opts': '1'})


def test_compute_filter_passes_extra_specs_simple():
    assert _passes({'stats_key': '1', 'capabilities:other': '2'},
                   stats={'stats_key': '1', 'other': '2'})


def test_compute_filter_fails_extra_specs_simple():
    assert not _passes({'stats_key': '1', 'capabilities:other': '2'},
                       stats={'stats_key': '1', 'other': '3'})


def test_compute_filter_pass_extra_specs_simple_with_scope():
    assert _passes({'capabilities:opt1': '1'}, stats={'opt1': '1'})


def test_compute_filter_pass_extra_specs_same_as_scope():
    # An unscoped key named like the scope is an ordinary key.
    assert _passes({'capabilities': '1'}, stats={'capabilities': '1'})


def test_compute_filter_extra_specs_simple_with_wrong_scope():
    assert _passes({'wrong_scope:opt1': '1'}, stats={'opt1': '2'})


def test_compute_filter_extra_specs_pass_multi_level_with_scope():
    assert _passes({'capabilities:cpu_info:topology:cores': '4'},
                   cpu_info=CPU_INFO)


def test_compute_filter_pass_self_defined_specs():
    # Unscoped keys that are neither attributes nor stats are ignored.
    assert _passes({'hw:cpu_policy': 'dedicated', 'my_own_key': 'x'})


def test_compute_filter_pass_cpu_info_as_text_type():
    assert _passes({'capabilities:cpu_info:vendor': 'Intel'},
                   cpu_info=CPU_INFO)


def test_compute_filter_fail_cpu_info_as_text_type_not_valid():
    assert not _passes({'capabilities:cpu_info:vendor': 'Intel'},
                       cpu_info='cpu_info')


def test_compute_filter_cpu_info_features_all_in():
    assert _passes({'capabilities:cpu_info:features': '<all-in> aes vmx'},
                   cpu_info=CPU_INFO)
    assert not _passes({'capabilities:cpu_info:features': '<all-in> avx'},
                       cpu_info=CPU_INFO)


def test_compute_filter_cpu_info_as_dict():
    assert _passes({'capabilities:cpu_info:arch': 'x86_64'},
                   cpu_info=json.loads(CPU_INFO))


def test_compute_filter_pass_cpu_info_with_backward_compatibility():
    # An unscoped key naming an attribute is compared as a whole.
    assert _passes({'cpu_info': CPU_INFO}, cpu_info=CPU_INFO)


def test_compute_filter_fail_cpu_info_with_backward_compatibility():
    assert not _passes({'cpu_info': CPU_INFO}, cpu_info='')


@pytest.mark.parametrize('attr, value, req, passes', [
    ('free_ram_mb', 1024, '>= 1024', True),
    ('free_ram_mb', 1023, '>= 1024', False),
    ('vcpus_total', 4, '>= 2', True),
    ('vcpus_total', 1, '>= 2', False),
    ('free_disk_mb', 2048, '= 2048', True),
    ('free_disk_mb', 1024, '= 2048', False),
    ('hypervisor_type', 'QEMU', 's== QEMU', True),
    ('hypervisor_version', 2011000, '>= 2011000', True),
])
def test_compute_filter_backward_compatible_attributes(attr, value, req,
                                                       passes):
    assert _passes({attr: req}, **{attr: value}) is passes
    assert _passes({'capabilities:' + attr: req}, **{attr: value}) is passes


def test_unscoped_attribute_that_is_none_fails():
    assert not _passes({'hypervisor_type': 'QEMU'})


def test_host_attribute_wins_over_stats_then_stats_fallback():
    assert _passes({'capabilities:host': 'host1'}, stats={'host': 'x'})
    assert _passes({'capabilities:hypervisor_type': 'x'},
                   stats={'hypervisor_type': 'x'})


def test_dict_attribute_path():
    service = fakes.fake_service(topic='compute')
    assert _passes({'capabilities:service:topic': 'compute'},
                   service=service)
    assert not _passes({'capabilities:service:missing': 'compute'},
                       service=service)


@pytest.mark.parametrize('key', ['capabilities:_lock',
                                 'capabilities:__class__:__name__',
                                 'capabilities:consume_from_request',
                                 'capabilities:'])
def test_private_and_callable_attributes_are_never_read(key):
    assert not _passes({key: 'anything'})


def test_private_unscoped_key_is_ignored_unless_in_stats():
    assert _passes({'_lock': 'x'})
    assert _passes({'_custom': 'x'}, stats={'_custom': 'x'})
    assert not _passes({'_custom': 'x'}, stats={'_custom': 'y'})


def test_resolve_capability_breaks_on_missing_step():
    host = fakes.fake_host_state(cpu_info=CPU_INFO)
    assert ccf.resolve_capability(host, ['cpu_info', 'topology',
                                         'cores']) == 4
    assert ccf.resolve_capability(host, ['cpu_info', 'nope', 'x']) is None


def test_runs_once_per_request_not_on_rebuild():
    assert ccf.ComputeCapabilitiesFilter.run_filter_once_per_request
    assert not ccf.ComputeCapabilitiesFilter.RUN_ON_REBUILD
