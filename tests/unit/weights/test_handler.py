"""normalize, HostWeightHandler and weigher loading."""

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import exception
from scheduler import weights
from scheduler.weights import cpu
from scheduler.weights import disk
from scheduler.weights import io_ops
from scheduler.weights import ram


def _approx(values):
    return pytest.approx(list(values))


def test_normalize_examples():
    assert weights.normalize([20, 50]) == _approx([0.0, 1.0])
    assert weights.normalize([20, 50], maxval=100) == _approx([0.0, 0.375])
    assert weights.normalize([20, 50], minval=0) == _approx([0.4, 1.0])
    assert weights.normalize([20, 50], minval=0,
                             maxval=100) == _approx([0.2, 0.5])


def test_normalize_edge_cases():
    assert weights.normalize([]) == []
    assert weights.normalize([7, 7, 7]) == [0.0, 0.0, 0.0]
    assert weights.normalize([5], minval=0) == [1.0]


def _ram_hosts(*free_ram):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  free_ram_mb=free)
            for i, free in enumerate(free_ram, 1)]


def _weigh(weighers, hosts):
    return weights.HostWeightHandler().get_weighed_objects(
        weighers, hosts, fakes.fake_spec())


def test_ram_oracle_numbers():
    result = _weigh([ram.RAMWeigher()], _ram_hosts(512, 1024, 3072, 8192))
    assert result[0].weight == 1.0
    assert result[0].obj.host == 'host4'
    with_negative = _weigh([ram.RAMWeigher()],
                           _ram_hosts(512, 1024, 3072, 8192, -512))
    by_host = {w.obj.host: w.weight for w in with_negative}
    assert with_negative[0].weight == 1.0
    assert by_host['host5'] == 0.0


def test_single_host_weight_is_zero():
    result = _weigh([ram.RAMWeigher()], _ram_hosts(8192))
    assert len(result) == 1
    assert result[0].weight == 0.0


def test_no_host():
    assert _weigh([ram.RAMWeigher()], []) == []


def test_aggregate_multiplier_override_is_min_over_aggregates():
    hosts = _ram_hosts(512, 8192)
    hosts[1].aggregates = [
        fakes.fake_aggregate(1, metadata={'ram_weight_multiplier': '3.0'}),
        fakes.fake_aggregate(2, metadata={'ram_weight_multiplier': '0.5'}),
        fakes.fake_aggregate(3, metadata={'other': 'x'})]
    weigher = ram.RAMWeigher()
    assert weigher.weight_multiplier(hosts[1]) == 0.5
    assert weigher.weight_multiplier(hosts[0]) == 1.0
    by_host = {w.obj.host: w.weight for w in _weigh([weigher], hosts)}
    assert by_host['host2'] == 0.5


def test_malformed_aggregate_multiplier_uses_config(conf):
    conf.set_override('ram_weight_multiplier', 2.0, 'filter_scheduler')
    host = _ram_hosts(512)[0]
    host.aggregates = [fakes.fake_aggregate(
        1, metadata={'ram_weight_multiplier': 'heavy'})]
    assert ram.RAMWeigher().weight_multiplier(host) == 2.0


def test_negative_multiplier_stacks(conf):
    conf.set_override('ram_weight_multiplier', -1.0, 'filter_scheduler')
    result = _weigh([ram.RAMWeigher()], _ram_hosts(512, 1024, 8192))
    assert [w.obj.host for w in result] == ['host1', 'host2', 'host3']


def test_weights_of_several_weighers_add_up():
    hosts = [fakes.fake_host_state(host='a', free_ram_mb=1024,
                                   free_disk_mb=0, num_io_ops=0),
             fakes.fake_host_state(host='b', free_ram_mb=0,
                                   free_disk_mb=2048, num_io_ops=2)]
    by_host = {w.obj.host: w.weight for w in _weigh(
        [ram.RAMWeigher(), disk.DiskWeigher(), io_ops.IoOpsWeigher()],
        hosts)}
    assert by_host == {'a': 1.0, 'b': 0.0}


def test_ties_keep_input_order():
    result = _weigh([ram.RAMWeigher()], _ram_hosts(100, 100, 50, 100))
    assert [w.obj.host for w in result] == ['host1', 'host2', 'host4',
                                            'host3']


def test_weighed_host_to_dict():
    result = _weigh([ram.RAMWeigher()], _ram_hosts(0, 10))
    assert result[0].to_dict() == {'weight': 1.0, 'host': 'host2'}


def test_load_all_weighers():
    loaded = weights.load_weighers(['scheduler.weights.all_weighers'])
    names = {type(w).__name__ for w in loaded}
    assert {'RAMWeigher', 'DiskWeigher', 'CPUWeigher',
            'IoOpsWeigher'} <= names


def test_load_weighers_by_name_and_nova_path():
    loaded = weights.load_weighers(
        ['RAMWeigher', 'nova.scheduler.weights.io_ops.IoOpsWeigher',
         'scheduler.weights.cpu.CPUWeigher'])
    assert [type(w) for w in loaded] == [ram.RAMWeigher,
                                         io_ops.IoOpsWeigher,
                                         cpu.CPUWeigher]


def test_unknown_weigher_raises():
    with pytest.raises(exception.ClassNotFound):
        weights.load_weighers(['NoSuchWeigher'])


_HOST = st.tuples(st.integers(-2048, 10 ** 5), st.integers(-2048, 10 ** 6),
                  st.integers(0, 64), st.integers(0, 128),
                  st.integers(0, 20))


@given(values=st.lists(_HOST, min_size=2, max_size=10),
       seed=st.randoms(use_true_random=False))
def test_all_weighers_invariant_under_permutation(values, seed):
    hosts = [fakes.fake_host_state(
        host='host%d' % i, free_ram_mb=r, free_disk_mb=d, vcpus_total=t,
        vcpus_used=u, cpu_allocation_ratio=1.0, num_io_ops=io)
        for i, (r, d, t, u, io) in enumerate(values)]
    weighers = [ram.RAMWeigher(), disk.DiskWeigher(), cpu.CPUWeigher(),
                io_ops.IoOpsWeigher()]
    before = {w.obj.host: w.weight for w in _weigh(weighers, hosts)}
    shuffled = list(hosts)
    seed.shuffle(shuffled)
    after = _weigh(weighers, shuffled)
    assert {w.obj.host: w.weight for w in after} == before
    weights_after = [w.weight for w in after]
    assert weights_after == sorted(weights_after, reverse=True)
