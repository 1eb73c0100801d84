"""Wire format of the versioned objects (Nova's envelope, both directions).

Every object this service registers must survive the trip a message body
makes over a real transport (``ObjectSerializer`` + ``json``), must use
Nova's envelope keys, and a primitive that cannot be read must be refused
with ``InvalidObjectPrimitive`` rather than crash the server.  The last
part checks that a RequestSpec written the way Nova Ocata's conductor
sends it is read with the expected values.
"""

import copy
import datetime
import json
import uuid

import pytest
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from scheduler import exception
from scheduler import objects
from scheduler.objects import base
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec

ENVELOPE_KEYS = {'nova_object.name', 'nova_object.namespace',
                 'nova_object.version', 'nova_object.data',
                 'nova_object.changes'}

EXPECTED_OBJECTS = {
    'Aggregate', 'AggregateList', 'CellMapping', 'ComputeNode',
    'ComputeNodeList', 'Destination', 'Flavor', 'ImageMeta',
    'ImageMetaProps', 'Instance', 'InstanceGroup', 'InstanceList',
    'InstanceNUMACell', 'InstanceNUMATopology', 'InstancePCIRequest',
    'InstancePCIRequests', 'NUMATopologyLimits', 'RequestSpec',
    'SchedulerLimits', 'SchedulerRetries', 'SecurityGroup',
    'SecurityGroupList', 'Selection', 'RequestGroup', 'RequestLevelParams',
    'NetworkMetadata', 'NetworkRequest', 'NetworkRequestList',
}

SAMPLE_UUID = '6e6bd3a2-3bb5-4c4c-9d43-43b1cd1d2c61'
SAMPLE_TIME = datetime.datetime(2017, 2, 22, 10, 30, 5,
                                tzinfo=datetime.timezone.utc)


def _registered():
    objects.register_all()
    found = {}
    for name, classes in ovo_base.VersionedObjectRegistry.obj_classes(
            ).items():
        ours = [cls for cls in classes
                if issubclass(cls, base.SchedulerObject)]
        if ours:
            found[name] = ours[0]
    return found


REGISTERED = _registered()


# -- building a sample of every object ------------------------------------

def _sample_value(field_type):
    """A valid, JSON-stable value for an oslo.versionedobjects field type."""
    if isinstance(field_type, fields.Object):
        return _sample_object(field_type._obj_name)
    if isinstance(field_type, fields.List):
        return [_sample_value(field_type._element_type._type)]
    if isinstance(field_type, fields.Set):
        # One element: a set's order is not stable on the wire.
        return {_sample_value(field_type._element_type._type)}
    if isinstance(field_type, fields.Dict):
        return {'key': _sample_value(field_type._element_type._type)}
    if isinstance(field_type, fields.UUID):
        return SAMPLE_UUID
    if isinstance(field_type, fields.IPAddress):
        return '192.0.2.7'
    if isinstance(field_type, fields.DateTime):
        return SAMPLE_TIME
    if isinstance(field_type, fields.Boolean):
        return True
    if isinstance(field_type, fields.Float):
        return 1.5
    if isinstance(field_type, fields.Integer):
        return 7
    if isinstance(field_type, fields.String):
        return 'value'
    raise AssertionError('no sample for field type %r' % field_type)


def _sample_object(name):
    cls = REGISTERED[name]
    obj = cls()
    for field_name, field in cls.fields.items():
        setattr(obj, field_name, _sample_value(field._type))
    return obj


def _primitive(name):
    return json.loads(json.dumps(_sample_object(name).obj_to_primitive()))


def _normalized(wire):
    """``wire`` with every ``changes`` list sorted (it comes from a set)."""
    if isinstance(wire, dict):
        return {key: (sorted(value) if key == 'nova_object.changes'
                      else _normalized(value))
                for key, value in wire.items()}
    if isinstance(wire, list):
        return [_normalized(item) for item in wire]
    return wire


def _deserialize(serializer, entity):
    return serializer.deserialize_entity(None, entity)


# -- the registry ------------------------------------------------------------

def test_every_expected_object_is_registered():
    assert EXPECTED_OBJECTS <= set(REGISTERED)


