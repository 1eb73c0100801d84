"""CPUWeigher: free vCPUs after overcommit."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import cpu


def _host(i, total, used, ratio=1.0):
    return fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                 vcpus_total=total, vcpus_used=used,
                                 cpu_allocation_ratio=ratio)


def _weighed(hosts):
    return weights.HostWeightHandler().get_weighed_objects(
        [cpu.CPUWeigher()], hosts, fakes.fake_spec())


def test_raw_weight_is_free_vcpus_after_overcommit():
    weigher = cpu.CPUWeigher()
    spec = fakes.fake_spec()
    assert weigher._weigh_object(_host(1, 8, 10, ratio=2.0), spec) == 6.0
    assert weigher._weigh_object(_host(1, 4, 3), spec) == 1.0


def test_unset_ratio_uses_nova_default():
    host = _host(1, 2, 0, ratio=None)
    # initial_cpu_allocation_ratio: 4.0 (Nova since Stein).
    assert cpu.CPUWeigher()._weigh_object(host, fakes.fake_spec()) == 8.0


def test_default_of_spreading_first():
    result = _weighed([_host(1, 4, 4), _host(2, 4, 2), _host(3, 8, 0)])
    assert [w.obj.host for w in result] == ['host3', 'host2', 'host1']
    assert [w.weight for w in result] == [1.0, 0.25, 0.0]


def test_overcommitted_host_weighs_as_zero():
    result = _weighed([_host(1, 4, 9), _host(2, 4, 0)])
    by_host = {w.obj.host: w.weight for w in result}
    assert by_host == {'host1': 0.0, 'host2': 1.0}


def test_cpu_weight_multiplier(conf):
    conf.set_override('cpu_weight_multiplier', 3.0, 'filter_scheduler')
    result = _weighed([_host(1, 4, 4), _host(2, 8, 0)])
    assert result[0].weight == 3.0


def test_negative_multiplier_stacks(conf):
    conf.set_override('cpu_weight_multiplier', -1.0, 'filter_scheduler')
    result = _weighed([_host(1, 4, 3), _host(2, 8, 0)])
    assert result[0].obj.host == 'host1'


def test_aggregate_multiplier_override():
    hosts = [_host(1, 4, 4), _host(2, 8, 0)]
    hosts[1].aggregates = [fakes.fake_aggregate(
        1, hosts=['host2'], metadata={'cpu_weight_multiplier': '0.5'})]
    by_host = {w.obj.host: w.weight for w in _weighed(hosts)}
    assert by_host['host2'] == 0.5


@given(hosts=st.lists(st.tuples(st.integers(0, 256), st.integers(0, 512),
                                st.sampled_from([0.5, 1.0, 4.0, 16.0])),
                      min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(hosts, seed):
    states = [_host(i, *values) for i, values in enumerate(hosts)]
    before = {w.obj.host: w.weight for w in _weighed(states)}
    seed.shuffle(states)
    after = _weighed(states)
    assert {w.obj.host: w.weight for w in after} == before
