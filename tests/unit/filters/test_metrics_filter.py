"""MetricsFilter: hosts must report every metric the weigher uses."""

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import filters
from scheduler.filters import metrics_filter

SETTING = ['cpu.frequency=1', 'numa.membw.current=2']


def _passes(host):
    return metrics_filter.MetricsFilter().host_passes(host,
                                                      fakes.fake_spec())


def test_passes_when_every_metric_is_reported(conf):
    conf.set_override('weight_setting', SETTING, 'metrics')
    host = fakes.fake_host_state(metrics=[
        {'name': 'cpu.frequency', 'value': 1000},
        # Reported without a value: the name is what counts here.
        {'name': 'numa.membw.current',
         'numa_membw_values': {'0': 10, '1': 43}}])
    assert _passes(host)


def test_fails_when_a_metric_is_missing(conf):
    conf.set_override('weight_setting', SETTING, 'metrics')
    host = fakes.fake_host_state(metrics=fakes.fake_metrics(
        {'cpu.frequency': 1000, 'cpu.user.time': 3}))
    assert not _passes(host)


@pytest.mark.parametrize('reported', [None, []])
def test_host_without_metrics(conf, reported):
    host = fakes.fake_host_state(metrics=reported)
    assert _passes(host)
    conf.set_override('weight_setting', SETTING, 'metrics')
    assert not _passes(host)


def test_invalid_setting_entries_are_not_required(conf):
    conf.set_override('weight_setting', ['cpu.frequency=1', 'cpu.percent',
                                         'cpu.idle.time=x'], 'metrics')
    host = fakes.fake_host_state(metrics=fakes.fake_metrics(
        {'cpu.frequency': 1000}))
    assert _passes(host)


def test_handler_keeps_only_hosts_with_metrics(conf):
    conf.set_override('weight_setting', ['cpu.idle.time=1'], 'metrics')
    hosts = [fakes.fake_host_state(host='with', metrics=fakes.fake_metrics(
                 {'cpu.idle.time': 5})),
             fakes.fake_host_state(host='without', metrics=None)]
    passed = filters.HostFilterHandler().get_filtered_objects(
        [metrics_filter.MetricsFilter()], hosts, fakes.fake_spec())
    assert [h.host for h in passed] == ['with']


def test_runs_for_every_instance_and_not_on_rebuild():
    assert not metrics_filter.MetricsFilter.run_filter_once_per_request
    assert not metrics_filter.MetricsFilter.RUN_ON_REBUILD


_NAMES = ['cpu.frequency', 'cpu.idle.time', 'cpu.percent', 'numa.membw.max']


@given(wanted=st.sets(st.sampled_from(_NAMES)),
       reported=st.sets(st.sampled_from(_NAMES)))
def test_passes_iff_wanted_is_subset_of_reported(wanted, reported):
    host = fakes.fake_host_state(metrics=fakes.fake_metrics(
        dict.fromkeys(reported, 1)))
    with fakes.conf_overrides('metrics', weight_setting=[
            name + '=1' for name in sorted(wanted)]):
        assert _passes(host) == (wanted <= reported)
