"""``Instance.placed``: the instances of a request, each on its host, as
the host view counts them; those of one request are copies of one made
for the shared values, and must be independent objects."""

import uuid

from scheduler.objects import flavor as flavor_obj
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec


def _spec(memory_mb=512, project_id='p1', zone=None):
    flavor = flavor_obj.Flavor(id=7, memory_mb=memory_mb, vcpus=2,
                               root_gb=10, ephemeral_gb=1, flavorid='7',
                               name='f', swap=0, extra_specs={})
    return request_spec.RequestSpec(flavor=flavor, project_id=project_id,
                                    user_id='u1', availability_zone=zone,
                                    num_instances=2)


def _fields(inst):
    return {name: getattr(inst, name) for name in inst.fields
            if inst.obj_attr_is_set(name)}


def test_same_as_built_from_a_row():
    spec = _spec(zone='az1')
    uid = str(uuid.uuid4())
    placed = instance_obj.Instance.placed(uid, 'h1', 'n1', spec)
    row = instance_obj.Instance.from_db({
        'uuid': uid, 'host': 'h1', 'node': 'n1', 'instance_type_id': 7,
        'memory_mb': 512, 'vcpus': 2, 'root_gb': 10, 'ephemeral_gb': 1,
        'project_id': 'p1', 'user_id': 'u1', 'availability_zone': 'az1'})
    assert _fields(placed) == _fields(row)
    assert placed.obj_what_changed() == set()
    assert placed.obj_to_primitive() == row.obj_to_primitive()


def test_instances_of_a_request_are_independent():
    spec = _spec()
    first = instance_obj.Instance.placed('a' * 8 + '-0000-4000-8000-' +
                                         '0' * 12, 'h1', 'n1', spec)
    second = instance_obj.Instance.placed(str(uuid.uuid4()), 'h2', 'n2',
                                          spec)
    assert (first.host, first.node) == ('h1', 'n1')
    assert (second.host, second.node) == ('h2', 'n2')
    second.memory_mb = 1
    second.obj_reset_changes()
    first.vcpus = 9
    assert first.memory_mb == 512 and second.vcpus == 2
    assert first.obj_what_changed() == {'vcpus'}
    assert second.obj_what_changed() == set()


def test_another_request_gets_its_own_values():
    instance_obj.Instance.placed(str(uuid.uuid4()), 'h1', 'n1', _spec())
    other = instance_obj.Instance.placed(
        str(uuid.uuid4()), 'h1', 'n1',
        _spec(memory_mb=2048, project_id='p2', zone='az2'))
    assert (other.memory_mb, other.project_id,
            other.availability_zone) == (2048, 'p2', 'az2')
