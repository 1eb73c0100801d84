"""Soft affinity and soft anti-affinity weighers for server groups."""

import logging
import uuid

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.weights import affinity


def _uuid(name):
    """A stable instance uuid for a readable name."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


MEMBERS = ['m1', 'm2', 'm3', 'm4']
# host1 runs no member, host2 one, host3 three.
HOST_INSTANCES = [('other',), ('m1', 'other2'), ('m2', 'm3', 'm4')]


def _hosts(table=HOST_INSTANCES):
    return [fakes.fake_host_state(
                host='host%d' % i, node='node%d' % i,
                instances=fakes.fake_instances(*map(_uuid, names)))
            for i, names in enumerate(table, 1)]


def _spec(policy, members=MEMBERS, legacy=False):
    return fakes.fake_spec(instance_group=fakes.fake_group(
        policy=policy, members=[_uuid(m) for m in members], legacy=legacy))


def _weighed(weigher, spec, hosts=None):
    return weights.HostWeightHandler().get_weighed_objects(
        [weigher], hosts or _hosts(), spec)


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


def _raw(weigher, spec):
    return [weigher._weigh_object(h, spec) for h in _hosts()]


def test_soft_affinity_counts_members_on_host():
    spec = _spec('soft-affinity')
    assert _raw(affinity.ServerGroupSoftAffinityWeigher(), spec) == [0, 1, 3]


def test_soft_anti_affinity_counts_members_negatively():
    spec = _spec('soft-anti-affinity')
    weigher = affinity.ServerGroupSoftAntiAffinityWeigher()
    assert _raw(weigher, spec) == [0, -1, -3]


def test_legacy_policies_list_is_understood():
    spec = _spec('soft-affinity', legacy=True)
    assert _raw(affinity.ServerGroupSoftAffinityWeigher(), spec) == [0, 1, 3]


@pytest.mark.parametrize('weigher_cls, policy', [
    (affinity.ServerGroupSoftAffinityWeigher, 'soft-anti-affinity'),
    (affinity.ServerGroupSoftAffinityWeigher, 'affinity'),
    (affinity.ServerGroupSoftAntiAffinityWeigher, 'soft-affinity'),
    (affinity.ServerGroupSoftAntiAffinityWeigher, 'anti-affinity'),
])
def test_other_policies_weigh_zero(weigher_cls, policy):
    assert _raw(weigher_cls(), _spec(policy)) == [0, 0, 0]


@pytest.mark.parametrize('weigher_cls', [
    affinity.ServerGroupSoftAffinityWeigher,
    affinity.ServerGroupSoftAntiAffinityWeigher])
def test_no_group_weighs_zero(weigher_cls):
    assert _raw(weigher_cls(), fakes.fake_spec()) == [0, 0, 0]


def test_soft_affinity_default_multiplier_packs():
    result = _weighed(affinity.ServerGroupSoftAffinityWeigher(),
                      _spec('soft-affinity'))
    assert result[0].obj.host == 'host3'
    assert _by_host(result) == {'host1': 0.0, 'host2': pytest.approx(1 / 3),
                                'host3': 1.0}


def test_soft_anti_affinity_default_multiplier_spreads():
    result = _weighed(affinity.ServerGroupSoftAntiAffinityWeigher(),
                      _spec('soft-anti-affinity'))
    assert result[0].obj.host == 'host1'
    assert _by_host(result) == {'host1': 1.0, 'host2': pytest.approx(2 / 3),
                                'host3': 0.0}


@pytest.mark.parametrize('weigher_cls, option, policy', [
    (affinity.ServerGroupSoftAffinityWeigher,
     'soft_affinity_weight_multiplier', 'soft-affinity'),
    (affinity.ServerGroupSoftAntiAffinityWeigher,
     'soft_anti_affinity_weight_multiplier', 'soft-anti-affinity'),
])
class TestMultipliers:

    def test_default_is_one(self, weigher_cls, option, policy):
        host = fakes.fake_host_state()
        assert weigher_cls.multiplier_option == option
        assert weigher_cls().weight_multiplier(host) == 1.0

    def test_zero_value_disables(self, conf, weigher_cls, option, policy):
        conf.set_override(option, 0.0, 'filter_scheduler')
        result = _weighed(weigher_cls(), _spec(policy))
        assert set(_by_host(result).values()) == {0.0}

    def test_positive_value_scales(self, conf, weigher_cls, option, policy):
        conf.set_override(option, 2.0, 'filter_scheduler')
        assert _weighed(weigher_cls(), _spec(policy))[0].weight == 2.0

    def test_negative_value_rejected_by_config(self, conf, weigher_cls,
                                               option, policy):
        with pytest.raises(ValueError):
            conf.set_override(option, -1.0, 'filter_scheduler')

    def test_aggregate_override_min(self, weigher_cls, option, policy):
        hosts = _hosts()
        for host in hosts:
            host.aggregates = [
                fakes.fake_aggregate(1, metadata={option: '4'}),
                fakes.fake_aggregate(2, metadata={option: '1.5'})]
        assert _weighed(weigher_cls(), _spec(policy), hosts)[0].weight == 1.5

    def test_negative_aggregate_override_warns_once(
            self, caplog, weigher_cls, option, policy):
        caplog.set_level(logging.WARNING)
        hosts = _hosts()
        for host in hosts:
            host.aggregates = [fakes.fake_aggregate(metadata={option: '-1'})]
        weigher = weigher_cls()
        result = _weighed(weigher, _spec(policy), hosts)
        _weighed(weigher, _spec(policy), hosts)
        # The negative multiplier is used: the policy is reversed.
        assert result[0].weight == 0.0 and result[-1].weight == -1.0
        assert caplog.text.count(option) == 1


_instances = st.lists(st.sets(st.sampled_from(MEMBERS + ['x', 'y'])),
                      min_size=2, max_size=8)


@given(table=_instances, seed=st.randoms(use_true_random=False),
       policy=st.sampled_from(['soft-affinity', 'soft-anti-affinity']))
def test_weights_invariant_under_permutation(table, seed, policy):
    spec = _spec(policy)
    weighers = [affinity.ServerGroupSoftAffinityWeigher(),
                affinity.ServerGroupSoftAntiAffinityWeigher()]
    hosts = _hosts([sorted(uuids) for uuids in table])
    handler = weights.HostWeightHandler()
    before = _by_host(handler.get_weighed_objects(weighers, hosts, spec))
    seed.shuffle(hosts)
    after = _by_host(handler.get_weighed_objects(weighers, hosts, spec))
    assert after == before
