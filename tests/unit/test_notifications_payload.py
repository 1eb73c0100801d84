"""The versioned notification payload (``RequestSpecPayload`` and the
payloads in it, Nova 34.0.0's names and versions) built from a rich
RequestSpec as the service holds it after reading Nova's message.

``rich_spec()`` is shared with the functional test
(``tests/functional/test_versioned_notifications.py``).
"""

import datetime
import json

import pytest
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

from scheduler import objects
from scheduler.objects import base
from scheduler.objects import cell_mapping
from scheduler.objects import compute_node
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import notification
from scheduler.objects import numa
from scheduler.objects import pci
from scheduler.objects import request_spec
from scheduler.objects import security_group

objects.register_all()

INSTANCE_UUID = '5a1e7d9c-6f0b-4b8e-9d3a-2c4f6e8a0b1c'
IMAGE_UUID = '0c9b8a7d-6e5f-4a3b-8c1d-2e3f4a5b6c7d'
GROUP_UUID = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d'
MEMBER_UUID = 'b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e'
AGGREGATE_UUID = 'c3d4e5f6-a7b8-4c9d-8e1f-2a3b4c5d6e7f'
PCI_REQUEST_UUID = 'd4e5f6a7-b8c9-4d0e-9f2a-3b4c5d6e7f80'
SG_UUID = 'e5f6a7b8-c9d0-4e1f-8a3b-4c5d6e7f8091'
SECRET_UUID = 'f6a7b8c9-d0e1-4f2a-9b4c-5d6e7f8091a2'
CREATED = datetime.datetime(2026, 2, 22, 10, 30, 5,
                            tzinfo=datetime.timezone.utc)

# Nova 34.0.0's payload classes and versions.
NOVA_34_PAYLOADS = {
    'RequestSpecPayload': '1.1', 'FlavorPayload': '1.4',
    'ImageMetaPayload': '1.0', 'ImageMetaPropsPayload': '1.20',
    'ServerGroupPayload': '1.1', 'InstanceNUMATopologyPayload': '1.0',
    'InstanceNUMACellPayload': '1.2', 'VirtCPUTopologyPayload': '1.0',
    'InstancePCIRequestsPayload': '1.0',
    'InstancePCIRequestPayload': '1.1', 'DestinationPayload': '1.0',
    'SchedulerRetriesPayload': '1.0', 'CellMappingPayload': '2.0',
}


# -- the rich request -------------------------------------------------------

def _image():
    props = image_meta.ImageMetaProps(
        hw_architecture='x86_64', hw_disk_bus='virtio', hw_numa_nodes='1',
        hw_numa_cpus=[{0, 1}], hw_numa_mem=[512], hw_cpu_policy='dedicated',
        hw_boot_menu=True, hw_video_ram=64, os_distro='ubuntu',
        img_hv_requested_version='>= 2.0',
        hw_ephemeral_encryption_secret_uuid=SECRET_UUID)
    return image_meta.ImageMeta(
        id=IMAGE_UUID, name='ubuntu', status='active', visibility='public',
        protected=False, checksum='c0ffee', owner='project-1', size=1024,
        virtual_size=2048, container_format='bare', disk_format='qcow2',
        created_at=CREATED, updated_at=None, tags=['base', 'lts'],
        min_ram=0, min_disk=1, properties=props)


def _numa_topology():
    cell = numa.InstanceNUMACell(
        id=0, cpuset=set(), pcpuset={0, 1}, memory=512, pagesize=None,
        cpu_policy='dedicated', cpu_thread_policy='prefer',
        cpuset_reserved=None, cpu_pinning_raw=None)
    return numa.InstanceNUMATopology(cells=[cell],
                                     emulator_threads_policy='share')


def _pci_requests():
    request = pci.InstancePCIRequest(
        count=1, spec=[{'vendor_id': '8086', 'product_id': '1520'}],
        alias_name='nic', is_new=False, request_id=PCI_REQUEST_UUID,
        requester_id=None, numa_policy='preferred')
    return pci.InstancePCIRequests(requests=[request])


def _group():
    return group_obj.InstanceGroup(
        uuid=GROUP_UUID, name='web', user_id='user-1',
        project_id='project-1', policy='anti-affinity',
        policies=['anti-affinity'], members=[MEMBER_UUID], hosts=['host1'],
        _rules={'max_server_per_host': '1'})