@pytest.mark.parametrize('name', sorted(REGISTERED))
def test_object_uses_nova_names_and_namespace(name):
    cls = REGISTERED[name]
    assert cls.obj_name() == name
    assert cls.OBJ_PROJECT_NAMESPACE == 'nova'
    assert cls.OBJ_SERIAL_NAMESPACE == 'nova_object'


# -- round trips --------------------------------------------------------------

@pytest.mark.parametrize('name', sorted(REGISTERED))
def test_every_object_round_trips_through_json(name, serializer, to_wire):
    original = _sample_object(name)
    wire = to_wire(original)

    assert set(wire) == ENVELOPE_KEYS
    assert wire['nova_object.name'] == name
    assert wire['nova_object.namespace'] == 'nova'
    assert wire['nova_object.version'] == REGISTERED[name].VERSION
    assert set(wire['nova_object.data']) == set(REGISTERED[name].fields)
    assert set(wire['nova_object.changes']) == set(REGISTERED[name].fields)

    copy_ = _deserialize(serializer, copy.deepcopy(wire))

    assert type(copy_) is type(original)
    for field_name in original.fields:
        assert copy_.obj_attr_is_set(field_name), field_name
    assert copy_.obj_what_changed() == original.obj_what_changed()
    # Serializing the copy again gives the same message.
    assert _normalized(to_wire(copy_)) == _normalized(wire)


def test_nested_objects_use_the_envelope(to_wire):
    wire = to_wire(_sample_object('RequestSpec'))
    data = wire['nova_object.data']
    for field_name in ('flavor', 'image', 'retry', 'limits', 'instance_group',
                       'requested_destination', 'security_groups'):
        assert data[field_name]['nova_object.namespace'] == 'nova'
        assert set(data[field_name]) == ENVELOPE_KEYS
    props = data['image']['nova_object.data']['properties']
    assert props['nova_object.name'] == 'ImageMetaProps'
    hosts = data['retry']['nova_object.data']['hosts']
    assert hosts['nova_object.name'] == 'ComputeNodeList'
    node = hosts['nova_object.data']['objects'][0]
    assert node['nova_object.name'] == 'ComputeNode'


def test_values_survive_the_round_trip(roundtrip):
    spec = request_spec.RequestSpec(
        num_instances=3, instance_uuid=SAMPLE_UUID,
        scheduler_hints={'same_host': ['a', 'b']},
        force_hosts=['host1'])
    spec.flavor = _sample_object('Flavor')
    spec.flavor.memory_mb = 4096
    spec.flavor.extra_specs = {'hw:cpu_policy': 'dedicated'}
    spec.image = _sample_object('ImageMeta')
    spec.image.created_at = SAMPLE_TIME

    copy_ = roundtrip(spec)

    assert copy_.num_instances == 3
    assert copy_.instance_uuid == SAMPLE_UUID
    assert copy_.scheduler_hints == {'same_host': ['a', 'b']}
    assert copy_.force_hosts == ['host1']
    assert copy_.flavor.memory_mb == 4096
    assert copy_.flavor.extra_specs == {'hw:cpu_policy': 'dedicated'}
    assert copy_.image.created_at == SAMPLE_TIME
    assert not copy_.obj_attr_is_set('limits')


def test_unchanged_object_has_no_changes_key(to_wire):
    spec = _sample_object('Flavor')
    spec.obj_reset_changes()
    wire = to_wire(spec)
    assert 'nova_object.changes' not in wire
    assert set(wire) == ENVELOPE_KEYS - {'nova_object.changes'}


def test_plain_containers_of_objects_round_trip(roundtrip):
    aggregates = [_sample_object('Aggregate'), _sample_object('Aggregate')]
    aggregates[1].id = 8
    result = roundtrip({'aggregates': aggregates, 'host_name': 'host1',
                        'count': 2, 'nothing': None})
    assert [agg.id for agg in result['aggregates']] == [7, 8]
    assert result['host_name'] == 'host1'
    assert result['count'] == 2
    assert result['nothing'] is None


def test_selection_lists_round_trip(roundtrip):
    first = _sample_object('Selection')
    second = _sample_object('Selection')
    second.service_host = 'host2'
    result = roundtrip([[first, second]])
    assert [s.service_host for s in result[0]] == ['value', 'host2']


