"""ExactRamFilter, ExactCoreFilter, ExactDiskFilter: exact fits for bare
metal, with the host's totals as limits."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import filters
from scheduler.filters import exact_filters


def test_exact_ram_filter_passes():
    host = fakes.fake_host_state(free_ram_mb=1024, total_usable_ram_mb=2048)
    assert exact_filters.ExactRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=1024))
    assert host.limits == {'memory_mb': 2048}


def test_exact_ram_filter_fails():
    host_filter = exact_filters.ExactRamFilter()
    for requested in (512, 1025):
        host = fakes.fake_host_state(free_ram_mb=1024,
                                     total_usable_ram_mb=1024)
        assert not host_filter.host_passes(
            host, fakes.fake_spec(memory_mb=requested))
        assert host.limits == {}


def test_exact_core_filter_passes():
    host = fakes.fake_host_state(vcpus_total=4, vcpus_used=2)
    assert exact_filters.ExactCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=2))
    assert host.limits == {'vcpu': 4}


def test_exact_core_filter_fails():
    host_filter = exact_filters.ExactCoreFilter()
    for requested in (1, 3):
        host = fakes.fake_host_state(vcpus_total=4, vcpus_used=2)
        assert not host_filter.host_passes(
            host, fakes.fake_spec(vcpus=requested))
        assert host.limits == {}


def test_exact_core_filter_fails_host_vcpus_not_set():
    # Unlike CoreFilter's fail-safe, an unreported CPU count fails.
    for total in (0, None):
        host = fakes.fake_host_state(vcpus_total=total, vcpus_used=0)
        assert not exact_filters.ExactCoreFilter().host_passes(
            host, fakes.fake_spec(vcpus=0))
        assert host.limits == {}


def test_exact_disk_filter_passes():
    # 1 GiB root + 1 GiB ephemeral + 512 MiB swap.
    host = fakes.fake_host_state(free_disk_mb=2560, total_usable_disk_gb=10)
    assert exact_filters.ExactDiskFilter().host_passes(
        host, fakes.fake_spec(root_gb=1, ephemeral_gb=1, swap=512))
    assert host.limits == {'disk_gb': 10}


def test_exact_disk_filter_fails():
    host_filter = exact_filters.ExactDiskFilter()
    for swap in (0, 1024):
        host = fakes.fake_host_state(free_disk_mb=2560,
                                     total_usable_disk_gb=10)
        assert not host_filter.host_passes(
            host, fakes.fake_spec(root_gb=1, ephemeral_gb=1, swap=swap))
        assert host.limits == {}


def test_exact_filters_run_every_instance_not_on_rebuild():
    for cls in (exact_filters.ExactRamFilter, exact_filters.ExactCoreFilter,
                exact_filters.ExactDiskFilter):
        assert issubclass(cls, filters.BaseHostFilter)
        assert not cls.run_filter_once_per_request
        assert not cls.RUN_ON_REBUILD


def test_second_instance_on_an_exact_host_fails():
    host = fakes.fake_host_state(free_ram_mb=1024, total_usable_ram_mb=1024,
                                 vcpus_total=2, vcpus_used=0,
                                 free_disk_mb=1024, total_usable_disk_gb=1)
    spec = fakes.fake_spec(memory_mb=1024, vcpus=2, root_gb=1)
    host_filters = [exact_filters.ExactRamFilter(),
                    exact_filters.ExactCoreFilter(),
                    exact_filters.ExactDiskFilter()]
    assert all(f.host_passes(host, spec) for f in host_filters)
    host.consume_from_request(spec)
    assert not any(f.host_passes(host, spec) for f in host_filters)


_SIZES = st.integers(0, 4096)


@given(total=_SIZES, free=st.integers(-4096, 4096), requested=_SIZES)
def test_exact_ram_passes_only_on_equality(total, free, requested):
    host = fakes.fake_host_state(free_ram_mb=free, total_usable_ram_mb=total)
    passes = exact_filters.ExactRamFilter().host_passes(
        host, fakes.fake_spec(memory_mb=requested))
    assert passes == (requested == free)
    if passes:
        assert host.limits['memory_mb'] == total


@given(total=st.integers(0, 64), used=st.integers(0, 128),
       requested=st.integers(0, 64))
def test_exact_core_passes_only_on_equality(total, used, requested):
    host = fakes.fake_host_state(vcpus_total=total, vcpus_used=used)
    passes = exact_filters.ExactCoreFilter().host_passes(
        host, fakes.fake_spec(vcpus=requested))
    assert passes == (total > 0 and requested == total - used)
    if passes:
        assert used + requested <= host.limits['vcpu'] == total


@given(total_gb=st.integers(0, 16), free=st.integers(-4096, 16384),
       root=st.integers(0, 8), ephemeral=st.integers(0, 8),
       swap=st.integers(0, 2048))
def test_exact_disk_passes_only_on_equality(total_gb, free, root, ephemeral,
                                            swap):
    host = fakes.fake_host_state(free_disk_mb=free,
                                 total_usable_disk_gb=total_gb)
    spec = fakes.fake_spec(root_gb=root, ephemeral_gb=ephemeral, swap=swap)
    passes = exact_filters.ExactDiskFilter().host_passes(host, spec)
    assert passes == (1024 * (root + ephemeral) + swap == free)
    if passes:
        assert host.limits['disk_gb'] == total_gb
