"""Tests of ``scheduler.db.api`` on SQLite, PostgreSQL and MySQL.

Each test gets a new database synced to head (``ctx`` fixture in this
directory's conftest), once per backend.
"""

import datetime
import threading
import uuid

import pytest
import sqlalchemy as sa
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db import options as db_options
from oslo_utils import timeutils

from scheduler import exception
from scheduler.db import api
from scheduler.db import changes as db_changes
from scheduler_tools import writers

# MySQL DATETIME keeps whole seconds.
TIME_SLACK = datetime.timedelta(seconds=2)


def _node_values(host='host1', node=None, **extra):
    values = {
        'host': host, 'hypervisor_hostname': node or host + '-node',
        'vcpus': 16, 'memory_mb': 32768, 'local_gb': 500,
        'vcpus_used': 2, 'memory_mb_used': 4096, 'local_gb_used': 40,
        'free_ram_mb': 28672, 'free_disk_gb': 460,
        'hypervisor_type': 'QEMU', 'hypervisor_version': 2011000,
        'cpu_info': '{}', 'host_ip': '192.0.2.10',
    }
    values.update(extra)
    return values


def _create_nodes(ctx, count, **extra):
    return [writers.compute_node_create(ctx,
                                        _node_values('host%d' % i, **extra))
            for i in range(count)]


def _raw_row(table, row_id):
    """A row read without the API's ``deleted = 0`` filter."""
    with api.get_engine().connect() as conn:
        return conn.execute(sa.select(table).where(
            table.c.id == row_id)).mappings().one()


def _assert_recent(value):
    assert value is not None
    assert abs(timeutils.utcnow() - value) < TIME_SLACK
    assert value.tzinfo is None


class _StatementCounter:
    """Counts the SQL statements sent on the engine while active."""

    def __init__(self, engine):
        self.engine = engine
        self.statements = []

    def _count(self, conn, cursor, statement, *args):
        self.statements.append(statement)

    def __enter__(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._count)
        return self

    def __exit__(self, *exc):
        sa.event.remove(self.engine, 'before_cursor_execute', self._count)

    def _starting_with(self, *verbs):
        return [s for s in self.statements
                if s.lstrip().upper().startswith(verbs)]

    @property
    def selects(self):
        return self._starting_with('SELECT')

    @property
    def queries(self):
        """Statements on data, leaving out BEGIN and the like."""
        return self._starting_with('SELECT', 'INSERT', 'UPDATE', 'DELETE')


# ------------------------------------------------------- compute nodes --

def test_compute_node_create_fills_defaults(ctx):
    node = writers.compute_node_create(ctx, _node_values())
    assert uuid.UUID(node['uuid']).version == 4
    assert node['stats'] == '{}'
    assert node['generation'] == 0
    assert node['deleted'] == 0
    assert node['updated_at'] is None
    assert node['host_ip'] == '192.0.2.10'
    assert isinstance(node['host_ip'], str)
    _assert_recent(node['created_at'])


def test_compute_node_create_serialises_json_columns(ctx):
    node = writers.compute_node_create(ctx, _node_values(
        stats={'num_instances': '3'},
        supported_instances=[['x86_64', 'kvm', 'hvm']],
        numa_topology='{"cells": []}'))
    assert node['stats'] == '{"num_instances": "3"}'
    assert node['supported_instances'] == '[["x86_64", "kvm", "hvm"]]'
    assert node['numa_topology'] == '{"cells": []}'


def test_compute_node_create_rejects_unknown_column(ctx):
    with pytest.raises(exception.Invalid, match='no_such_column'):
        writers.compute_node_create(ctx, _node_values(no_such_column=1))


def test_compute_node_get_all_orders_by_id_and_hides_deleted(ctx):
    nodes = _create_nodes(ctx, 3)
    writers.compute_node_delete(ctx, nodes[1]['id'])
    found = api.compute_node_get_all(ctx)
    assert [n['id'] for n in found] == [nodes[0]['id'], nodes[2]['id']]
    assert found[0] == nodes[0]
    assert set(found[0]) == set(api.COMPUTE_NODES.c.keys())


def test_compute_node_delete_is_soft(ctx):
    node = writers.compute_node_create(ctx, _node_values())
    writers.compute_node_delete(ctx, node['id'])
    row = _raw_row(api.COMPUTE_NODES, node['id'])
    assert row['deleted'] == node['id']
    _assert_recent(row['deleted_at'])
    assert row['updated_at'] is None
    with pytest.raises(exception.NotFound):
        api.compute_node_get(ctx, node['id'])
    with pytest.raises(exception.NotFound):
        writers.compute_node_delete(ctx, node['id'])


