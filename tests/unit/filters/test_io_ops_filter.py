"""IoOpsFilter and AggregateIoOpsFilter: num_io_ops below the maximum."""

import fakes
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.filters import io_ops_filter

KEY = 'max_io_ops_per_host'


def _host(num_io_ops, *aggregate_values):
    aggregates = [fakes.fake_aggregate(i, metadata={KEY: value})
                  for i, value in enumerate(aggregate_values, 1)]
    return fakes.fake_host_state(num_io_ops=num_io_ops,
                                 aggregates=aggregates)


def _passes(filter_cls, host):
    return filter_cls().host_passes(host, fakes.fake_spec())


def test_filter_num_iops_passes(conf):
    conf.set_override(KEY, 8, 'filter_scheduler')
    assert _passes(io_ops_filter.IoOpsFilter, _host(7))


def test_filter_num_iops_fails(conf):
    conf.set_override(KEY, 8, 'filter_scheduler')
    assert not _passes(io_ops_filter.IoOpsFilter, _host(8))
    assert not _passes(io_ops_filter.IoOpsFilter, _host(9))


def test_filter_num_iops_default_is_8():
    assert _passes(io_ops_filter.IoOpsFilter, _host(7))
    assert not _passes(io_ops_filter.IoOpsFilter, _host(8))


def test_filter_num_iops_zero_max_rejects_every_host(conf):
    conf.set_override(KEY, 0, 'filter_scheduler')
    assert not _passes(io_ops_filter.IoOpsFilter, _host(0))


def test_io_ops_filter_ignores_aggregates(conf):
    conf.set_override(KEY, 8, 'filter_scheduler')
    assert _passes(io_ops_filter.IoOpsFilter, _host(5, '2'))


def test_aggregate_filter_num_iops_value(conf):
    conf.set_override(KEY, 7, 'filter_scheduler')
    host_filter = io_ops_filter.AggregateIoOpsFilter
    assert not _passes(host_filter, _host(7))
    assert _passes(host_filter, _host(7, '8'))
    assert not _passes(host_filter, _host(2, '2'))


def test_aggregate_filter_num_iops_takes_the_minimum(conf):
    conf.set_override(KEY, 100, 'filter_scheduler')
    host_filter = io_ops_filter.AggregateIoOpsFilter
    assert _passes(host_filter, _host(4, '9', '5'))
    assert not _passes(host_filter, _host(5, '9', '5'))


def test_aggregate_filter_num_iops_value_error(conf):
    conf.set_override(KEY, 8, 'filter_scheduler')
    host_filter = io_ops_filter.AggregateIoOpsFilter
    # A malformed value falls back to the option, even next to a good one.
    assert _passes(host_filter, _host(7, 'XXX'))
    assert _passes(host_filter, _host(7, 'XXX', '1'))
    assert not _passes(host_filter, _host(8, '2.5'))


def test_io_ops_filters_run_every_instance_not_on_rebuild():
    for cls in (io_ops_filter.IoOpsFilter,
                io_ops_filter.AggregateIoOpsFilter):
        assert not cls.run_filter_once_per_request
        assert not cls.RUN_ON_REBUILD


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(num=st.integers(-5, 100), configured=st.integers(0, 100),
       values=st.lists(st.integers(-5, 100), max_size=3))
def test_passing_host_is_below_the_effective_maximum(conf, num, configured,
                                                     values):
    conf.set_override(KEY, configured, 'filter_scheduler')
    host = _host(num, *map(str, values))
    passes = io_ops_filter.AggregateIoOpsFilter().host_passes(
        host, fakes.fake_spec())
    maximum = min(values) if values else configured
    assert passes == (num < maximum)