def _destination(host):
    cell = cell_mapping.CellMapping(uuid=cell_mapping.SINGLE_CELL_UUID,
                                    name='cell1', disabled=False)
    return request_spec.Destination(host=host, node=host, cell=cell,
                                    aggregates=[AGGREGATE_UUID])


def _retry():
    tried = compute_node.ComputeNode(host='host1',
                                     hypervisor_hostname='host1-node')
    return request_spec.SchedulerRetries(
        num_attempts=2,
        hosts=compute_node.ComputeNodeList(objects=[tried]))


def _security_groups():
    return security_group.SecurityGroupList(objects=[
        security_group.SecurityGroup(id=1, name='default', uuid=SG_UUID),
        security_group.SecurityGroup(id=2, name='web')])


def _flavor():
    flavor = flavor_obj.Flavor(
        id=6, name='pinned', flavorid='p1', memory_mb=512, vcpus=2,
        root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
        vcpu_weight=None, disabled=False, is_public=True,
        extra_specs={'hw:cpu_policy': 'dedicated'}, projects=[],
        description='two pinned vCPUs')
    return flavor


def _as_received(spec):
    """``spec`` written and read again as the RPC layer does (through
    JSON), so that it is what the service holds."""
    serializer = base.ObjectSerializer()
    wire = json.loads(json.dumps(serializer.serialize_entity(None, spec)))
    return serializer.deserialize_entity(None, wire)


def rich_spec(host='host0', instance_uuid=INSTANCE_UUID, received=True):
    """A RequestSpec with every part the payload carries: flavor, image
    and properties, a dedicated NUMA cell and PCI requests (both without
    their own instance_uuid, as Nova's API builds them), an anti-affinity
    group, a destination (``host``, the single cell, AGGREGATE_UUID),
    retries (host1), security groups, hints and ignored hosts.

    ``received``: as the service holds it after reading it (True), or as
    Nova sends it (False; a dedicated cell's ``cpuset`` is empty)."""
    spec = request_spec.RequestSpec(
        instance_uuid=instance_uuid, project_id='project-1',
        user_id='user-1', availability_zone='nova', num_instances=1,
        flavor=_flavor(), image=_image(), numa_topology=_numa_topology(),
        pci_requests=_pci_requests(), instance_group=_group(),
        requested_destination=_destination(host), retry=_retry(),
        security_groups=_security_groups(), ignore_hosts=['host2'],
        force_hosts=None, force_nodes=None, limits=None,
        scheduler_hints={'group': [GROUP_UUID], 'custom': ['a', 'b']},
        is_bfv=False)
    return _as_received(spec) if received else spec


# -- reading a primitive ----------------------------------------------------

def unwrap(value):
    """A primitive with every object envelope checked (Nova's namespace,
    no ``changes``) and replaced by ``{'<name>': (version, data)}``."""
    if isinstance(value, dict) and 'nova_object.name' in value:
        assert value['nova_object.namespace'] == 'nova'
        assert 'nova_object.changes' not in value
        data = {key: unwrap(item)
                for key, item in value['nova_object.data'].items()}
        return {value['nova_object.name']: (value['nova_object.version'],
                                            data)}
    if isinstance(value, (list, tuple)):
        return [unwrap(item) for item in value]
    if isinstance(value, dict):
        return {key: unwrap(item) for key, item in value.items()}
    return value


def versions_in(value):
    """``{name: version}`` of the objects of an unwrapped primitive."""
    found = {}
    if isinstance(value, list):
        for item in value:
            found.update(versions_in(item))
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, tuple):
                found[key] = item[0]
                found.update(versions_in(item[1]))
            else:
                found.update(versions_in(item))
    return found


def payload_of(spec):
    primitive = notification.RequestSpecPayload.from_request_spec(
        spec).obj_to_primitive()
    return json.loads(json.dumps(primitive))


def data_of(spec):
    """The RequestSpecPayload data of ``spec``, unwrapped."""
    version, data = unwrap(payload_of(spec))['RequestSpecPayload']
    assert version == '1.1'
    return data


def _obj(name, data):
    return {name: (NOVA_34_PAYLOADS[name], data)}


