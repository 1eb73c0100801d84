"""RequestSpec and its companions: accessors, validation, and the legacy
(RPC 4.0 to 4.2) dict forms in both directions."""

import fakes
import pytest

from scheduler import exception
from scheduler.objects import compute_node
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import numa
from scheduler.objects import pci
from scheduler.objects import request_spec as rs

INSTANCE_UUID = 'f4b1b5d6-2a87-4a0c-8c61-0b4d0a7c3f10'
MEMBER_UUID = '0c9f0d87-6c8e-4f7e-b2b6-5f0f6e0c1b2a'
IMAGE_UUID = 'c1a7e9d2-5b0f-4b0e-8a0e-9f1e2d3c4b5a'


def _flavor_dict(**overrides):
    values = {'id': 6, 'name': 'm1.medium', 'flavorid': '3',
              'memory_mb': 4096, 'vcpus': 2, 'root_gb': 40,
              'ephemeral_gb': 5, 'swap': 512, 'rxtx_factor': 1.0,
              'vcpu_weight': None, 'disabled': False, 'is_public': True,
              'extra_specs': {'hw:cpu_policy': 'shared'}, 'projects': []}
    values.update(overrides)
    return values


def _legacy_request_spec(**overrides):
    """A ``request_spec`` dict as a Nova conductor capped at 4.0 sends."""
    values = {
        'num_instances': 2,
        'image': {'id': IMAGE_UUID, 'name': 'cirros', 'min_ram': 0,
                  'size': None, 'disk_format': 'qcow2',
                  'properties': {'architecture': 'x86_64',
                                 'hw_disk_bus': 'virtio'}},
        'instance_properties': {'uuid': INSTANCE_UUID, 'project_id': 'p1',
                                'availability_zone': 'az1',
                                'memory_mb': 4096, 'vcpus': 2,
                                'root_gb': 40, 'ephemeral_gb': 5,
                                'numa_topology': None,
                                'pci_requests': None},
        'instance_type': flavor_obj.Flavor(**_flavor_dict()),
    }
    values.update(overrides)
    return values


def _legacy_filter_properties(**overrides):
    values = {
        'ignore_hosts': ['host3'],
        'force_hosts': ['host1'],
        'force_nodes': ['node1'],
        'retry': {'num_attempts': 2, 'hosts': [['host2', 'node2']],
                  'exc_reason': 'build failed'},
        'limits': {'memory_mb': 6144.0, 'vcpu': 32},
        'group_updated': True,
        'group_policies': ['anti-affinity'],
        'group_hosts': ['host5'],
        'group_members': [MEMBER_UUID],
        'scheduler_hints': {'group': 'web', 'same_host': ['a', 'b'],
                            'build_near_host_ip': '10.0.0.1'},
    }
    values.update(overrides)
    return values


def _full_spec():
    spec = fakes.fake_spec(
        instance_uuid=INSTANCE_UUID, project_id='p1',
        availability_zone='az1', num_instances=2,
        memory_mb=4096, vcpus=2, root_gb=40, ephemeral_gb=5, swap=512,
        image_props={'hw_architecture': 'x86_64', 'img_hv_type': 'kvm'},
        ignore_hosts=['host3'], force_hosts=['host1'], force_nodes=['node1'],
        retry=fakes.fake_retry([('host2', 'node2')], num_attempts=2),
        limits=rs.SchedulerLimits(memory_mb=6144, vcpu=None, disk_gb=None,
                                  numa_topology=None),
        instance_group=fakes.fake_group('anti-affinity',
                                        members=[MEMBER_UUID],
                                        hosts=['host5'], legacy=True),
        scheduler_hints={'group': 'web', 'same_host': ['a', 'b']})
    return spec


# -- accessors ---------------------------------------------------------------

def test_size_properties_forward_to_the_flavor():
    spec = fakes.fake_spec(vcpus=4, memory_mb=8192, root_gb=80,
                           ephemeral_gb=10, swap=1024)
    assert (spec.vcpus, spec.memory_mb, spec.root_gb, spec.ephemeral_gb,
            spec.swap) == (4, 8192, 80, 10, 1024)


def test_requested_disk_is_in_mib_and_counts_swap():
    spec = fakes.fake_spec(root_gb=10, ephemeral_gb=2, swap=512)
    assert spec.requested_resources_disk_mb == 12 * 1024 + 512


