"""MixedFitWeigher: RAM first fit, small instances next to large ones,
large instances on hosts of mostly small ones."""

import uuid

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.conf import CONF
from scheduler.objects import instance as instance_obj
from scheduler.view.host_table import HostTable
from scheduler.weights import mixed_fit
from scheduler.weights import ram_first_fit
from tests.unit.weights.test_best_fit import _host
from tests.unit.weights.test_best_fit import _spec

LARGE, SMALL = 57344, 1792   # MiB; the hosts have 184,320 MiB


def _instances(*sizes):
    """A ``HostState.instances`` dict of instances of these RAM sizes
    (MiB; None: unknown)."""
    made = {}
    for size in sizes:
        inst = instance_obj.Instance(uuid=str(uuid.uuid4()))
        if size is not None:
            inst.memory_mb = size
        made[inst.uuid] = inst
    return made


def _mixed_host(i, memory_mb_used, *sizes, **kwargs):
    host = _host(i, 0, memory_mb_used, **kwargs)
    host.instances = _instances(*sizes)
    return host


def _raw(host, spec):
    return mixed_fit.MixedFitWeigher()._weigh_object(host, spec)


def _fit(host, spec):
    return ram_first_fit.RamFirstFitWeigher()._weigh_object(host, spec)


def _weighed(hosts, spec):
    return weights.HostWeightHandler().get_weighed_objects(
        [mixed_fit.MixedFitWeigher()], hosts, spec)


def test_a_small_instance_gets_the_bonus_next_to_a_large_one():
    spec = _spec(1, SMALL)
    beside = _mixed_host(1, 2 * LARGE, LARGE, LARGE)
    alone = _mixed_host(2, 2 * LARGE, *[SMALL] * 64)
    assert np.isclose(_raw(beside, spec),
                      _fit(beside, spec) + mixed_fit.LARGE_NEIGHBOUR_BONUS)
    assert _raw(alone, spec) == _fit(alone, spec)


def test_a_large_instance_gets_the_small_share_of_the_host():
    spec = _spec(8, LARGE)
    # Three small instances out of four.
    host = _mixed_host(1, LARGE + 3 * SMALL, LARGE, SMALL, SMALL, SMALL)
    assert np.isclose(_raw(host, spec), _fit(host, spec) +
                      mixed_fit.SMALL_SHARE_BONUS * 0.75)
    # An empty host: no bonus (and no division by zero).
    empty = _mixed_host(2, 0)
    assert _raw(empty, spec) == _fit(empty, spec)


def test_off_by_default():
    hosts = [_mixed_host(1, 0), _mixed_host(2, LARGE, LARGE)]
    assert [w.weight for w in _weighed(hosts, _spec(1, SMALL))] == [0.0, 0.0]


def test_small_instances_follow_large_ones_unless_much_tighter_elsewhere(
        conf):
    conf.set_override('mixed_fit_weight_multiplier', 1.0,
                      'filter_scheduler')
    spec = _spec(1, SMALL)
    # host2 is tighter in RAM by 5 % of a host, host3 by 20 %.
    hosts = [_mixed_host(1, 2 * LARGE, LARGE, LARGE),
             _mixed_host(2, int(2 * LARGE + 0.05 * 184320), *[SMALL] * 40),
             _mixed_host(3, int(2 * LARGE + 0.2 * 184320), *[SMALL] * 40)]
    assert [w.obj.host for w in _weighed(hosts, spec)] == [
        'host3', 'host1', 'host2']


def test_large_instances_go_where_the_small_ones_are(conf):
    conf.set_override('mixed_fit_weight_multiplier', 1.0,
                      'filter_scheduler')
    spec = _spec(8, LARGE)
    # Same RAM used; RAM first fit alone would keep the first (host1).
    hosts = [_mixed_host(1, 2 * LARGE, LARGE, LARGE),
             _mixed_host(2, 2 * LARGE, *[SMALL] * 64)]
    assert _fit(hosts[0], spec) == _fit(hosts[1], spec)
    assert [w.obj.host for w in _weighed(hosts, spec)] == ['host2', 'host1']


def test_large_is_a_share_of_the_node_ram(conf):
    spec = _spec(1, SMALL)
    host = _mixed_host(1, 32768, 32768)
    # 32,768 MiB is 17.8 % of the host: small at the default 0.25 ...
    assert _raw(host, spec) == _fit(host, spec)
    # ... large at 0.15.
    conf.set_override('mixed_fit_large_share', 0.15, 'filter_scheduler')
    assert np.isclose(_raw(host, spec),
                      _fit(host, spec) + mixed_fit.LARGE_NEIGHBOUR_BONUS)


def test_an_instance_of_unknown_size_counts_small():
    spec = _spec(8, LARGE)
    host = _mixed_host(1, LARGE, LARGE, None)
    assert np.isclose(_raw(host, spec), _fit(host, spec) +
                      mixed_fit.SMALL_SHARE_BONUS * 0.5)


def test_a_node_without_ram_has_no_large_instance():
    host = _mixed_host(1, 0, LARGE, memory_mb=0)
    assert _raw(host, _spec(1, SMALL)) == _fit(host, _spec(1, SMALL))
    assert _raw(host, _spec(8, LARGE)) == _fit(host, _spec(8, LARGE))


def test_the_share_must_be_between_0_and_1(conf):
    with pytest.raises(ValueError):
        conf.set_override('mixed_fit_large_share', 1.5, 'filter_scheduler')


def test_the_table_form_sees_instances_placed_after_a_sync():
    weigher = mixed_fit.MixedFitWeigher()
    host = _mixed_host(1, 0)
    table = HostTable([host])
    spec = _spec(1, SMALL)
    assert weigher.weigh_rows(table, table.all_rows, spec).tolist() == [
        _fit(host, spec)]
    host.instances.update(_instances(LARGE))
    host.memory_mb_used += LARGE
    table.sync([host])
    assert weigher.weigh_rows(table, table.all_rows, spec).tolist() == [
        _raw(host, spec)]
    assert np.isclose(_raw(host, spec),
                      _fit(host, spec) + mixed_fit.LARGE_NEIGHBOUR_BONUS)


_size = st.sampled_from([None, 768, SMALL, 14336, 32768, LARGE, 114688])


@given(st.lists(st.tuples(st.integers(0, 184320),
                          st.lists(_size, max_size=6),
                          st.sampled_from([0, 65536, 184320])),
                min_size=1, max_size=6),
       _size.filter(lambda size: size is not None),
       st.sampled_from([0.0, 0.15, 0.25, 1.0]))
def test_table_form_equals_host_form(hosts, asked, share):
    CONF.set_override('mixed_fit_large_share', share, 'filter_scheduler')
    try:
        states = [_mixed_host(i, used, *sizes, memory_mb=memory_mb)
                  for i, (used, sizes, memory_mb) in enumerate(hosts)]
        spec = _spec(2, asked)
        weigher = mixed_fit.MixedFitWeigher()
        table = HostTable(states)
        rows = weigher.weigh_rows(table, table.all_rows, spec)
        assert rows.tolist() == [weigher._weigh_object(s, spec)
                                 for s in states]
    finally:
        CONF.clear_override('mixed_fit_large_share', 'filter_scheduler')
