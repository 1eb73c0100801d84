"""RamFilter: free RAM after overcommit, and the memory_mb limit."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import filters
from scheduler.filters import ram_filter
from scheduler.filters import utils


def _host(total, free, ratio=1.0):
    return fakes.fake_host_state(total_usable_ram_mb=total, free_ram_mb=free,
                                 ram_allocation_ratio=ratio)


def test_ram_filter_fails_on_memory():
    host = _host(1024, 1023)
    assert not ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert 'memory_mb' not in host.limits


def test_ram_filter_passes():
    host = _host(1024, 1024)
    assert ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert host.limits['memory_mb'] == 1024


def test_ram_filter_oversubscribe():
    # 2048 MB total, 1024 MB used beyond the physical RAM (free -1024).
    host = _host(2048, -1024, ratio=2.0)
    assert ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert host.limits['memory_mb'] == 4096.0


def test_ram_filter_oversubscribe_limit_is_exact():
    host = _host(1001, 1001, ratio=1.5)
    assert ram_filter.RamFilter().host_passes(host, fakes.fake_spec())
    assert host.limits['memory_mb'] == 1501.5


def test_ram_filter_oversubscribe_single_instance_fails():
    # Overcommit lets 1536 MB fit on paper, but one instance cannot use
    # more than the host's physical RAM.
    host = _host(1024, 1024, ratio=2.0)
    assert not ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1536))


def test_ram_filter_usable_boundary():
    host = _host(1024, 512, ratio=1.5)
    # limit 1536, used 512 -> 1024 usable
    assert ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert not ram_filter.RamFilter().host_passes(
        _host(1024, 511, ratio=1.5), fakes.fake_spec(memory_mb=1024))


def test_ram_filter_unset_ratio_uses_config(conf):
    host = _host(1000, 0, ratio=None)
    # Default initial_ram_allocation_ratio 1.0: nothing usable.
    assert not ram_filter.RamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=500))
    # The Ocata fallback 1.5: limit 1500, used 1000 -> 500 usable.
    conf.set_override('initial_ram_allocation_ratio', 1.5)
    assert ram_filter.RamFilter().host_passes(
        _host(1000, 0, ratio=None), fakes.fake_spec(memory_mb=500))
    conf.set_override('ram_allocation_ratio', 1.2)
    assert not ram_filter.RamFilter().host_passes(
        _host(1000, 0, ratio=None), fakes.fake_spec(memory_mb=500))


class AggregateRamFilterSketch(ram_filter.BaseRamFilter):
    """The aggregate variant needs only the ratio hook."""

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        return utils.aggregate_allocation_ratio(host_state,
                                                'ram_allocation_ratio')


def test_base_ram_filter_ratio_hook_is_the_only_extension_point():
    host = _host(1024, 1024, ratio=1.0)
    host.aggregates = [
        fakes.fake_aggregate(1, metadata={'ram_allocation_ratio': '3.0'}),
        fakes.fake_aggregate(2, metadata={'ram_allocation_ratio': '2.0'})]
    spec = fakes.fake_spec(memory_mb=1024)
    assert AggregateRamFilterSketch().host_passes(host, spec)
    assert host.limits['memory_mb'] == 2048.0


def test_only_ram_filter_is_registered():
    names = {cls.__name__ for cls in filters.all_filters()}
    assert 'RamFilter' in names
    assert 'BaseRamFilter' not in names


def _slack(limit):
    """``limit`` plus float rounding of the filter's own arithmetic."""
    return limit + 1e-9 * max(1.0, abs(limit))


@given(total=st.integers(0, 10 ** 6), used=st.integers(-10 ** 5, 2 * 10 ** 6),
       ratio=st.floats(0.0, 32.0, allow_nan=False),
       requested=st.integers(0, 10 ** 6))
def test_passing_host_stays_under_overcommitted_limit(total, used, ratio,
                                                      requested):
    host = _host(total, total - used, ratio=ratio)
    if ram_filter.RamFilter().host_passes(
            host, fakes.fake_spec(memory_mb=requested)):
        limit = host.limits['memory_mb']
        assert limit == total * ratio
        assert used + requested <= _slack(limit)
        assert requested <= total
