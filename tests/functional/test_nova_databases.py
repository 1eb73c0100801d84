"""The scheduler in Nova database mode, on databases Nova 34 made.

Once per module and backend (PostgreSQL on the session's server, SQLite
files), Nova's own migrations create an API database, cell0 and two cell
databases and Nova's ``nova-manage cell_v2`` commands map the cells
(``nova_databases.NovaDatabases``); each test writes its compute nodes,
services, instances, aggregates and server groups with Nova's objects
(a driver process in the Nova venv: this process never imports Nova),
lets our FilterScheduler and HostManager, in Nova database mode
(``[api_database] connection``), schedule on them, and has Nova's
objects remove its rows at the end.  Our own database (claims) is a new
one per test.
"""

import contextlib
import datetime
import os
import subprocess
import sys
import time
import uuid

import pytest
import sqlalchemy as sa
from deployment import Deployment
from nova_databases import NovaDatabases
from nova_databases import schema_of

from scheduler import context as scheduler_context
from scheduler.db import api
from scheduler.db import claims
from scheduler.db import source as db_source
from scheduler.db.nova import cells
from scheduler.db.nova import schema
from scheduler.db.nova import source as nova_source
from scheduler.drivers import filter_scheduler
from scheduler.objects import cell_mapping
from scheduler.objects import instance_group as group_obj
from scheduler.objects import request_spec
from scheduler.objects import selection as selection_obj
from scheduler.server import service
from scheduler.view import refresh
from scheduler_tools import seed
from scheduler_tools import writers

FILTERS = ['AvailabilityZoneFilter', 'RamFilter', 'ComputeFilter',
           'ServerGroupAffinityFilter', 'ServerGroupAntiAffinityFilter']
GiB = 1024


@pytest.fixture(scope='module', params=['postgresql', 'sqlite'])
def backend(request):
    return request.param


@pytest.fixture(scope='module')
def nova_dbs(backend, request, tmp_path_factory):
    """The Nova databases of the module, on ``backend``."""
    admin_url = (request.getfixturevalue('postgresql_url')
                 if backend == 'postgresql' else 'sqlite://')
    with NovaDatabases(admin_url, tmp_path_factory.mktemp('nova')) as made:
        yield made


@pytest.fixture
def own_url(backend, request, fresh_database, tmp_path):
    """A new database of our own, on the same backend."""
    if backend == 'postgresql':
        return fresh_database(request.getfixturevalue('postgresql_url'),
                              prefix='scheduler_own')
    return 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')


@pytest.fixture
def nova(nova_dbs, own_url, conf):
    """The Nova driver, with the scheduler configured in Nova database
    mode on ``nova_dbs`` and ``own_url`` (synced); the test's Nova rows
    are destroyed afterwards."""
    conf.set_override('connection', nova_dbs.urls['api'], 'api_database')
    conf.set_override('enabled_filters', FILTERS, 'filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'], 'filter_scheduler')
    db_source.reset()
    seed.use_database(own_url)
    yield nova_dbs.nova
    db_source.reset()
    writers.reset_engine()
    nova_dbs.nova.request('clear')


@pytest.fixture
def ctx(nova):
    return scheduler_context.get_admin_context()


def _driver(ctx):
    return filter_scheduler.FilterScheduler(ctx)


def _hosts(selections):
    return [picks[0].service_host for picks in selections]


def _add(nova, cell, host, memory_mb=16 * GiB, **extra):
    return nova.request('add_compute', cell=cell, host=host,
                        memory_mb=memory_mb, **extra)


def _state(driver, ctx, host):
    states = driver.host_manager.get_all_host_states(ctx)
    return next(s for s in states if s.host == host)


# -- scheduling ---------------------------------------------------------------

