"""RetryFilter: skip the nodes of earlier attempts."""

import fakes

from scheduler.filters import retry_filter


def _passes(retry, host='host1', node='node1'):
    host_state = fakes.fake_host_state(host=host, node=node)
    spec = fakes.fake_spec(retry=retry)
    return retry_filter.RetryFilter().host_passes(host_state, spec)


def test_retry_filter_disabled():
    assert _passes(None)


def test_retry_filter_pass():
    retry = fakes.fake_retry([('host1', 'node2'), ('host2', 'node1')])
    assert _passes(retry)


def test_retry_filter_fail():
    retry = fakes.fake_retry([('host1', 'node1'), ('host2', 'node2')])
    assert not _passes(retry)


def test_retry_filter_empty_hosts_passes():
    assert _passes(fakes.fake_retry([]))


def test_retry_filter_runs_for_every_instance():
    assert retry_filter.RetryFilter().run_filter_for_index(2)
