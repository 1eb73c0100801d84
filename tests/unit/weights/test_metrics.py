"""MetricsWeigher: sum of metric values times configured ratios."""

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import exception
from scheduler import weights
from scheduler.weights import metrics

IDLE = 'cpu.idle.time'
KERNEL = 'cpu.kernel.time'
USER = 'cpu.user.time'

# host1..host6: idle / kernel for all, user only for host5 and host6.
HOST_METRICS = [
    {IDLE: 400, KERNEL: 1},
    {IDLE: 1000, KERNEL: 3},
    {IDLE: 3000, KERNEL: 1},
    {IDLE: 9000, KERNEL: 0},
    {IDLE: 700, KERNEL: 0, USER: 1},
    {IDLE: 2000, KERNEL: 0, USER: 2},
]


def _host(i, values, **attrs):
    return fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                 metrics=fakes.fake_metrics(values), **attrs)


def _hosts(table=HOST_METRICS):
    return [_host(i, values) for i, values in enumerate(table, 1)]


def _weighed(hosts, weigher=None):
    return weights.HostWeightHandler().get_weighed_objects(
        [weigher or metrics.MetricsWeigher()], hosts, fakes.fake_spec())


def _best(conf, setting, hosts=None):
    conf.set_override('weight_setting', setting, 'metrics')
    best = _weighed(hosts or _hosts())[0]
    return best.obj.host, best.weight


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


def test_empty_setting_has_no_effect():
    hosts = _hosts() + [fakes.fake_host_state(host='bare', node='bare')]
    assert set(_by_host(_weighed(hosts)).values()) == {0.0}


def test_single_metric_highest_value_wins(conf):
    assert _best(conf, [IDLE + '=1']) == ('host4', 1.0)


def test_raw_weight_is_sum_of_value_times_ratio(conf):
    conf.set_override('weight_setting', [IDLE + '=0.5', KERNEL + '=-10'],
                      'metrics')
    raw = metrics.MetricsWeigher()._weigh_object(_hosts()[1],
                                                 fakes.fake_spec())
    assert raw == 1000 * 0.5 + 3 * -10


def test_several_metrics_combine(conf):
    # idle counts little, kernel dominates: host2 (kernel 3) wins.
    assert _best(conf, [IDLE + '=0.0001', KERNEL + '=1']) == ('host2', 1.0)


def test_negative_ratio_prefers_low_values(conf):
    assert _best(conf, [IDLE + '=-1']) == ('host1', 1.0)


def test_duplicate_names_add_their_ratios(conf):
    # -2 + 1 = -1 per unit of idle time: the least idle host wins.
    assert _best(conf, [IDLE + '=-2', IDLE + '=1']) == ('host1', 1.0)


@pytest.mark.parametrize('bad', [KERNEL, KERNEL + ' = 2.0t', '=3'])
def test_malformed_entries_are_skipped(conf, bad):
    assert _best(conf, [IDLE + '=0.0001', bad]) == ('host4', 1.0)


def test_percent_metrics_are_stored_as_fractions(conf):
    hosts = [_host(1, {'cpu.idle.percent': 0.9}),
             _host(2, {'cpu.idle.percent': 0.1})]
    conf.set_override('weight_setting', ['cpu.idle.percent=1'], 'metrics')
    spec = fakes.fake_spec()
    weigher = metrics.MetricsWeigher()
    assert weigher._weigh_object(hosts[0], spec) == pytest.approx(90.0)
    assert _weighed(hosts)[0].obj.host == 'host1'


def test_missing_metric_raises_when_required(conf):
    conf.set_override('weight_setting', [IDLE + '=1', USER + '=2'],
                      'metrics')
    with pytest.raises(exception.ComputeHostMetricNotFound) as info:
        _weighed(_hosts())
    assert USER in str(info.value) and 'host1.node1' in str(info.value)


def test_required_raises_even_with_zero_ratio(conf):
    conf.set_override('weight_setting', [USER + '=0'], 'metrics')
    with pytest.raises(exception.ComputeHostMetricNotFound):
        _weighed(_hosts())


def test_metric_without_value_counts_as_missing(conf):
    conf.set_override('weight_setting', ['numa.membw.current=1'], 'metrics')
    host = fakes.fake_host_state(metrics=[{'name': 'numa.membw.current',
                                           'numa_membw_values': {'0': 1}}])
    with pytest.raises(exception.ComputeHostMetricNotFound):
        metrics.MetricsWeigher()._weigh_object(host, fakes.fake_spec())


