"""SchedulerObject's accessors against oslo.versionedobjects' own."""

import pytest

from scheduler.objects import aggregate
from scheduler.objects import base
from scheduler.objects import flavor
from scheduler.objects import request_spec
from scheduler.objects import selection

OBJECTS = {
    'spec': lambda: request_spec.RequestSpec(
        num_instances=2, project_id='p', ignore_hosts=None),
    'empty spec': request_spec.RequestSpec,
    'flavor': lambda: flavor.Flavor(memory_mb=512, extra_specs={}),
    'aggregate': lambda: aggregate.Aggregate(id=1, name='agg',
                                             metadata={'a': '1'}),
    'selection': lambda: selection.Selection(service_host='h',
                                             nodename='n'),
}


@pytest.mark.parametrize('make', OBJECTS.values(), ids=OBJECTS.keys())
def test_obj_get_is_the_value_when_set_else_the_default(make):
    """Every field: the getter's value when set (None included), the
    default when not (the storage obj_get reads is ovo's)."""
    obj = make()
    default = object()
    for name in obj.fields:
        expected = (getattr(obj, name) if obj.obj_attr_is_set(name)
                    else default)
        assert obj.obj_get(name, default) is expected, name


def test_obj_get_refuses_a_name_that_is_not_a_field():
    with pytest.raises(AttributeError):
        request_spec.RequestSpec().obj_get('no_such_field')


def test_obj_get_is_defined_once():
    assert request_spec.RequestSpec.obj_get is base.SchedulerObject.obj_get


def _nested_spec():
    spec = request_spec.RequestSpec(
        num_instances=2, project_id='p',
        flavor=flavor.Flavor(memory_mb=512, extra_specs={}))
    spec.obj_reset_changes(recursive=True)
    return spec


@pytest.mark.parametrize('make', OBJECTS.values(), ids=OBJECTS.keys())
def test_obj_attr_is_set_answers_as_ovo(make):
    obj = make()
    for name in list(obj.fields) + list(obj.obj_extra_fields):
        assert (obj.obj_attr_is_set(name) ==
                base.ovo_base.VersionedObject.obj_attr_is_set(obj, name))
    with pytest.raises(AttributeError):
        obj.obj_attr_is_set('no_such_field')


@pytest.mark.parametrize('change', [
    lambda spec: None,
    lambda spec: setattr(spec, 'project_id', 'q'),
    lambda spec: setattr(spec.flavor, 'memory_mb', 1024),
    lambda spec: setattr(spec, 'flavor', flavor.Flavor(vcpus=1)),
], ids=['none', 'own field', 'nested object', 'new object'])
def test_obj_what_changed_answers_as_ovo(change):
    """Own changes and changes inside a sub-object, as ovo counts them."""
    spec = _nested_spec()
    change(spec)
    assert (spec.obj_what_changed() ==
            base.ovo_base.VersionedObject.obj_what_changed(spec))
    for obj in OBJECTS.values():
        made = obj()
        assert (made.obj_what_changed() ==
                base.ovo_base.VersionedObject.obj_what_changed(made))
