"""Nova 34's request filters over the allocation candidates query
(``scheduler.placement.request_filters``)."""

import fakes
import pytest

from scheduler import exception
from scheduler.placement import hardware
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters


def _query(spec, aggregates=(), **options):
    """``spec``'s query with the filters applied under ``options``
    (``[scheduler]`` option: value; the others at Nova's defaults)."""
    query = request_lib.for_scheduling(spec, None, lambda *args: [])
    conf = _Conf(options)
    request_filters.apply(query, spec, aggregates, conf)
    return dict(query.query_params())


class _Conf:
    DEFAULTS = {'limit_tenants_to_placement_aggregate': False,
                'placement_aggregate_required_for_tenants': False,
                'query_placement_for_image_type_support': False,
                'enable_isolated_aggregate_filtering': False,
                'image_metadata_prefilter': False}

    def __init__(self, options):
        self.scheduler = type('Scheduler', (), {**self.DEFAULTS,
                                                **options})()


def test_disabled_computes_are_always_forbidden():
    assert _query(fakes.fake_spec())['root_required'] == (
        '!COMPUTE_STATUS_DISABLED')


def test_the_zone_becomes_its_aggregates():
    zone_a = fakes.fake_aggregate(1, metadata={'availability_zone': 'a'})
    zone_a2 = fakes.fake_aggregate(2, metadata={'availability_zone': 'a'})
    zone_b = fakes.fake_aggregate(3, metadata={'availability_zone': 'b'})
    params = _query(fakes.fake_spec(availability_zone='a'),
                    [zone_a, zone_b, zone_a2])
    assert params['member_of'] == 'in:' + ','.join(
        sorted([zone_a.uuid, zone_a2.uuid]))


def test_a_zone_no_aggregate_names_restricts_nothing():
    zone_a = fakes.fake_aggregate(metadata={'availability_zone': 'a'})
    params = _query(fakes.fake_spec(availability_zone='nowhere'), [zone_a])
    assert 'member_of' not in params


def test_tenant_isolation():
    mine = fakes.fake_aggregate(1, metadata={'filter_tenant_id': 'p1'})
    also = fakes.fake_aggregate(2, metadata={'filter_tenant_id:2': 'p1'})
    other = fakes.fake_aggregate(3, metadata={'filter_tenant_id': 'p2'})
    spec = fakes.fake_spec(project_id='p1')
    assert 'member_of' not in _query(spec, [mine, also, other])
    params = _query(spec, [mine, also, other],
                    limit_tenants_to_placement_aggregate=True)
    assert params['member_of'] == 'in:' + ','.join(
        sorted([mine.uuid, also.uuid]))


def test_tenant_isolation_required_fails_a_project_without_aggregate():
    spec = fakes.fake_spec(project_id='p3')
    other = fakes.fake_aggregate(metadata={'filter_tenant_id': 'p1'})
    assert 'member_of' not in _query(
        spec, [other], limit_tenants_to_placement_aggregate=True)
    with pytest.raises(exception.NoValidHost, match='No hosts available'):
        _query(spec, [other], limit_tenants_to_placement_aggregate=True,
               placement_aggregate_required_for_tenants=True)


def test_isolated_aggregates_forbid_what_the_request_does_not_require():
    gold = fakes.fake_aggregate(1, metadata={'trait:CUSTOM_GOLD': 'required'})
    ssd = fakes.fake_aggregate(2, metadata={'trait:CUSTOM_SSD': 'required'})
    loose = fakes.fake_aggregate(3, metadata={'trait:CUSTOM_X': 'forbidden'})
    spec = fakes.fake_spec(extra_specs={'trait:CUSTOM_GOLD': 'required'})
    assert 'member_of' not in _query(spec, [gold, ssd, loose])
    params = _query(spec, [gold, ssd, loose],
                    enable_isolated_aggregate_filtering=True)
    assert params['member_of'] == '!in:' + ssd.uuid


def test_image_type_unless_boot_from_volume():
    spec = fakes.fake_spec(image_props={})
    spec.image.disk_format = 'qcow2'
    params = _query(spec, query_placement_for_image_type_support=True)
    assert params['root_required'] == (
        'COMPUTE_IMAGE_TYPE_QCOW2,!COMPUTE_STATUS_DISABLED')
    spec.is_bfv = True
    params = _query(spec, query_placement_for_image_type_support=True)
    assert params['root_required'] == '!COMPUTE_STATUS_DISABLED'


def test_image_metadata_prefilter():
    spec = fakes.fake_spec(image_props={'hw_disk_bus': 'virtio',
                                        'hw_vif_model': 'e1000',
                                        'hw_architecture': 'x86_64'})
    assert _query(spec)['root_required'] == '!COMPUTE_STATUS_DISABLED'
    params = _query(spec, image_metadata_prefilter=True)
    assert params['root_required'] == (
        'COMPUTE_NET_VIF_MODEL_E1000,COMPUTE_STORAGE_BUS_VIRTIO,'
        'HW_ARCH_X86_64,!COMPUTE_STATUS_DISABLED')