def test_get_returns_default_for_unset_or_none():
    spec = rs.RequestSpec()
    assert spec.get('availability_zone', 'nova') == 'nova'
    spec.availability_zone = None
    assert spec.get('availability_zone', 'nova') == 'nova'
    spec.availability_zone = 'az1'
    assert spec.get('availability_zone', 'nova') == 'az1'


@pytest.mark.parametrize('hints,expected', [
    ({'group': ['g1']}, 'g1'),
    ({'same_host': ['a', 'b']}, ['a', 'b']),
    ({'other': ['x']}, 'default'),
    ({}, 'default'),
    (None, 'default'),
])
def test_get_scheduler_hint_unwraps_single_values(hints, expected):
    spec = rs.RequestSpec(scheduler_hints=hints)
    name = next(iter(hints)) if hints else 'group'
    if expected == 'default':
        name = 'group'
    assert spec.get_scheduler_hint(name, 'default') == expected


def test_get_scheduler_hint_on_a_spec_without_hints():
    assert rs.RequestSpec().get_scheduler_hint('group') is None


def test_ensure_defaults_fills_unset_fields_only():
    spec = rs.RequestSpec(availability_zone='az1')
    assert spec.ensure_defaults() is spec
    assert spec.availability_zone == 'az1'
    assert spec.num_instances == 1
    for name in ('image', 'numa_topology', 'pci_requests', 'project_id',
                 'ignore_hosts', 'force_hosts', 'force_nodes',
                 'requested_destination', 'retry', 'limits',
                 'instance_group', 'scheduler_hints'):
        assert spec.obj_attr_is_set(name), name
        assert getattr(spec, name) is None, name


def test_ensure_defaults_keeps_num_instances():
    assert rs.RequestSpec(num_instances=5).ensure_defaults(
        ).num_instances == 5


# -- validate -----------------------------------------------------------------

def test_valid_spec_passes():
    fakes.fake_spec().validate()
    _full_spec().validate()


def test_zero_sizes_are_valid():
    fakes.fake_spec(vcpus=0, memory_mb=0, root_gb=0).validate()


def test_missing_flavor_is_invalid():
    spec = rs.RequestSpec().ensure_defaults()
    with pytest.raises(exception.InvalidRequestSpec) as info:
        spec.validate()
    assert 'flavor' in str(info.value)


@pytest.mark.parametrize('name', ['memory_mb', 'vcpus', 'root_gb',
                                  'ephemeral_gb', 'swap'])
def test_missing_flavor_size_is_invalid(name):
    values = _flavor_dict()
    del values[name]
    spec = fakes.fake_spec(flavor=flavor_obj.Flavor(**values))
    with pytest.raises(exception.InvalidRequestSpec) as info:
        spec.validate()
    assert name in str(info.value)


@pytest.mark.parametrize('name', ['memory_mb', 'vcpus', 'root_gb',
                                  'ephemeral_gb', 'swap'])
@pytest.mark.parametrize('value', [-1, rs.MAX_INT + 1])
def test_out_of_range_flavor_size_is_invalid(name, value):
    spec = fakes.fake_spec(**{name: value})
    with pytest.raises(exception.InvalidRequestSpec) as info:
        spec.validate()
    assert name in str(info.value)


def test_largest_flavor_size_is_valid():
    fakes.fake_spec(memory_mb=rs.MAX_INT).validate()


@pytest.mark.parametrize('value', [0, -3, rs.MAX_INSTANCES_PER_REQUEST + 1])
def test_out_of_range_num_instances_is_invalid(value):
    spec = fakes.fake_spec(num_instances=value)
    with pytest.raises(exception.InvalidRequestSpec) as info:
        spec.validate()
    assert 'num_instances' in str(info.value)


def test_maximum_num_instances_is_valid():
    fakes.fake_spec(num_instances=rs.MAX_INSTANCES_PER_REQUEST).validate()


def test_negative_retry_attempts_are_invalid():
    spec = fakes.fake_spec(retry=fakes.fake_retry([], num_attempts=-1))
    with pytest.raises(exception.InvalidRequestSpec) as info:
        spec.validate()
    assert 'num_attempts' in str(info.value)


def test_invalid_request_spec_is_an_invalid_error():
    exc = exception.InvalidRequestSpec(reason='the flavor is missing')
    assert isinstance(exc, exception.Invalid)
    assert str(exc) == 'Invalid request spec: the flavor is missing'


# -- from_primitives (legacy dicts in) ----------------------------------------

