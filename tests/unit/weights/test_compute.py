"""BuildFailureWeigher: recent build failures weigh a host down."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import compute


def _hosts(*failed):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  failed_builds=count)
            for i, count in enumerate(failed, 1)]


def _weighed(hosts, weighers=None):
    return weights.HostWeightHandler().get_weighed_objects(
        weighers or [compute.BuildFailureWeigher()], hosts,
        fakes.fake_spec())


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


def test_raw_weight_is_failed_builds():
    host = fakes.fake_host_state(failed_builds=3)
    assert compute.BuildFailureWeigher()._weigh_object(
        host, fakes.fake_spec()) == 3


def test_failed_builds_read_from_compute_stats():
    host = fakes.fake_host_state()
    host.update(compute={'memory_mb': 1, 'free_ram_mb': 1, 'local_gb': 1,
                         'free_disk_gb': 1, 'vcpus': 1,
                         'stats': '{"failed_builds": "4"}'})
    assert compute.BuildFailureWeigher()._weigh_object(
        host, fakes.fake_spec()) == 4


def test_default_multiplier_is_minus_a_million():
    assert compute.BuildFailureWeigher().weight_multiplier(
        fakes.fake_host_state()) == -1000000.0


def test_fewest_failures_win():
    result = _weighed(_hosts(0, 2, 4))
    assert [w.obj.host for w in result] == ['host1', 'host2', 'host3']
    assert _by_host(result) == {'host1': 0.0, 'host2': -500000.0,
                                'host3': -1000000.0}


def test_no_failures_anywhere_has_no_effect():
    assert set(_by_host(_weighed(_hosts(0, 0, 0))).values()) == {0.0}


def test_configured_multiplier_is_negated(conf):
    conf.set_override('build_failure_weight_multiplier', 2.0,
                      'filter_scheduler')
    assert _by_host(_weighed(_hosts(0, 1))) == {'host1': 0.0,
                                                'host2': -2.0}


def test_zero_multiplier_disables(conf):
    conf.set_override('build_failure_weight_multiplier', 0.0,
                      'filter_scheduler')
    assert set(_by_host(_weighed(_hosts(0, 5))).values()) == {0.0}


def test_aggregate_override_min_is_negated():
    hosts = _hosts(0, 1)
    hosts[1].aggregates = [
        fakes.fake_aggregate(1, metadata={
            'build_failure_weight_multiplier': '10'}),
        fakes.fake_aggregate(2, metadata={
            'build_failure_weight_multiplier': '3'})]
    assert _by_host(_weighed(hosts))['host2'] == -3.0


@given(failed=st.lists(st.integers(0, 50), min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(failed, seed):
    hosts = _hosts(*failed)
    before = _by_host(_weighed(hosts))
    seed.shuffle(hosts)
    assert _by_host(_weighed(hosts)) == before