# -- the rich request's payload ----------------------------------------------

def test_every_payload_has_nova_34_name_and_version():
    found = versions_in(unwrap(payload_of(rich_spec())))
    expected = dict(NOVA_34_PAYLOADS)
    del expected['VirtCPUTopologyPayload']   # no cell has a cpu_topology
    assert found == expected


def test_registered_classes_have_nova_34_versions():
    classes = ovo_base.VersionedObjectRegistry.obj_classes()
    assert {name: classes[name][0].VERSION
            for name in NOVA_34_PAYLOADS} == NOVA_34_PAYLOADS


def test_request_fields():
    data = data_of(rich_spec())
    scalars = {key: value for key, value in data.items()
               if not isinstance(value, dict) or key == 'scheduler_hints'}
    assert scalars == {
        'instance_uuid': INSTANCE_UUID, 'project_id': 'project-1',
        'user_id': 'user-1', 'availability_zone': 'nova',
        'num_instances': 1, 'ignore_hosts': ['host2'],
        'force_hosts': None, 'force_nodes': None,
        'scheduler_hints': {'group': [GROUP_UUID], 'custom': ['a', 'b']},
        'security_groups': [SG_UUID, 'web'],
    }
    # Nova declares image_meta and never fills it: the image is in image.
    assert 'image_meta' not in data


def test_flavor():
    assert data_of(rich_spec())['flavor'] == _obj('FlavorPayload', {
        'flavorid': 'p1', 'memory_mb': 512, 'vcpus': 2, 'root_gb': 1,
        'ephemeral_gb': 0, 'name': 'pinned', 'swap': 0,
        'rxtx_factor': 1.0, 'vcpu_weight': None, 'disabled': False,
        'is_public': True, 'extra_specs': {'hw:cpu_policy': 'dedicated'},
        'projects': [], 'description': 'two pinned vCPUs'})


def test_image_and_its_properties():
    props = _obj('ImageMetaPropsPayload', {
        'hw_architecture': 'x86_64', 'hw_disk_bus': 'virtio',
        'hw_numa_nodes': 1, 'hw_numa_cpus': [[0, 1]], 'hw_numa_mem': [512],
        'hw_cpu_policy': 'dedicated', 'hw_boot_menu': True,
        'hw_video_ram': 64, 'os_distro': 'ubuntu',
        'img_hv_requested_version': '>= 2.0'})
    assert data_of(rich_spec())['image'] == _obj('ImageMetaPayload', {
        'id': IMAGE_UUID, 'name': 'ubuntu', 'status': 'active',
        'visibility': 'public', 'protected': False, 'checksum': 'c0ffee',
        'owner': 'project-1', 'size': 1024, 'virtual_size': 2048,
        'container_format': 'bare', 'disk_format': 'qcow2',
        'created_at': '2026-02-22T10:30:05Z', 'updated_at': None,
        'tags': ['base', 'lts'], 'direct_url': None, 'min_ram': 0,
        'min_disk': 1, 'properties': props})


def test_numa_topology_as_nova_holds_it():
    # A dedicated cell keeps its vCPUs in pcpuset only; the request's
    # instance_uuid stands in for the topology's missing one.
    cell = _obj('InstanceNUMACellPayload', {
        'id': 0, 'cpuset': [], 'pcpuset': [0, 1], 'cpuset_reserved': None,
        'memory': 512, 'pagesize': None, 'cpu_topology': None,
        'cpu_pinning_raw': None, 'cpu_policy': 'dedicated',
        'cpu_thread_policy': 'prefer'})
    assert data_of(rich_spec())['numa_topology'] == _obj(
        'InstanceNUMATopologyPayload', {
            'instance_uuid': INSTANCE_UUID, 'cells': [cell],
            'emulator_threads_policy': 'share'})


def test_pci_requests():
    request = _obj('InstancePCIRequestPayload', {
        'count': 1, 'spec': [{'vendor_id': '8086', 'product_id': '1520'}],
        'alias_name': 'nic', 'request_id': PCI_REQUEST_UUID,
        'numa_policy': 'preferred'})
    assert data_of(rich_spec())['pci_requests'] == _obj(
        'InstancePCIRequestsPayload', {'instance_uuid': INSTANCE_UUID,
                                       'requests': [request]})