def test_from_primitives_converts_every_legacy_key():
    spec = rs.RequestSpec.from_primitives(
        None, _legacy_request_spec(), _legacy_filter_properties())

    assert spec.num_instances == 2
    assert spec.instance_uuid == INSTANCE_UUID
    assert spec.project_id == 'p1'
    assert spec.availability_zone == 'az1'
    assert spec.flavor.memory_mb == 4096
    assert spec.flavor.extra_specs == {'hw:cpu_policy': 'shared'}

    assert spec.image.id == IMAGE_UUID
    assert spec.image.disk_format == 'qcow2'
    assert not spec.image.obj_attr_is_set('size')
    assert spec.image.properties.hw_architecture == 'x86_64'
    assert spec.image.properties.hw_disk_bus == 'virtio'

    assert spec.ignore_hosts == ['host3']
    assert spec.force_hosts == ['host1']
    assert spec.force_nodes == ['node1']
    assert spec.retry.num_attempts == 2
    assert spec.retry.host_node_pairs() == {('host2', 'node2')}
    assert spec.limits.memory_mb == 6144
    assert spec.limits.vcpu == 32
    assert spec.limits.disk_gb is None

    group = spec.instance_group
    assert group.policy_name == 'anti-affinity'
    assert group.host_list() == ['host5']
    assert group.members == [MEMBER_UUID]
    assert 'hosts' not in group.obj_what_changed()

    assert spec.scheduler_hints == {'group': ['web'],
                                    'same_host': ['a', 'b'],
                                    'build_near_host_ip': ['10.0.0.1']}
    assert spec.get_scheduler_hint('group') == 'web'
    spec.validate()


def test_from_primitives_with_a_flavor_dict():
    spec = rs.RequestSpec.from_primitives(
        None, _legacy_request_spec(instance_type=_flavor_dict(
            unknown_key='ignored', vcpu_weight=None)), {})
    assert isinstance(spec.flavor, flavor_obj.Flavor)
    assert spec.flavor.vcpus == 2
    assert not spec.flavor.obj_attr_is_set('vcpu_weight')
    spec.validate()


def test_from_primitives_takes_the_flavor_from_filter_properties():
    request = _legacy_request_spec()
    del request['instance_type']
    spec = rs.RequestSpec.from_primitives(
        None, request, {'instance_type': _flavor_dict(memory_mb=1024)})
    assert spec.memory_mb == 1024


def test_from_primitives_without_flavor_fails_validation():
    request = _legacy_request_spec()
    del request['instance_type']
    spec = rs.RequestSpec.from_primitives(None, request, None)
    with pytest.raises(exception.InvalidRequestSpec):
        spec.validate()


def test_from_primitives_minimal_dicts_get_defaults():
    spec = rs.RequestSpec.from_primitives(
        None, {'instance_type': _flavor_dict()}, None)
    assert spec.num_instances == 1
    assert spec.image is None
    assert spec.instance_group is None
    assert spec.retry is None
    assert spec.scheduler_hints == {}
    assert spec.ignore_hosts is None
    assert spec.project_id is None
    assert not spec.obj_attr_is_set('instance_uuid')
    assert spec.limits.to_dict() == {}
    spec.validate()


def test_from_primitives_retry_without_hosts_is_no_retry():
    spec = rs.RequestSpec.from_primitives(
        None, _legacy_request_spec(),
        _legacy_filter_properties(retry={'num_attempts': 1}))
    assert spec.retry is None


def test_from_primitives_uses_a_group_object_as_is():
    group = fakes.fake_group('affinity', hosts=['host9'])
    spec = rs.RequestSpec.from_primitives(
        None, _legacy_request_spec(),
        _legacy_filter_properties(instance_group=group))
    assert spec.instance_group is group


def test_from_primitives_without_group_updated_has_no_group():
    spec = rs.RequestSpec.from_primitives(
        None, _legacy_request_spec(),
        _legacy_filter_properties(group_updated=False))
    assert spec.instance_group is None


@pytest.mark.parametrize('request_spec,filter_properties', [
    (None, {}),
    ('spec', {}),
    ([('num_instances', 1)], {}),
    ({'instance_type': _flavor_dict()}, 'filters'),
    ({'instance_type': _flavor_dict()}, ['filters']),
])
def test_from_primitives_refuses_non_dicts(request_spec, filter_properties):
    with pytest.raises(exception.InvalidRequestSpec):
        rs.RequestSpec.from_primitives(None, request_spec, filter_properties)


