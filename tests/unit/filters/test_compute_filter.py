"""ComputeFilter: enabled and up compute services only."""

import datetime
import logging

import fakes
from oslo_utils import timeutils

from scheduler.filters import compute_filter


def _host(**service_fields):
    return fakes.fake_host_state(service=fakes.fake_service(**service_fields))


def test_compute_filter_passes_enabled_and_up():
    host_filter = compute_filter.ComputeFilter()
    assert host_filter.host_passes(_host(), fakes.fake_spec())


def test_compute_filter_manual_disable(caplog):
    host_filter = compute_filter.ComputeFilter()
    host = _host(disabled=True, disabled_reason='maintenance window')
    with caplog.at_level(logging.DEBUG):
        assert not host_filter.host_passes(host, fakes.fake_spec())
    assert 'maintenance window' in caplog.text


def test_compute_filter_fails_when_not_heard_from(caplog):
    host_filter = compute_filter.ComputeFilter()
    old = timeutils.utcnow() - datetime.timedelta(seconds=3600)
    host = _host(last_seen_up=old, created_at=old)
    with caplog.at_level(logging.WARNING):
        assert not host_filter.host_passes(host, fakes.fake_spec())
    assert 'has not been heard from in a while' in caplog.text


def test_compute_filter_fails_when_forced_down():
    host_filter = compute_filter.ComputeFilter()
    assert not host_filter.host_passes(_host(forced_down=True),
                                       fakes.fake_spec())


def test_compute_filter_uses_created_at_before_first_heartbeat():
    host_filter = compute_filter.ComputeFilter()
    host = _host(last_seen_up=None)
    assert host_filter.host_passes(host, fakes.fake_spec())


def test_compute_filter_respects_service_down_time(conf):
    host_filter = compute_filter.ComputeFilter()
    seen = timeutils.utcnow() - datetime.timedelta(seconds=100)
    host = _host(last_seen_up=seen)
    assert not host_filter.host_passes(host, fakes.fake_spec())
    conf.set_override('service_down_time', 300)
    assert host_filter.host_passes(host, fakes.fake_spec())


def test_compute_filter_fails_without_service_record():
    host_filter = compute_filter.ComputeFilter()
    assert not host_filter.host_passes(fakes.fake_host_state(),
                                       fakes.fake_spec())


def test_compute_filter_runs_once_per_request():
    assert compute_filter.ComputeFilter.run_filter_once_per_request
