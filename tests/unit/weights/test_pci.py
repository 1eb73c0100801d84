"""PCIWeigher: hosts with fewer free PCI devices win."""

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.objects import pci as pci_obj
from scheduler.weights import pci


def _pool(count, product_id='1520', numa_node=0):
    return {'vendor_id': '8086', 'product_id': product_id,
            'numa_node': numa_node, 'count': count, 'tags': {}}


def _primitive(*pools):
    """The PciDevicePoolList primitive Nova stores in ``pci_stats``."""
    return {'nova_object.name': 'PciDevicePoolList',
            'nova_object.namespace': 'nova', 'nova_object.version': '1.1',
            'nova_object.data': {'objects': [
                {'nova_object.name': 'PciDevicePool',
                 'nova_object.namespace': 'nova',
                 'nova_object.version': '1.1',
                 'nova_object.data': pool} for pool in pools]}}


def _hosts(*counts):
    """One host per entry: None (no PCI stats) or a list of pool counts."""
    return [fakes.fake_host_state(
                host='host%d' % i, node='node%d' % i,
                pci_stats=None if pool_counts is None else
                [_pool(c, product_id=str(n)) for n, c in
                 enumerate(pool_counts)])
            for i, pool_counts in enumerate(counts, 1)]


def _pci_spec():
    request = pci_obj.InstancePCIRequest(
        count=1, spec=[{'vendor_id': '8086', 'product_id': '1520'}])
    return fakes.fake_spec(pci_requests=pci_obj.InstancePCIRequests(
        requests=[request]))


def _weighed(hosts, spec=None):
    return weights.HostWeightHandler().get_weighed_objects(
        [pci.PCIWeigher()], hosts, spec or fakes.fake_spec())


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


@pytest.mark.parametrize('pci_stats, free', [
    (None, 0),
    ([], 0),
    ([_pool(2), _pool(3, product_id='1521')], 5),
    (_primitive(_pool(4), _pool(1, numa_node=1)), 5),
    (_primitive(), 0),
    ('[{"vendor_id": "8086", "product_id": "1520", "count": 3}]', 3),
    ([_pool('6'), _pool(None)], 6),
    # Malformed values count as no device.
    ({'unexpected': 'shape'}, 0),
    ([_pool(2), {'count': 'many'}], 0),
    ([_pool(2), _pool(-2)], 0),
    ([_pool(2), 'x'], 0),
    ('not json', 0),
])
def test_free_pci_devices(pci_stats, free):
    host = fakes.fake_host_state(pci_stats=pci_stats)
    assert pci.free_pci_devices(host) == free


@pytest.mark.parametrize('free, raw', [
    (0, 100), (1, 99), (50, 50), (98, 2), (99, 1), (100, 1), (5000, 1)])
def test_raw_weight(free, raw):
    host = fakes.fake_host_state(pci_stats=[_pool(free)])
    assert pci.PCIWeigher()._weigh_object(host, fakes.fake_spec()) == raw


def test_default_multiplier_is_one():
    assert pci.PCIWeigher().weight_multiplier(fakes.fake_host_state()) == 1.0


def test_hosts_without_pci_devices_win_for_plain_requests():
    result = _weighed(_hosts([4, 4], None, [1]))
    assert [w.obj.host for w in result] == ['host2', 'host3', 'host1']
    assert result[0].weight == 1.0 and result[-1].weight == 0.0


def test_pci_requests_stack_on_fewest_free_devices():
    # Same weights with PCI requests: the host with the fewest free
    # devices (among those the PciPassthroughFilter kept) wins.
    hosts = _hosts([8], [2], [30])
    assert _by_host(_weighed(hosts, _pci_spec())) == _by_host(
        _weighed(hosts))
    assert _weighed(hosts, _pci_spec())[0].obj.host == 'host2'


def test_hosts_with_99_or_more_devices_tie():
    assert set(_by_host(_weighed(_hosts([99], [150], [1000]))).values()) == {
        0.0}


def test_multiplier_scales_and_zero_disables(conf):
    conf.set_override('pci_weight_multiplier', 3.0, 'filter_scheduler')
    assert _weighed(_hosts([4], None))[0].weight == 3.0
    conf.set_override('pci_weight_multiplier', 0.0, 'filter_scheduler')
    assert set(_by_host(_weighed(_hosts([4], None))).values()) == {0.0}


def test_negative_multiplier_rejected_by_config(conf):
    with pytest.raises(ValueError):
        conf.set_override('pci_weight_multiplier', -1.0, 'filter_scheduler')


def test_aggregate_override_min():
    hosts = _hosts([4], None)
    hosts[1].aggregates = [
        fakes.fake_aggregate(1, metadata={'pci_weight_multiplier': '5'}),
        fakes.fake_aggregate(2, metadata={'pci_weight_multiplier': '0.5'})]
    assert _by_host(_weighed(hosts)) == {'host1': 0.0, 'host2': 0.5}


@given(counts=st.lists(st.one_of(st.none(), st.lists(st.integers(0, 80),
                                                     max_size=3)),
                       min_size=2, max_size=8),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(counts, seed):
    hosts = _hosts(*counts)
    before = _by_host(_weighed(hosts))
    seed.shuffle(hosts)
    assert _by_host(_weighed(hosts)) == before
