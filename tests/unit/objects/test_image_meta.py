"""ImageMeta / ImageMetaProps: Glance dicts, legacy property names."""

import datetime

import pytest

from scheduler.objects import image_meta

IMAGE_UUID = 'c1a7e9d2-5b0f-4b0e-8a0e-9f1e2d3c4b5a'


@pytest.mark.parametrize('legacy,current,value', [
    ('architecture', 'hw_architecture', 'x86_64'),
    ('hypervisor_type', 'img_hv_type', 'kvm'),
    ('vm_mode', 'hw_vm_mode', 'hvm'),
    ('hypervisor_version_requires', 'img_hv_requested_version', '>=6.0'),
])
def test_legacy_property_names_are_mapped(legacy, current, value):
    props = image_meta.ImageMetaProps.from_dict({legacy: value})
    assert getattr(props, current) == value
    assert props.get(current) == value
    assert props.get(legacy) is None
    assert props.set_properties() == {current: value}


def test_legacy_name_table():
    assert image_meta.LEGACY_PROPERTY_NAMES == {
        'architecture': 'hw_architecture',
        'hypervisor_type': 'img_hv_type',
        'vm_mode': 'hw_vm_mode',
        'hypervisor_version_requires': 'img_hv_requested_version',
    }


def test_current_names_pass_through():
    values = {'hw_architecture': 'aarch64', 'img_hv_type': 'qemu',
              'hw_vm_mode': 'hvm', 'img_hv_requested_version': '>=2.0',
              'hw_cpu_policy': 'dedicated', 'hw_cpu_thread_policy': 'isolate',
              'hw_disk_bus': 'scsi', 'os_distro': 'ubuntu'}
    props = image_meta.ImageMetaProps.from_dict(values)
    assert props.set_properties() == values


def test_current_name_wins_when_it_comes_last():
    props = image_meta.ImageMetaProps.from_dict(
        {'architecture': 'i686', 'hw_architecture': 'x86_64'})
    assert props.hw_architecture == 'x86_64'


def test_current_name_wins_when_the_legacy_name_comes_last():
    props = image_meta.ImageMetaProps.from_dict(
        {'hw_architecture': 'x86_64', 'architecture': 'i686'})
    assert props.hw_architecture == 'x86_64'


def test_unknown_and_none_properties_are_ignored():
    props = image_meta.ImageMetaProps.from_dict(
        {'kernel_id': 'k', 'custom_key': 'v',
         'hw_architecture': None, 'architecture': None})
    assert props.set_properties() == {}
    assert not props.obj_attr_is_set('hw_architecture')


@pytest.mark.parametrize('value', [None, {}])
def test_empty_properties(value):
    assert image_meta.ImageMetaProps.from_dict(value).set_properties() == {}


def test_get_returns_default_for_unset_and_unknown_names():
    props = image_meta.ImageMetaProps.from_dict({'hw_vm_mode': 'hvm'})
    assert props.get('hw_architecture') is None
    assert props.get('hw_architecture', 'x86_64') == 'x86_64'
    assert props.get('no_such_property', 'dflt') == 'dflt'
    assert props.get('hw_vm_mode', 'xen') == 'hvm'


def test_integer_property_is_coerced():
    props = image_meta.ImageMetaProps.from_dict({'hw_maxphysaddr_bits': '42'})
    assert props.hw_maxphysaddr_bits == 42


def test_bad_integer_property_raises_value_error():
    with pytest.raises(ValueError):
        image_meta.ImageMetaProps.from_dict({'hw_maxphysaddr_bits': 'many'})


def test_image_from_glance_dict():
    image = image_meta.ImageMeta.from_dict({
        'id': IMAGE_UUID, 'name': 'cirros', 'status': 'active',
        'visibility': 'public', 'protected': 'false', 'size': 13267968,
        'min_ram': 0, 'min_disk': 1, 'disk_format': 'qcow2',
        'container_format': 'bare', 'checksum': None, 'owner': None,
        'created_at': '2017-02-22T10:30:05Z', 'tags': ['a'],
        'deleted': False, 'location': 'file:///x',
        'properties': {'architecture': 'x86_64', 'hw_disk_bus': 'virtio',
                       'kernel_id': 'k'},
    })
    assert image.id == IMAGE_UUID
    assert image.name == 'cirros'
    assert image.protected is False
    assert image.size == 13267968
    assert image.min_disk == 1
    assert image.tags == ['a']
    assert image.created_at == datetime.datetime(
        2017, 2, 22, 10, 30, 5, tzinfo=datetime.timezone.utc)
    assert not image.obj_attr_is_set('checksum')
    assert not image.obj_attr_is_set('owner')
    assert image.properties.set_properties() == {
        'hw_architecture': 'x86_64', 'hw_disk_bus': 'virtio'}


@pytest.mark.parametrize('image', [None, {}, {'properties': None},
                                   {'id': IMAGE_UUID}])
def test_image_without_properties_has_empty_properties(image):
    meta = image_meta.ImageMeta.from_dict(image)
    assert isinstance(meta.properties, image_meta.ImageMetaProps)
    assert meta.properties.set_properties() == {}


def test_image_from_dict_does_not_modify_its_argument():
    glance = {'id': IMAGE_UUID, 'properties': {'vm_mode': 'hvm'}}
    image_meta.ImageMeta.from_dict(glance)
    assert glance == {'id': IMAGE_UUID, 'properties': {'vm_mode': 'hvm'}}


def test_image_round_trip(roundtrip, to_wire):
    image = image_meta.ImageMeta.from_dict({
        'id': IMAGE_UUID, 'name': 'img',
        'properties': {'hypervisor_type': 'xen', 'vm_mode': 'xen'}})
    wire = to_wire(image)
    props = wire['nova_object.data']['properties']
    assert props['nova_object.name'] == 'ImageMetaProps'
    assert props['nova_object.data'] == {'img_hv_type': 'xen',
                                         'hw_vm_mode': 'xen'}
    back = roundtrip(image)
    assert back.properties.get('img_hv_type') == 'xen'
    assert back.properties.get('hw_vm_mode') == 'xen'
    assert back.id == IMAGE_UUID


def test_nova_props_with_unknown_properties_are_read(serializer):
    wire = {
        'nova_object.name': 'ImageMetaProps', 'nova_object.namespace': 'nova',
        'nova_object.version': '1.16',
        'nova_object.data': {'hw_architecture': 'ppc64le',
                             'hw_qemu_guest_agent': True,
                             'hw_watchdog_action': 'reset',
                             'hw_numa_nodes': 2,
                             'a_property_from_the_future': 'x'},
    }
    props = serializer.deserialize_entity(None, wire)
    assert props.get('hw_architecture') == 'ppc64le'
    assert props.get('hw_qemu_guest_agent') is True
    assert props.get('hw_numa_nodes') == '2'
    assert props.get('a_property_from_the_future') is None
