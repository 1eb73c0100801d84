"""NumInstancesFilter and AggregateNumInstancesFilter."""

import fakes
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.filters import num_instances_filter

KEY = 'max_instances_per_host'


def _host(num_instances, *aggregate_values):
    aggregates = [fakes.fake_aggregate(i, metadata={KEY: value})
                  for i, value in enumerate(aggregate_values, 1)]
    return fakes.fake_host_state(num_instances=num_instances,
                                 aggregates=aggregates)


def _passes(filter_cls, host):
    return filter_cls().host_passes(host, fakes.fake_spec())


def test_filter_num_instances_passes(conf):
    conf.set_override(KEY, 5, 'filter_scheduler')
    assert _passes(num_instances_filter.NumInstancesFilter, _host(4))


def test_filter_num_instances_fails(conf):
    conf.set_override(KEY, 5, 'filter_scheduler')
    assert not _passes(num_instances_filter.NumInstancesFilter, _host(5))
    assert not _passes(num_instances_filter.NumInstancesFilter, _host(6))


def test_filter_num_instances_default_is_50():
    assert _passes(num_instances_filter.NumInstancesFilter, _host(49))
    assert not _passes(num_instances_filter.NumInstancesFilter, _host(50))


def test_filter_num_instances_ignores_aggregates(conf):
    conf.set_override(KEY, 5, 'filter_scheduler')
    assert _passes(num_instances_filter.NumInstancesFilter, _host(3, '1'))


def test_filter_aggregate_num_instances_value(conf):
    conf.set_override(KEY, 4, 'filter_scheduler')
    host_filter = num_instances_filter.AggregateNumInstancesFilter
    assert not _passes(host_filter, _host(5))
    assert _passes(host_filter, _host(5, '6'))
    assert not _passes(host_filter, _host(1, '1'))


def test_filter_aggregate_num_instances_takes_the_minimum(conf):
    conf.set_override(KEY, 100, 'filter_scheduler')
    host_filter = num_instances_filter.AggregateNumInstancesFilter
    assert _passes(host_filter, _host(2, '10', '3'))
    assert not _passes(host_filter, _host(3, '10', '3'))


def test_filter_aggregate_num_instances_value_error(conf):
    conf.set_override(KEY, 6, 'filter_scheduler')
    host_filter = num_instances_filter.AggregateNumInstancesFilter
    assert _passes(host_filter, _host(5, 'XXX'))
    assert _passes(host_filter, _host(5, '', '1'))
    assert not _passes(host_filter, _host(6, 'XXX'))


def test_num_instances_filters_run_every_instance_not_on_rebuild():
    for cls in (num_instances_filter.NumInstancesFilter,
                num_instances_filter.AggregateNumInstancesFilter):
        assert not cls.run_filter_once_per_request
        assert not cls.RUN_ON_REBUILD


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(num=st.integers(0, 200), configured=st.integers(1, 200),
       values=st.lists(st.integers(-5, 200), max_size=3))
def test_passing_host_is_below_the_effective_maximum(conf, num, configured,
                                                     values):
    conf.set_override(KEY, configured, 'filter_scheduler')
    host = _host(num, *map(str, values))
    passes = num_instances_filter.AggregateNumInstancesFilter().host_passes(
        host, fakes.fake_spec())
    maximum = min(values) if values else configured
    assert passes == (num < maximum)
