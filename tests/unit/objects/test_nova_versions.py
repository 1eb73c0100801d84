"""The object versions of Nova 34.0.0, read and written back.

A RequestSpec 1.15 primitive written by hand from the field lists of Nova
34.0.0's objects (no Nova import) must be read with every value; nested
objects newer than ours are refused by name; ``obj_make_compatible`` and
``backport`` write the versions an older Nova reads; the accessors that
change decisions (``local_root_gb``, ``placement_only_requests``) read
the new fields.
"""

import json

import pytest
from oslo_versionedobjects import base as ovo_base

from scheduler import exception
from scheduler.objects import base
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import network
from scheduler.objects import numa
from scheduler.objects import request_group
from scheduler.objects import request_spec
from scheduler.objects import selection

INSTANCE_UUID = 'f4b1b5d6-2a87-4a0c-8c61-0b4d0a7c3f10'
PORT_UUID = '7a1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'
NET_UUID = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8fa'
TIMESTAMP = '2026-02-22T10:30:05Z'

# Nova 34.0.0's versions of the objects we read.
NOVA_34 = {
    'RequestSpec': '1.15', 'Destination': '1.4', 'SchedulerRetries': '1.1',
    'SchedulerLimits': '1.0', 'RequestGroup': '1.3',
    'RequestLevelParams': '1.1', 'NetworkMetadata': '1.0',
    'NetworkRequest': '1.3', 'NetworkRequestList': '1.1',
    'SecurityGroup': '1.2', 'SecurityGroupList': '1.1', 'Flavor': '1.2',
    'ImageMeta': '1.8', 'ImageMetaProps': '1.44', 'InstanceGroup': '1.11',
    'InstanceNUMATopology': '1.3', 'InstanceNUMACell': '1.6',
    'NUMATopologyLimits': '1.1', 'InstancePCIRequest': '1.4',
    'InstancePCIRequests': '1.1', 'Instance': '2.8', 'InstanceList': '2.6',
    'Aggregate': '1.3', 'AggregateList': '1.3', 'Selection': '1.1',
    'CellMapping': '1.1', 'ComputeNode': '1.19', 'ComputeNodeList': '1.17',
}


def _env(name, version, data):
    return {'nova_object.name': name, 'nova_object.namespace': 'nova',
            'nova_object.version': version, 'nova_object.data': data,
            'nova_object.changes': sorted(data)}