def test_older_minor_version_is_accepted(serializer):
    wire = _primitive('Flavor')
    wire['nova_object.version'] = '1.1'
    del wire['nova_object.data']['description']
    flavor = _deserialize(serializer, wire)
    assert flavor.VERSION == '1.1'
    assert flavor.memory_mb == 7
    assert not flavor.obj_attr_is_set('description')


def test_unknown_fields_of_a_nova_primitive_are_ignored(serializer):
    wire = _primitive('Flavor')
    wire['nova_object.data'].update(deleted=False, deleted_at=None,
                                    some_future_field={'a': 1})
    wire['nova_object.changes'].append('deleted')
    flavor = _deserialize(serializer, wire)
    assert flavor.memory_mb == 7
    assert 'deleted' not in flavor.obj_what_changed()


# -- primitives that must be refused ------------------------------------------

def _bump_minor(version):
    major, minor = version.split('.')
    return '%s.%d' % (major, int(minor) + 1)


@pytest.mark.parametrize('name', sorted(REGISTERED))
def test_newer_minor_version_is_refused(name, serializer):
    wire = _primitive(name)
    wire['nova_object.version'] = _bump_minor(REGISTERED[name].VERSION)
    with pytest.raises(exception.InvalidObjectPrimitive) as info:
        _deserialize(serializer, wire)
    assert name in str(info.value)


def test_newer_major_version_is_refused(serializer):
    wire = _primitive('RequestSpec')
    wire['nova_object.version'] = '2.0'
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def test_newer_nested_object_is_refused(serializer):
    wire = _primitive('RequestSpec')
    wire['nova_object.data']['flavor']['nova_object.version'] = '1.99'
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def test_newer_object_inside_a_plain_list_is_refused(serializer):
    wire = _primitive('Aggregate')
    wire['nova_object.version'] = '1.4'
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, {'aggregates': [wire]})


def test_unknown_object_name_is_refused(serializer):
    wire = _primitive('Flavor')
    wire['nova_object.name'] = 'NoSuchObject'
    with pytest.raises(exception.InvalidObjectPrimitive) as info:
        _deserialize(serializer, wire)
    assert 'NoSuchObject' in str(info.value)


@pytest.mark.parametrize('namespace', ['cinder', 'versionedobjects', '', None])
def test_wrong_namespace_is_refused(namespace, serializer):
    wire = _primitive('Flavor')
    wire['nova_object.namespace'] = namespace
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


@pytest.mark.parametrize('name,field_name,value', [
    ('Flavor', 'memory_mb', 'lots'),
    ('Flavor', 'extra_specs', ['not', 'a', 'dict']),
    ('Flavor', 'extra_specs', {'hw:numa_nodes': {'nested': 'dict'}}),
    ('RequestSpec', 'num_instances', 'two'),
    ('RequestSpec', 'scheduler_hints', {'group': 5}),
    ('RequestSpec', 'scheduler_hints', {'group': [{'a': 'b'}]}),
    ('RequestSpec', 'ignore_hosts', 42),
    ('RequestSpec', 'flavor', {'memory_mb': 512}),
    ('RequestSpec', 'flavor', 'm1.small'),
    ('Aggregate', 'metadata', 'availability_zone=az1'),
    ('InstanceNUMACell', 'cpuset', ['zero', 'one']),
    ('SchedulerRetries', 'num_attempts', {'n': 1}),
])
def test_wrong_field_type_is_refused(name, field_name, value, serializer):
    wire = _primitive(name)
    wire['nova_object.data'][field_name] = value
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def test_nested_object_of_the_wrong_class_is_refused(serializer):
    wire = _primitive('RequestSpec')
    wire['nova_object.data']['flavor'] = _primitive('ImageMeta')
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


@pytest.mark.parametrize('key', ['nova_object.namespace',
                                 'nova_object.version', 'nova_object.data'])
def test_primitive_missing_an_envelope_key_is_refused(key, serializer):
    wire = _primitive('Flavor')
    del wire[key]
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


