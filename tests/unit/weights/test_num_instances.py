"""NumInstancesWeigher: weigh hosts by their number of instances."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import num_instances


def _hosts(*counts):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  num_instances=count)
            for i, count in enumerate(counts, 1)]


def _by_host(hosts):
    result = weights.HostWeightHandler().get_weighed_objects(
        [num_instances.NumInstancesWeigher()], hosts, fakes.fake_spec())
    return {w.obj.host: w.weight for w in result}


def test_raw_weight_is_num_instances():
    host = fakes.fake_host_state(num_instances=7)
    assert num_instances.NumInstancesWeigher()._weigh_object(
        host, fakes.fake_spec()) == 7


def test_default_multiplier_is_zero_so_no_effect():
    assert num_instances.NumInstancesWeigher().weight_multiplier(
        fakes.fake_host_state()) == 0.0
    assert set(_by_host(_hosts(0, 5, 10)).values()) == {0.0}


def test_positive_multiplier_packs(conf):
    conf.set_override('num_instances_weight_multiplier', 1.0,
                      'filter_scheduler')
    assert _by_host(_hosts(0, 5, 10)) == {'host1': 0.0, 'host2': 0.5,
                                          'host3': 1.0}


def test_negative_multiplier_spreads(conf):
    conf.set_override('num_instances_weight_multiplier', -2.0,
                      'filter_scheduler')
    assert _by_host(_hosts(0, 5, 10)) == {'host1': 0.0, 'host2': -1.0,
                                          'host3': -2.0}


def test_consumed_instances_count():
    host = fakes.fake_host_state(num_instances=2, free_ram_mb=4096,
                                 free_disk_mb=10240, vcpus_total=4)
    host.consume_from_request(fakes.fake_spec())
    assert num_instances.NumInstancesWeigher()._weigh_object(
        host, fakes.fake_spec()) == 3


def test_aggregate_override_min():
    hosts = _hosts(0, 4)
    hosts[1].aggregates = [
        fakes.fake_aggregate(1, metadata={
            'num_instances_weight_multiplier': '-1'}),
        fakes.fake_aggregate(2, metadata={
            'num_instances_weight_multiplier': '3'})]
    assert _by_host(hosts) == {'host1': 0.0, 'host2': -1.0}


@given(counts=st.lists(st.integers(0, 500), min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(counts, seed):
    with fakes.conf_overrides('filter_scheduler',
                              num_instances_weight_multiplier=1.0):
        hosts = _hosts(*counts)
        before = _by_host(hosts)
        seed.shuffle(hosts)
        assert _by_host(hosts) == before