def test_server_group():
    assert data_of(rich_spec())['instance_group'] == _obj(
        'ServerGroupPayload', {
            'uuid': GROUP_UUID, 'name': 'web', 'user_id': 'user-1',
            'project_id': 'project-1', 'policies': ['anti-affinity'],
            'members': [MEMBER_UUID], 'hosts': ['host1'],
            'policy': 'anti-affinity',
            'rules': {'max_server_per_host': '1'}})


def test_destination_and_retry():
    data = data_of(rich_spec())
    cell = _obj('CellMappingPayload', {
        'uuid': cell_mapping.SINGLE_CELL_UUID, 'name': 'cell1',
        'disabled': False})
    assert data['requested_destination'] == _obj('DestinationPayload', {
        'host': 'host0', 'node': 'host0', 'cell': cell,
        'aggregates': [AGGREGATE_UUID]})
    assert data['retry'] == _obj('SchedulerRetriesPayload', {
        'num_attempts': 2, 'hosts': ['host1-node']})


def test_the_request_is_not_changed():
    spec = rich_spec()
    before = spec.obj_to_primitive()
    payload_of(spec)
    assert spec.obj_to_primitive() == before
    assert not spec.numa_topology.obj_attr_is_set('instance_uuid')


def test_primitive_reads_back_into_our_classes():
    payload = notification.RequestSpecPayload.from_request_spec(rich_spec())
    primitive = json.loads(json.dumps(payload.obj_to_primitive()))
    again = notification.RequestSpecPayload.obj_from_primitive(primitive)
    again.obj_reset_changes(recursive=True)
    assert json.loads(json.dumps(again.obj_to_primitive())) == primitive
    assert again.image.properties.hw_numa_nodes == 1


# -- rules for missing and special values -----------------------------------

def test_minimal_request():
    spec = request_spec.RequestSpec(instance_uuid=INSTANCE_UUID,
                                    flavor=_flavor())
    data = data_of(spec)
    assert data['num_instances'] == 1   # the field's default
    assert data['security_groups'] == []
    for name in ('project_id', 'user_id', 'availability_zone',
                 'ignore_hosts', 'scheduler_hints', 'image',
                 'numa_topology', 'pci_requests', 'instance_group',
                 'requested_destination', 'retry', 'force_hosts',
                 'force_nodes'):
        assert data[name] is None, name
    assert list(data['flavor']) == ['FlavorPayload']


def test_no_flavor_is_none():
    spec = request_spec.RequestSpec(instance_uuid=INSTANCE_UUID)
    assert data_of(spec)['flavor'] is None


def test_unset_flavor_fields_are_none():
    flavor = flavor_obj.Flavor(name='tiny', swap=0, disabled=False,
                               is_public=True)
    spec = request_spec.RequestSpec(instance_uuid=INSTANCE_UUID,
                                    flavor=flavor)
    _, data = data_of(spec)['flavor']['FlavorPayload']
    assert data['projects'] is None and data['extra_specs'] is None
    assert data['memory_mb'] is None and data['description'] is None


def test_forced_host_and_node_are_the_first_ones():
    spec = request_spec.RequestSpec(
        instance_uuid=INSTANCE_UUID, force_hosts=['host3', 'host4'],
        force_nodes=['node3'])
    data = data_of(spec)
    assert (data['force_hosts'], data['force_nodes']) == ('host3', 'node3')
    spec.force_hosts = []
    assert data_of(spec)['force_hosts'] is None


def test_own_instance_uuids_of_numa_and_pci_are_kept():
    other = '11111111-2222-4333-8444-555555555555'
    spec = rich_spec()
    spec.numa_topology.instance_uuid = other
    spec.pci_requests.instance_uuid = other
    data = data_of(spec)
    for name, payload in (('numa_topology', 'InstanceNUMATopologyPayload'),
                          ('pci_requests', 'InstancePCIRequestsPayload')):
        assert data[name][payload][1]['instance_uuid'] == other