def test_compute_node_unique_host_node_among_live_rows(ctx):
    node = writers.compute_node_create(ctx, _node_values())
    with pytest.raises(db_exc.DBDuplicateEntry):
        writers.compute_node_create(ctx, _node_values())
    writers.compute_node_delete(ctx, node['id'])
    again = writers.compute_node_create(ctx, _node_values())
    assert again['id'] != node['id']


def test_compute_node_update_bumps_generation(ctx):
    node = writers.compute_node_create(ctx, _node_values())
    first = writers.compute_node_update(ctx, node['id'], {'free_ram_mb': 1024})
    second = writers.compute_node_update(ctx, node['id'],
                                         {'stats': {'io_workload': '2'}})
    assert (first['generation'], second['generation']) == (1, 2)
    assert first['free_ram_mb'] == 1024
    assert second['stats'] == '{"io_workload": "2"}'
    _assert_recent(second['updated_at'])
    assert second['created_at'] == node['created_at']
    assert api.compute_node_get(ctx, node['id']) == second


@pytest.mark.parametrize('column', ['id', 'generation', 'deleted', 'bogus'])
def test_compute_node_update_refuses_column(ctx, column):
    node = writers.compute_node_create(ctx, _node_values())
    with pytest.raises(exception.Invalid, match=column):
        writers.compute_node_update(ctx, node['id'], {column: 7})
    assert api.compute_node_get(ctx, node['id'])['generation'] == 0


def test_compute_node_update_of_missing_or_deleted_node(ctx):
    node = writers.compute_node_create(ctx, _node_values())
    writers.compute_node_delete(ctx, node['id'])
    for compute_id in (node['id'], node['id'] + 100):
        with pytest.raises(exception.NotFound):
            writers.compute_node_update(ctx, compute_id, {'free_ram_mb': 1})


def test_get_changes_since(ctx):
    now = timeutils.utcnow()
    old = now - datetime.timedelta(hours=2)
    since = now - datetime.timedelta(hours=1)
    untouched, updated, deleted = _create_nodes(ctx, 3, created_at=old)
    writers.compute_node_update(ctx, updated['id'], {'free_ram_mb': 1})
    writers.compute_node_delete(ctx, deleted['id'])
    created = writers.compute_node_create(ctx, _node_values('new-host'))
    old_service = writers.service_create(ctx, {'host': 'host0',
                                               'binary': 'nova-compute',
                                               'created_at': old})
    beating = writers.service_create(ctx, {'host': 'host1',
                                           'binary': 'nova-compute',
                                           'created_at': old})
    writers.service_update(ctx, beating['id'], {'report_count': 1})
    writers.service_create(ctx, {'host': 'host1', 'binary': 'nova-conductor'})
    writers.instance_create(ctx, {'uuid': str(uuid.uuid4()), 'host': 'host0',
                                  'created_at': old})
    fresh = writers.instance_create(ctx, {'uuid': str(uuid.uuid4()),
                                          'host': 'host1'})

    changes = db_changes.get_changes_since(ctx, since)
    assert [n['id'] for n in changes['compute_nodes']] == [updated['id'],
                                                           created['id']]
    assert changes['compute_nodes'][0]['generation'] == 1
    assert changes['deleted_compute_node_ids'] == {deleted['id']}
    assert [s['id'] for s in changes['services']] == [beating['id']]
    assert [i['uuid'] for i in changes['instances']] == [fresh['uuid']]
    assert old_service['id'] not in {s['id'] for s in changes['services']}

    later = db_changes.get_changes_since(
        ctx, now + datetime.timedelta(hours=1))
    assert later == {'compute_nodes': [], 'deleted_compute_node_ids': set(),
                     'services': [], 'instances': []}
    assert untouched['id'] in api.compute_node_get_ids(ctx)


def _plan(db_engine, statement, prefix, setup=()):
    bound = statement.params(since=timeutils.utcnow(), binary='nova-compute')
    compiled = bound.compile(db_engine,
                             compile_kwargs={'literal_binds': True})
    with db_engine.connect() as connection:
        for sql in setup:
            connection.exec_driver_sql(sql)
        return [row[-1] for row in connection.exec_driver_sql(
            '%s %s' % (prefix, compiled)).all()]


