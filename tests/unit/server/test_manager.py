"""SchedulerManager on a real SQLite database: the endpoint's own rules,
and the claims it takes and releases (``select_destinations`` claims,
the ``delete_instance_info`` cast releases) through the same endpoint."""

import uuid

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from scheduler import exception
from scheduler import rpc
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.objects import request_group
from scheduler.server import manager
from scheduler_tools import seed
from scheduler_tools import writers


def _raises(cls, func, *args, **kwargs):
    """Call the endpoint as the RPC dispatcher would: expected exceptions
    come wrapped in ExpectedException; return the original one."""
    with pytest.raises(messaging.ExpectedException) as info:
        func(*args, **kwargs)
    original = info.value.exc_info[1]
    assert isinstance(original, cls)
    return original


@pytest.fixture
def endpoint(tmp_path):
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'm.sqlite'))
    seed.add_compute(ctx, 'h1')
    return ctx, manager.SchedulerManager(ctx)


def test_legacy_dicts_and_objects_give_the_same_answer(endpoint):
    ctx, mgr = endpoint
    spec = seed.make_spec()
    legacy = mgr.select_destinations(
        ctx, request_spec=spec.to_legacy_request_spec_dict(),
        filter_properties=spec.to_legacy_filter_properties_dict())
    assert legacy[0]['host'] == 'h1'
    objects = mgr.select_destinations(ctx, spec_obj=seed.make_spec(),
                                      return_objects=True)
    assert objects[0][0].service_host == 'h1'


def test_spec_obj_must_be_a_request_spec(endpoint):
    ctx, mgr = endpoint
    _raises(exception.InvalidRequestSpec, mgr.select_destinations, ctx,
            spec_obj={'flavor': 1})


@pytest.mark.parametrize('uuids', ['abc', [1, 2], ['not-a-uuid']])
def test_instance_uuids_must_be_uuids(endpoint, uuids):
    ctx, mgr = endpoint
    _raises(exception.InvalidRequestSpec, mgr.select_destinations, ctx,
            spec_obj=seed.make_spec(), instance_uuids=uuids)


def test_database_error_is_a_specific_error_and_consumes_nothing(endpoint):
    ctx, mgr = endpoint
    with db.get_engine().begin() as conn:
        conn.execute(sa.text('ALTER TABLE services RENAME TO services_off'))
    err = _raises(exception.DatabaseUnavailable, mgr.select_destinations,
                  ctx, spec_obj=seed.make_spec())
    assert 'database is unavailable' in str(err)
    with db.get_engine().begin() as conn:
        conn.execute(sa.text('ALTER TABLE services_off RENAME TO services'))
    state = mgr.host_manager.get_all_host_states(ctx)[0]
    assert state.free_ram_mb == 16384
    assert mgr.select_destinations(ctx, spec_obj=seed.make_spec())


def test_unreachable_database_is_a_specific_error(endpoint, tmp_path):
    ctx, mgr = endpoint
    # The connection itself fails (a raw DBAPI error under SQLAlchemy
    # 2.1, which oslo.db does not translate).
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'missing' / 'x.sqlite'))
    try:
        err = _raises(exception.DatabaseUnavailable,
                      mgr.select_destinations, ctx,
                      spec_obj=seed.make_spec())
    finally:
        writers.reset_engine()
    assert 'database is unavailable' in str(err)


def test_bad_casts_are_dropped(endpoint, caplog):
    ctx, mgr = endpoint
    mgr.update_aggregates(ctx, aggregates=['x'])
    mgr.delete_aggregate(ctx, aggregate=None)
    mgr.update_instance_info(ctx, host_name=None, instance_info=[])
    mgr.delete_instance_info(ctx, host_name='h1', instance_uuid='nope')
    mgr.sync_instance_info(ctx, host_name='h1', instance_uuids='x')
    assert caplog.text.count('Dropping') == 5
    assert mgr.select_destinations(ctx, spec_obj=seed.make_spec())


def test_ping():
    assert manager.BaseRPCAPI().ping(None, arg='x') == {
        'service': 'scheduler', 'arg': 'x'}


def _claimed(ctx, node_id):
    """``(claimed_vcpus, claimed_memory_mb, claimed_disk_gb)`` of a node."""
    row = db.compute_node_get(ctx, node_id)
    return (row['claimed_vcpus'], row['claimed_memory_mb'],
            row['claimed_disk_gb'])


def test_delete_instance_info_releases_the_claim(tmp_path):
    # One node with room for exactly one 4-vCPU, 16 GiB, 150 GiB instance
    # (RAM limit 16384 * 1.5, disk 200), so the released room is the only
    # room.
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'c.sqlite'))
    node = seed.add_compute(ctx, 'h1')
    mgr = manager.SchedulerManager(ctx)
    spec = dict(vcpus=4, memory_mb=16384, root_gb=150)
    kept, gone = str(uuid.uuid4()), str(uuid.uuid4())
    assert mgr.select_destinations(
        ctx, spec_obj=seed.make_spec(**spec), instance_uuids=[gone])[0][
        'host'] == 'h1'
    assert [c['instance_uuid'] for c in claims.get_claims(ctx)] == [gone]
    assert _claimed(ctx, node['id']) == (4, 16384, 150)
    _raises(exception.NoValidHost, mgr.select_destinations, ctx,
            spec_obj=seed.make_spec(**spec), instance_uuids=[kept])

    mgr.delete_instance_info(ctx, host_name='h1', instance_uuid=gone)
    assert claims.get_claims(ctx) == []
    assert _claimed(ctx, node['id']) == (0, 0, 0)
    assert claims.unbalanced_nodes(ctx) == []
    # The room is free again, for this endpoint's view too.
    assert mgr.select_destinations(
        ctx, spec_obj=seed.make_spec(**spec), instance_uuids=[kept])[0][
        'host'] == 'h1'
    assert [c['instance_uuid'] for c in claims.get_claims(ctx)] == [kept]


