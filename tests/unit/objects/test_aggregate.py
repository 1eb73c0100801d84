"""Aggregate / AggregateList: availability zone, DB rows, Nova primitives."""

import fakes
import pytest

from scheduler import exception
from scheduler.objects import aggregate as aggregate_obj

AGG_UUID = '5a4f3e2d-1c0b-4a9f-8e7d-6c5b4a3f2e1d'


def _nova_aggregate(version='1.3', **data):
    values = {'id': 4, 'uuid': AGG_UUID, 'name': 'fast',
              'hosts': ['host1', 'host2'],
              'metadata': {'availability_zone': 'az1', 'ssd': 'true'},
              'created_at': '2017-02-22T10:30:05Z', 'updated_at': None,
              'deleted_at': None, 'deleted': False}
    values.update(data)
    return {'nova_object.name': 'Aggregate', 'nova_object.namespace': 'nova',
            'nova_object.version': version, 'nova_object.data': values,
            'nova_object.changes': ['metadata']}


@pytest.mark.parametrize('metadata,expected', [
    ({'availability_zone': 'az1', 'ssd': 'true'}, 'az1'),
    ({'ssd': 'true'}, None),
    ({}, None),
    (None, None),
])
def test_availability_zone_comes_from_metadata(metadata, expected):
    agg = aggregate_obj.Aggregate(id=1, metadata=metadata)
    assert agg.availability_zone == expected


def test_availability_zone_without_metadata_field():
    assert aggregate_obj.Aggregate(id=1).availability_zone is None


def test_from_db_row():
    row = {'id': 9, 'uuid': AGG_UUID, 'name': 'gpu', 'hosts': ('h1', 'h2'),
           'metadata': {'gpu': 'true'}}
    agg = aggregate_obj.Aggregate.from_db(row)
    assert (agg.id, agg.uuid, agg.name) == (9, AGG_UUID, 'gpu')
    assert agg.hosts == ['h1', 'h2']
    assert agg.metadata == {'gpu': 'true'}
    assert agg.obj_what_changed() == set()


def test_from_db_row_copies_its_input():
    row = {'id': 9, 'name': 'gpu', 'hosts': ['h1'], 'metadata': {'k': 'v'}}
    agg = aggregate_obj.Aggregate.from_db(row)
    row['hosts'].append('h2')
    row['metadata']['k'] = 'changed'
    assert agg.hosts == ['h1']
    assert agg.metadata == {'k': 'v'}


@pytest.mark.parametrize('row', [
    {'id': 2, 'name': 'old'},
    {'id': 2, 'name': 'old', 'uuid': None, 'hosts': None, 'metadata': None},
])
def test_from_db_row_without_uuid_hosts_or_metadata(row):
    agg = aggregate_obj.Aggregate.from_db(row)
    assert not agg.obj_attr_is_set('uuid')
    assert agg.hosts == []
    assert agg.metadata == {}
    assert agg.availability_zone is None


def test_nova_aggregate_is_read(serializer):
    agg = serializer.deserialize_entity(None, [_nova_aggregate()])[0]
    assert isinstance(agg, aggregate_obj.Aggregate)
    assert agg.id == 4
    assert agg.uuid == AGG_UUID
    assert agg.hosts == ['host1', 'host2']
    assert agg.availability_zone == 'az1'
    assert agg.obj_what_changed() == {'metadata'}


def test_older_nova_aggregate_is_read(serializer):
    """Liberty's Aggregate 1.1 has no uuid."""
    wire = _nova_aggregate('1.1')
    del wire['nova_object.data']['uuid']
    agg = serializer.deserialize_entity(None, wire)
    assert agg.VERSION == '1.1'
    assert agg.id == 4
    assert not agg.obj_attr_is_set('uuid')


def test_aggregate_with_bad_metadata_is_refused(serializer):
    wire = _nova_aggregate(metadata={'availability_zone': ['az1', 'az2']})
    with pytest.raises(exception.InvalidObjectPrimitive):
        serializer.deserialize_entity(None, wire)


def test_aggregate_list_round_trip(roundtrip, to_wire):
    aggs = aggregate_obj.AggregateList(objects=[
        fakes.fake_aggregate(1, ['h1'], {'availability_zone': 'az1'}),
        fakes.fake_aggregate(2, ['h2', 'h3'], {})])
    wire = to_wire(aggs)
    assert wire['nova_object.name'] == 'AggregateList'
    assert wire['nova_object.version'] == '1.3'
    back = roundtrip(aggs)
    assert isinstance(back, aggregate_obj.AggregateList)
    assert [a.id for a in back.objects] == [1, 2]
    assert [a.hosts for a in back.objects] == [['h1'], ['h2', 'h3']]
    assert [a.availability_zone for a in back.objects] == ['az1', None]
    assert [a.uuid for a in back.objects] == [a.uuid for a in aggs.objects]