@pytest.mark.parametrize('request_overrides,filter_overrides', [
    ({'num_instances': 'two'}, {}),
    ({'instance_type': _flavor_dict(memory_mb='lots')}, {}),
    ({'instance_properties': 'not a dict'}, {}),
    ({'image': {'properties': {'hw_maxphysaddr_bits': 'many'}}}, {}),
    ({}, {'retry': {'num_attempts': 1, 'hosts': [['only-host']]}}),
    ({}, {'retry': {'num_attempts': 'x', 'hosts': []}}),
    ({}, {'limits': {'memory_mb': 'a lot'}}),
    ({}, {'scheduler_hints': {'group': {'nested': 'dict'}}}),
    ({}, {'scheduler_hints': ['group']}),
    ({}, {'ignore_hosts': 'host1'}),
])
def test_from_primitives_refuses_wrong_types(request_overrides,
                                             filter_overrides):
    with pytest.raises(exception.InvalidRequestSpec):
        rs.RequestSpec.from_primitives(
            None, _legacy_request_spec(**request_overrides),
            _legacy_filter_properties(**filter_overrides))


def _numa_topology():
    return numa.InstanceNUMATopology(
        instance_uuid=INSTANCE_UUID,
        cells=[numa.InstanceNUMACell(id=0, cpuset={0, 1}, memory=2048)])


def _pci_requests():
    return pci.InstancePCIRequests(
        instance_uuid=INSTANCE_UUID,
        requests=[pci.InstancePCIRequest(
            count=1, spec=[{'vendor_id': '8086', 'product_id': '1520'}])])


def test_from_primitives_keeps_numa_topology_and_pci_requests():
    request = _legacy_request_spec()
    request['instance_properties'].update(numa_topology=_numa_topology(),
                                          pci_requests=_pci_requests())
    spec = rs.RequestSpec.from_primitives(None, request,
                                          _legacy_filter_properties())
    assert spec.numa_topology is not None
    assert spec.numa_topology.cells[0].cpuset == {0, 1}
    assert spec.pci_requests is not None
    assert spec.pci_requests.requests[0].count == 1


# -- to_legacy_* (legacy dicts out) -------------------------------------------

def test_to_legacy_request_spec_dict():
    spec = _full_spec()
    legacy = spec.to_legacy_request_spec_dict()

    assert set(legacy) == {'num_instances', 'image', 'instance_properties',
                           'instance_type'}
    assert legacy['num_instances'] == 2
    assert legacy['image']['properties'] == {'hw_architecture': 'x86_64',
                                             'img_hv_type': 'kvm'}
    assert legacy['image']['id'] == spec.image.id
    props = legacy['instance_properties']
    assert props['uuid'] == INSTANCE_UUID
    assert props['project_id'] == 'p1'
    assert props['availability_zone'] == 'az1'
    assert (props['memory_mb'], props['vcpus'], props['root_gb'],
            props['ephemeral_gb']) == (4096, 2, 40, 5)
    # The flavor travels as a versioned object, as Nova sends it.
    flavor = legacy['instance_type']
    assert flavor['nova_object.name'] == 'Flavor'
    assert flavor['nova_object.data']['memory_mb'] == 4096


def test_to_legacy_request_spec_dict_without_image():
    legacy = fakes.fake_spec().to_legacy_request_spec_dict()
    assert legacy['image'] == {}
    assert legacy['num_instances'] == 1


def test_to_legacy_request_spec_dict_keeps_numa_and_pci():
    spec = fakes.fake_spec(instance_uuid=INSTANCE_UUID,
                           numa_topology=_numa_topology(),
                           pci_requests=_pci_requests())
    props = spec.to_legacy_request_spec_dict()['instance_properties']
    assert props['numa_topology'] is not None
    assert props['pci_requests'] is not None


def test_to_legacy_filter_properties_dict():
    legacy = _full_spec().to_legacy_filter_properties_dict()
    assert legacy == {
        'ignore_hosts': ['host3'],
        'force_hosts': ['host1'],
        'force_nodes': ['node1'],
        'retry': {'num_attempts': 2, 'hosts': [['host2', 'node2']]},
        'limits': {'memory_mb': 6144},
        'group_updated': True,
        'group_hosts': ['host5'],
        'group_policies': ['anti-affinity'],
        'group_members': [MEMBER_UUID],
        'scheduler_hints': {'group': 'web', 'same_host': ['a', 'b']},
    }


def test_to_legacy_filter_properties_dict_leaves_out_empty_values():
    spec = fakes.fake_spec(ignore_hosts=[], force_hosts=None,
                           scheduler_hints={})
    assert spec.to_legacy_filter_properties_dict() == {}


