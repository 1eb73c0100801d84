"""AggregateRamFilter, AggregateCoreFilter, AggregateDiskFilter: the base
checks with the minimum allocation ratio of the host's aggregates."""

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.filters import aggregate_resource_filters as arf


def _aggregates(key, *values):
    return [fakes.fake_aggregate(i, metadata={key: value})
            for i, value in enumerate(values, 1)]


# -- RAM (MiB) ----------------------------------------------------------

def _ram_host(ratio_values=(), total=1024, free=1024, ratio=1.0):
    return fakes.fake_host_state(
        total_usable_ram_mb=total, free_ram_mb=free,
        ram_allocation_ratio=ratio,
        aggregates=_aggregates('ram_allocation_ratio', *ratio_values))


def test_aggregate_ram_filter_default_value():
    # No aggregate value: the host's ratio (1.0): 1024 MB used, 0 free.
    host = _ram_host(free=0)
    assert not arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    # An aggregate ratio of 2.0 doubles the limit.
    host = _ram_host(['2.0'], free=0)
    assert arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert host.limits['memory_mb'] == 2048.0


def test_aggregate_ram_filter_conflict_values():
    host = _ram_host(['1.5', '2.0'], free=0)
    # The minimum, 1.5: limit 1536, 1024 used, 512 usable.
    assert arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=512))
    assert host.limits['memory_mb'] == 1536.0
    assert not arf.AggregateRamFilter().host_passes(
        _ram_host(['1.5', '2.0'], free=0), fakes.fake_spec(memory_mb=513))


@pytest.mark.parametrize('bad', ['XXX', 'nan', 'inf', '-1.0', ''])
def test_aggregate_ram_filter_value_error(bad):
    # Malformed: warning, then the host's own ratio (1.0 here), even if
    # another aggregate has a valid value.
    host = _ram_host([bad, '3.0'], free=512)
    assert arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=512))
    assert host.limits['memory_mb'] == 1024.0
    assert not arf.AggregateRamFilter().host_passes(
        _ram_host([bad], free=512), fakes.fake_spec(memory_mb=513))


def test_aggregate_ram_filter_no_self_overcommit():
    host = _ram_host(['4.0'])
    assert not arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1025))


def test_aggregate_ram_filter_unset_host_ratio_uses_config(conf):
    conf.set_override('ram_allocation_ratio', 3.0)
    host = _ram_host(ratio=None, free=0)
    assert arf.AggregateRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert host.limits['memory_mb'] == 3072.0


def test_aggregate_ram_filter_zero_ratio_rejects():
    # 0 is a valid aggregate ratio (as Nova): nothing fits.
    assert not arf.AggregateRamFilter().host_passes(
        _ram_host(['0']), fakes.fake_spec(memory_mb=1))


# -- vCPUs ----------------------------------------------------------------

def _core_host(ratio_values=(), total=4, used=4, ratio=1.0):
    return fakes.fake_host_state(
        vcpus_total=total, vcpus_used=used, cpu_allocation_ratio=ratio,
        aggregates=_aggregates('cpu_allocation_ratio', *ratio_values))


def test_aggregate_core_filter_default_value():
    host = _core_host()
    assert not arf.AggregateCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=1))
    host = _core_host(['2'])
    assert arf.AggregateCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=4))
    assert host.limits['vcpu'] == 8.0


def test_aggregate_core_filter_conflict_values():
    host = _core_host(['2', '3'], used=7)
    # The minimum, 2: limit 8, 1 free.
    assert arf.AggregateCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=1))
    assert host.limits['vcpu'] == 8.0
    assert not arf.AggregateCoreFilter().host_passes(
        _core_host(['2', '3'], used=7), fakes.fake_spec(vcpus=2))


def test_aggregate_core_filter_value_error():
    host = _core_host(['XXX'], used=3)
    assert arf.AggregateCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=1))
    assert host.limits['vcpu'] == 4.0
    assert not arf.AggregateCoreFilter().host_passes(
        _core_host(['XXX'], used=4), fakes.fake_spec(vcpus=1))


def test_aggregate_core_filter_fails_safe_without_vcpus():
    assert arf.AggregateCoreFilter().host_passes(
        _core_host(['2'], total=0, used=0), fakes.fake_spec(vcpus=8))


# -- disk (MiB, limit in GiB) ----------------------------------------------

def _disk_host(ratio_values=(), total_gb=10, free_mb=0, ratio=1.0):
    return fakes.fake_host_state(
        total_usable_disk_gb=total_gb, free_disk_mb=free_mb,
        disk_allocation_ratio=ratio,
        aggregates=_aggregates('disk_allocation_ratio', *ratio_values))