@pytest.mark.parametrize('version', [None, 1.8, 'one.eight', '', ['1', '8']])
def test_malformed_version_is_refused(version, serializer):
    wire = _primitive('RequestSpec')
    wire['nova_object.version'] = version
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def test_unhashable_object_name_is_refused(serializer):
    wire = _primitive('Flavor')
    wire['nova_object.name'] = ['Flavor']
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def _nested(depth, make):
    outer = inner = make()
    for _ in range(depth):
        child = make()
        if isinstance(inner, list):
            inner.append(child)
        else:
            inner['k'] = child
        inner = child
    return outer


@pytest.mark.parametrize('make', [list, dict], ids=['lists', 'dicts'])
def test_deeply_nested_argument_is_refused(make, serializer):
    # Built in Python: json itself refuses to decode such depth.
    entity = _nested(10000, make)
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, entity)


def test_deeply_nested_value_inside_an_object_is_refused(serializer):
    wire = _primitive('RequestSpec')
    wire['nova_object.data']['scheduler_hints'] = {
        'group': _nested(10000, list)}
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, wire)


def test_serializer_still_works_after_refusing(serializer, roundtrip):
    with pytest.raises(exception.InvalidObjectPrimitive):
        _deserialize(serializer, _nested(10000, list))
    assert roundtrip(_sample_object('Flavor')).memory_mb == 7


def test_invalid_object_primitive_is_an_invalid_error():
    assert issubclass(exception.InvalidObjectPrimitive, exception.Invalid)
    exc = exception.InvalidObjectPrimitive(reason='boom')
    assert 'boom' in str(exc)


# -- a RequestSpec as Nova Ocata's conductor sends it -------------------------

INSTANCE_UUID = 'f4b1b5d6-2a87-4a0c-8c61-0b4d0a7c3f10'
GROUP_UUID = '1b5c7e0c-8a2b-4d38-9b1f-7f2f4c2b6f0e'
MEMBER_UUID = '0c9f0d87-6c8e-4f7e-b2b6-5f0f6e0c1b2a'
IMAGE_UUID = 'c1a7e9d2-5b0f-4b0e-8a0e-9f1e2d3c4b5a'
CELL_UUID = '9d6f1c2e-3b4a-4c5d-8e7f-1a2b3c4d5e6f'
TIMESTAMP = '2017-02-22T10:30:05Z'


def _env(name, version, data, changes=None):
    prim = {'nova_object.name': name, 'nova_object.namespace': 'nova',
            'nova_object.version': version, 'nova_object.data': data}
    if changes is not None:
        prim['nova_object.changes'] = changes
    return prim


