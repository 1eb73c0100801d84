"""Aggregate metadata helpers of scheduler.filters.utils."""

import uuid

import fakes

from scheduler.filters import utils


def _host(*metadatas, **attrs):
    aggregates = [fakes.fake_aggregate(i, metadata=metadata)
                  for i, metadata in enumerate(metadatas, 1)]
    return fakes.fake_host_state(aggregates=aggregates, **attrs)


def test_aggregate_values_from_key():
    host = _host({'k1': 'v1'}, {'k1': 'v2,v3'}, {'k2': 'v4'})
    assert utils.aggregate_values_from_key(host, 'k1') == {'v1', 'v2,v3'}


def test_aggregate_values_from_key_with_wrong_key():
    host = _host({'k1': 'v1'})
    assert utils.aggregate_values_from_key(host, 'k2') == set()


def test_aggregate_metadata_get_by_host_no_key():
    host = _host({'k1': 'v1', 'k2': 'v2'}, {'k1': 'v3, v4', 'k3': 'v5'})
    assert utils.aggregate_metadata_get_by_host(host) == {
        'k1': {'v1', 'v3', 'v4'}, 'k2': {'v2'}, 'k3': {'v5'}}


def test_aggregate_metadata_get_by_host_with_key():
    host = _host({'k1': 'v1', 'k2': 'v2'}, {'k3': 'v3'})
    # Only aggregates with k1 count, but all their keys are returned.
    assert utils.aggregate_metadata_get_by_host(host, 'k1') == {
        'k1': {'v1'}, 'k2': {'v2'}}


def test_aggregate_metadata_get_by_host_empty_result():
    host = _host({'k1': 'v1'})
    assert utils.aggregate_metadata_get_by_host(host, 'k2') == {}
    assert utils.aggregate_metadata_get_by_host(_host()) == {}


def test_validate_num_values():
    assert utils.validate_num_values(set(), default=5) == 5
    assert utils.validate_num_values({'3', '1'}, default=5) == 1
    assert utils.validate_num_values({'1.5', '2'}, default=5,
                                     cast_to=float) == 1.5
    assert utils.validate_num_values({'2', '1'}, default=5,
                                     based_on=max) == 2
    assert utils.validate_num_values({'x'}, default=5) == 5


def test_instance_uuids_overlap():
    uuid1, uuid2 = str(uuid.uuid4()), str(uuid.uuid4())
    host = fakes.fake_host_state(instances=fakes.fake_instances(uuid1))
    assert utils.instance_uuids_overlap(host, [uuid1, uuid2])
    assert not utils.instance_uuids_overlap(host, [uuid2])
    assert not utils.instance_uuids_overlap(host, [])


def test_host_allocation_ratio(conf):
    host = fakes.fake_host_state(ram_allocation_ratio=3.0)
    assert utils.host_allocation_ratio(host, 'ram_allocation_ratio') == 3.0
    host = fakes.fake_host_state()
    assert utils.host_allocation_ratio(host, 'ram_allocation_ratio') == 1.0
    assert utils.host_allocation_ratio(host, 'cpu_allocation_ratio') == 4.0
    assert utils.host_allocation_ratio(host, 'disk_allocation_ratio') == 1.0
    conf.set_override('initial_cpu_allocation_ratio', 16.0)
    assert utils.host_allocation_ratio(host, 'cpu_allocation_ratio') == 16.0
    conf.set_override('cpu_allocation_ratio', 8.0)
    assert utils.host_allocation_ratio(host, 'cpu_allocation_ratio') == 8.0


def test_aggregate_allocation_ratio():
    host = _host({'ram_allocation_ratio': '2.0'},
                 {'ram_allocation_ratio': '1.2'},
                 ram_allocation_ratio=3.0)
    assert utils.aggregate_allocation_ratio(
        host, 'ram_allocation_ratio') == 1.2
    assert utils.aggregate_allocation_ratio(
        host, 'cpu_allocation_ratio') == 4.0


def test_aggregate_allocation_ratio_value_error_uses_host_ratio():
    host = _host({'disk_allocation_ratio': 'XXX'},
                 disk_allocation_ratio=2.5)
    assert utils.aggregate_allocation_ratio(
        host, 'disk_allocation_ratio') == 2.5