def test_changes_are_found_by_index_not_by_scan(db_engine):
    """Each of the three tables is searched through its timestamp
    indexes: a decision's read costs O(rows changed), not O(rows).  On
    PostgreSQL, whose planner prefers a scan of a small table (or of any
    index, for the services' ``binary``), the test checks that the bitmap
    OR of the three indexes exists (other scans disabled); at 100,000
    nodes the planner chooses it by itself."""
    from scheduler.db import migration

    migration.db_sync()
    dialect = db_engine.dialect.name
    if dialect not in ('sqlite', 'postgresql'):
        pytest.skip('query plans are checked on SQLite and PostgreSQL')
    for table in (api.COMPUTE_NODES, api.SERVICES, api.INSTANCES):
        statement = db_changes._changed_since_select(table, dialect)
        table = table.name
        if dialect == 'sqlite':
            details = _plan(db_engine, statement, 'EXPLAIN QUERY PLAN')
            assert 'SCAN %s' % table not in details, details
            assert sum('USING COVERING INDEX %s_' % table in d
                       for d in details) == 3, details
        else:
            details = '\n'.join(_plan(db_engine, statement, 'EXPLAIN',
                                      ['SET enable_seqscan = off',
                                       'SET enable_indexscan = off']))
            assert 'Seq Scan' not in details, details
            assert 'BitmapOr' in details, details
            for column in db_changes._CHANGE_TIMESTAMPS:
                assert 'Bitmap Index Scan on %s_%s_idx' % (
                    table, column) in details, details


def test_compute_node_get_ids(ctx):
    nodes = _create_nodes(ctx, 3)
    writers.compute_node_delete(ctx, nodes[0]['id'])
    assert api.compute_node_get_ids(ctx) == {nodes[1]['id'], nodes[2]['id']}


def test_compute_node_get_all_is_one_select(ctx, db_engine):
    _create_nodes(ctx, 5)
    with _StatementCounter(db_engine) as counter:
        assert len(api.compute_node_get_all(ctx)) == 5
    assert len(counter.selects) == 1


# ------------------------------------------------------------ services --

def _service(ctx, host, binary='nova-compute', topic='compute', **extra):
    values = dict(host=host, binary=binary, topic=topic, **extra)
    return writers.service_create(ctx, values)


def test_service_create_defaults(ctx):
    service = _service(ctx, 'host1')
    assert uuid.UUID(service['uuid'])
    assert service['report_count'] == 0
    assert service['disabled'] is False
    assert service['forced_down'] is False
    assert service['version'] == 0
    assert service['last_seen_up'] is None
    _assert_recent(service['created_at'])


def test_service_get_all_by_binary(ctx):
    enabled = _service(ctx, 'host1')
    disabled = _service(ctx, 'host2', disabled=True,
                        disabled_reason='maintenance')
    _service(ctx, 'host1', binary='nova-scheduler', topic='scheduler')
    gone = _service(ctx, 'host3')
    with api.context_manager.writer.using(ctx) as session:
        session.execute(sa.update(api.SERVICES)
                        .where(api.SERVICES.c.id == gone['id'])
                        .values(deleted=gone['id']))

    found = api.service_get_all_by_binary(ctx)
    assert [s['id'] for s in found] == [enabled['id'], disabled['id']]
    assert found[1]['disabled_reason'] == 'maintenance'
    only_enabled = api.service_get_all_by_binary(
        ctx, 'nova-compute', include_disabled=False)
    assert [s['id'] for s in only_enabled] == [enabled['id']]
    assert [s['host'] for s in api.service_get_all_by_binary(
        ctx, 'nova-scheduler')] == ['host1']


def test_service_get_all_by_topic_skips_disabled(ctx):
    enabled = _service(ctx, 'host1')
    _service(ctx, 'host2', disabled=True)
    _service(ctx, 'host1', binary='nova-scheduler', topic='scheduler')
    found = api.service_get_all_by_topic(ctx, 'compute')
    assert [s['id'] for s in found] == [enabled['id']]


def test_service_unique_host_binary(ctx):
    _service(ctx, 'host1')
    with pytest.raises(db_exc.DBDuplicateEntry):
        _service(ctx, 'host1', topic='other')


