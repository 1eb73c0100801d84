"""IoOpsWeigher: fewer concurrent I/O operations win by default."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import io_ops


def _hosts(*ops):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  num_io_ops=n)
            for i, n in enumerate(ops, 1)]


def _weighed(hosts):
    return weights.HostWeightHandler().get_weighed_objects(
        [io_ops.IoOpsWeigher()], hosts, fakes.fake_spec())


def test_io_ops_weight_multiplier_by_default():
    result = _weighed(_hosts(0, 1, 2, 4))
    assert result[0].obj.host == 'host1'
    assert result[0].weight == 0.0
    assert result[-1].obj.host == 'host4'
    assert result[-1].weight == -1.0


def test_io_ops_weight_multiplier_zero_value(conf):
    conf.set_override('io_ops_weight_multiplier', 0.0, 'filter_scheduler')
    assert [w.weight for w in _weighed(_hosts(0, 4))] == [0.0, 0.0]


def test_io_ops_weight_multiplier_positive_value(conf):
    conf.set_override('io_ops_weight_multiplier', 2.0, 'filter_scheduler')
    result = _weighed(_hosts(0, 1, 2, 4))
    assert result[0].obj.host == 'host4'
    assert result[0].weight == 2.0


def test_normalised_from_zero():
    by_host = {w.obj.host: w.weight for w in _weighed(_hosts(2, 4))}
    assert by_host == {'host1': -0.5, 'host2': -1.0}


@given(ops=st.lists(st.integers(0, 50), min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(ops, seed):
    hosts = _hosts(*ops)
    before = {w.obj.host: w.weight for w in _weighed(hosts)}
    seed.shuffle(hosts)
    after = _weighed(hosts)
    assert {w.obj.host: w.weight for w in after} == before
    assert [w.weight for w in after] == sorted(before.values(),
                                               reverse=True)
