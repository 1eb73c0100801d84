"""The weigher contract: ``weigh_object``, and Nova's ``_weigh_object``."""

import numpy as np

from scheduler import weights
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
