"""Selection: the 4.5 answer of select_destinations and its dict form."""

import uuid

import fakes

from scheduler.objects import cell_mapping
from scheduler.objects import numa
from scheduler.objects import request_spec
from scheduler.objects import selection

NODE_UUID = '3e1b8f4a-6f0e-4b8c-9a6f-2c1d0e9b8a7f'


def _host_state(**attrs):
    attrs.setdefault('uuid', NODE_UUID)
    return fakes.fake_host_state('host1', 'node1', **attrs)


def test_from_host_state_copies_the_host():
    state = _host_state(limits={'memory_mb': 3072.0, 'vcpu': 64.0,
                                'disk_gb': 150.0})
    sel = selection.Selection.from_host_state(state)
    assert sel.compute_node_uuid == NODE_UUID
    assert sel.service_host == 'host1'
    assert sel.nodename == 'node1'
    assert sel.cell_uuid == cell_mapping.SINGLE_CELL_UUID
    assert sel.allocation_request is None
    assert sel.allocation_request_version is None
    assert sel.availability_zone == state.availability_zone
    assert isinstance(sel.limits, request_spec.SchedulerLimits)
    assert sel.limits.to_dict() == {'memory_mb': 3072, 'vcpu': 64,
                                    'disk_gb': 150}


def test_from_host_state_is_what_coerced_fields_would_give():
    # The values are set as they are (from_values), and serialise as
    # the same Selection built field by field through the setters.
    state = _host_state(limits={'memory_mb': 3072.0, 'vcpu': 64.0})
    fast = selection.Selection.from_host_state(state)
    slow = selection.Selection(
        compute_node_uuid=state.uuid, service_host=state.host,
        nodename=state.nodename, cell_uuid=cell_mapping.SINGLE_CELL_UUID,
        limits=request_spec.SchedulerLimits.from_dict(state.limits),
        allocation_request=None, allocation_request_version=None,
        availability_zone=state.availability_zone)
    assert fast.obj_what_changed() == slow.obj_what_changed()
    assert _changes_sorted(fast.obj_to_primitive()) == _changes_sorted(
        slow.obj_to_primitive())


def _changes_sorted(primitive):
    """``primitive`` with its ``nova_object.changes`` sorted: the list
    is made from a set, in an order that varies with the string hash
    seed."""
    changes = sorted(primitive['nova_object.changes'])
    return dict(primitive, **{'nova_object.changes': changes})


def test_from_host_state_uses_the_default_availability_zone(conf):
    conf.set_override('default_availability_zone', 'zone-x')
    sel = selection.Selection.from_host_state(_host_state())
    assert sel.availability_zone == 'zone-x'


def test_from_host_state_with_explicit_limits():
    state = _host_state(limits={'memory_mb': 3072})
    sel = selection.Selection.from_host_state(state, limits={'vcpu': 8})
    assert sel.limits.to_dict() == {'vcpu': 8}


def test_from_host_state_with_empty_limits():
    state = _host_state(limits={'memory_mb': 3072})
    sel = selection.Selection.from_host_state(state, limits={})
    assert sel.limits.to_dict() == {}
    assert sel.to_dict()['limits'] == {}


def test_from_host_state_keeps_numa_limits():
    numa_limits = numa.NUMATopologyLimits(cpu_allocation_ratio=16.0,
                                          ram_allocation_ratio=1.5)
    state = _host_state(limits={'numa_topology': numa_limits})
    sel = selection.Selection.from_host_state(state)
    assert sel.limits.numa_topology is numa_limits


def test_to_dict_is_the_pre_4_5_shape():
    sel = selection.Selection.from_host_state(
        _host_state(limits={'memory_mb': 1024, 'disk_gb': 10}))
    assert sel.to_dict() == {'host': 'host1', 'nodename': 'node1',
                             'limits': {'memory_mb': 1024, 'disk_gb': 10}}


def test_to_dict_without_limits():
    sel = selection.Selection.from_host_state(_host_state())
    sel.limits = None
    assert sel.to_dict() == {'host': 'host1', 'nodename': 'node1',
                             'limits': None}


def test_round_trip_through_the_wire(roundtrip, to_wire):
    sel = selection.Selection.from_host_state(
        _host_state(limits={'memory_mb': 2048}))
    wire = to_wire([[sel]])
    assert wire[0][0]['nova_object.name'] == 'Selection'
    assert wire[0][0]['nova_object.namespace'] == 'nova'
    back = roundtrip([[sel]])[0][0]
    assert isinstance(back, selection.Selection)
    assert back.to_dict() == sel.to_dict()
    assert back.compute_node_uuid == NODE_UUID
    assert back.cell_uuid == cell_mapping.SINGLE_CELL_UUID


def test_queens_selection_1_0_is_read(serializer):
    """Queens' Selection 1.0 has no availability_zone."""
    wire = {
        'nova_object.name': 'Selection', 'nova_object.namespace': 'nova',
        'nova_object.version': '1.0',
        'nova_object.data': {
            'compute_node_uuid': NODE_UUID, 'service_host': 'host7',
            'nodename': 'node7', 'cell_uuid': str(uuid.uuid4()),
            'limits': {
                'nova_object.name': 'SchedulerLimits',
                'nova_object.namespace': 'nova',
                'nova_object.version': '1.0',
                'nova_object.data': {'numa_topology': None, 'vcpu': None,
                                     'disk_gb': 80, 'memory_mb': 4096}},
            'allocation_request': '{"allocations": {}}',
            'allocation_request_version': '1.12'},
    }
    sel = serializer.deserialize_entity(None, wire)
    assert sel.VERSION == '1.0'
    assert not sel.obj_attr_is_set('availability_zone')
    assert sel.to_dict() == {'host': 'host7', 'nodename': 'node7',
                             'limits': {'disk_gb': 80, 'memory_mb': 4096}}


def test_host_without_compute_node_uuid_still_gives_a_selection():
    state = fakes.fake_host_state('host1', 'node1')
    state.update(compute={'host': 'host1', 'hypervisor_hostname': 'node1',
                          'uuid': None, 'free_disk_gb': None})
    sel = selection.Selection.from_host_state(state)
    assert sel.to_dict()['host'] == 'host1'
    # A stable uuid derived from (host, node).
    again = fakes.fake_host_state('host1', 'node1')
    assert sel.compute_node_uuid == again.uuid
    assert uuid.UUID(sel.compute_node_uuid)