def test_one_instance_then_three(nova, ctx):
    _add(nova, 'cell1', 'big', memory_mb=16 * GiB)
    _add(nova, 'cell1', 'small', memory_mb=8 * GiB)
    driver = _driver(ctx)
    assert _hosts(driver.select_destinations(
        ctx, seed.make_spec(memory_mb=2 * GiB))) == ['big']
    # big 14 GiB free, small 8: 4 GiB each goes big, then big/small tie
    # at 10 vs 8 -> big, then small (8 > 6).
    three = driver.select_destinations(
        ctx, seed.make_spec(num_instances=3, memory_mb=4 * GiB))
    assert _hosts(three) == ['big', 'big', 'small']
    assert claims.claims_count(ctx) == 4
    assert claims.overcommitted_nodes(ctx) == []
    assert claims.unbalanced_nodes(ctx) == []


def test_availability_zone_of_an_api_database_aggregate(nova, ctx):
    _add(nova, 'cell1', 'zoned', memory_mb=8 * GiB)
    _add(nova, 'cell1', 'plain', memory_mb=16 * GiB)
    nova.request('add_aggregate', name='az1-hosts', hosts=['zoned'],
                 metadata={'availability_zone': 'az1'})
    driver = _driver(ctx)
    assert _hosts(driver.select_destinations(
        ctx, seed.make_spec(availability_zone='az1'))) == ['zoned']
    assert _hosts(driver.select_destinations(
        ctx, seed.make_spec(availability_zone='nova'))) == ['plain']
    assert _state(driver, ctx, 'zoned').availability_zone == 'az1'


def test_affinity_group_of_the_api_database(nova, ctx):
    _add(nova, 'cell1', 'roomy', memory_mb=32 * GiB)
    _add(nova, 'cell2', 'member-host', memory_mb=8 * GiB)
    member = str(uuid.uuid4())
    nova.request('add_instance', cell='cell2', uuid=member,
                 host='member-host')
    group_uuid = nova.request('add_group', name='together',
                              policy='affinity', members=[member])['uuid']
    driver = _driver(ctx)
    row = driver.host_manager.source.instance_group_get_by_uuid(
        ctx, group_uuid)
    assert (row['policies'], row['members'], row['hosts']) == (
        ['affinity'], [member], ['member-host'])
    group = group_obj.InstanceGroup(
        uuid=row['uuid'], name=row['name'], policy=row['policies'][0],
        members=row['members'], hosts=row['hosts'])
    spec = seed.make_spec(instance_group=group)
    assert _hosts(driver.select_destinations(ctx, spec)) == ['member-host']
    # The member's instance is in its host's view, from the cell database.
    assert member in _state(driver, ctx, 'member-host').instances


def test_selections_name_the_cell_of_their_host(nova_dbs, nova, ctx):
    _add(nova, 'cell1', 'one', memory_mb=10 * GiB)
    _add(nova, 'cell2', 'two', memory_mb=12 * GiB)
    driver = _driver(ctx)
    # two (12 GiB free) takes the first, then one (10) beats two (8).
    selections = driver.select_destinations(
        ctx, seed.make_spec(num_instances=2, memory_mb=4 * GiB),
        return_alternates=True)
    assert _hosts(selections) == ['two', 'one']
    cells = nova_dbs.cells
    states = {s.host: s for s in driver.host_manager.get_all_host_states(ctx)}
    assert states['one'].cell_uuid == cells['cell1']
    assert states['two'].cell_uuid == cells['cell2']
    # Alternates stay in the cell of their chosen host, as Nova's.
    assert [[pick.service_host for pick in picks]
            for picks in selections] == [['two'], ['one']]
    # Nova's conductor asks for a cell: only its hosts are candidates.
    spec = seed.make_spec(memory_mb=GiB)
    spec.requested_destination = request_spec.Destination(
        host='one', cell=cell_mapping.CellMapping(uuid=cells['cell1']))
    assert _hosts(driver.select_destinations(ctx, spec)) == ['one']
    spec.requested_destination = request_spec.Destination(
        host='one', cell=cell_mapping.CellMapping(uuid=cells['cell2']))
    with pytest.raises(Exception, match='not enough hosts'):
        driver.select_destinations(ctx, spec)


def test_selection_objects_carry_the_cell_uuid(nova_dbs, nova, ctx):
    """Selection.from_host_state must copy HostState.cell_uuid (the
    conductor's MigrationTask compares it with the instance's cell)."""
    _add(nova, 'cell2', 'two')
    state = _state(_driver(ctx), ctx, 'two')
    selection = selection_obj.Selection.from_host_state(state)
    assert selection.cell_uuid == nova_dbs.cells['cell2']


