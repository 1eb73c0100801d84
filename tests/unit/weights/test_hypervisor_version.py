"""HypervisorVersionWeigher: prefer newer hypervisors."""

import fakes
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import hypervisor_version


def _hosts(*versions):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  hypervisor_version=version)
            for i, version in enumerate(versions, 1)]


def _weighed(hosts):
    return weights.HostWeightHandler().get_weighed_objects(
        [hypervisor_version.HypervisorVersionWeigher()], hosts,
        fakes.fake_spec())


def _by_host(hosts):
    return {w.obj.host: w.weight for w in _weighed(hosts)}


def test_raw_weight_is_the_version_or_zero():
    weigher = hypervisor_version.HypervisorVersionWeigher()
    spec = fakes.fake_spec()
    assert weigher._weigh_object(_hosts(2011000)[0], spec) == 2011000
    assert weigher._weigh_object(_hosts(None)[0], spec) == 0


def test_default_multiplier_prefers_newest():
    assert hypervisor_version.HypervisorVersionWeigher().weight_multiplier(
        fakes.fake_host_state()) == 1.0
    result = _weighed(_hosts(1000, 3000, 2000))
    assert [w.obj.host for w in result] == ['host2', 'host3', 'host1']
    assert [w.weight for w in result] == [1.0, 0.5, 0.0]


def test_unknown_version_weighs_as_oldest():
    assert _by_host(_hosts(None, 1000)) == {'host1': 0.0, 'host2': 1.0}


def test_negative_multiplier_prefers_oldest(conf):
    conf.set_override('hypervisor_version_weight_multiplier', -1.0,
                      'filter_scheduler')
    assert _weighed(_hosts(1000, 3000))[0].obj.host == 'host1'


def test_zero_multiplier_disables(conf):
    conf.set_override('hypervisor_version_weight_multiplier', 0.0,
                      'filter_scheduler')
    assert set(_by_host(_hosts(1000, 3000)).values()) == {0.0}


def test_aggregate_override_min():
    hosts = _hosts(1000, 3000)
    hosts[1].aggregates = [
        fakes.fake_aggregate(1, metadata={
            'hypervisor_version_weight_multiplier': '0.25'}),
        fakes.fake_aggregate(2, metadata={
            'hypervisor_version_weight_multiplier': '2'})]
    assert _by_host(hosts) == {'host1': 0.0, 'host2': 0.25}


@given(versions=st.lists(st.one_of(st.none(), st.integers(0, 10 ** 9)),
                         min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(versions, seed):
    hosts = _hosts(*versions)
    before = _by_host(hosts)
    seed.shuffle(hosts)
    assert _by_host(hosts) == before
