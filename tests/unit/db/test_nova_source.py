"""The source seam, the start-up checks of Nova database mode, the view
ids and the service row.

The reads themselves run on databases Nova's own migrations made in
``tests/functional/test_nova_databases.py``; here, SQLite files hold
tables made from our declaration of Nova's columns, enough for the
checks that must stop a misconfigured service at start.
"""

import pytest
import sqlalchemy as sa

from scheduler.db import api
from scheduler.db import service_row
from scheduler.db import source
from scheduler.db.nova import cells
from scheduler.db.nova import ids
from scheduler.db.nova import schema
from scheduler.db.nova import source as nova_source
from scheduler.objects import cell_mapping
from scheduler_tools import writers

CELL1 = '4a5d0d5c-7bb0-4f41-8f0d-4f6d7d1b1a11'


@pytest.fixture
def fast_failure(conf):
    """One connection attempt per database."""
    conf.set_override('max_retries', 1, 'api_database')
    conf.set_override('retry_interval', 0, 'api_database')
    return conf


def _sqlite(tmp_path, name):
    return 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name))


def _nova_api(tmp_path, cells_=()):
    """An API database with Nova's columns and the ``cells_`` mappings
    ``(id, uuid, name, url, disabled)``."""
    url = _sqlite(tmp_path, 'api')
    engine = sa.create_engine(url)
    schema.API.create_all(engine)
    with engine.begin() as connection:
        for cell_id, uuid, name, cell_url, disabled in cells_:
            connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
                id=cell_id, uuid=uuid, name=name,
                database_connection=cell_url, disabled=disabled))
    engine.dispose()
    return url


def _nova_cell(tmp_path, name):
    url = _sqlite(tmp_path, name)
    engine = sa.create_engine(url)
    schema.CELL.create_all(engine)
    engine.dispose()
    return url


def _start(conf, api_url):
    conf.set_override('connection', api_url, 'api_database')
    made = nova_source.NovaSource(conf)
    try:
        made.start()
    finally:
        made.stop()
    return made


# -- ids ----------------------------------------------------------------------

def test_view_ids_keep_cells_apart():
    view_id = ids.global_id(3, 7)
    assert view_id == 3 * 2 ** 32 + 7
    assert (ids.cell_id(view_id), ids.local_id(view_id)) == (3, 7)
    assert ids.global_id(2, 7) != view_id
    with pytest.raises(ValueError):
        ids.global_id(1, 2 ** 32)


# -- which source -------------------------------------------------------------

def test_the_standalone_schema_is_the_default(conf):
    source.reset()
    try:
        chosen = source.get_source()
        assert isinstance(chosen, source.StandaloneSource)
        assert chosen.cell_uuid({}) == cell_mapping.SINGLE_CELL_UUID
        conf.set_override('cell_uuid', CELL1, 'scheduler')
        assert chosen.cell_uuid({}) == CELL1
    finally:
        source.reset()


# -- checks at start ----------------------------------------------------------

def test_an_unreachable_api_database_stops_the_start(fast_failure, tmp_path):
    with pytest.raises(cells.CellsError) as error:
        _start(fast_failure, 'sqlite:///%s/missing/api.sqlite' % tmp_path)
    message = str(error.value)
    assert message.startswith('[api_database] connection: cannot connect')
    assert '\n' not in message


def test_an_api_database_without_novas_tables_stops_the_start(conf,
                                                             tmp_path):
    with pytest.raises(cells.CellsError, match='cannot read the Nova '
                       'tables') as error:
        _start(conf, _sqlite(tmp_path, 'empty'))
    assert '\n' not in str(error.value)


def test_cell0_and_disabled_cells_are_not_scheduled_to(conf, tmp_path):
    api_url = _nova_api(tmp_path, [
        (1, cells.CELL0_UUID, 'cell0', _nova_cell(tmp_path, 'cell0'), False),
        (2, CELL1, 'cell1', _nova_cell(tmp_path, 'cell1'), True)])
    with pytest.raises(cells.CellsError, match='no enabled cell'):
        _start(conf, api_url)


def test_an_unreachable_cell_stops_the_start(fast_failure, tmp_path):
    api_url = _nova_api(tmp_path, [
        (2, CELL1, 'cell1', 'sqlite:///%s/missing/c.sqlite' % tmp_path,
         False)])
    with pytest.raises(cells.CellsError) as error:
        _start(fast_failure, api_url)
    assert str(error.value).startswith('cell cell1 (%s): cannot connect'
                                       % CELL1)


def test_a_cell_database_that_is_not_novas_stops_the_start(conf, tmp_path):
    api_url = _nova_api(tmp_path, [
        (2, CELL1, 'cell1', _sqlite(tmp_path, 'other'), False)])
    with pytest.raises(cells.CellsError, match='cell cell1 .*cannot read '
                       'the Nova tables'):
        _start(conf, api_url)


def test_our_database_must_be_synced(conf, tmp_path):
    api_url = _nova_api(tmp_path, [
        (2, CELL1, 'cell1', _nova_cell(tmp_path, 'cell1'), False)])
    writers.reset_engine(_sqlite(tmp_path, 'own'))
    try:
        with pytest.raises(cells.CellsError, match='scheduler-manage db '
                           'sync'):
            _start(conf, api_url)
    finally:
        writers.reset_engine()


def test_passwords_stay_out_of_the_messages(fast_failure):
    with pytest.raises(cells.CellsError) as error:
        _start(fast_failure, 'postgresql+psycopg2://nova:s3cret@127.0.0.1:1/'
                             'nova_api')
    assert 's3cret' not in str(error.value)


def test_the_service_cell_must_exist(conf, tmp_path):
    api_url = _nova_api(tmp_path, [
        (2, CELL1, 'cell1', _nova_cell(tmp_path, 'cell1'), False)])
    conf.set_override('service_cell', 'nowhere', 'scheduler')
    writers.reset_engine(_sqlite(tmp_path, 'own'))
    try:
        from scheduler.db import migration
        migration.db_sync()
        made = _start(conf, api_url)
        with pytest.raises(cells.CellsError, match="'nowhere'"):
            made.service_cell()
        conf.set_override('service_cell', 'cell1', 'scheduler')
        assert made.service_cell().uuid == CELL1
    finally:
        writers.reset_engine()


# -- the service row ----------------------------------------------------------

def _rows(engine):
    with engine.connect() as connection:
        return connection.execute(sa.select(api.SERVICES).where(
            api.SERVICES.c.binary == 'nova-scheduler')).mappings().all()


def test_the_service_row_beats_in_our_services_table(ctx, db_engine):
    row = service_row.configured('scheduler-1')
    first = row.register()
    assert row.register() == first     # a restart keeps the row
    (found,) = _rows(db_engine)
    assert (found['host'], found['topic'], found['version'],
            found['report_count'], found['deleted']) == (
        'scheduler-1', 'scheduler', service_row.SERVICE_VERSION, 0, 0)
    row.heartbeat()
    row.heartbeat()
    (found,) = _rows(db_engine)
    assert found['report_count'] == 2
    assert found['last_seen_up'] == found['updated_at'] is not None


def test_a_deleted_service_row_is_created_again(ctx, db_engine):
    row = service_row.configured('scheduler-1')
    first = row.register()
    with db_engine.begin() as connection:
        connection.execute(sa.update(api.SERVICES).where(
            api.SERVICES.c.id == first).values(deleted=first))
    row.heartbeat()
    live = [found for found in _rows(db_engine) if not found['deleted']]
    assert len(live) == 1 and live[0]['id'] != first