# -- the incremental refresh --------------------------------------------------

@pytest.fixture
def incremental(monkeypatch, conf):
    """Refreshes after the first one must be incremental."""
    conf.set_override('full_refresh_interval', 3600, 'scheduler')
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)

    def first_only(manager):
        real = manager.refresher.refresh_all
        calls = []

        def refresh_all(context):
            calls.append(context)
            real(context)
        manager.refresher.refresh_all = refresh_all
        return calls
    return first_only


def test_a_compute_node_report_is_seen_incrementally(nova, ctx, incremental):
    _add(nova, 'cell1', 'reporting', memory_mb=16 * GiB)
    driver = _driver(ctx)
    full_reads = incremental(driver.host_manager)
    assert _state(driver, ctx, 'reporting').free_ram_mb == 16 * GiB
    nova.request('update_compute', cell='cell1', host='reporting',
                 node='reporting', values={'memory_mb_used': 6 * GiB,
                                           'free_ram_mb': 10 * GiB})
    assert _state(driver, ctx, 'reporting').free_ram_mb == 10 * GiB
    assert len(full_reads) == 1


def test_a_new_node_of_a_cell_is_found(nova, ctx, incremental):
    _add(nova, 'cell1', 'first')
    driver = _driver(ctx)
    assert [s.host for s in driver.host_manager.get_all_host_states(
        ctx)] == ['first']
    _add(nova, 'cell2', 'second')
    states = driver.host_manager.get_all_host_states(ctx)
    assert sorted(s.host for s in states) == ['first', 'second']


def test_another_schedulers_claim_is_seen_incrementally(nova, ctx,
                                                        incremental):
    _add(nova, 'cell2', 'shared', memory_mb=8 * GiB)
    first, second = _driver(ctx), _driver(ctx)
    full_reads = incremental(second.host_manager)
    assert _state(second, ctx, 'shared').free_ram_mb == 8 * GiB
    first.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    assert _state(second, ctx, 'shared').free_ram_mb == 5 * GiB
    assert len(full_reads) == 1


def test_a_claimed_node_is_read_in_the_same_trip_to_its_cell(
        nova, ctx, monkeypatch):
    """The row of a node whose claims alone changed (Nova's row did not)
    comes with the cell's changed rows, in one trip to each cell for the
    change read and one for the sweep's narrow read."""
    _add(nova, 'cell1', 'claimed-one', memory_mb=8 * GiB)
    _add(nova, 'cell2', 'other-cell', memory_mb=4 * GiB)
    driver = _driver(ctx)
    driver.host_manager.get_all_host_states(ctx)
    since = datetime.datetime.utcnow()
    driver.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    node_id = _state(driver, ctx, 'claimed-one').compute_id
    source = driver.host_manager.refresher.source
    trips = []
    real = source._each_cell

    def each_cell(read, **kwargs):
        trips.append(kwargs.get('only'))
        return real(read, **kwargs)

    monkeypatch.setattr(source, '_each_cell', each_cell)
    changes = source.get_changes_since(ctx, since)
    versions = source.get_change_versions_since(ctx, since)
    assert trips == [None, None]
    [row] = [row for row in changes['compute_nodes'] if row['id'] == node_id]
    assert row['claimed_memory_mb'] == 3 * GiB
    assert row['host'] == 'claimed-one'
    assert versions['compute_nodes'][node_id][-1] == row['generation'] > 0


# -- freed capacity: seen by the next decision, or within a second ---------
#
# The SQL view reads the rows stamped since its last read, and every
# second widens that read to catch a row committed after its stamp
# (``refresh.SWEEP_INTERVAL``, ``refresh.CLOCK_MARGIN``): every path
# that frees capacity stamps a row.  These are the bound the Placement
# view keeps for usage Placement frees without a generation bump.