def test_accelerators_need_the_compute_trait():
    spec = fakes.fake_spec(extra_specs={'accel:device_profile': 'gpu'})
    assert _query(spec)['root_required'] == (
        'COMPUTE_ACCELERATORS,!COMPUTE_STATUS_DISABLED')


# -- packed virtqueues, ephemeral encryption, virtio sound, vTPM secret
# security: flavor and image settings as root traits (Nova 34) -------------

def _required(spec, **options):
    """The root traits ``spec``'s query requires after the filters."""
    return {trait for trait in _query(spec, **options)['root_required']
            .split(',') if not trait.startswith('!')}


def _refused(function, extra_specs, image_props):
    """The Nova exception name of the HardwareRequestError ``function``
    raises for these settings."""
    with pytest.raises(hardware.HardwareRequestError) as caught:
        function(extra_specs, image_props)
    return caught.value.nova_exception


@pytest.mark.parametrize('extra_specs, image_props, wanted', [
    ({'hw:virtio_packed_ring': 'true'}, {}, True),
    ({'hw:virtio_packed_ring': 'yes'}, {'hw_virtio_packed_ring': True}, True),
    ({}, {'hw_virtio_packed_ring': True}, True),
    ({'hw:virtio_packed_ring': 'false'}, {}, False),
    ({'hw:virtio_packed_ring': 'bogus'}, {}, False),
    ({'hw:virtio_packed_ring': 'no'}, {'hw_virtio_packed_ring': False},
     False),
    ({}, {'hw_virtio_packed_ring': False}, False),
    ({}, {}, False),
])
def test_packed_virtqueue(extra_specs, image_props, wanted):
    traits = request_filters.packed_virtqueue_traits(extra_specs,
                                                     image_props)
    assert traits == ({'COMPUTE_NET_VIRTIO_PACKED'} if wanted else set())


@pytest.mark.parametrize('flavor_value', ['false', '', 'bogus'])
def test_packed_virtqueue_flavor_and_image_must_agree(flavor_value):
    """Nova compares the flavor's value read as a boolean, so even an
    empty or unreadable one conflicts with an image asking for it."""
    assert _refused(request_filters.packed_virtqueue_traits,
                    {'hw:virtio_packed_ring': flavor_value},
                    {'hw_virtio_packed_ring': True}) == 'FlavorImageConflict'


def test_packed_virtqueue_through_the_query():
    spec = fakes.fake_spec(image_props={'hw_virtio_packed_ring': 'yes'})
    assert _required(spec) == {'COMPUTE_NET_VIRTIO_PACKED'}
    assert _required(fakes.fake_spec(image_props={})) == set()


@pytest.mark.parametrize('extra_specs, image_props, traits', [
    ({'hw:ephemeral_encryption': 'true'}, {},
     {'COMPUTE_EPHEMERAL_ENCRYPTION'}),
    ({}, {'hw_ephemeral_encryption': True,
          'hw_ephemeral_encryption_format': 'luks'},
     {'COMPUTE_EPHEMERAL_ENCRYPTION', 'COMPUTE_EPHEMERAL_ENCRYPTION_LUKS'}),
    ({'hw:ephemeral_encryption': 'on',
      'hw:ephemeral_encryption_format': 'luksv2'},
     {'hw_ephemeral_encryption_format': 'luksv2'},
     {'COMPUTE_EPHEMERAL_ENCRYPTION', 'COMPUTE_EPHEMERAL_ENCRYPTION_LUKSV2'}),
    ({'hw:ephemeral_encryption': '1',
      'hw:ephemeral_encryption_format': ''},
     {'hw_ephemeral_encryption_format': 'plain'},
     {'COMPUTE_EPHEMERAL_ENCRYPTION', 'COMPUTE_EPHEMERAL_ENCRYPTION_PLAIN'}),
    # No encryption: the format is not even read.
    ({'hw:ephemeral_encryption': 'false',
      'hw:ephemeral_encryption_format': 'bogus'}, {}, set()),
    ({}, {'hw_ephemeral_encryption': False,
          'hw_ephemeral_encryption_format': 'luks'}, set()),
])
def test_ephemeral_encryption(extra_specs, image_props, traits):
    assert request_filters.ephemeral_encryption_traits(
        extra_specs, image_props) == traits


@pytest.mark.parametrize('extra_specs, image_props, error', [
    ({'hw:ephemeral_encryption': 'false'}, {'hw_ephemeral_encryption': True},
     'FlavorImageConflict'),
    ({'hw:ephemeral_encryption': 'true'}, {'hw_ephemeral_encryption': False},
     'FlavorImageConflict'),
    ({'hw:ephemeral_encryption': 'true',
      'hw:ephemeral_encryption_format': 'luks'},
     {'hw_ephemeral_encryption_format': 'plain'}, 'FlavorImageConflict'),
    ({'hw:ephemeral_encryption': 'true',
      'hw:ephemeral_encryption_format': 'aes'}, {}, 'Invalid'),
])
def test_ephemeral_encryption_refusals(extra_specs, image_props, error):
    assert _refused(request_filters.ephemeral_encryption_traits,
                    extra_specs, image_props) == error


