"""AllHostsFilter."""

import fakes

from scheduler.filters import all_hosts_filter


def test_all_hosts_filter_passes_any_host():
    host_filter = all_hosts_filter.AllHostsFilter()
    host = fakes.fake_host_state()
    assert host_filter.host_passes(host, fakes.fake_spec())


def test_all_hosts_filter_runs_once_per_request():
    host_filter = all_hosts_filter.AllHostsFilter()
    assert host_filter.run_filter_for_index(0)
    assert not host_filter.run_filter_for_index(1)