def test_shared_and_mixed_cells_keep_their_cpuset():
    cells = [numa.InstanceNUMACell(id=0, cpuset={0, 1}, pcpuset=set(),
                                   memory=256, cpu_policy='shared'),
             numa.InstanceNUMACell(id=1, cpuset={2}, pcpuset={3},
                                   memory=256, cpu_policy='mixed')]
    spec = request_spec.RequestSpec(
        instance_uuid=INSTANCE_UUID,
        numa_topology=numa.InstanceNUMATopology(cells=cells))
    _, topology = data_of(spec)['numa_topology'][
        'InstanceNUMATopologyPayload']
    found = [(cell['InstanceNUMACellPayload'][1]['cpuset'],
              cell['InstanceNUMACellPayload'][1]['pcpuset'])
             for cell in topology['cells']]
    assert found == [([0, 1], []), ([2], [3])]
    assert topology['emulator_threads_policy'] is None


@base.SchedulerObjectRegistry.register_if(False)
class VirtCPUTopology(base.SchedulerObject):
    """A stand-in for Nova's cell ``cpu_topology`` (not modelled here)."""

    fields = {'sockets': fields.IntegerField(nullable=True),
              'cores': fields.IntegerField(nullable=True),
              'threads': fields.IntegerField(nullable=True)}


@base.SchedulerObjectRegistry.register_if(False)
class CellWithTopology(numa.InstanceNUMACell):
    fields = dict(numa.InstanceNUMACell.fields, cpu_topology=(
        fields.ObjectField('VirtCPUTopology', nullable=True)))


def test_a_cell_cpu_topology_is_sent_when_the_cell_has_one():
    cell = CellWithTopology(id=0, cpuset={0}, pcpuset=set(), memory=64,
                            cpu_topology=VirtCPUTopology(sockets=1,
                                                         cores=2))
    payload = notification.InstanceNUMACellPayload.build(cell)
    assert payload.cpu_topology.obj_to_primitive()['nova_object.data'] == {
        'sockets': 1, 'cores': 2, 'threads': None}
    assert payload.cpu_topology.VERSION == '1.0'


@pytest.mark.parametrize('rules, expected', [
    ({'max_server_per_host': '02'}, {'max_server_per_host': '2'}),
    ({'other': 'x'}, {}),
    ({}, {}),
])
def test_group_rules_are_max_server_per_host_only(rules, expected):
    group = group_obj.InstanceGroup(uuid=GROUP_UUID, _rules=rules)
    payload = notification.ServerGroupPayload.build(group)
    assert payload.rules == expected


def test_group_without_rules_hosts_or_members():
    payload = notification.ServerGroupPayload.build(
        group_obj.InstanceGroup(uuid=GROUP_UUID, policy='affinity'))
    assert payload.rules == {}
    assert (payload.hosts, payload.members, payload.policies,
            payload.name) == (None, None, None, None)


def test_destination_sends_only_what_is_set():
    payload = notification.DestinationPayload.build(
        request_spec.Destination(host='host5'))
    assert payload.obj_to_primitive()['nova_object.data'] == {
        'host': 'host5', 'aggregates': None}
    empty = notification.DestinationPayload.build(request_spec.Destination(
        node=None, cell=None))
    assert empty.obj_to_primitive()['nova_object.data'] == {
        'aggregates': None}


def test_image_properties_payload_fields():
    payload_fields = notification.ImageMetaPropsPayload.fields
    assert set(payload_fields) == (set(image_meta.ImageMetaProps.fields) -
                                   {'hw_ephemeral_encryption_secret_uuid'})
    assert not any(field.nullable for field in payload_fields.values())


def test_unset_or_none_properties_are_left_out():
    props = image_meta.ImageMetaProps(os_distro='debian', hw_disk_bus=None)
    payload = notification.ImageMetaPropsPayload.build(props)
    assert payload.obj_to_primitive()['nova_object.data'] == {
        'os_distro': 'debian'}


@pytest.mark.parametrize('change', [
    lambda spec: delattr(spec, 'instance_uuid'),
    lambda spec: setattr(spec.instance_group, '_rules',
                         {'max_server_per_host': 'many'}),
    lambda spec: setattr(spec.image.properties, 'hw_numa_nodes', 'two'),
    lambda spec: delattr(spec.image, 'properties'),
])
def test_values_the_payload_cannot_hold_raise(change):
    spec = rich_spec()
    change(spec)
    with pytest.raises((ValueError, NotImplementedError)):
        notification.RequestSpecPayload.from_request_spec(spec)
