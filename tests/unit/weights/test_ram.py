"""RAMWeigher (Nova's test_weights_ram oracle numbers)."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import ram


def _hosts(*free_ram):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  free_ram_mb=free)
            for i, free in enumerate(free_ram, 1)]


def _weighed(hosts):
    return weights.HostWeightHandler().get_weighed_objects(
        [ram.RAMWeigher()], hosts, fakes.fake_spec())


def test_default_of_spreading_first():
    result = _weighed(_hosts(512, 1024, 3072, 8192))
    assert result[0].weight == 1.0
    assert result[0].obj.host == 'host4'
    assert [w.obj.host for w in result] == ['host4', 'host3', 'host2',
                                            'host1']


def test_ram_filter_multiplier1(conf):
    conf.set_override('ram_weight_multiplier', 0.0, 'filter_scheduler')
    result = _weighed(_hosts(512, 1024, 3072, 8192))
    assert [w.weight for w in result] == [0.0] * 4


def test_ram_filter_multiplier2(conf):
    conf.set_override('ram_weight_multiplier', 2.0, 'filter_scheduler')
    result = _weighed(_hosts(512, 1024, 3072, 8192))
    assert result[0].weight == 2.0
    assert result[0].obj.host == 'host4'


def test_ram_filter_negative():
    result = _weighed(_hosts(512, 1024, 3072, 8192, -512))
    by_host = {w.obj.host: w.weight for w in result}
    assert result[0].weight == 1.0
    assert result[0].obj.host == 'host4'
    assert by_host['host5'] == 0.0
    assert by_host['host1'] == 512 / 8192


def test_negative_multiplier_stacks(conf):
    conf.set_override('ram_weight_multiplier', -1.0, 'filter_scheduler')
    result = _weighed(_hosts(512, 1024, 3072, 8192))
    assert result[0].obj.host == 'host1'
    assert result[-1].weight == -1.0


def test_raw_weight_is_free_ram():
    weigher = ram.RAMWeigher()
    assert weigher.minval == 0
    assert weigher.maxval is None
    host = fakes.fake_host_state(free_ram_mb=1234)
    assert weigher._weigh_object(host, fakes.fake_spec()) == 1234


@given(free=st.lists(st.integers(-4096, 10 ** 6), min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(free, seed):
    hosts = _hosts(*free)
    before = {w.obj.host: w.weight for w in _weighed(hosts)}
    shuffled = list(hosts)
    seed.shuffle(shuffled)
    after = _weighed(shuffled)
    assert {w.obj.host: w.weight for w in after} == before
    assert [w.weight for w in after] == sorted(before.values(),
                                               reverse=True)
