"""scheduler.resources.pci_pools: pool parsing, spec matching, support and
consumption."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.objects import pci as pci_obj
from scheduler.resources import pci_pools as pci


def _legacy(*pools):
    return [dict(p) for p in pools]


def _primitive(*pools):
    objects = []
    for pool in pools:
        pool = dict(pool)
        data = {key: pool.pop(key) for key in ('vendor_id', 'product_id',
                                               'numa_node', 'count')
                if key in pool}
        data['tags'] = pool
        objects.append({'nova_object.name': 'PciDevicePool',
                        'nova_object.namespace': 'nova',
                        'nova_object.version': '1.1',
                        'nova_object.data': data})
    return {'nova_object.name': 'PciDevicePoolList',
            'nova_object.namespace': 'nova',
            'nova_object.version': '1.1',
            'nova_object.data': {'objects': objects}}


INTEL_VF = {'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
            'count': 4, 'dev_type': 'type-VF', 'physical_network': 'net1'}
INTEL_PF = {'vendor_id': '8086', 'product_id': '154d', 'numa_node': 0,
            'count': 1, 'dev_type': 'type-PF'}
NVIDIA = {'vendor_id': '10DE', 'product_id': '1EB8', 'numa_node': 1,
          'count': 2, 'dev_type': 'type-PCI'}


def _request(count, *specs, numa_policy=None):
    request = pci_obj.InstancePCIRequest(count=count, spec=list(specs))
    if numa_policy is not None:
        request.numa_policy = numa_policy
    return request


# -- parsing ---------------------------------------------------------------

def test_parse_legacy_list_extra_keys_are_tags():
    pools = pci.parse_pools(_legacy(INTEL_VF))
    assert pools == [pci.PciDevicePool(
        vendor_id='8086', product_id='154d', numa_node=0, count=4,
        tags={'dev_type': 'type-VF', 'physical_network': 'net1'})]


def test_parse_primitive_and_json_text_give_the_same_pools():
    expected = pci.parse_pools(_legacy(INTEL_VF, NVIDIA))
    assert pci.parse_pools(_primitive(INTEL_VF, NVIDIA)) == expected
    assert pci.parse_pools(json.dumps(_primitive(INTEL_VF, NVIDIA))) == \
        expected
    assert pci.parse_pools(json.dumps(_legacy(INTEL_VF, NVIDIA))) == expected


def test_parse_none_and_empty_give_no_pools():
    assert pci.parse_pools(None) == []
    assert pci.parse_pools([]) == []
    assert pci.parse_pools('null') == []


def test_parse_pool_without_numa_node():
    pools = pci.parse_pools([{'vendor_id': '8086', 'product_id': '1',
                              'count': 1}])
    assert pools[0].numa_node is None


@pytest.mark.parametrize('bad', [
    'not json', 42, {'nova_object.data': {}}, ['x'],
    [{'vendor_id': '1', 'count': 'many'}],
    [{'vendor_id': '1', 'count': -1}],
    [{'vendor_id': '1', 'count': 1, 'numa_node': True}],
])
def test_parse_rejects_other_shapes(bad):
    with pytest.raises(pci.InvalidPciPools):
        pci.parse_pools(bad)


def test_parse_copies_pool_objects():
    pools = pci.parse_pools(_legacy(INTEL_VF))
    copies = pci.parse_pools(pools)
    copies[0].count = 0
    copies[0].tags['x'] = 'y'
    assert pools[0].count == 4
    assert 'x' not in pools[0].tags


# -- writing back ----------------------------------------------------------

def test_pools_to_raw_keeps_the_legacy_shape():
    raw = _legacy(INTEL_VF, NVIDIA)
    pools = pci.parse_pools(raw)
    pools[1].count = 1
    written = pci.pools_to_raw(pools, raw)
    assert written == [INTEL_VF, dict(NVIDIA, count=1)]
    assert raw[1]['count'] == 2


def test_pools_to_raw_keeps_the_primitive_shape_and_unknown_keys():
    raw = _primitive(INTEL_VF)
    raw['nova_object.data']['objects'][0]['nova_object.data']['extra'] = 1
    pools = pci.parse_pools(raw)
    pools[0].count = 3
    written = pci.pools_to_raw(pools, raw)
    data = written['nova_object.data']['objects'][0]['nova_object.data']
    assert data['count'] == 3
    assert data['extra'] == 1
    assert data['tags'] == {'dev_type': 'type-VF',
                            'physical_network': 'net1'}


def test_pools_to_raw_of_text_is_text():
    raw = json.dumps(_primitive(NVIDIA))
    pools = pci.parse_pools(raw)
    pools[0].count = 0
    written = pci.pools_to_raw(pools, raw)
    assert isinstance(written, str)
    assert pci.parse_pools(written)[0].count == 0


def test_pools_to_raw_without_template_gives_a_legacy_list():
    pools = pci.parse_pools(_legacy(INTEL_VF))
    assert pci.pools_to_raw(pools, None) == [INTEL_VF]


# -- matching --------------------------------------------------------------

@pytest.mark.parametrize('spec, matches', [
    ({'vendor_id': '8086'}, True),
    ({'vendor_id': '0x8086'}, True),
    ({'vendor_id': '8087'}, False),
    ({'product_id': '154D'}, True),
    ({'vendor_id': '8086', 'product_id': '154d'}, True),
    ({'vendor_id': '8086', 'product_id': '1520'}, False),
    ({'physical_network': 'net1'}, True),
    ({'physical_network': 'NET1'}, False),
    ({'dev_type': 'type-VF'}, True),
    ({'numa_node': '0'}, True),
    ({'numa_node': '1'}, False),
    ({'unknown_tag': 'x'}, False),
    ({'unknown_tag': None}, True),
    ({'physical_network': None}, False),
    ({}, True),
])
def test_spec_matches_pool(spec, matches):
    pool = pci.parse_pools(_legacy(INTEL_VF))[0]
    assert pci.spec_matches_pool(spec, pool) is matches


def test_hex_ids_compare_case_insensitively():
    pool = pci.parse_pools(_legacy(NVIDIA))[0]
    assert pci.spec_matches_pool({'vendor_id': '10de',
                                  'product_id': '0x1eb8'}, pool)


# -- support / apply -------------------------------------------------------

def test_support_requests_counts_devices():
    pools = _legacy(INTEL_VF)
    assert pci.support_requests(pools, [_request(4, {'vendor_id': '8086'})])
    assert not pci.support_requests(pools,
                                     [_request(5, {'vendor_id': '8086'})])


def test_support_requests_any_spec_of_a_request():
    pools = _legacy(INTEL_VF, NVIDIA)
    request = _request(6, {'vendor_id': '8086', 'dev_type': 'type-VF'},
                       {'vendor_id': '10de'})
    assert pci.support_requests(pools, [request])
    assert not pci.support_requests(pools, [_request(
        7, {'vendor_id': '8086', 'dev_type': 'type-VF'},
        {'vendor_id': '10de'})])


def test_support_requests_serves_requests_in_order():
    pools = _legacy(INTEL_VF)
    assert pci.support_requests(pools, [_request(2, {'vendor_id': '8086'}),
                                        _request(2, {'vendor_id': '8086'})])
    assert not pci.support_requests(
        pools, [_request(3, {'vendor_id': '8086'}),
                _request(2, {'vendor_id': '8086'})])


def test_support_requests_does_not_change_the_pools():
    pools = pci.parse_pools(_legacy(INTEL_VF))
    assert pci.support_requests(pools, [_request(4, {'vendor_id': '8086'})])
    assert pools[0].count == 4


def test_pf_pools_only_serve_requests_for_pfs():
    pools = _legacy(INTEL_PF)
    assert not pci.support_requests(pools,
                                     [_request(1, {'vendor_id': '8086'})])
    assert pci.support_requests(pools, [_request(
        1, {'vendor_id': '8086', 'dev_type': 'type-PF'})])


def test_vfs_are_used_before_a_pf_is_needed():
    pools = _legacy(INTEL_PF, INTEL_VF)
    assert pci.support_requests(pools, [_request(4, {'vendor_id': '8086'})])
    assert not pci.support_requests(pools,
                                     [_request(5, {'vendor_id': '8086'})])


def test_numa_cells_legacy_policy_allows_pools_without_node():
    no_node = {'vendor_id': '1', 'product_id': '2', 'count': 1}
    on_one = {'vendor_id': '1', 'product_id': '2', 'numa_node': 1,
              'count': 1}
    request = _request(1, {'vendor_id': '1'})
    assert pci.support_requests([no_node], [request], numa_cells=[0])
    assert not pci.support_requests([on_one], [request], numa_cells=[0])
    assert pci.support_requests([on_one], [request], numa_cells=[1])
    assert pci.support_requests([on_one], [request])


def test_numa_cells_required_policy_needs_affine_pools():
    no_node = {'vendor_id': '1', 'product_id': '2', 'count': 1}
    request = _request(1, {'vendor_id': '1'}, numa_policy='required')
    assert not pci.support_requests([no_node], [request], numa_cells=[0])


def test_numa_cells_preferred_policy_falls_back_to_any_pool():
    on_one = {'vendor_id': '1', 'product_id': '2', 'numa_node': 1,
              'count': 1}
    on_zero = dict(on_one, numa_node=0)
    request = _request(1, {'vendor_id': '1'}, numa_policy='preferred')
    assert pci.support_requests([on_one], [request], numa_cells=[0])
    pools = pci.parse_pools([on_one, on_zero])
    pci.apply_requests(pools, [request], numa_cells=[0])
    # The affine pool is used first.
    assert [p.count for p in pools] == [1, 0]


class _Cell:
    def __init__(self, cell_id):
        self.id = cell_id


def test_numa_cells_may_be_objects_with_ids():
    on_one = {'vendor_id': '1', 'product_id': '2', 'numa_node': 1,
              'count': 1}
    request = _request(1, {'vendor_id': '1'})
    assert pci.support_requests([on_one], [request], numa_cells=[_Cell(1)])
    assert not pci.support_requests([on_one], [request],
                                    numa_cells=[_Cell(0)])


def test_apply_requests_consumes_in_pool_order():
    pools = pci.parse_pools(_legacy(INTEL_VF, dict(INTEL_VF, numa_node=1)))
    pci.apply_requests(pools, [_request(5, {'vendor_id': '8086'})])
    assert [p.count for p in pools] == [0, 3]


def test_apply_requests_is_all_or_nothing():
    pools = pci.parse_pools(_legacy(INTEL_VF, NVIDIA))
    requests = [_request(2, {'vendor_id': '8086'}),
                _request(3, {'vendor_id': '10de'})]
    with pytest.raises(pci.PciDeviceRequestFailed):
        pci.apply_requests(pools, requests)
    assert [p.count for p in pools] == [4, 2]


def test_requests_may_be_a_requests_object_or_dicts():
    requests = pci_obj.InstancePCIRequests(
        requests=[_request(1, {'vendor_id': '10de'})])
    assert pci.request_list(requests) == list(requests.requests)
    assert pci.request_list(None) == []
    assert pci.support_requests(_legacy(NVIDIA), requests)
    assert pci.support_requests(
        _legacy(NVIDIA), [{'count': 2, 'spec': [{'vendor_id': '10de'}]}])
    assert not pci.support_requests(
        _legacy(NVIDIA), [{'count': 3, 'spec': [{'vendor_id': '10de'}]}])


def test_a_request_without_specs_matches_nothing():
    assert not pci.support_requests(_legacy(NVIDIA), [_request(1)])
    assert pci.support_requests(_legacy(NVIDIA), [_request(0)])


def test_matching_count():
    pools = _legacy(INTEL_VF, NVIDIA)
    assert pci.matching_count(pools, [{'vendor_id': '8086'}]) == 4
    assert pci.matching_count(pools, [{'vendor_id': '8086'},
                                      {'numa_node': '1'}]) == 6


# -- properties ------------------------------------------------------------

_vendors = st.sampled_from(['8086', '10de', '15b3'])
_pools = st.lists(st.fixed_dictionaries({
    'vendor_id': _vendors,
    'product_id': st.sampled_from(['1', '2']),
    'numa_node': st.sampled_from([None, 0, 1]),
    'count': st.integers(0, 4),
    'dev_type': st.sampled_from(['type-PCI', 'type-VF', 'type-PF']),
}), max_size=6)
_specs = st.lists(st.dictionaries(
    st.sampled_from(['vendor_id', 'product_id', 'dev_type']),
    st.sampled_from(['8086', '10de', '1', '2', 'type-VF', 'type-PF']),
    max_size=2), min_size=1, max_size=2)
_requests = st.lists(st.fixed_dictionaries(
    {'count': st.integers(0, 5), 'spec': _specs}), max_size=3)


@given(_pools, _requests)
def test_apply_after_support_consumes_exactly_the_requested(raw, requests):
    pools = pci.parse_pools(raw)
    if not pci.support_requests(pools, requests):
        with pytest.raises(pci.PciDeviceRequestFailed):
            pci.apply_requests(pools, requests)
        return
    before = sum(p.count for p in pools)
    pci.apply_requests(pools, requests)
    assert all(p.count >= 0 for p in pools)
    assert before - sum(p.count for p in pools) == sum(
        r['count'] for r in requests)
