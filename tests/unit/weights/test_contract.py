"""The weigher contract: ``weigh_object``, and Nova's ``_weigh_object``."""

import numpy as np

from scheduler import weights
from scheduler.view import host_table
from scheduler.weights import ram
from tests.unit import fakes


class NovaStyleWeigher(weights.BaseHostWeigher):
    """Written for Nova: only ``_weigh_object``."""

    def _weigh_object(self, host_state, weight_properties):
        return float(host_state.free_ram_mb)


class NovaStyleRamSubclass(ram.RAMWeigher):
    """A Nova plug-in overriding a built-in weigher's ``_weigh_object``."""

    def _weigh_object(self, host_state, weight_properties):
        return 4096.0 - host_state.free_ram_mb


def _hosts():
    return [fakes.fake_host_state(host='h%d' % i, node='n%d' % i,
                                  free_ram_mb=ram_mb)
            for i, ram_mb in enumerate((512, 2048, 1024))]


def test_a_weigher_defining_only_the_nova_hook_weighs():
    weigher = NovaStyleWeigher()
    hosts = _hosts()
    spec = fakes.fake_spec()
    assert weigher.weigh_object(hosts[1], spec) == 2048.0
    weighed = weights.HostWeightHandler().get_weighed_objects(
        [weigher], hosts, spec)
    assert [w.obj.host for w in weighed] == ['h1', 'h2', 'h0']


def test_the_nova_hook_of_a_subclass_wins_over_the_built_in_one():
    weigher = NovaStyleRamSubclass()
    hosts = _hosts()
    spec = fakes.fake_spec()
    assert weights.per_host_method(weigher)(hosts[1], spec) == 2048.0
    assert weights.per_host_method(weigher)(hosts[0], spec) == 3584.0
    weighed = weights.HostWeightHandler().get_weighed_objects(
        [weigher], hosts, spec)
    assert [w.obj.host for w in weighed] == ['h0', 'h2', 'h1']


def test_a_built_in_weigher_answers_both_names():
    weigher = ram.RAMWeigher()
    host = _hosts()[2]
    spec = fakes.fake_spec()
    assert weigher.weigh_object(host, spec) == 1024
    assert weigher._weigh_object(host, spec) == 1024
    assert weights.per_host_method(weigher) == weigher.weigh_object
    assert np.asarray(weigher.weigh_objects(
        [weights.WeighedHost(host, 0.0)], spec)).tolist() == [1024]


# -- a multiplier of 0.0 ------------------------------------------------------

class _CountsHosts:
    """Counts the hosts it weighs, weighing each by its free RAM."""

    def __init__(self):
        self.weighed = 0

    def weigh_object(self, host_state, weight_properties):
        self.weighed += 1
        return float(host_state.free_ram_mb)


class _Counting(_CountsHosts, weights.BaseHostWeigher):
    """A plug-in; multiplier ``ram_weight_multiplier``."""

    multiplier_option = 'ram_weight_multiplier'


class _CountingNeverRaises(_Counting):
    NEVER_RAISES = True


class _CountingRam(_CountsHosts, ram.RAMWeigher):
    """A plug-in over a built-in weigher that declares NEVER_RAISES: its
    own ``weigh_object`` is not covered by that declaration."""


class _CountingMemo(_Counting):
    """A plug-in whose raw weights the table's memo keeps."""

    def memo_key(self, weight_properties):
        return ()


def test_one_host_is_weighed_directly_several_through_the_memo():
    """A request's later instance re-weighs the one host the previous
    instance took: that host is weighed directly (the memo's bookkeeping
    costs more), with the value the memo would give."""
    weigher = _CountingMemo()
    table = host_table.HostTable(_hosts())
    spec = fakes.fake_spec()
    every = weights._raw_weights(weigher, table, table.all_rows, spec)
    assert every.tolist() == [512.0, 2048.0, 1024.0]
    assert weigher.weighed == 3
    weights._raw_weights(weigher, table, table.all_rows, spec)
    assert weigher.weighed == 3                  # from the memo
    one = weights._raw_weights(weigher, table, np.array([1]), spec)
    assert one.tolist() == [2048.0] and one.dtype == np.float64
    assert weigher.weighed == 4                  # weighed directly


def _weighed_rows(weigher):
    table = host_table.HostTable(_hosts())
    rows, _weights = weights.HostWeightHandler().get_weighed_rows(
        [weigher, ram.RAMWeigher()], table, table.all_rows,
        fakes.fake_spec())
    return rows.tolist()


def test_a_weigher_that_may_raise_is_asked_whatever_its_multiplier(conf):
    """As Nova asks every weigher (its MetricsWeigher raises on a missing
    required metric, multiplier or not)."""
    conf.set_override('ram_weight_multiplier', 0.0, 'filter_scheduler')
    weigher = _Counting()
    assert not weights.never_raises(weigher)
    _weighed_rows(weigher)
    assert weigher.weighed == 3


def test_a_weigher_that_never_raises_is_left_out_at_a_zero_multiplier(conf):
    conf.set_override('ram_weight_multiplier', 0.0, 'filter_scheduler')
    weigher = _CountingNeverRaises()
    assert weights.never_raises(weigher)
    assert _weighed_rows(weigher) == [0, 1, 2]   # all weigh 0: input order
    assert weigher.weighed == 0
    conf.set_override('ram_weight_multiplier', 1.0, 'filter_scheduler')
    assert _weighed_rows(weigher) == [1, 2, 0]
    assert weigher.weighed == 3


def test_an_override_of_a_built_in_weigher_is_asked(conf):
    conf.set_override('ram_weight_multiplier', 0.0, 'filter_scheduler')
    weigher = _CountingRam()
    assert weights.never_raises(ram.RAMWeigher())
    assert not weights.never_raises(weigher)
    _weighed_rows(weigher)
    assert weigher.weighed == 3


def test_every_built_in_weigher_but_metrics_never_raises():
    raising = sorted(cls.__name__ for cls in weights.all_weighers()
                     if not weights.never_raises(cls()))
    assert raising == ['MetricsWeigher']