def nova_ocata_request_spec():
    """A RequestSpec 1.8 primitive as Nova 15.0.0's conductor sends it.

    Written by hand from the field lists of Nova's objects: the nested
    Flavor is 1.1 with the persistent-object fields, ImageMeta 1.8 with
    ImageMetaProps 1.16 (including properties this service does not
    model), InstanceGroup 1.10 with ``policies``, SchedulerRetries with a
    ComputeNodeList of stubs, SchedulerLimits and Destination 1.1 with a
    CellMapping 1.0.
    """
    flavor = _env('Flavor', '1.1', {
        'id': 6, 'name': 'm1.medium', 'memory_mb': 4096, 'vcpus': 2,
        'root_gb': 40, 'ephemeral_gb': 5, 'flavorid': '3', 'swap': 512,
        'rxtx_factor': 1.0, 'vcpu_weight': None, 'disabled': False,
        'is_public': True,
        'extra_specs': {'hw:cpu_policy': 'shared',
                        'capabilities:hypervisor_type': 'QEMU'},
        'projects': [], 'created_at': TIMESTAMP, 'updated_at': None,
        'deleted_at': None, 'deleted': False,
    }, changes=['extra_specs', 'projects'])
    props = _env('ImageMetaProps', '1.16', {
        'hw_architecture': 'x86_64', 'img_hv_type': 'qemu',
        'hw_vm_mode': 'hvm', 'img_hv_requested_version': '>=2.0',
        'hw_disk_bus': 'virtio', 'hw_qemu_guest_agent': True,
        'hw_rng_model': 'virtio', 'os_require_quiesce': False,
    })
    image = _env('ImageMeta', '1.8', {
        'id': IMAGE_UUID, 'name': 'cirros-0.3.5', 'status': 'active',
        'visibility': 'public', 'protected': False,
        'checksum': 'f8ab98ff5e73ebab884d80c9dc9c7290',
        'owner': 'f1a2b3', 'size': 13267968, 'virtual_size': 0,
        'container_format': 'bare', 'disk_format': 'qcow2',
        'created_at': TIMESTAMP, 'updated_at': TIMESTAMP, 'tags': [],
        'direct_url': '', 'min_ram': 0, 'min_disk': 0,
        'properties': props,
    })
    group = _env('InstanceGroup', '1.10', {
        'id': 3, 'uuid': GROUP_UUID, 'name': 'web',
        'user_id': 'u1', 'project_id': 'p1',
        'policies': ['anti-affinity'], 'members': [MEMBER_UUID],
        'hosts': ['host5'], 'created_at': TIMESTAMP, 'updated_at': None,
        'deleted_at': None, 'deleted': False,
    })
    node = _env('ComputeNode', '1.16', {'host': 'host2',
                                        'hypervisor_hostname': 'node2'},
                changes=['host', 'hypervisor_hostname'])
    retry = _env('SchedulerRetries', '1.1', {
        'num_attempts': 2,
        'hosts': _env('ComputeNodeList', '1.16', {'objects': [node]},
                      changes=['objects']),
    }, changes=['hosts', 'num_attempts'])
    limits = _env('SchedulerLimits', '1.0', {
        'numa_topology': None, 'vcpu': None, 'disk_gb': None,
        'memory_mb': 6144,
    })
    cell = _env('CellMapping', '1.0', {
        'id': 1, 'uuid': CELL_UUID, 'name': 'cell1',
        'transport_url': 'rabbit://nova:secret@rabbit:5672/',
        'database_connection': 'mysql+pymysql://nova:secret@db/nova',
        'created_at': TIMESTAMP, 'updated_at': None,
    })
    destination = _env('Destination', '1.1', {
        'host': 'host1', 'node': 'node1', 'cell': cell,
    })
    security_groups = _env('SecurityGroupList', '1.0', {
        'objects': [_env('SecurityGroup', '1.2', {'name': 'default'})],
    })
    pci_requests = _env('InstancePCIRequests', '1.1', {
        'instance_uuid': INSTANCE_UUID, 'requests': [],
    })
    return _env('RequestSpec', '1.8', {
        'id': 17, 'instance_uuid': INSTANCE_UUID,
        'project_id': 'p1', 'availability_zone': 'az1',
        'num_instances': 2, 'flavor': flavor, 'image': image,
        'numa_topology': None, 'pci_requests': pci_requests,
        'ignore_hosts': ['host3'], 'force_hosts': None,
        'force_nodes': None, 'retry': retry, 'limits': limits,
        'instance_group': group,
        'scheduler_hints': {'group': [GROUP_UUID],
                            'same_host': [MEMBER_UUID, INSTANCE_UUID]},
        'requested_destination': destination,
        'security_groups': security_groups,
    }, changes=['flavor', 'image', 'instance_group', 'num_instances',
                'retry', 'scheduler_hints'])


