"""ImagePropertiesWeigher: instances sharing the requested image props."""

import uuid

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.objects import image_meta
from scheduler.objects import instance as instance_obj
from scheduler.weights import image_props

LINUX_PC = {'os_distro': 'linux', 'hw_machine_type': 'pc'}
LINUX_Q35 = {'os_distro': 'linux', 'hw_machine_type': 'q35'}
WINDOWS_PC = {'os_distro': 'windows', 'hw_machine_type': 'pc'}


def _instance(props=None, **fields):
    """An Instance; ``props`` is attached as its ``image_props``."""
    inst = instance_obj.Instance(uuid=str(uuid.uuid4()), **fields)
    if props is not None:
        inst.image_props = props
    return inst


def _host(i, *instances):
    return fakes.fake_host_state(
        host='host%d' % i, node='node%d' % i,
        instances={inst.uuid: inst for inst in instances})


def _fleet():
    """host1: nothing alike; host2: one linux/pc; host3: two linux/pc and
    one linux/q35; host4: one windows/pc and one linux/q35."""
    return [_host(1, _instance({'os_distro': 'bsd'})),
            _host(2, _instance(LINUX_PC)),
            _host(3, _instance(LINUX_PC), _instance(LINUX_PC),
                  _instance(LINUX_Q35)),
            _host(4, _instance(WINDOWS_PC), _instance(LINUX_Q35))]


def _raw(hosts, spec):
    weigher = image_props.ImagePropertiesWeigher()
    return [weigher._weigh_object(h, spec) for h in hosts]


def _weighed(hosts, spec):
    return weights.HostWeightHandler().get_weighed_objects(
        [image_props.ImagePropertiesWeigher()], hosts, spec)


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


def test_counts_instances_per_shared_property():
    spec = fakes.fake_spec(image_props=LINUX_PC)
    # host3: os_distro=linux x3 + hw_machine_type=pc x2.
    assert _raw(_fleet(), spec) == [0.0, 2.0, 5.0, 2.0]


def test_setting_ratios_weigh_each_property(conf):
    conf.set_override('image_props_weight_setting',
                      ['os_distro=1', 'hw_machine_type=0'],
                      'filter_scheduler')
    spec = fakes.fake_spec(image_props=LINUX_PC)
    assert _raw(_fleet(), spec) == [0.0, 1.0, 3.0, 1.0]
    conf.set_override('image_props_weight_setting', ['hw_machine_type=2.5'],
                      'filter_scheduler')
    assert _raw(_fleet(), spec) == [0.0, 2.5, 5.0, 2.5]


def test_invalid_setting_entries_are_ignored(conf):
    conf.set_override('image_props_weight_setting',
                      ['os_distro', 'hw_machine_type=x'], 'filter_scheduler')
    spec = fakes.fake_spec(image_props=LINUX_PC)
    # Nothing valid left: every property counts 1, as with no setting.
    assert _raw(_fleet(), spec) == [0.0, 2.0, 5.0, 2.0]


def test_no_image_or_no_properties_weighs_zero():
    assert _raw(_fleet(), fakes.fake_spec()) == [0.0] * 4
    assert _raw(_fleet(), fakes.fake_spec(image_props={})) == [0.0] * 4


def test_instance_fields_copied_from_the_image_are_compared():
    # No image_props attached: architecture / vm_mode / os_type count.
    host = _host(1, _instance(architecture='x86_64', os_type='linux'),
                 _instance(architecture='aarch64', vm_mode='hvm'),
                 _instance())
    spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64',
                                        'hw_vm_mode': 'hvm',
                                        'os_type': 'linux'})
    assert _raw([host], spec) == [3.0]


def test_attached_props_accept_legacy_names_and_objects():
    legacy = _instance({'architecture': 'x86_64', 'unknown_prop': 'x'})
    as_object = _instance(image_meta.ImageMetaProps.from_dict(
        {'hw_architecture': 'x86_64'}))
    spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64'})
    assert _raw([_host(1, legacy, as_object)], spec) == [2.0]


def test_values_are_compared_as_strings():
    host = _host(1, _instance({'hw_maxphysaddr_bits': '42'}))
    spec = fakes.fake_spec(image=image_meta.ImageMeta(
        properties=image_meta.ImageMetaProps(hw_maxphysaddr_bits=42)))
    assert _raw([host], spec) == [1.0]


def test_default_multiplier_is_zero_so_no_effect():
    assert image_props.ImagePropertiesWeigher().weight_multiplier(
        fakes.fake_host_state()) == 0.0
    spec = fakes.fake_spec(image_props=LINUX_PC)
    assert set(_by_host(_weighed(_fleet(), spec)).values()) == {0.0}


def test_positive_multiplier_packs(conf):
    conf.set_override('image_props_weight_multiplier', 1.0,
                      'filter_scheduler')
    spec = fakes.fake_spec(image_props=LINUX_PC)
    result = _weighed(_fleet(), spec)
    assert result[0].obj.host == 'host3'
    assert _by_host(result) == {'host1': 0.0, 'host2': 0.4, 'host3': 1.0,
                                'host4': 0.4}


def test_negative_multiplier_spreads(conf):
    conf.set_override('image_props_weight_multiplier', -1.0,
                      'filter_scheduler')
    spec = fakes.fake_spec(image_props=LINUX_PC)
    assert _weighed(_fleet(), spec)[0].obj.host == 'host1'


def test_aggregate_override_applies_even_when_config_is_zero():
    hosts = _fleet()
    for host in hosts:
        host.aggregates = [
            fakes.fake_aggregate(1, metadata={
                'image_props_weight_multiplier': '2'}),
            fakes.fake_aggregate(2, metadata={
                'image_props_weight_multiplier': '1'})]
    spec = fakes.fake_spec(image_props=LINUX_PC)
    assert _by_host(_weighed(hosts, spec))['host3'] == 1.0


_props = st.fixed_dictionaries({}, optional={
    'os_distro': st.sampled_from(['linux', 'windows']),
    'hw_machine_type': st.sampled_from(['pc', 'q35'])})


@given(table=st.lists(st.lists(_props, max_size=4), min_size=2, max_size=6),
       requested=_props, seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(table, requested, seed):
    spec = fakes.fake_spec(image_props=requested)
    hosts = [_host(i, *map(_instance, props))
             for i, props in enumerate(table, 1)]
    with fakes.conf_overrides('filter_scheduler',
                              image_props_weight_multiplier=1.0):
        before = _by_host(_weighed(hosts, spec))
        seed.shuffle(hosts)
        assert _by_host(_weighed(hosts, spec)) == before


@pytest.mark.parametrize('props', [None, {}])
def test_instance_with_nothing_known_has_no_props(props):
    assert image_props.instance_image_props(_instance(props)) == set()