def test_aggregate_disk_filter_default_value():
    spec = fakes.fake_spec(root_gb=1, ephemeral_gb=1, swap=512)
    assert not arf.AggregateDiskFilter().host_passes(_disk_host(), spec)
    host = _disk_host(['1.5'])
    # limit 15 GiB, 10 used, 2.5 requested.
    assert arf.AggregateDiskFilter().host_passes(host, spec)
    assert host.limits['disk_gb'] == 15.0


def test_aggregate_disk_filter_conflict_values():
    host = _disk_host(['1.2', '2.0'])
    assert arf.AggregateDiskFilter().host_passes(
        host, fakes.fake_spec(root_gb=2))
    assert host.limits['disk_gb'] == pytest.approx(12.0)
    assert not arf.AggregateDiskFilter().host_passes(
        _disk_host(['1.2', '2.0']), fakes.fake_spec(root_gb=3))


def test_aggregate_disk_filter_value_error():
    host = _disk_host(['XXX'], free_mb=1024)
    assert arf.AggregateDiskFilter().host_passes(
        host, fakes.fake_spec(root_gb=1))
    assert host.limits['disk_gb'] == 10.0
    assert not arf.AggregateDiskFilter().host_passes(
        _disk_host(['XXX'], free_mb=1024), fakes.fake_spec(root_gb=2))


def test_aggregate_resource_filters_flags():
    for cls in (arf.AggregateRamFilter, arf.AggregateCoreFilter,
                arf.AggregateDiskFilter):
        assert not cls.run_filter_once_per_request
        assert not cls.RUN_ON_REBUILD


# -- properties: a passing host never exceeds its limit --------------------

_RATIO_TEXT = st.one_of(
    st.floats(0.0, 32.0).map(repr),
    st.integers(0, 32).map(str),
    st.sampled_from(['XXX', '', 'nan', 'inf', '-inf', '-2', '1e400']))
_RATIOS = st.lists(_RATIO_TEXT, max_size=3)
_HOST_RATIO = st.floats(0.0, 32.0)


def _slack(limit):
    """``limit`` plus the float rounding of the filters' arithmetic."""
    return limit + 1e-9 * max(1.0, abs(limit))


@given(values=_RATIOS, ratio=_HOST_RATIO, total=st.integers(0, 10 ** 6),
       used=st.integers(-10 ** 5, 2 * 10 ** 6),
       requested=st.integers(0, 10 ** 6))
def test_ram_passing_host_stays_under_its_limit(values, ratio, total, used,
                                                requested):
    host = _ram_host(values, total=total, free=total - used, ratio=ratio)
    if arf.AggregateRamFilter().host_passes(
            host, fakes.fake_spec(memory_mb=requested)):
        limit = host.limits['memory_mb']
        assert limit <= total * 32.0
        assert used + requested <= _slack(limit)
        assert requested <= total


@given(values=_RATIOS, ratio=_HOST_RATIO, total=st.integers(1, 256),
       used=st.integers(0, 2048), requested=st.integers(0, 256))
def test_core_passing_host_stays_under_its_limit(values, ratio, total, used,
                                                 requested):
    host = _core_host(values, total=total, used=used, ratio=ratio)
    if arf.AggregateCoreFilter().host_passes(
            host, fakes.fake_spec(vcpus=requested)):
        limit = host.limits.get('vcpu', 0.0)
        assert used + requested <= _slack(limit)
        assert requested <= total


@given(values=_RATIOS, ratio=_HOST_RATIO, total_gb=st.integers(0, 1000),
       used_mb=st.integers(-10 ** 5, 2 * 10 ** 6),
       root=st.integers(0, 500), ephemeral=st.integers(0, 500),
       swap=st.integers(0, 10 ** 4))
def test_disk_passing_host_stays_under_its_limit(values, ratio, total_gb,
                                                 used_mb, root, ephemeral,
                                                 swap):
    total_mb = total_gb * 1024
    host = _disk_host(values, total_gb=total_gb, free_mb=total_mb - used_mb,
                      ratio=ratio)
    spec = fakes.fake_spec(root_gb=root, ephemeral_gb=ephemeral, swap=swap)
    if arf.AggregateDiskFilter().host_passes(host, spec):
        limit_mb = host.limits['disk_gb'] * 1024
        requested = 1024 * (root + ephemeral) + swap
        assert used_mb + requested <= _slack(limit_mb)
        assert requested <= total_mb