def test_to_legacy_filter_properties_with_a_new_style_group():
    spec = fakes.fake_spec(instance_group=fakes.fake_group(
        'soft-affinity', hosts=['h1']))
    legacy = spec.to_legacy_filter_properties_dict()
    assert legacy['group_policies'] == ['soft-affinity']
    assert legacy['group_hosts'] == ['h1']


def test_group_without_policy_survives_the_legacy_form():
    group = group_obj.InstanceGroup(members=[MEMBER_UUID], hosts=[])
    spec = fakes.fake_spec(instance_group=group)
    legacy = spec.to_legacy_filter_properties_dict()
    assert legacy['group_policies'] == []
    request = spec.to_legacy_request_spec_dict()
    request['instance_type'] = spec.flavor
    back = rs.RequestSpec.from_primitives(None, request, legacy)
    assert back.instance_group.policy_name is None


def test_legacy_round_trip_keeps_what_the_scheduler_reads(roundtrip):
    spec = _full_spec()
    # The dicts travel through the RPC serializer, as in a 4.0 call.
    back = rs.RequestSpec.from_primitives(
        None, roundtrip(spec.to_legacy_request_spec_dict()),
        roundtrip(spec.to_legacy_filter_properties_dict()))

    assert back.num_instances == spec.num_instances
    assert back.instance_uuid == spec.instance_uuid
    assert back.project_id == spec.project_id
    assert back.availability_zone == spec.availability_zone
    assert back.image.id == spec.image.id
    assert back.image.properties.set_properties() == (
        spec.image.properties.set_properties())
    for name in ('ignore_hosts', 'force_hosts', 'force_nodes',
                 'scheduler_hints'):
        assert getattr(back, name) == getattr(spec, name), name
    assert back.retry.to_dict() == spec.retry.to_dict()
    assert back.limits.to_dict() == spec.limits.to_dict()
    assert back.instance_group.policy_name == 'anti-affinity'
    assert back.instance_group.host_list() == ['host5']
    assert back.instance_group.members == [MEMBER_UUID]
    back.validate()


# -- SchedulerRetries, SchedulerLimits, Destination ---------------------------

def test_retries_from_dict_and_back():
    legacy = {'num_attempts': 3, 'hosts': [['h1', 'n1'], ['h2', 'n2']]}
    retry = rs.SchedulerRetries.from_dict(legacy)
    assert isinstance(retry.hosts, compute_node.ComputeNodeList)
    assert retry.host_node_pairs() == {('h1', 'n1'), ('h2', 'n2')}
    assert retry.to_dict() == legacy


@pytest.mark.parametrize('legacy', [None, {}, {'num_attempts': 2}])
def test_retries_from_dict_without_hosts_is_none(legacy):
    assert rs.SchedulerRetries.from_dict(legacy) is None


def test_retries_from_dict_without_num_attempts_counts_zero():
    retry = rs.SchedulerRetries.from_dict({'hosts': [['h1', 'n1']]})
    assert retry.num_attempts == 0


def test_retries_without_hosts_have_no_pairs():
    assert rs.SchedulerRetries(num_attempts=1).host_node_pairs() == set()


def test_limits_from_dict_and_back():
    numa_limits = numa.NUMATopologyLimits(cpu_allocation_ratio=16.0,
                                          ram_allocation_ratio=1.5)
    limits = rs.SchedulerLimits.from_dict(
        {'memory_mb': 3072.0, 'disk_gb': 100, 'numa_topology': numa_limits,
         'not_a_limit': 5})
    assert limits.memory_mb == 3072
    assert limits.vcpu is None
    assert limits.to_dict() == {'memory_mb': 3072, 'disk_gb': 100,
                                'numa_topology': numa_limits}


@pytest.mark.parametrize('legacy', [None, {}])
def test_empty_limits(legacy):
    limits = rs.SchedulerLimits.from_dict(legacy)
    assert limits.to_dict() == {}
    assert rs.SchedulerLimits().to_dict() == {}


def test_destination_defaults():
    destination = rs.Destination(host='host1')
    assert destination.obj_get('node') is None
    destination.obj_set_defaults()
    assert destination.aggregates is None
    assert destination.allow_cross_cell_move is False


def test_spec_with_image_meta_object_validates():
    spec = fakes.fake_spec(image=image_meta.ImageMeta.from_dict(
        {'id': IMAGE_UUID, 'properties': {'vm_mode': 'hvm'}}))
    spec.validate()
    assert spec.image.properties.hw_vm_mode == 'hvm'