def test_another_schedulers_release_is_seen_by_the_next_decision(
        nova, ctx, incremental):
    """Scheduler A claims the only host full, B sees it full; A releases
    the claim (the instance's build failed, or it was deleted before its
    node reported): B's very next decision places there."""
    _add(nova, 'cell1', 'freed', memory_mb=4 * GiB)
    first, second = _driver(ctx), _driver(ctx)
    instance = str(uuid.uuid4())
    first.select_destinations(ctx, seed.make_spec(
        memory_mb=3 * GiB, instance_uuid=instance), [instance])
    with pytest.raises(Exception, match='not enough hosts'):
        second.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    assert first.reservation.release(ctx, [instance]) == 1
    assert _hosts(second.select_destinations(
        ctx, seed.make_spec(memory_mb=3 * GiB))) == ['freed']


def test_a_report_that_frees_usage_is_seen_by_the_next_decision(
        nova, ctx, incremental):
    """Nova's resource tracker writes the node's usage without a deleted
    instance: the next decision places where it was."""
    _add(nova, 'cell2', 'reported', memory_mb=4 * GiB,
         memory_mb_used=3 * GiB)
    driver = _driver(ctx)
    with pytest.raises(Exception, match='not enough hosts'):
        driver.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    nova.request('update_compute', cell='cell2', host='reported',
                 node='reported', values={'memory_mb_used': 0,
                                          'free_ram_mb': 4 * GiB})
    assert _hosts(driver.select_destinations(
        ctx, seed.make_spec(memory_mb=3 * GiB))) == ['reported']


def test_a_report_committed_after_its_stamp_is_seen_within_the_sweep(
        nova_dbs, nova, ctx, monkeypatch, conf):
    """A usage report stamped before the view's last read began but
    committed after it (a writer's slow transaction) is not in the
    change read; the sweep, at most ``SWEEP_INTERVAL`` seconds later,
    finds it."""
    conf.set_override('full_refresh_interval', 3600, 'scheduler')
    _add(nova, 'cell1', 'late', memory_mb=4 * GiB, memory_mb_used=3 * GiB)
    time.sleep(0.5)     # the late report is newer than the first one
    driver = _driver(ctx)
    with pytest.raises(Exception, match='not enough hosts'):
        driver.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    stamped = driver.host_manager.refresher._last_read - \
        datetime.timedelta(seconds=0.3)
    engine = sa.create_engine(nova_dbs.urls['cell1'])
    with engine.begin() as connection:
        connection.execute(sa.text(
            "UPDATE compute_nodes SET memory_mb_used = 0, free_ram_mb = "
            ":free, updated_at = :stamped WHERE host = 'late'"),
            {'free': 4 * GiB, 'stamped': stamped})
    engine.dispose()
    deadline = time.monotonic() + refresh.SWEEP_INTERVAL + 0.5
    while True:
        try:
            placed = driver.select_destinations(
                ctx, seed.make_spec(memory_mb=3 * GiB))
            break
        except Exception as exc:
            assert 'not enough hosts' in str(exc)
            assert time.monotonic() < deadline, 'not seen within the sweep'
            time.sleep(0.1)
    assert _hosts(placed) == ['late']


# -- claims -----------------------------------------------------------------

def test_claims_keep_two_schedulers_from_overcommitting(nova, ctx, conf):
    _add(nova, 'cell1', 'only', memory_mb=4 * GiB)
    first, second = _driver(ctx), _driver(ctx)
    # The second scheduler decides on a view read before the first's
    # claim: only the claim in our database can stop it.
    _state(second, ctx, 'only')
    conf.set_override('host_state_max_age', 3600.0, 'scheduler')
    first.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    with pytest.raises(Exception, match='not enough hosts'):
        second.select_destinations(ctx, seed.make_spec(memory_mb=3 * GiB))
    assert claims.claims_count(ctx) == 1
    assert claims.overcommitted_nodes(ctx) == []


