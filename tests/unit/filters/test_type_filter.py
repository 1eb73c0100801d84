"""TypeAffinityFilter and AggregateTypeAffinityFilter."""

import uuid

import fakes

from scheduler.filters import type_filter
from scheduler.objects import instance as instance_obj


def _instances(*type_ids):
    instances = {}
    for type_id in type_ids:
        instance = instance_obj.Instance(uuid=str(uuid.uuid4()))
        if type_id is not None:
            instance.instance_type_id = type_id
        instances[instance.uuid] = instance
    return instances


def _spec(flavor_id=1, name='fake1'):
    spec = fakes.fake_spec(name=name)
    spec.flavor.id = flavor_id
    return spec


def _type_passes(*type_ids, flavor_id=1):
    host = fakes.fake_host_state(instances=_instances(*type_ids))
    return type_filter.TypeAffinityFilter().host_passes(
        host, _spec(flavor_id))


def test_type_filter():
    assert _type_passes()
    assert _type_passes(1, 1)
    assert not _type_passes(1, 2)
    assert not _type_passes(2)
    assert _type_passes(2, flavor_id=2)


def test_type_filter_instance_of_unknown_type_fails():
    assert not _type_passes(1, None)


def _aggregate_passes(flavor_name, *values):
    aggregates = [fakes.fake_aggregate(i, metadata={'instance_type': value})
                  for i, value in enumerate(values, 1)]
    host = fakes.fake_host_state(aggregates=aggregates)
    return type_filter.AggregateTypeAffinityFilter().host_passes(
        host, _spec(name=flavor_name))


def test_aggregate_type_filter_no_metadata():
    assert _aggregate_passes('fake1')
    host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate(
        1, metadata={'other': 'fake2'})])
    assert type_filter.AggregateTypeAffinityFilter().host_passes(
        host, _spec(name='fake1'))


def test_aggregate_type_filter_single_instance_type():
    assert _aggregate_passes('fake1', 'fake1')
    assert not _aggregate_passes('fake2', 'fake1')


def test_aggregate_type_filter_multi_aggregate():
    assert _aggregate_passes('fake1', 'fake1', 'fake2')
    assert _aggregate_passes('fake2', 'fake1', 'fake2')
    assert not _aggregate_passes('fake3', 'fake1', 'fake2')


def test_aggregate_type_filter_multi_instance_type():
    assert _aggregate_passes('fake1', 'fake1,fake2,fake3')
    assert _aggregate_passes('fake2', 'fake1, fake2 ,fake3')
    assert _aggregate_passes('fake3', 'fake1,fake2,fake3')
    assert not _aggregate_passes('fake4', 'fake1,fake2,fake3')


def test_aggregate_type_filter_is_not_a_substring_test():
    assert not _aggregate_passes('fake', 'fake1,fake2')


def test_type_filter_flags():
    assert not type_filter.TypeAffinityFilter.run_filter_once_per_request
    assert type_filter.AggregateTypeAffinityFilter.run_filter_once_per_request
    assert not type_filter.TypeAffinityFilter.RUN_ON_REBUILD
    assert not type_filter.AggregateTypeAffinityFilter.RUN_ON_REBUILD