def test_missing_metric_weighs_unavailable_when_not_required(conf):
    conf.set_override('required', False, 'metrics')
    # Only host5 and host6 report USER; host5 loses less to it.
    assert _best(conf, [IDLE + '=0.0001', USER + '=-1']) == ('host5', 1.0)
    raw = metrics.MetricsWeigher()._weigh_object(_hosts()[0],
                                                 fakes.fake_spec())
    assert raw == -10000.0


def test_weight_of_unavailable_option(conf):
    conf.set_override('required', False, 'metrics')
    conf.set_override('weight_of_unavailable', 5.0, 'metrics')
    conf.set_override('weight_setting', [USER + '=1'], 'metrics')
    assert metrics.MetricsWeigher()._weigh_object(
        _hosts()[0], fakes.fake_spec()) == 5.0


def test_missing_metric_with_zero_ratio_is_skipped(conf):
    conf.set_override('required', False, 'metrics')
    conf.set_override('weight_setting', [IDLE + '=1', USER + '=0'],
                      'metrics')
    assert metrics.MetricsWeigher()._weigh_object(
        _hosts()[0], fakes.fake_spec()) == 400.0


def test_missing_metric_with_zero_multiplier_is_skipped(conf):
    conf.set_override('required', False, 'metrics')
    conf.set_override('weight_multiplier', 0.0, 'metrics')
    conf.set_override('weight_setting', [IDLE + '=1', USER + '=1'],
                      'metrics')
    assert metrics.MetricsWeigher()._weigh_object(
        _hosts()[0], fakes.fake_spec()) == 400.0


def test_zero_aggregate_multiplier_skips_missing_metric(conf):
    conf.set_override('required', False, 'metrics')
    conf.set_override('weight_setting', [IDLE + '=1', USER + '=1'],
                      'metrics')
    host = _hosts()[0]
    host.aggregates = [fakes.fake_aggregate(
        metadata={'metrics_weight_multiplier': '0'})]
    assert metrics.MetricsWeigher()._weigh_object(
        host, fakes.fake_spec()) == 400.0


def test_default_multiplier_is_one():
    assert metrics.MetricsWeigher().weight_multiplier(
        fakes.fake_host_state()) == 1.0


def test_configured_multiplier(conf):
    conf.set_override('weight_multiplier', 2.5, 'metrics')
    assert _best(conf, [IDLE + '=1']) == ('host4', 2.5)


def test_filter_scheduler_multiplier_options_do_not_apply(conf):
    conf.set_override('ram_weight_multiplier', 7.0, 'filter_scheduler')
    assert metrics.MetricsWeigher().weight_multiplier(
        fakes.fake_host_state()) == 1.0


def test_aggregate_multiplier_is_min_over_aggregates(conf):
    hosts = _hosts()
    hosts[3].aggregates = [
        fakes.fake_aggregate(1, metadata={'metrics_weight_multiplier': '3'}),
        fakes.fake_aggregate(2, metadata={'metrics_weight_multiplier': '0.5'}),
        fakes.fake_aggregate(3, metadata={'weight_multiplier': '9'})]
    conf.set_override('weight_setting', [IDLE + '=1'], 'metrics')
    by_host = _by_host(_weighed(hosts))
    assert by_host['host4'] == 0.5


def test_malformed_aggregate_multiplier_uses_config(conf):
    host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate(
        metadata={'metrics_weight_multiplier': 'lots'})])
    conf.set_override('weight_multiplier', 4.0, 'metrics')
    assert metrics.MetricsWeigher().weight_multiplier(host) == 4.0


def test_setting_change_applies_without_new_weigher(conf):
    weigher = metrics.MetricsWeigher()
    conf.set_override('weight_setting', [IDLE + '=1'], 'metrics')
    assert _weighed(_hosts(), weigher)[0].obj.host == 'host4'
    conf.set_override('weight_setting', [IDLE + '=-1'], 'metrics')
    assert _weighed(_hosts(), weigher)[0].obj.host == 'host1'


_metric_values = st.fixed_dictionaries(
    {IDLE: st.integers(0, 10 ** 6)},
    optional={USER: st.integers(0, 100)})


@given(table=st.lists(_metric_values, min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(table, seed):
    with fakes.conf_overrides('metrics', required=False,
                              weight_setting=[IDLE + '=1', USER + '=-3']):
        hosts = _hosts(table)
        before = _by_host(_weighed(hosts))
        seed.shuffle(hosts)
        assert _by_host(_weighed(hosts)) == before