def nova_34_request_spec():
    """A RequestSpec as Nova 34.0.0's conductor sends it for a pinned,
    boot-from-volume server with a QoS port."""
    flavor = _env('Flavor', '1.2', {
        'id': 6, 'name': 'pinned', 'memory_mb': 4096, 'vcpus': 4,
        'root_gb': 40, 'ephemeral_gb': 5, 'flavorid': 'p1', 'swap': 1536,
        'rxtx_factor': 1.0, 'vcpu_weight': None, 'disabled': False,
        'is_public': True, 'description': None,
        'extra_specs': {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1'},
        'projects': [], 'created_at': TIMESTAMP, 'updated_at': None,
        'deleted_at': None, 'deleted': False})
    props = _env('ImageMetaProps', '1.44', {
        'hw_architecture': 'x86_64', 'hw_firmware_type': 'uefi',
        'hw_machine_type': 'q35', 'hw_mem_encryption_model': 'intel-tdx',
        'hw_cpu_policy': 'mixed', 'hw_numa_cpus': [[0, 1], [2, 3]],
        'hw_numa_mem': [1024, 1024], 'hw_input_bus': 'virtio',
        'hw_viommu_model': 'auto', 'hw_sound_model': 'virtio',
        'hw_ephemeral_encryption_secret_uuid': NET_UUID})
    image = _env('ImageMeta', '1.8', {
        'id': INSTANCE_UUID, 'name': 'img', 'status': 'active',
        'container_format': 'bare', 'disk_format': 'raw', 'min_ram': 0,
        'min_disk': 0, 'size': 1, 'properties': props})
    cell = _env('InstanceNUMACell', '1.6', {
        'id': 0, 'cpuset': [], 'pcpuset': [0, 1, 2, 3], 'memory': 4096,
        'pagesize': None, 'cpu_topology': None, 'cpu_pinning_raw': None,
        'cpu_policy': 'dedicated', 'cpu_thread_policy': None,
        'cpuset_reserved': None})
    topology = _env('InstanceNUMATopology', '1.3', {
        'id': 3, 'instance_uuid': INSTANCE_UUID, 'cells': [cell],
        'emulator_threads_policy': None})
    port_group = _env('RequestGroup', '1.3', {
        'use_same_provider': True,
        'resources': {'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
        'required_traits': ['CUSTOM_PHYSNET_PHYSNET1'],
        'forbidden_traits': [], 'aggregates': [], 'forbidden_aggregates': [],
        'requester_id': PORT_UUID, 'provider_uuids': [], 'in_tree': None})
    params = _env('RequestLevelParams', '1.1', {
        'root_required': [], 'root_forbidden': [], 'same_subtree': []})
    networks = _env('NetworkRequestList', '1.1', {'objects': [
        _env('NetworkRequest', '1.3', {
            'network_id': NET_UUID, 'address': '192.0.2.10',
            'port_id': PORT_UUID, 'pci_request_id': None, 'tag': 'nic1',
            'arq_uuid': None, 'device_profile': None})]})
    destination = _env('Destination', '1.4', {
        'host': 'host1', 'node': 'host1', 'cell': None, 'aggregates': None,
        'allow_cross_cell_move': False, 'forbidden_aggregates': None})
    return _env('RequestSpec', '1.15', {
        'id': 17, 'instance_uuid': INSTANCE_UUID, 'project_id': 'p1',
        'user_id': 'u1', 'availability_zone': None, 'num_instances': 1,
        'flavor': flavor, 'image': image, 'numa_topology': topology,
        'pci_requests': _env('InstancePCIRequests', '1.1', {
            'instance_uuid': INSTANCE_UUID, 'requests': []}),
        'ignore_hosts': None, 'force_hosts': None, 'force_nodes': None,
        'requested_destination': destination, 'retry': None,
        'limits': _env('SchedulerLimits', '1.0', {
            'numa_topology': None, 'vcpu': None, 'disk_gb': None,
            'memory_mb': None}),
        'instance_group': None, 'scheduler_hints': {},
        'security_groups': _env('SecurityGroupList', '1.1', {'objects': []}),
        'network_metadata': _env('NetworkMetadata', '1.0', {
            'physnets': ['physnet1'], 'tunneled': False}),
        'is_bfv': True, 'requested_resources': [port_group],
        'request_level_params': params, 'requested_networks': networks})


def _read(serializer, primitive):
    return serializer.deserialize_entity(None,
                                         json.loads(json.dumps(primitive)))


@pytest.mark.parametrize('name', sorted(NOVA_34))
def test_our_version_is_nova_34s(name):
    [cls] = [cls for cls in ovo_base.VersionedObjectRegistry.obj_classes()[
        name] if issubclass(cls, base.SchedulerObject)]
    assert cls.VERSION == NOVA_34[name]


def test_nova_34_request_spec_is_read(serializer):
    spec = _read(serializer, nova_34_request_spec())
    assert spec.VERSION == '1.15'
    assert spec.user_id == 'u1'
    assert spec.is_bfv is True and spec.boot_from_volume
    assert spec.network_metadata.physnets == {'physnet1'}
    [group] = spec.requested_resources
    assert group.resources == {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}
    assert group.requester_id == PORT_UUID
    assert spec.request_level_params.needs() == []
    [network] = spec.requested_networks.objects
    assert str(network.address) == '192.0.2.10'
    assert network.tag == 'nic1'
    assert spec.requested_destination.allow_cross_cell_move is False
    props = spec.image.properties
    assert props.hw_mem_encryption_model == 'intel-tdx'
    assert props.hw_numa_cpus == [{0, 1}, {2, 3}]
    assert props.get('hw_sound_model') == 'virtio'
    spec.ensure_defaults()
    spec.validate()


def test_dedicated_cell_of_nova_1_5_has_its_vcpus_in_cpuset(serializer):
    """Since InstanceNUMACell 1.5 Nova sends pinned vCPUs in ``pcpuset``;
    the fitting code reads ``cpuset``."""
    spec = _read(serializer, nova_34_request_spec())
    [cell] = spec.numa_topology.cells
    assert cell.cpuset == {0, 1, 2, 3}
    assert cell.pcpuset == {0, 1, 2, 3}
    unchanged = nova_34_request_spec()['nova_object.data']['numa_topology']
    unchanged = unchanged['nova_object.data']['cells'][0]
    unchanged['nova_object.changes'] = []
    assert _read(serializer, unchanged).obj_what_changed() == set()


def test_shared_cell_keeps_an_empty_pcpuset(serializer):
    cell = _env('InstanceNUMACell', '1.6', {
        'id': 0, 'cpuset': [0, 1], 'pcpuset': [], 'memory': 512,
        'cpu_policy': None})
    read = _read(serializer, cell)
    assert read.cpuset == {0, 1} and read.pcpuset == set()


def test_boot_from_volume_counts_no_local_root_disk(serializer):
    spec = _read(serializer, nova_34_request_spec())
    assert spec.local_root_gb == 0
    # ephemeral 5 GiB + swap 1536 MiB rounded up to 2 GiB.
    assert spec.local_disk_gb == 7
    spec.is_bfv = False
    assert spec.local_root_gb == 40
    assert spec.local_disk_gb == 47


def test_older_spec_without_is_bfv_counts_the_root_disk():
    spec = request_spec.RequestSpec(flavor=_flavor(root_gb=30))
    assert not spec.boot_from_volume
    assert spec.local_root_gb == 30


@pytest.mark.parametrize('path,version', [
    (('image', 'properties'), '1.45'),
    (('numa_topology', 'cells', 0), '1.7'),
    (('requested_resources', 0), '1.4'),
    (('requested_networks', 'objects', 0), '1.4'),
    (('request_level_params',), '1.2'),
])
def test_newer_nested_object_is_refused_by_name(serializer, path, version):
    primitive = nova_34_request_spec()
    target = primitive
    for key in path:
        target = target['nova_object.data'][key] if isinstance(
            key, str) else target[key]
    target['nova_object.version'] = version
    name = target['nova_object.name']
    with pytest.raises(exception.ObjectVersionNotSupported) as info:
        _read(serializer, primitive)
    assert info.value.kwargs == {'objname': name, 'objver': version,
                                 'supported': NOVA_34[name]}
    assert '%s version %s is not supported' % (name, version) in str(
        info.value)


def test_other_major_version_is_refused_by_name(serializer):
    primitive = _env('InstanceList', '3.0', {'objects': []})
    with pytest.raises(exception.ObjectVersionNotSupported) as info:
        _read(serializer, primitive)
    assert info.value.kwargs['objname'] == 'InstanceList'
    assert info.value.kwargs['supported'] == '2.6'


# -- writing older versions -------------------------------------------------

def _flavor(**sizes):
    values = dict(memory_mb=512, vcpus=2, root_gb=10, ephemeral_gb=0,
                  swap=0, extra_specs={})
    values.update(sizes)
    return request_spec.flavor_obj.Flavor(**values)


def _data(primitive):
    return primitive['nova_object.data']


def _network_metadata():
    return network.NetworkMetadata(physnets={'physnet1'}, tunneled=False)


@pytest.mark.parametrize('version,dropped', [
    ('1.14', set()),
    ('1.13', {'requested_networks'}),
    ('1.11', {'requested_networks', 'request_level_params',
              'requested_resources'}),
    ('1.8', {'requested_networks', 'request_level_params',
             'requested_resources', 'is_bfv', 'network_metadata',
             'user_id'}),
    ('1.5', {'requested_networks', 'request_level_params',
             'requested_resources', 'is_bfv', 'network_metadata',
             'user_id', 'security_groups', 'requested_destination'}),
])
def test_request_spec_written_for_an_older_nova(serializer, version,
                                                dropped):
    spec = _read(serializer, nova_34_request_spec())
    # Values Queens has (else ValueError: see below).
    spec.image.properties.hw_cpu_policy = 'dedicated'
    spec.image.properties.hw_mem_encryption_model = 'amd-sev'
    # A sub-object follows the manifest when its parent is in it too.
    manifest = {'RequestSpec': version, 'ImageMeta': '1.8',
                'ImageMetaProps': '1.19'}
    old = spec.obj_to_primitive(target_version=version,
                                version_manifest=manifest)
    assert old['nova_object.version'] == version
    assert set(_data(nova_34_request_spec())) - set(_data(old)) == dropped
    props = _data(_data(old)['image'])['properties']
    assert props['nova_object.version'] == '1.19'
    assert 'hw_sound_model' not in _data(props)


@pytest.mark.parametrize('prop,value,version', [
    ('hw_cpu_policy', 'mixed', '1.25'),
    ('hw_mem_encryption_model', 'intel-tdx', '1.43'),
    ('hw_mem_encryption_model', 'amd-sev-snp', '1.42'),
    ('hw_video_model', 'bochs', '1.29'),
    ('hw_vif_model', 'igb', '1.38'),
])
def test_image_property_value_an_older_nova_lacks_is_refused(prop, value,
                                                             version):
    props = image_meta.ImageMetaProps(**{prop: value})
    with pytest.raises(ValueError) as info:
        props.obj_to_primitive(target_version=version)
    assert prop in str(info.value)


def test_image_properties_of_later_releases_are_dropped():
    props = image_meta.ImageMetaProps(
        hw_architecture='x86_64', traits_required=['CUSTOM_X'],
        hw_tpm_version='2.0', hw_watchdog_action='disabled')
    assert set(_data(props.obj_to_primitive(target_version='1.26'))) == {
        'hw_architecture', 'traits_required', 'hw_watchdog_action'}
    assert set(_data(props.obj_to_primitive(target_version='1.15'))) == {
        'hw_architecture'}


def test_dedicated_cell_written_for_a_nova_before_1_5():
    cell = numa.InstanceNUMACell(id=0, cpuset=set(), pcpuset={2, 3},
                                 memory=512, cpu_policy='dedicated')
    old = _data(cell.obj_to_primitive(target_version='1.4'))
    assert list(old['cpuset']) == [2, 3]
    assert 'pcpuset' not in old
    mixed = numa.InstanceNUMACell(id=0, cpuset={0}, pcpuset={1},
                                  memory=512, cpu_policy='mixed')
    with pytest.raises(ValueError):
        mixed.obj_to_primitive(target_version='1.5')


def test_request_group_written_for_stein():
    group = request_group.RequestGroup(resources={'VGPU': 1},
                                       requester_id='p', in_tree=None,
                                       forbidden_aggregates=set())
    assert set(_data(group.obj_to_primitive(target_version='1.1'))) == {
        'resources', 'requester_id'}


# -- replies: the versions the caller reads ----------------------------------

@pytest.mark.parametrize('spec_version,expected', [
    (None, {'Selection': '1.0', 'NUMATopologyLimits': '1.0'}),
    ('1.6', {'Selection': '1.0', 'NUMATopologyLimits': '1.0'}),
    ('1.8', {'Selection': '1.0', 'NUMATopologyLimits': '1.0'}),
    ('1.9', {'Selection': '1.0', 'NUMATopologyLimits': '1.1'}),
    ('1.12', {'Selection': '1.0', 'NUMATopologyLimits': '1.1'}),
    ('1.13', {'Selection': '1.1', 'NUMATopologyLimits': '1.1'}),
    ('1.15', {'Selection': '1.1', 'NUMATopologyLimits': '1.1'}),
])
def test_reply_manifest_follows_the_release_of_the_request(spec_version,
                                                           expected):
    manifest = selection.reply_manifest(spec_version)
    assert {name: manifest[name] for name in expected} == expected
    assert manifest['SchedulerLimits'] == '1.0'


def _selection():
    limits = request_spec.SchedulerLimits.from_dict({
        'memory_mb': 2048, 'numa_topology': numa.NUMATopologyLimits(
            cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5)})
    return selection.Selection(
        compute_node_uuid=INSTANCE_UUID, service_host='host1',
        nodename='node1', cell_uuid=NET_UUID, limits=limits,
        allocation_request=None, allocation_request_version=None,
        availability_zone='az1')


def test_selections_written_for_queens(serializer):
    sel = _selection()
    reply = base.backport([[sel], {'limits': sel.limits}],
                          selection.reply_manifest('1.8'))
    wire = json.loads(json.dumps(serializer.serialize_entity(None, reply)))
    [[first], limits] = wire
    assert first['nova_object.version'] == '1.0'
    assert 'availability_zone' not in _data(first)
    numa_limits = _data(_data(first)['limits'])['numa_topology']
    assert numa_limits['nova_object.version'] == '1.0'
    assert (_data(limits['limits'])['numa_topology']['nova_object.version']
            == '1.0')
    # The original is untouched.
    assert sel.VERSION == '1.1' and sel.availability_zone == 'az1'


def test_selections_for_a_current_nova_are_not_copied():
    reply = [[_selection()]]
    assert base.backport(reply, selection.reply_manifest('1.15')) is reply


# -- what only Placement can check --------------------------------------------

def _spec(extra_specs=None, props=None, **fields):
    spec = request_spec.RequestSpec(
        flavor=_flavor(memory_mb=2048, vcpus=4, root_gb=20, ephemeral_gb=1,
                       swap=512, extra_specs=extra_specs or {}),
        image=image_meta.ImageMeta(
            properties=image_meta.ImageMetaProps.from_dict(props or {})),
        **fields)
    return spec


@pytest.mark.parametrize('extra_specs,asked', [
    ({'resources:VGPU': '1'}, ['resources:VGPU=1']),
    ({'resources:CUSTOM_MAGIC': '2', 'resources:VGPU': '0'},
     ['resources:CUSTOM_MAGIC=2']),
    ({'resources1:VCPU': '1'}, ['resources1:VCPU=1']),
    ({'resources_gpu:VGPU': '1'}, ['resources_gpu:VGPU=1']),
    ({'resources:PCPU': '4', 'resources:VCPU': '0'}, ['resources:PCPU=4']),
    ({'resources:VCPU': '5'}, ['resources:VCPU=5']),
    ({'resources:MEMORY_MB': '4096'}, ['resources:MEMORY_MB=4096']),
    ({'resources:DISK_GB': '23'}, ['resources:DISK_GB=23']),
    ({'trait:HW_CPU_X86_AVX2': 'required'},
     ['trait:HW_CPU_X86_AVX2=required']),
    ({'trait1:CUSTOM_X': 'forbidden'}, ['trait1:CUSTOM_X=forbidden']),
    ({'hw:mem_encryption': 'true'},
     ['memory encryption (resource MEM_ENCRYPTION_CONTEXT)']),
    ({'hw:pmem': '4GB'}, ['persistent memory (resources PMEM_NAMESPACE_*)']),
    ({'hw:tpm_version': '2.0'},
     ['an emulated TPM (traits COMPUTE_SECURITY_TPM_*)']),
    ({'os:secure_boot': 'required'},
     ['UEFI secure boot (trait COMPUTE_SECURITY_UEFI_SECURE_BOOT)']),
    ({'hw:pci_numa_affinity_policy': 'socket'},
     ['socket PCI NUMA affinity (trait COMPUTE_SOCKET_PCI_NUMA_AFFINITY)']),
])
def test_flavor_asking_placement_only_things(extra_specs, asked):
    assert _spec(extra_specs).placement_only_requests() == asked


@pytest.mark.parametrize('extra_specs', [
    {}, {'resources:VCPU': '4', 'resources:MEMORY_MB': '2048',
         'resources:DISK_GB': '22'},
    {'resources:VCPU': '0'}, {'resources:VGPU': 'many'},
    {'resources:VGPU': '-1'}, {'resources:vgpu': '1'},
    {'trait:HW_CPU_X86_AVX2': 'preferred'}, {'hw:mem_encryption': 'no'},
    {'os:secure_boot': 'optional'}, {'hw:cpu_policy': 'dedicated'},
    {'hw:pci_numa_affinity_policy': 'preferred'}, {'group_policy': 'none'},
])
def test_flavor_our_filters_can_check(extra_specs):
    """Overrides no larger than the flavor, and what Nova ignores."""
    assert _spec(extra_specs).placement_only_requests() == []


@pytest.mark.parametrize('props,asked', [
    ({'trait:CUSTOM_A': 'required', 'trait:CUSTOM_B': 'required',
      'trait:CUSTOM_C': 'forbidden', 'traits_required': ['CUSTOM_D']},
     ['image trait CUSTOM_A required', 'image trait CUSTOM_B required']),
    ({'hw_mem_encryption': True}, ['memory encryption (resource '
                                   'MEM_ENCRYPTION_CONTEXT)']),
    ({'hw_firmware_stateless': True, 'hw_firmware_type': 'uefi'},
     ['stateless firmware (trait COMPUTE_SECURITY_STATELESS_FIRMWARE)']),
    ({'hw_firmware_stateless': True}, []),
    ({'hw_maxphysaddr_mode': 'emulate'},
     ['a physical address mode (traits COMPUTE_ADDRESS_SPACE_*)']),
    ({'hw_architecture': 'x86_64'}, []),
])
def test_image_asking_placement_only_things(props, asked):
    assert _spec(props=props).placement_only_requests() == asked


def test_port_and_accelerator_groups_and_root_traits():
    spec = _spec(
        requested_resources=[request_group.RequestGroup(
            resources={'NET_BW_IGR_KILOBIT_PER_SEC': 1000, 'X': 0},
            required_traits={'CUSTOM_PHYSNET1'},
            forbidden_traits={'CUSTOM_Y'})],
        request_level_params=request_group.RequestLevelParams(
            root_required={'COMPUTE_A'}, root_forbidden={'COMPUTE_B'},
            same_subtree=[['a', 'b']]))
    assert spec.placement_only_requests() == [
        'NET_BW_IGR_KILOBIT_PER_SEC=1000', 'trait:CUSTOM_PHYSNET1=required',
        'trait:CUSTOM_Y=forbidden', 'root trait COMPUTE_A required',
        'root trait COMPUTE_B forbidden', 'same_subtree groups']


def test_empty_groups_and_parameters_ask_nothing():
    spec = _spec(requested_resources=[request_group.RequestGroup()],
                 request_level_params=request_group.RequestLevelParams())
    assert spec.placement_only_requests() == []


# -- the legacy (RPC 4.0) dicts ---------------------------------------------

def test_legacy_dicts_carry_user_and_requested_destination():
    destination = request_spec.Destination(host='host2', node='node2')
    spec = request_spec.RequestSpec.from_primitives(
        None, {'instance_type': _flavor(),
               'instance_properties': {'uuid': INSTANCE_UUID,
                                       'user_id': 'u1'}},
        {'requested_destination': destination})
    assert spec.user_id == 'u1'
    assert spec.requested_destination is destination
    filters = spec.to_legacy_filter_properties_dict()
    assert filters['requested_destination'] is destination
    assert (spec.to_legacy_request_spec_dict()['instance_properties']
            ['user_id'] == 'u1')


@pytest.mark.parametrize('name,values,version,dropped', [
    ('Flavor', {'description': 'd', 'name': 'f'}, '1.1', {'description'}),
    ('CellMapping', {'disabled': True, 'name': 'c'}, '1.0', {'disabled'}),
    ('Aggregate', {'uuid': INSTANCE_UUID, 'name': 'a'}, '1.1', {'uuid'}),
    ('ComputeNode', {'uuid': INSTANCE_UUID, 'host': 'h', 'vcpus': 1},
     '1.6', {'uuid', 'host'}),
    ('Destination', {'host': 'h', 'allow_cross_cell_move': True}, '1.2',
     {'allow_cross_cell_move'}),
    ('SecurityGroup', {'uuid': INSTANCE_UUID, 'name': 'default'}, '1.1',
     {'uuid'}),
    ('NetworkRequest', {'tag': 't', 'network_id': 'n'}, '1.1', {'tag'}),
    ('InstancePCIRequest', {'requester_id': 'r', 'count': 1}, '1.2',
     {'requester_id'}),
    ('NUMATopologyLimits', {'cpu_allocation_ratio': 1.0,
                            'ram_allocation_ratio': 1.0,
                            'network_metadata': _network_metadata()},
     '1.0', {'network_metadata'}),
])
def test_fields_of_later_releases_are_dropped(name, values, version,
                                              dropped):
    [cls] = [cls for cls in ovo_base.VersionedObjectRegistry.obj_classes()[
        name] if issubclass(cls, base.SchedulerObject)]
    primitive = cls(**values).obj_to_primitive(target_version=version,
                                               version_manifest={})
    assert set(values) - set(_data(primitive)) == dropped


def test_group_written_for_queens_has_its_policy_in_policies():
    group = group_obj.InstanceGroup(policy='anti-affinity',
                                    _rules={'max_server_per_host': '2'},
                                    hosts=['h1'], members=[])
    old = _data(group.obj_to_primitive(target_version='1.10'))
    assert old['policies'] == ['anti-affinity']
    assert 'policy' not in old and '_rules' not in old
    assert old['hosts'] == ['h1']
