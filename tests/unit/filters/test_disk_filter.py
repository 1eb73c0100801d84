"""DiskFilter: free disk after overcommit (swap included), disk_gb limit."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler.filters import disk_filter
from scheduler.filters import utils


def _host(total_gb, free_mb, ratio=1.0):
    return fakes.fake_host_state(total_usable_disk_gb=total_gb,
                                 free_disk_mb=free_mb,
                                 disk_allocation_ratio=ratio)


def _spec(root_gb=1, ephemeral_gb=1, swap=512):
    return fakes.fake_spec(root_gb=root_gb, ephemeral_gb=ephemeral_gb,
                           swap=swap)


def test_disk_filter_passes():
    host = _host(13, 11 * 1024)
    assert disk_filter.DiskFilter().host_passes(host, _spec())
    assert host.limits['disk_gb'] == 13.0


def test_disk_filter_fails():
    # 2.5 GiB requested (swap counts), 2 GiB free.
    host = _host(13, 2 * 1024)
    assert not disk_filter.DiskFilter().host_passes(host, _spec())
    assert 'disk_gb' not in host.limits


def test_disk_filter_counts_swap():
    host = _host(13, 2 * 1024)
    assert disk_filter.DiskFilter().host_passes(host, _spec(swap=0))
    assert not disk_filter.DiskFilter().host_passes(host, _spec(swap=1))


def test_disk_filter_oversubscribe():
    # 12 GiB total, 1 GiB free, ratio 10: limit 120 GiB, used 11 GiB.
    host = _host(12, 1 * 1024, ratio=10.0)
    spec = _spec(root_gb=3, ephemeral_gb=3, swap=1024)
    assert disk_filter.DiskFilter().host_passes(host, spec)
    assert host.limits['disk_gb'] == 12 * 10.0


def test_disk_filter_oversubscribe_single_instance_fails():
    host = _host(12, 12 * 1024, ratio=10.0)
    spec = _spec(root_gb=10, ephemeral_gb=2, swap=1)
    assert not disk_filter.DiskFilter().host_passes(host, spec)


def test_disk_filter_oversubscribe_fail():
    # limit 12 * 1.5 = 18 GiB, used 12 GiB -> 6 GiB usable < 7.
    host = _host(12, 0, ratio=1.5)
    spec = _spec(root_gb=6, ephemeral_gb=1, swap=0)
    assert not disk_filter.DiskFilter().host_passes(host, spec)


def test_disk_filter_limit_may_be_fractional_gib():
    host = _host(3, 3 * 1024, ratio=1.5)
    assert disk_filter.DiskFilter().host_passes(host, _spec(swap=0))
    assert host.limits['disk_gb'] == 4.5


class AggregateDiskFilterSketch(disk_filter.BaseDiskFilter):
    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        return utils.aggregate_allocation_ratio(host_state,
                                                'disk_allocation_ratio')


def test_aggregate_disk_filter_default_value_is_host_ratio():
    host = _host(10, 0, ratio=2.0)
    assert AggregateDiskFilterSketch().host_passes(host, _spec())
    assert host.limits['disk_gb'] == 20.0


def _slack(limit):
    """``limit`` plus float rounding of the filter's own arithmetic."""
    return limit + 1e-9 * max(1.0, abs(limit))


@given(total_gb=st.integers(0, 10000), used_mb=st.integers(-10 ** 5, 10 ** 7),
       ratio=st.floats(0.0, 16.0, allow_nan=False),
       root_gb=st.integers(0, 2000), ephemeral_gb=st.integers(0, 100),
       swap=st.integers(0, 10 ** 5))
def test_passing_host_stays_under_overcommitted_limit(
        total_gb, used_mb, ratio, root_gb, ephemeral_gb, swap):
    total_mb = total_gb * 1024
    host = _host(total_gb, total_mb - used_mb, ratio=ratio)
    spec = fakes.fake_spec(root_gb=root_gb, ephemeral_gb=ephemeral_gb,
                           swap=swap)
    requested = 1024 * (root_gb + ephemeral_gb) + swap
    if disk_filter.DiskFilter().host_passes(host, spec):
        assert host.limits['disk_gb'] * 1024 == total_mb * ratio
        assert used_mb + requested <= _slack(total_mb * ratio)
        assert requested <= total_mb
