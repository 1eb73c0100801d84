"""scheduler.resources.node_metrics: ``name=ratio`` parsing and a host's metric
values."""

import logging

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.resources import node_metrics

IDLE = 'cpu.idle.time'
KERNEL = 'cpu.kernel.time'


@pytest.mark.parametrize('entries, expected', [
    ([IDLE + '=1'], [(IDLE, 1.0)]),
    ([IDLE + '=1', KERNEL + '=-2.1'], [(IDLE, 1.0), (KERNEL, -2.1)]),
    ([IDLE + '=a1', KERNEL + '=-2.1'], [(KERNEL, -2.1)]),
    ([IDLE, KERNEL + '=-2.1'], [(KERNEL, -2.1)]),
    (['=5', KERNEL + '=-2.1'], [(KERNEL, -2.1)]),
    ([KERNEL + ' = 2.0t'], []),
    ([' %s = 0.5 ' % IDLE], [(IDLE, 0.5)]),
    ([IDLE + '=1=2'], []),
    ([IDLE + '=nan', KERNEL + '=inf'], []),
    ([], []),
    (None, []),
])
def test_parse_weight_setting(entries, expected):
    assert node_metrics.parse_weight_setting(entries) == expected


def test_duplicates_are_kept_in_order():
    assert node_metrics.parse_weight_setting([IDLE + '=-2', IDLE + '=1']) == [
        (IDLE, -2.0), (IDLE, 1.0)]


def test_invalid_entries_are_logged_with_the_option(caplog):
    caplog.set_level(logging.WARNING)
    node_metrics.parse_weight_setting(['bad', IDLE + '=1'], option='x.y')
    assert 'x.y' in caplog.text and 'bad' in caplog.text


def test_configured_setting_follows_the_option(conf):
    assert node_metrics.configured_weight_setting() == ()
    conf.set_override('weight_setting', [IDLE + '=2', 'oops'], 'metrics')
    assert node_metrics.configured_weight_setting() == ((IDLE, 2.0),)


def test_cached_parse_logs_once(caplog):
    caplog.set_level(logging.WARNING)
    entries = ('cached-bad-entry',)
    for _ in range(3):
        node_metrics.cached_weight_setting(entries)
    assert caplog.text.count('cached-bad-entry') == 1


def test_host_metrics_values_and_percentages():
    host = fakes.fake_host_state(metrics=fakes.fake_metrics({
        'cpu.frequency': 1600, 'cpu.idle.percent': 0.25,
        'cpu.percent': 0.5, IDLE: 12345}))
    assert node_metrics.host_metrics(host) == {
        'cpu.frequency': 1600.0, 'cpu.idle.percent': 25.0,
        'cpu.percent': 50.0, IDLE: 12345.0}


def test_host_metrics_without_numeric_value_map_to_none():
    host = fakes.fake_host_state(metrics=[
        {'name': 'numa.membw.current',
         'numa_membw_values': {'0': 10, '1': 43}},
        {'name': 'cpu.frequency', 'value': 'fast'},
        {'name': 'cpu.user.time', 'value': True}])
    assert node_metrics.host_metrics(host) == {
        'numa.membw.current': None, 'cpu.frequency': None,
        'cpu.user.time': None}


@pytest.mark.parametrize('reported', [
    None, [], 'not-a-list', [None, 'x', {'value': 3}, {'name': ''}]])
def test_host_metrics_ignores_what_is_not_a_metric(reported):
    host = fakes.fake_host_state(metrics=reported)
    assert node_metrics.host_metrics(host) == {}


def test_host_metrics_later_entry_wins():
    host = fakes.fake_host_state(metrics=[{'name': IDLE, 'value': 1},
                                          {'name': IDLE, 'value': 2}])
    assert node_metrics.host_metrics(host) == {IDLE: 2.0}


_names = st.text(alphabet='abcdefgh.', min_size=1, max_size=8).filter(
    lambda name: name.strip() == name)


@given(pairs=st.lists(st.tuples(_names, st.floats(
    allow_nan=False, allow_infinity=False, width=32)), max_size=6))
def test_parse_round_trips_valid_entries(pairs):
    entries = ['%s=%r' % (name, ratio) for name, ratio in pairs]
    assert node_metrics.parse_weight_setting(entries) == [
        (name, float(repr(ratio))) for name, ratio in pairs]