def test_service_update_sets_last_seen_up_when_count_rises(ctx):
    service = _service(ctx, 'host1')
    updated = writers.service_update(ctx, service['id'], {'report_count': 5})
    assert updated['report_count'] == 5
    _assert_recent(updated['last_seen_up'])
    _assert_recent(updated['updated_at'])

    with api.context_manager.writer.using(ctx) as session:
        session.execute(sa.update(api.SERVICES).values(last_seen_up=None))
    same = writers.service_update(ctx, service['id'], {'report_count': 5,
                                                       'disabled': True})
    assert same['last_seen_up'] is None
    assert same['disabled'] is True


def test_service_update_missing(ctx):
    with pytest.raises(exception.NotFound):
        writers.service_update(ctx, 42, {'disabled': True})
    with pytest.raises(exception.Invalid):
        writers.service_update(ctx, 42, {'generation': 1})


def test_service_heartbeat(ctx, db_engine):
    service = _service(ctx, 'host1')
    with _StatementCounter(db_engine) as counter:
        assert writers.service_heartbeat(ctx, service['id']) is None
    assert len(counter.queries) == 1
    writers.service_heartbeat(ctx, service['id'])
    (found,) = api.service_get_all_by_binary(ctx)
    assert found['report_count'] == 2
    _assert_recent(found['last_seen_up'])
    assert found['updated_at'] == found['last_seen_up']
    with pytest.raises(exception.NotFound):
        writers.service_heartbeat(ctx, service['id'] + 1)


# ---------------------------------------------------------- aggregates --

def test_aggregate_create_and_get(ctx):
    agg = writers.aggregate_create(ctx, 'rack1', {'availability_zone': 'az1',
                                                  'skipped': None})
    assert set(agg) == {'id', 'uuid', 'name', 'hosts', 'metadata',
                        'created_at', 'updated_at'}
    assert agg['name'] == 'rack1'
    assert uuid.UUID(agg['uuid'])
    assert agg['hosts'] == []
    assert agg['metadata'] == {'availability_zone': 'az1'}
    _assert_recent(agg['created_at'])
    assert api.aggregate_get(ctx, agg['id']) == agg
    given = writers.aggregate_create(ctx, 'rack2',
                                     uuid='a' * 8 + '-' + 'b' * 27)
    assert given['uuid'] == 'a' * 8 + '-' + 'b' * 27


def test_aggregate_name_is_unique(ctx):
    writers.aggregate_create(ctx, 'rack1')
    with pytest.raises(db_exc.DBDuplicateEntry):
        writers.aggregate_create(ctx, 'rack1')


def test_aggregate_hosts(ctx):
    agg = writers.aggregate_create(ctx, 'rack1')
    writers.aggregate_add_host(ctx, agg['id'], 'host1')
    agg = writers.aggregate_add_host(ctx, agg['id'], 'host2')
    assert agg['hosts'] == ['host1', 'host2']
    _assert_recent(agg['updated_at'])
    with pytest.raises(db_exc.DBDuplicateEntry):
        writers.aggregate_add_host(ctx, agg['id'], 'host1')
    agg = writers.aggregate_remove_host(ctx, agg['id'], 'host1')
    assert agg['hosts'] == ['host2']
    with pytest.raises(exception.NotFound):
        writers.aggregate_remove_host(ctx, agg['id'], 'host1')
    with pytest.raises(exception.NotFound):
        writers.aggregate_add_host(ctx, agg['id'] + 1, 'host1')


def test_aggregate_update_metadata(ctx):
    agg = writers.aggregate_create(ctx, 'rack1',
                                   {'a': '1', 'b': '2', 'c': '3'})
    agg = writers.aggregate_update_metadata(
        ctx, agg['id'], {'a': '10', 'b': None, 'd': '4', 'gone': None})
    assert agg['metadata'] == {'a': '10', 'c': '3', 'd': '4'}
    unchanged = writers.aggregate_update_metadata(ctx, agg['id'], {})
    assert unchanged['metadata'] == agg['metadata']
    with pytest.raises(exception.NotFound):
        writers.aggregate_update_metadata(ctx, agg['id'] + 1, {'a': '1'})


def test_aggregate_delete(ctx):
    agg = writers.aggregate_create(ctx, 'rack1', {'a': '1'})
    writers.aggregate_add_host(ctx, agg['id'], 'host1')
    kept = writers.aggregate_create(ctx, 'rack2', {'a': '2'})
    writers.aggregate_delete(ctx, agg['id'])
    assert api.aggregate_get_all(ctx) == [kept]
    with pytest.raises(exception.NotFound):
        api.aggregate_get(ctx, agg['id'])
    with pytest.raises(exception.NotFound):
        writers.aggregate_delete(ctx, agg['id'])