@pytest.mark.parametrize('extra_specs, image_props, wanted', [
    ({'hw:sound_model': 'virtio'}, {}, True),
    ({'hw:sound_model': ''}, {'hw_sound_model': 'virtio'}, True),
    ({'hw:sound_model': 'virtio'}, {'hw_sound_model': 'virtio'}, True),
    ({'hw:sound_model': 'ich9'}, {}, False),
    ({}, {'hw_sound_model': 'usb'}, False),
    ({}, {}, False),
])
def test_virtio_sound(extra_specs, image_props, wanted):
    traits = request_filters.virtio_sound_traits(extra_specs, image_props)
    assert traits == ({'COMPUTE_SOUND_MODEL_VIRTIO'} if wanted else set())


@pytest.mark.parametrize('extra_specs, image_props, error', [
    ({'hw:sound_model': 'virtio'}, {'hw_sound_model': 'sb16'},
     'FlavorImageConflict'),
    ({'hw:sound_model': 'bogus'}, {}, 'Invalid'),
    ({}, {'hw_sound_model': 'VIRTIO'}, 'Invalid'),
])
def test_virtio_sound_refusals(extra_specs, image_props, error):
    assert _refused(request_filters.virtio_sound_traits, extra_specs,
                    image_props) == error


@pytest.mark.parametrize('extra_specs, image_props, trait', [
    ({'hw:tpm_version': '2.0'}, {},
     'COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER'),
    ({'hw:tpm_secret_security': ''}, {'hw_tpm_version': '1.2'},
     'COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER'),
    ({'hw:tpm_version': '2.0', 'hw:tpm_secret_security': 'host'}, {},
     'COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST'),
    ({'hw:tpm_secret_security': 'deployment'},
     {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb'},
     'COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT'),
    # No vTPM, no trait, whatever the secret security says.
    ({'hw:tpm_secret_security': 'host'}, {}, None),
    ({'hw:tpm_version': '', 'hw:tpm_secret_security': 'bogus'}, {}, None),
])
def test_tpm_secret_security(extra_specs, image_props, trait):
    traits = request_filters.tpm_secret_security_traits(extra_specs,
                                                        image_props)
    assert traits == ({trait} if trait else set())


def test_tpm_secret_security_unknown_value_fails_the_request():
    with pytest.raises(exception.NoValidHost,
                       match="TPM secret security 'image' is not"):
        request_filters.tpm_secret_security_traits(
            {'hw:tpm_version': '2.0', 'hw:tpm_secret_security': 'image'}, {})


@pytest.mark.parametrize('extra_specs, image_props, error', [
    ({'hw:tpm_version': '3.0'}, {}, 'Invalid'),
    ({'hw:tpm_version': '1.2', 'hw:tpm_model': 'tpm-crb'}, {}, 'Invalid'),
    ({'hw:tpm_version': '1.2'}, {'hw_tpm_version': '2.0'},
     'FlavorImageConflict'),
])
def test_tpm_secret_security_checks_the_vtpm(extra_specs, image_props,
                                             error):
    assert _refused(request_filters.tpm_secret_security_traits,
                    extra_specs, image_props) == error


def test_all_four_through_the_query():
    spec = fakes.fake_spec(
        extra_specs={'hw:virtio_packed_ring': 'true',
                     'hw:ephemeral_encryption': 'true',
                     'hw:tpm_secret_security': 'host'},
        image_props={'hw_ephemeral_encryption_format': 'luks',
                     'hw_sound_model': 'virtio', 'hw_tpm_version': '2.0'})
    assert _required(spec) == {
        'COMPUTE_NET_VIRTIO_PACKED', 'COMPUTE_EPHEMERAL_ENCRYPTION',
        'COMPUTE_EPHEMERAL_ENCRYPTION_LUKS', 'COMPUTE_SOUND_MODEL_VIRTIO',
        'COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST'}


def test_a_request_without_image_asks_only_the_flavor():
    spec = fakes.fake_spec(extra_specs={'hw:sound_model': 'virtio'})
    assert spec.obj_get('image') is None
    assert _required(spec) == {'COMPUTE_SOUND_MODEL_VIRTIO'}


def test_the_first_refusal_in_novas_order_wins():
    """Packed virtqueues come before virtio sound in Nova's list."""
    spec = fakes.fake_spec(extra_specs={'hw:virtio_packed_ring': 'false',
                                        'hw:sound_model': 'bogus'},
                           image_props={'hw_virtio_packed_ring': True})
    with pytest.raises(hardware.HardwareRequestError) as caught:
        _query(spec)
    assert caught.value.nova_exception == 'FlavorImageConflict'
    spec.flavor.extra_specs = {'hw:sound_model': 'bogus',
                               'hw:tpm_version': '2.0',
                               'hw:tpm_secret_security': 'bogus'}
    with pytest.raises(hardware.HardwareRequestError) as caught:
        _query(spec)
    assert caught.value.nova_exception == 'Invalid'
