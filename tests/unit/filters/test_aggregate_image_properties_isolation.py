"""AggregateImagePropertiesIsolation: image properties against the
metadata of the host's aggregates."""

import fakes

from scheduler.filters import aggregate_image_properties_isolation as aipi


def _passes(image_props, *metadata):
    aggregates = [fakes.fake_aggregate(i, metadata=meta)
                  for i, meta in enumerate(metadata, 1)]
    host = fakes.fake_host_state(aggregates=aggregates)
    spec = fakes.fake_spec(image_props=image_props)
    return aipi.AggregateImagePropertiesIsolation().host_passes(host, spec)


def test_aggregate_image_properties_isolation_passes():
    assert _passes({'hw_vm_mode': 'hvm'}, {'hw_vm_mode': 'hvm'})


def test_aggregate_image_properties_isolation_passes_comma():
    metadata = {'hw_vm_mode': 'hvm,xen'}
    assert _passes({'hw_vm_mode': 'hvm'}, metadata)
    assert _passes({'hw_vm_mode': 'xen'}, {'hw_vm_mode': 'hvm, xen'})


def test_aggregate_image_properties_isolation_props_bad_comma():
    assert not _passes({'os_distro': 'windows,'},
                       {'os_distro': 'windows,linux'})


def test_aggregate_image_properties_isolation_multi_props_passes():
    metadata = {'hw_vm_mode': 'hvm', 'img_hv_type': 'kvm'}
    assert _passes({'hw_vm_mode': 'hvm', 'img_hv_type': 'kvm'}, metadata)


def test_aggregate_image_properties_isolation_props_with_meta_passes():
    # The image does not set the property: no restriction.
    assert _passes({}, {'hw_vm_mode': 'hvm'})


def test_aggregate_image_properties_isolation_props_imgprops_passes():
    # The aggregates do not mention the property: no restriction.
    assert _passes({'hw_vm_mode': 'hvm'})
    assert _passes({'hw_vm_mode': 'hvm'}, {'other': 'x'})


def test_aggregate_image_properties_isolation_props_not_match_fails():
    assert not _passes({'hw_vm_mode': 'hvm'}, {'hw_vm_mode': 'xen'})


def test_aggregate_image_properties_isolation_props_not_match2_fails():
    metadata = {'hw_vm_mode': 'hvm', 'img_hv_type': 'kvm'}
    assert not _passes({'hw_vm_mode': 'hvm', 'img_hv_type': 'xen'},
                       metadata)


def test_aggregate_image_properties_isolation_values_of_all_aggregates():
    metadata = ({'hw_vm_mode': 'hvm'}, {'hw_vm_mode': 'xen'})
    assert _passes({'hw_vm_mode': 'xen'}, *metadata)
    assert not _passes({'hw_vm_mode': 'exe'}, *metadata)


def test_aggregate_image_properties_isolation_props_namespace(conf):
    conf.set_override('aggregate_image_properties_isolation_namespace',
                      'hw', 'filter_scheduler')
    conf.set_override('aggregate_image_properties_isolation_separator',
                      '_', 'filter_scheduler')
    metadata = {'hw_vm_mode': 'hvm', 'img_hv_type': 'kvm'}
    # img_hv_type is outside the namespace, so it is not compared.
    assert _passes({'hw_vm_mode': 'hvm', 'img_hv_type': 'xen'}, metadata)
    assert not _passes({'hw_vm_mode': 'xen', 'img_hv_type': 'kvm'},
                       metadata)


def test_aggregate_image_properties_isolation_default_separator(conf):
    conf.set_override('aggregate_image_properties_isolation_namespace',
                      'hw', 'filter_scheduler')
    # 'hw_vm_mode' does not start with 'hw.': ignored.
    assert _passes({'hw_vm_mode': 'hvm'}, {'hw_vm_mode': 'xen'})


def test_aggregate_image_properties_iso_props_with_custom_meta():
    # Metadata keys that are not image properties are ignored.
    assert _passes({'os_distro': 'linux'}, {'os': 'linux', 'foo': 'bar'})


def test_aggregate_image_properties_iso_props_with_matching_meta_pass():
    assert _passes({'os_distro': 'linux'}, {'os_distro': 'linux'})


def test_aggregate_image_properties_iso_props_with_matching_meta_fail():
    assert not _passes({'os_distro': 'windows'}, {'os_distro': 'linux'})


def test_aggregate_image_properties_isolation_non_string_property():
    assert _passes({'hw_maxphysaddr_bits': 42},
                   {'hw_maxphysaddr_bits': '40,42'})
    assert not _passes({'hw_maxphysaddr_bits': 46},
                       {'hw_maxphysaddr_bits': '40,42'})


def test_aggregate_image_properties_isolation_legacy_name():
    # Glance's legacy 'vm_mode' arrives as hw_vm_mode.
    assert not _passes({'vm_mode': 'hvm'}, {'hw_vm_mode': 'xen'})


def test_aggregate_image_properties_isolation_no_image_passes():
    host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate(
        1, metadata={'hw_vm_mode': 'xen'})])
    assert aipi.AggregateImagePropertiesIsolation().host_passes(
        host, fakes.fake_spec())


def test_aggregate_image_properties_isolation_flags():
    cls = aipi.AggregateImagePropertiesIsolation
    assert cls.run_filter_once_per_request
    assert cls.RUN_ON_REBUILD


def test_aggregate_image_properties_isolation_runs_on_rebuild():
    host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate(
        1, metadata={'hw_vm_mode': 'xen'})])
    spec = fakes.fake_spec(image_props={'hw_vm_mode': 'hvm'},
                           scheduler_hints={'_nova_check_type': 'rebuild'})
    host_filter = aipi.AggregateImagePropertiesIsolation()
    assert list(host_filter.filter_all([host], spec)) == []