def test_aggregate_get_all_uses_three_selects(ctx, db_engine):
    for index in range(4):
        agg = writers.aggregate_create(ctx, 'agg%d' % index,
                                       {'key%d' % index: str(index)})
        for host in range(index):
            writers.aggregate_add_host(ctx, agg['id'], 'host%d' % host)
    with _StatementCounter(db_engine) as counter:
        aggregates = api.aggregate_get_all(ctx)
    assert len(counter.selects) == 3
    assert [a['name'] for a in aggregates] == ['agg0', 'agg1', 'agg2',
                                               'agg3']
    assert aggregates[3]['hosts'] == ['host0', 'host1', 'host2']
    assert aggregates[2]['metadata'] == {'key2': '2'}
    assert aggregates[0]['hosts'] == []


# ----------------------------------------------------------- instances --

def _instance(ctx, host, node=None, **extra):
    values = dict(uuid=str(uuid.uuid4()), host=host,
                  node=node or host + '-node', memory_mb=512, vcpus=1,
                  root_gb=1, ephemeral_gb=0, vm_state='active', **extra)
    return writers.instance_create(ctx, values)


def test_instance_create_requires_uuid(ctx):
    with pytest.raises(exception.Invalid):
        writers.instance_create(ctx, {'host': 'host1'})
    created = _instance(ctx, 'host1', instance_type_id=3, os_type='linux')
    assert created['instance_type_id'] == 3
    assert created['deleted'] == 0
    _assert_recent(created['created_at'])


def test_instance_get_all_by_host(ctx):
    first = _instance(ctx, 'host1')
    gone = _instance(ctx, 'host1')
    second = _instance(ctx, 'host1')
    _instance(ctx, 'host2')
    writers.instance_destroy(ctx, gone['uuid'])
    found = api.instance_get_all_by_host(ctx, 'host1')
    assert [i['uuid'] for i in found] == [first['uuid'], second['uuid']]
    assert found[0] == first
    assert api.instance_get_all_by_host(ctx, 'nowhere') == []


def test_instance_destroy_is_soft(ctx):
    instance = _instance(ctx, 'host1')
    writers.instance_destroy(ctx, instance['uuid'])
    row = _raw_row(api.INSTANCES, instance['id'])
    assert row['deleted'] == instance['id']
    _assert_recent(row['deleted_at'])
    with pytest.raises(exception.NotFound):
        writers.instance_destroy(ctx, instance['uuid'])


def test_instance_get_all_by_hosts(ctx, db_engine, monkeypatch):
    monkeypatch.setattr(api, 'IN_CHUNK_SIZE', 2)
    made = {host: [_instance(ctx, host)['uuid'] for _ in range(2)]
            for host in ('host1', 'host2', 'host3')}
    writers.instance_destroy(ctx, made['host3'][0])
    hosts = ['host1', 'host2', 'host3', 'empty', 'host1']
    with _StatementCounter(db_engine) as counter:
        found = api.instance_get_all_by_hosts(ctx, hosts)
    assert len(counter.selects) == 2
    assert sorted(found) == ['empty', 'host1', 'host2', 'host3']
    assert found['empty'] == []
    for host in ('host1', 'host2'):
        assert [i['uuid'] for i in found[host]] == made[host]
    assert [i['uuid'] for i in found['host3']] == made['host3'][1:]


# ------------------------------------------------------- server groups --

def test_instance_group_get_by_uuid(ctx):
    on_1 = _instance(ctx, 'host1')
    also_on_1 = _instance(ctx, 'host1')
    on_2 = _instance(ctx, 'host2')
    unplaced = writers.instance_create(ctx, {'uuid': str(uuid.uuid4())})
    deleted = _instance(ctx, 'host3')
    writers.instance_destroy(ctx, deleted['uuid'])
    members = [i['uuid'] for i in (on_2, on_1, also_on_1, unplaced,
                                   deleted)] + ['not-an-instance']
    created = writers.instance_group_create(
        ctx, {'name': 'web', 'project_id': 'p1', 'user_id': 'u1'},
        policies=['anti-affinity'], members=members,
        rules={'max_server_per_host': '2'})

    group = api.instance_group_get_by_uuid(ctx, created['uuid'])
    assert group == created
    assert uuid.UUID(group['uuid'])
    assert (group['name'], group['project_id'], group['user_id']) == (
        'web', 'p1', 'u1')
    assert group['policies'] == ['anti-affinity']
    assert group['rules'] == {'max_server_per_host': '2'}
    assert group['members'] == members
    assert group['hosts'] == ['host1', 'host2']