def test_reconcile_releases_a_claim_the_report_includes(nova, ctx):
    node = _add(nova, 'cell2', 'landing', memory_mb=8 * GiB)
    driver = _driver(ctx)
    instance = str(uuid.uuid4())
    driver.select_destinations(ctx, seed.make_spec(
        memory_mb=3 * GiB, instance_uuid=instance))
    (claim,) = claims.get_claims(ctx)
    assert claim['host'] == 'landing'
    assert claims.reconcile(ctx) == {'expired': 0, 'superseded': 0}
    # Nova's compute records the instance, then reports its usage.
    nova.request('add_instance', cell='cell2', uuid=instance,
                 host='landing', memory_mb=3 * GiB)
    nova.request('update_compute', cell='cell2', host='landing',
                 node='landing', values={'memory_mb_used': 3 * GiB,
                                         'free_ram_mb': 5 * GiB})
    assert claims.reconcile(ctx) == {'expired': 0, 'superseded': 1}
    assert claims.claims_count(ctx) == 0
    # The release stored the report it relied on.
    with api.get_engine().connect() as connection:
        stored = connection.execute(sa.text(
            'SELECT uuid, memory_mb_used, claimed_memory_mb FROM '
            'scheduler_node_claims')).one()
    assert tuple(stored) == (node['uuid'], 3 * GiB, 0)
    assert _state(driver, ctx, 'landing').free_ram_mb == 5 * GiB


# -- a cell that goes away ----------------------------------------------------