def test_nova_ocata_request_spec_is_read(serializer):
    wire = json.loads(json.dumps(nova_ocata_request_spec()))
    spec = _deserialize(serializer, wire)

    assert isinstance(spec, request_spec.RequestSpec)
    assert spec.VERSION == '1.8'
    assert spec.id == 17
    assert spec.instance_uuid == INSTANCE_UUID
    assert spec.project_id == 'p1'
    assert spec.availability_zone == 'az1'
    assert spec.num_instances == 2
    assert spec.ignore_hosts == ['host3']
    assert spec.force_hosts is None
    assert spec.numa_topology is None

    assert spec.flavor.VERSION == '1.1'
    assert (spec.vcpus, spec.memory_mb, spec.root_gb, spec.ephemeral_gb,
            spec.swap) == (2, 4096, 40, 5, 512)
    assert spec.flavor.extra_specs['capabilities:hypervisor_type'] == 'QEMU'
    assert spec.flavor.created_at == datetime.datetime(
        2017, 2, 22, 10, 30, 5, tzinfo=datetime.timezone.utc)
    assert spec.requested_resources_disk_mb == 45 * 1024 + 512

    assert spec.image.id == IMAGE_UUID
    assert spec.image.disk_format == 'qcow2'
    assert spec.image.properties.hw_architecture == 'x86_64'
    assert spec.image.properties.get('img_hv_type') == 'qemu'
    assert spec.image.properties.get('img_hv_requested_version') == '>=2.0'
    assert spec.image.properties.get('hw_qemu_guest_agent') is True

    group = spec.instance_group
    assert group.VERSION == '1.10'
    assert group.uuid == GROUP_UUID
    assert group.policy_name == 'anti-affinity'
    assert group.members == [MEMBER_UUID]
    assert group.host_list() == ['host5']

    assert spec.retry.num_attempts == 2
    assert spec.retry.host_node_pairs() == {('host2', 'node2')}
    assert spec.retry.to_dict() == {'num_attempts': 2,
                                    'hosts': [['host2', 'node2']]}
    assert spec.limits.to_dict() == {'memory_mb': 6144}

    destination = spec.requested_destination
    assert (destination.host, destination.node) == ('host1', 'node1')
    assert destination.cell.uuid == CELL_UUID
    assert destination.cell.name == 'cell1'

    assert [sg.name for sg in spec.security_groups.objects] == ['default']
    assert spec.pci_requests.requests == []

    assert spec.get_scheduler_hint('group') == GROUP_UUID
    assert spec.get_scheduler_hint('same_host') == [MEMBER_UUID,
                                                    INSTANCE_UUID]
    assert spec.obj_what_changed() == {
        'flavor', 'image', 'instance_group', 'num_instances', 'retry',
        'scheduler_hints'}

    spec.ensure_defaults()
    spec.validate()


def test_nova_newton_request_spec_is_read(serializer):
    """Newton sends 1.6: no security_groups yet."""
    wire = nova_ocata_request_spec()
    wire['nova_object.version'] = '1.6'
    del wire['nova_object.data']['security_groups']
    spec = _deserialize(serializer, json.loads(json.dumps(wire)))
    assert spec.VERSION == '1.6'
    assert not spec.obj_attr_is_set('security_groups')
    assert spec.instance_group.policy_name == 'anti-affinity'


def test_nova_request_spec_from_a_newer_release_is_refused(serializer):
    """A RequestSpec newer than Nova 34's 1.15 must not be half-read: the
    error names the object, its version and ours."""
    wire = nova_ocata_request_spec()
    wire['nova_object.version'] = '1.16'
    wire['nova_object.data']['is_bfv'] = False
    with pytest.raises(exception.ObjectVersionNotSupported) as info:
        _deserialize(serializer, wire)
    assert info.value.kwargs == {'objname': 'RequestSpec', 'objver': '1.16',
                                 'supported': '1.15'}
    assert 'RequestSpec version 1.16 is not supported' in str(info.value)
    assert 'up to version 1.15' in str(info.value)


def test_our_request_spec_is_readable_as_nova_ocata_writes_it(to_wire):
    """The primitive we send has the same shape as Nova's."""
    nova = nova_ocata_request_spec()
    spec = base.ObjectSerializer().deserialize_entity(
        None, json.loads(json.dumps(nova)))
    ours = to_wire(spec)
    assert ours['nova_object.name'] == 'RequestSpec'
    assert ours['nova_object.version'] == '1.8'
    for key in ('flavor', 'image', 'instance_group', 'retry', 'limits',
                'requested_destination', 'security_groups'):
        assert (ours['nova_object.data'][key]['nova_object.name'] ==
                nova['nova_object.data'][key]['nova_object.name'])
    assert (ours['nova_object.data']['instance_group']['nova_object.data']
            ['policies'] == ['anti-affinity'])


def test_cell_mapping_single_cell_uuid_is_a_stable_uuid():
    assert str(uuid.UUID(cell_mapping.SINGLE_CELL_UUID)) == (
        cell_mapping.SINGLE_CELL_UUID)
