"""CoreFilter: free vCPUs after overcommit, and the vcpu limit."""

import logging

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler.filters import core_filter
from scheduler.filters import utils


def _host(total, used, ratio=1.0):
    return fakes.fake_host_state(vcpus_total=total, vcpus_used=used,
                                 cpu_allocation_ratio=ratio)


def test_core_filter_passes():
    host = _host(4, 7, ratio=2.0)
    assert core_filter.CoreFilter().host_passes(host, fakes.fake_spec(vcpus=1))
    assert host.limits['vcpu'] == 8.0


def test_core_filter_fails_safe(caplog):
    host = _host(0, 0)
    with caplog.at_level(logging.WARNING):
        assert core_filter.CoreFilter().host_passes(host, fakes.fake_spec())
    assert 'vCPU' in caplog.text
    assert 'vcpu' not in host.limits


def test_core_filter_fails_safe_with_unset_total():
    assert core_filter.CoreFilter().host_passes(_host(None, 0),
                                                fakes.fake_spec())


def test_core_filter_fails():
    host = _host(4, 8, ratio=2.0)
    assert not core_filter.CoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=1))
    # As Nova, the limit is written before the free-vCPU check.
    assert host.limits['vcpu'] == 8.0


def test_core_filter_single_instance_overcommit_fails():
    host = _host(2, 0, ratio=2.0)
    assert not core_filter.CoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=3))


def test_core_filter_zero_ratio_gives_no_limit():
    host = _host(4, 0, ratio=0.0)
    assert not core_filter.CoreFilter().host_passes(host, fakes.fake_spec())
    assert 'vcpu' not in host.limits


def test_core_filter_unset_ratio_defaults_to_initial_ratio(conf):
    # Nova's initial_cpu_allocation_ratio (4.0) since Stein.
    host = _host(1, 3, ratio=None)
    assert core_filter.CoreFilter().host_passes(host, fakes.fake_spec())
    assert host.limits['vcpu'] == 4.0
    assert not core_filter.CoreFilter().host_passes(
        _host(1, 4, ratio=None), fakes.fake_spec())
    # The Newton/Ocata fallback, through the initial_* option.
    conf.set_override('initial_cpu_allocation_ratio', 16.0)
    host = _host(1, 15, ratio=None)
    assert core_filter.CoreFilter().host_passes(host, fakes.fake_spec())
    assert host.limits['vcpu'] == 16.0


class AggregateCoreFilterSketch(core_filter.BaseCoreFilter):
    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        return utils.aggregate_allocation_ratio(host_state,
                                                'cpu_allocation_ratio')


def test_aggregate_core_filter_conflict_values_take_min():
    host = _host(4, 7, ratio=2.0)
    host.aggregates = [
        fakes.fake_aggregate(1, metadata={'cpu_allocation_ratio': '3'}),
        fakes.fake_aggregate(2, metadata={'cpu_allocation_ratio': '1'})]
    assert not AggregateCoreFilterSketch().host_passes(host,
                                                       fakes.fake_spec())
    assert host.limits['vcpu'] == 4.0


def test_aggregate_core_filter_value_error_uses_host_ratio():
    host = _host(4, 7, ratio=2.0)
    host.aggregates = [
        fakes.fake_aggregate(1, metadata={'cpu_allocation_ratio': 'XXX'})]
    assert AggregateCoreFilterSketch().host_passes(host, fakes.fake_spec())
    assert host.limits['vcpu'] == 8.0


def _slack(limit):
    """``limit`` plus float rounding of the filter's own arithmetic."""
    return limit + 1e-9 * max(1.0, abs(limit))


@given(total=st.integers(1, 512), used=st.integers(0, 10000),
       ratio=st.floats(0.0, 32.0, allow_nan=False),
       requested=st.integers(0, 600))
def test_passing_host_stays_under_overcommitted_limit(total, used, ratio,
                                                      requested):
    host = _host(total, used, ratio=ratio)
    if core_filter.CoreFilter().host_passes(host,
                                            fakes.fake_spec(vcpus=requested)):
        assert used + requested <= _slack(total * ratio)
        if total * ratio > 0:
            assert host.limits['vcpu'] == total * ratio
            assert requested <= total