@contextlib.contextmanager
def _unreachable(url):
    """The database of ``url`` cannot be used for a while."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == 'sqlite':
        os.rename(parsed.database, parsed.database + '.away')
        try:
            yield
        finally:
            for suffix in ('', '-wal', '-shm'):
                with contextlib.suppress(OSError):
                    os.unlink(parsed.database + suffix)
            os.rename(parsed.database + '.away', parsed.database)
        return
    admin = sa.create_engine(parsed.set(database='postgres'),
                             poolclass=sa.pool.NullPool,
                             isolation_level='AUTOCOMMIT')
    name = parsed.database
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(
                'ALTER DATABASE "%s" WITH ALLOW_CONNECTIONS false' % name))
            connection.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = '%s' AND pid <> pg_backend_pid()" % name))
        yield
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(
                'ALTER DATABASE "%s" WITH ALLOW_CONNECTIONS true' % name))
        admin.dispose()


@pytest.mark.parametrize('full_refresh_interval', [0, 3600])
def test_a_cell_that_goes_away_does_not_take_the_others_down(
        nova_dbs, nova, ctx, conf, full_refresh_interval):
    """Read in full for each decision, or incrementally: either way the
    hosts of the cell that fails are left out while it fails, and come
    back with it."""
    conf.set_override('full_refresh_interval', full_refresh_interval,
                      'scheduler')
    _add(nova, 'cell1', 'steady', memory_mb=8 * GiB)
    _add(nova, 'cell2', 'fleeting', memory_mb=16 * GiB)
    driver = _driver(ctx)
    spec = seed.make_spec(memory_mb=GiB)
    assert _hosts(driver.select_destinations(ctx, spec)) == ['fleeting']
    with _unreachable(nova_dbs.urls['cell2']):
        assert _hosts(driver.select_destinations(
            ctx, seed.make_spec(memory_mb=GiB))) == ['steady']
    assert _hosts(driver.select_destinations(
        ctx, seed.make_spec(memory_mb=GiB))) == ['fleeting']


# -- our own database ---------------------------------------------------------

def _manage(tmp_path, conf_text, *args):
    """``scheduler-manage --config-file F args`` with ``conf_text`` in F."""
    conf = tmp_path / 'scheduler.conf'
    conf.write_text(conf_text)
    return subprocess.run(
        [sys.executable, '-m', 'scheduler.cmd.manage', '--config-file',
         str(conf)] + list(args), capture_output=True, text=True,
        timeout=120, cwd=str(tmp_path))


def test_db_sync_of_our_database_leaves_novas_untouched(
        nova_dbs, backend, request, fresh_database, tmp_path):
    before = {name: schema_of(url) for name, url in nova_dbs.urls.items()}
    own = (fresh_database(request.getfixturevalue('postgresql_url'))
           if backend == 'postgresql'
           else 'sqlite:///%s' % (tmp_path / 'own.sqlite'))
    result = _manage(tmp_path, '[api_database]\nconnection = %s\n'
                     '[database]\nconnection = %s\n'
                     % (nova_dbs.urls['api'], own), 'db', 'sync')
    assert result.returncode == 0, result.stderr
    assert {name: schema_of(url)
            for name, url in nova_dbs.urls.items()} == before
    tables = set(sa.inspect(sa.create_engine(
        own, poolclass=sa.pool.NullPool)).get_table_names())
    assert {'scheduler_alembic_version', 'scheduler_claims',
            'scheduler_node_claims'} <= tables
    assert 'alembic_version' not in tables
    # Pointed at a Nova cell database by mistake, it refuses and writes
    # nothing.
    mistaken = _manage(tmp_path, '[database]\nconnection = %s\n'
                       % nova_dbs.urls['cell1'], 'db', 'sync')
    assert mistaken.returncode == 1
    assert 'ab450ba04102' in mistaken.stderr
    assert schema_of(nova_dbs.urls['cell1']) == before['cell1']


# -- the service row ----------------------------------------------------------

def test_the_service_keeps_a_beating_nova_scheduler_row(nova_dbs, own_url,
                                                        conf, tmp_path):
    deployment = Deployment(own_url, 'in-process', 'fake://', str(tmp_path),
                            options={
                                ('api_database', 'connection'):
                                    nova_dbs.urls['api'],
                                (None, 'report_interval'): 1},
                            host='nova-mode-scheduler')
    db_source.reset()
    try:
        deployment.start()
        rows = [svc for svc in nova_dbs.nova.request('services')
                if svc['binary'] == 'nova-scheduler']
        assert len(rows) == 1
        assert rows[0]['host'] == 'nova-mode-scheduler'
        assert rows[0]['topic'] == 'scheduler'
        assert rows[0]['version'] == 74
        assert rows[0]['up'] is True
        deployment.wait_for(lambda: [
            svc['report_count'] for svc in nova_dbs.nova.request('services')
            if svc['binary'] == 'nova-scheduler'][0] >= 2, timeout=15)
    finally:
        deployment.stop()
        db_source.reset()
        writers.reset_engine()


def test_a_nova_cell_database_is_no_standalone_database(nova_dbs, conf):
    """The issue's mistake: [database] connection naming a Nova cell
    database, without [api_database].  The service stops at start with
    one line, and the database is left as it was."""
    before = schema_of(nova_dbs.urls['cell1'])
    writers.reset_engine(nova_dbs.urls['cell1'])
    try:
        reason = service.check_databases()
        assert 'ab450ba04102' in reason and '\n' not in reason
        with pytest.raises(SystemExit):
            service.SchedulerService(transport=object()).start()
    finally:
        writers.reset_engine()
        db_source.reset()
    assert schema_of(nova_dbs.urls['cell1']) == before


def test_change_reads_of_a_postgresql_cell_are_never_parallel(
        nova_dbs, backend, conf):
    """A change read is a sequential scan of a Nova table (no timestamp
    index).  Even where PostgreSQL would find a parallel scan cheaper
    (its statistics stale after a bulk write; here parallel workers are
    made free), the cell's sessions plan it serially: no worker
    processes launched for a read of a few rows."""
    if backend != 'postgresql':
        pytest.skip('parallel plans are PostgreSQL\'s')
    engine = cells.create_engine(nova_dbs.urls['cell1'], conf)
    statement = nova_source._changed_statement(schema.COMPUTE_NODES, None)
    compiled = statement.compile(dialect=engine.dialect)
    try:
        with engine.connect() as connection:
            for setting in ('parallel_setup_cost = 0',
                            'parallel_tuple_cost = 0',
                            'min_parallel_table_scan_size = 0'):
                connection.exec_driver_sql('SET ' + setting)
            plan = '\n'.join(connection.exec_driver_sql(
                'EXPLAIN ' + str(compiled),
                {'since': datetime.datetime(2000, 1, 1)}).scalars())
    finally:
        engine.dispose()
    assert 'Seq Scan on compute_nodes' in plan
    assert 'Parallel' not in plan and 'Gather' not in plan, plan
