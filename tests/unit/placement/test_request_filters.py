"""Nova 34's request filters over the allocation candidates query
(``scheduler.placement.request_filters``)."""

import fakes
import pytest

from scheduler import exception
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