def test_instance_group_without_rules_or_members(ctx):
    group = writers.instance_group_create(ctx, {'uuid': str(uuid.uuid4())},
                                          policies=['affinity'])
    assert (group['policies'], group['rules'], group['members'],
            group['hosts']) == (['affinity'], {}, [], [])
    with pytest.raises(exception.Invalid):
        writers.instance_group_create(ctx, {},
                                      rules={'max_server_per_host': 1})


def test_instance_group_not_found(ctx):
    with pytest.raises(exception.NotFound):
        api.instance_group_get_by_uuid(ctx, str(uuid.uuid4()))


# ------------------------------------------------ transactions, engine --

def test_calls_join_an_enclosing_transaction(ctx):
    with pytest.raises(RuntimeError):
        with api.context_manager.writer.using(ctx):
            writers.compute_node_create(ctx, _node_values())
            writers.aggregate_create(ctx, 'rack1')
            raise RuntimeError('roll back')
    assert api.compute_node_get_all(ctx) == []
    assert api.aggregate_get_all(ctx) == []


def test_threads_share_the_database(ctx):
    service = _service(ctx, 'host1')
    errors = []

    def work(index):
        try:
            for _ in range(5):
                writers.service_heartbeat(ctx.elevated(), service['id'])
            writers.compute_node_create(ctx.elevated(),
                                        _node_values('host%d' % index))
            api.compute_node_get_all(ctx.elevated())
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(api.compute_node_get_ids(ctx)) == 4
    (found,) = api.service_get_all_by_binary(ctx)
    assert found['report_count'] == 20


def test_a_server_transaction_reads_rows_committed_after_it_began(ctx):
    """READ COMMITTED on PostgreSQL (its default) and on MySQL/MariaDB
    (set on each connection; InnoDB's REPEATABLE READ would keep the
    first read's snapshot, and lock index gaps that two decisions'
    claims then deadlock on: ``test_decision_transaction``)."""
    engine = api.get_engine()
    if engine.dialect.name == 'sqlite':
        pytest.skip('SQLite: a transaction reads one snapshot')
    _create_nodes(ctx, 1)
    count = sa.select(sa.func.count()).select_from(api.COMPUTE_NODES)
    with engine.connect() as reader:
        assert reader.execute(count).scalar() == 1
        writers.compute_node_create(ctx, _node_values('host-late'))
        assert reader.execute(count).scalar() == 2
        assert reader.in_transaction()


def _conf_with_connection(connection):
    conf = cfg.ConfigOpts()
    db_options.set_defaults(conf, connection=connection)
    conf([])
    return conf


@pytest.fixture
def sqlite_paths(tmp_path):
    yield tmp_path / 'first.sqlite', tmp_path / 'second.sqlite'
    writers.reset_engine()


def test_configure_once_started_changes_nothing(sqlite_paths):
    first, second = sqlite_paths
    writers.reset_engine('sqlite:///%s' % first)
    engine = api.get_engine()
    assert api.configure(_conf_with_connection('sqlite:///%s' % second)) \
        is False
    assert api.get_engine() is engine
    assert engine.url.database == str(first)


def test_configure_before_start_takes_conf(sqlite_paths):
    first, second = sqlite_paths
    writers.reset_engine('sqlite:///%s' % first)
    conf = _conf_with_connection('sqlite:///%s' % second)
    assert api.configure(conf) is True
    assert api.configure(conf) is True
    assert api.get_engine().url.database == str(second)


def test_reset_without_url_returns_to_conf(sqlite_paths, monkeypatch):
    first, _ = sqlite_paths
    monkeypatch.setattr(api, 'CONF', _conf_with_connection(
        'sqlite:///%s' % first))
    writers.reset_engine('sqlite://')
    writers.reset_engine()
    assert api.configure() is True
    assert api.get_engine().url.database == str(first)


def test_compute_node_iter_all_and_hosts(ctx):
    nodes = _create_nodes(ctx, 5)
    writers.compute_node_delete(ctx, nodes[1]['id'])
    expected = api.compute_node_get_all(ctx)
    assert list(api.compute_node_iter_all(ctx, batch=2)) == expected
    assert [n['id'] for n in expected] == [nodes[i]['id']
                                           for i in (0, 2, 3, 4)]
    assert api.compute_node_get_hosts(ctx) == {'host0', 'host2', 'host3',
                                               'host4'}