def test_delete_instance_info_without_a_claim_changes_nothing(endpoint):
    ctx, mgr = endpoint
    claimed = str(uuid.uuid4())
    mgr.select_destinations(ctx, spec_obj=seed.make_spec(),
                            instance_uuids=[claimed])
    before = (claims.get_claims(ctx), db.compute_node_get_all(ctx))
    assert [c['instance_uuid'] for c in before[0]] == [claimed]

    # An instance that was never claimed: neither the other instance's
    # claim nor the node row (claimed_*, generation, updated_at) moves.
    mgr.delete_instance_info(ctx, host_name='h1',
                             instance_uuid=str(uuid.uuid4()))
    assert (claims.get_claims(ctx), db.compute_node_get_all(ctx)) == before

    # A repeated cast for a released instance: nothing either.
    mgr.delete_instance_info(ctx, host_name='h1', instance_uuid=claimed)
    released = db.compute_node_get_all(ctx)
    assert claims.get_claims(ctx) == []
    mgr.delete_instance_info(ctx, host_name='h1', instance_uuid=claimed)
    assert db.compute_node_get_all(ctx) == released
    assert claims.unbalanced_nodes(ctx) == []


# -- Nova callers ------------------------------------------------------------

def _our_client_context(ctx):
    """``ctx`` as it arrives from a client of ours (``rpc.get_client``)."""
    return _received(ctx, list(rpc.ALLOWED_EXMODS))


def _received(ctx, caller_exmods=None):
    """``ctx`` as it arrives in a message; by default from Nova, whose
    context does not list the modules it rebuilds exceptions from."""
    values = rpc.RequestContextSerializer(
        caller_exmods=caller_exmods).serialize_context(ctx)
    return rpc.RequestContextSerializer().deserialize_context(values)


def test_errors_reach_a_nova_caller_under_novas_names(endpoint):
    ctx, mgr = endpoint
    ctx = _received(ctx)
    err = _raises(exception.NoValidHost, mgr.select_destinations, ctx,
                  spec_obj=seed.make_spec(memory_mb=10 ** 6))
    assert (type(err).__module__, type(err).__name__) == (
        'nova.exception', 'NoValidHost')
    err = _raises(exception.InvalidRequestSpec, mgr.select_destinations, ctx,
                  spec_obj={'flavor': 1})
    assert type(err) is exception.InvalidRequestSpec


@pytest.mark.parametrize('received', [_our_client_context, None],
                         ids=['our-client', 'in-process'])
def test_errors_reach_others_under_our_names(endpoint, received):
    ctx, mgr = endpoint
    err = _raises(exception.NoValidHost, mgr.select_destinations,
                  received(ctx) if received else ctx,
                  spec_obj=seed.make_spec(memory_mb=10 ** 6))
    assert type(err) is exception.NoValidHost


@pytest.mark.parametrize('fields,named', [
    ({'extra_specs': {'resources:VGPU': '1'}}, 'resources:VGPU=1'),
    ({'extra_specs': {'trait:CUSTOM_GOLD': 'required'}},
     'trait:CUSTOM_GOLD=required'),
    ({'requested_resources': [request_group.RequestGroup(
        resources={'NET_BW_EGR_KILOBIT_PER_SEC': 10})]},
     'NET_BW_EGR_KILOBIT_PER_SEC=10'),
    ({'request_level_params': request_group.RequestLevelParams(
        root_required={'CUSTOM_GOLD'})}, 'root trait CUSTOM_GOLD required'),
])
def test_placement_only_requests_are_refused(endpoint, fields, named):
    ctx, mgr = endpoint
    err = _raises(exception.PlacementRequired, mgr.select_destinations,
                  _received(ctx), spec_obj=seed.make_spec(**fields))
    assert type(err).__name__ == 'NoValidHost'
    assert 'no Placement service' in str(err)
    assert named in str(err)
    # Nothing was consumed.
    state = mgr.host_manager.get_all_host_states(ctx)[0]
    assert state.free_ram_mb == 16384
    err = _raises(exception.PlacementRequired, mgr.select_destinations,
                  _our_client_context(ctx),
                  spec_obj=seed.make_spec(**fields))
    assert type(err) is exception.PlacementRequired


def test_boot_from_volume_is_accepted(endpoint):
    ctx, mgr = endpoint
    spec = seed.make_spec(is_bfv=True)
    assert spec.local_root_gb == 0
    assert mgr.select_destinations(ctx, spec_obj=spec)[0]['host'] == 'h1'


@pytest.mark.parametrize('spec_version,selection_version,has_az', [
    ('1.8', '1.0', False),      # Queens
    ('1.12', '1.0', False),     # Train
    ('1.13', '1.1', True),      # Ussuri
    ('1.15', '1.1', True),      # 34.0.0
])
def test_selections_in_the_version_the_caller_reads(endpoint, spec_version,
                                                    selection_version,
                                                    has_az):
    ctx, mgr = endpoint
    spec = seed.make_spec()
    # What a RequestSpec primitive of that version is read as.
    spec.VERSION = spec_version
    [[picked]] = mgr.select_destinations(ctx, spec_obj=spec,
                                         return_objects=True)
    assert picked.VERSION == selection_version
    assert picked.service_host == 'h1'
    assert picked.obj_attr_is_set('availability_zone') is has_az
    wire = picked.obj_to_primitive()
    assert wire['nova_object.version'] == selection_version
