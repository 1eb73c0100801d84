"""``discover_hosts`` in Nova database mode (issue 32, item 3):
``scheduler.db.nova.discovery``.

SQLite files hold an API database (our declaration of Nova's columns,
and ``host_mappings`` with Nova's unique host and timestamps) and cell
databases; the run on databases Nova's own migrations made, with two
scheduler services, is ``tests/functional/test_discover_hosts.py``.
"""

import logging
import threading
import time
from unittest import mock

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from scheduler.db.nova import cells
from scheduler.db.nova import discovery
from scheduler.db.nova import schema

pytestmark = pytest.mark.timeout(60)

CELL1 = '4a5d0d5c-7bb0-4f41-8f0d-4f6d7d1b1a11'
CELL2 = '5b6e1e6d-8cc1-4052-9a1e-5a7e8e2c2b22'
NOVA_API = sa.MetaData()
# Nova's host_mappings (nova/db/api/models.py): unique host.
NOVA_HOST_MAPPINGS = sa.Table(
    'host_mappings', NOVA_API,
    sa.Column('created_at', sa.DateTime), sa.Column('updated_at', sa.DateTime),
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('cell_id', sa.Integer, nullable=False),
    sa.Column('host', sa.String(255), nullable=False),
    sa.UniqueConstraint('host', name='uniq_host_mappings0host'))


def _sqlite(tmp_path, name):
    return 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % name))


class Deployment:
    """An API database with cell0 (its URL unreachable: it must not be
    read), ``cell1`` (id 2) and ``cell2`` (id 3), whose engines are
    ``api`` and ``cell[name]``."""

    def __init__(self, tmp_path, cell2_url=None):
        self.api = sa.create_engine(_sqlite(tmp_path, 'api'))
        for table in schema.API.sorted_tables:
            if table.name != 'host_mappings':
                table.create(self.api)
        NOVA_API.create_all(self.api)
        self.cell = {}
        urls = {}
        for name in ('cell1', 'cell2'):
            urls[name] = _sqlite(tmp_path, name)
            self.cell[name] = sa.create_engine(urls[name])
            schema.CELL.create_all(self.cell[name])
        if cell2_url:
            urls['cell2'] = cell2_url
        rows = [(1, cells.CELL0_UUID, 'cell0',
                 'sqlite:///%s/missing/cell0.sqlite' % tmp_path),
                (2, CELL1, 'cell1', urls['cell1']),
                (3, CELL2, 'cell2', urls['cell2'])]
        with self.api.begin() as connection:
            for cell_id, uuid, name, url in rows:
                connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
                    id=cell_id, uuid=uuid, name=name, disabled=False,
                    database_connection=url))

    def add_node(self, cell, host, node=None, mapped=0, deleted=0):
        with self.cell[cell].begin() as connection:
            return connection.execute(sa.insert(schema.COMPUTE_NODES).values(
                host=host, hypervisor_hostname=node or host, mapped=mapped,
                deleted=deleted)).inserted_primary_key[0]

    def map_host(self, host, cell_id):
        with self.api.begin() as connection:
            connection.execute(sa.insert(NOVA_HOST_MAPPINGS).values(
                host=host, cell_id=cell_id))

    def mappings(self):
        with self.api.connect() as connection:
            return dict(connection.execute(sa.select(
                NOVA_HOST_MAPPINGS.c.host,
                NOVA_HOST_MAPPINGS.c.cell_id)).tuples().all())

    def stamped(self):
        with self.api.connect() as connection:
            return connection.execute(sa.select(sa.func.count()).where(
                NOVA_HOST_MAPPINGS.c.created_at.is_not(None))).scalar()

    def mapped(self, cell):
        """``{hypervisor_hostname: mapped}`` of the cell's nodes."""
        nodes = schema.COMPUTE_NODES
        with self.cell[cell].connect() as connection:
            return dict(connection.execute(sa.select(
                nodes.c.hypervisor_hostname, nodes.c.mapped)).tuples().all())


@pytest.fixture
def nova(conf, tmp_path):
    made = Deployment(tmp_path)
    conf.set_override('connection', str(made.api.url), 'api_database')
    conf.set_override('max_retries', 1, 'api_database')
    yield made
    made.api.dispose()
    for engine in made.cell.values():
        engine.dispose()


@pytest.fixture
def discoverer(conf, nova):
    made = discovery.HostDiscovery(conf)
    yield made
    made.stop()


def test_unmapped_nodes_are_mapped_to_their_cell(nova, discoverer):
    nova.add_node('cell1', 'a')
    nova.add_node('cell2', 'b')
    nova.add_node('cell1', 'gone', deleted=1)
    nova.add_node('cell1', 'old', mapped=1)
    results = discoverer.run()
    assert nova.mappings() == {'a': 2, 'b': 3}
    assert nova.stamped() == 2
    assert nova.mapped('cell1') == {'a': 1, 'gone': 0, 'old': 1}
    assert nova.mapped('cell2') == {'b': 1}
    assert [(r.cell.name, r.mapped) for r in results] == [
        ('cell1', ('a',)), ('cell2', ('b',))]
    # A second run finds nothing to do.
    assert [r.mapped + r.nodes for r in discoverer.run()] == [(), ()]
    assert nova.mappings() == {'a': 2, 'b': 3}


def test_an_ironic_host_gets_one_mapping_for_all_its_nodes(nova,
                                                           discoverer):
    for node in ('n1', 'n2', 'n3'):
        nova.add_node('cell1', 'ironic', node=node)
    [cell1, _cell2] = discoverer.run()
    assert cell1.mapped == ('ironic',) and len(cell1.nodes) == 3
    assert nova.mappings() == {'ironic': 2}
    assert nova.mapped('cell1') == {'n1': 1, 'n2': 1, 'n3': 1}


def test_nodes_of_a_host_mapped_to_this_cell_are_marked(nova, discoverer):
    nova.map_host('known', 2)
    nova.add_node('cell1', 'known')
    [cell1, _cell2] = discoverer.run()
    assert cell1.mapped == () and len(cell1.nodes) == 1
    assert nova.mapped('cell1') == {'known': 1}


def test_a_host_mapped_to_another_cell_stays_unmapped(nova, discoverer,
                                                      caplog):
    nova.map_host('twice', 3)
    nova.add_node('cell1', 'twice')
    nova.add_node('cell1', 'new')
    caplog.set_level(logging.DEBUG, logger=discovery.__name__)
    [cell1, _cell2] = discoverer.run()
    discoverer.run()
    assert cell1.elsewhere == {'twice': 3} and cell1.mapped == ('new',)
    assert nova.mappings() == {'twice': 3, 'new': 2}
    assert nova.mapped('cell1') == {'twice': 0, 'new': 1}
    conflicts = [r for r in caplog.records
                 if 'is mapped to cell mapping 3' in r.getMessage()]
    assert [r.levelname for r in conflicts] == ['WARNING', 'DEBUG']


def test_a_mapping_made_meanwhile_is_already_mapped(nova, discoverer):
    """Another scheduler maps the host between our read and our insert:
    the unique violation is "already mapped", not an error."""
    nova.add_node('cell1', 'raced')
    nova.add_node('cell2', 'lost')
    real = discoverer._owners
    raced = {'raced': 2, 'lost': 2}

    def late_read(hosts):
        found = real(hosts)
        for host in hosts:
            if host in raced:
                nova.map_host(host, raced.pop(host))
        return found
    with mock.patch.object(discoverer, '_owners', side_effect=late_read):
        cell1, cell2 = discoverer.run()
    assert nova.mappings() == {'raced': 2, 'lost': 2}
    assert (cell1.mapped, len(cell1.nodes)) == ((), 1)
    assert nova.mapped('cell1') == {'raced': 1}
    assert cell2.elsewhere == {'lost': 2}
    assert nova.mapped('cell2') == {'lost': 0}


def test_a_node_is_never_marked_without_its_mapping(nova, discoverer):
    """The mapping is committed first; a failure before the node is
    marked leaves it unmapped, and the next run marks it."""
    nova.add_node('cell1', 'a')
    def fail(engine, ids):
        if ids:
            raise db_exc.DBConnectionError('cell1 went away')
    with mock.patch.object(discovery, '_mark_mapped', side_effect=fail):
        results = discoverer.run()
    assert [r.cell.name for r in results] == ['cell2']
    assert nova.mappings() == {'a': 2}
    assert nova.mapped('cell1') == {'a': 0}
    [cell1, _cell2] = discoverer.run()
    assert (cell1.mapped, len(cell1.nodes)) == ((), 1)
    assert nova.mapped('cell1') == {'a': 1}


@pytest.mark.parametrize('broken', ['no Nova tables', 'unreachable'])
def test_a_cell_that_fails_does_not_stop_the_others(conf, tmp_path,
                                                    caplog, broken):
    nova = Deployment(tmp_path, cell2_url=(
        _sqlite(tmp_path, 'empty') if broken == 'no Nova tables' else
        'sqlite:///%s/missing/cell2.sqlite' % tmp_path))
    conf.set_override('connection', str(nova.api.url), 'api_database')
    conf.set_override('max_retries', 1, 'api_database')
    conf.set_override('retry_interval', 0, 'api_database')
    nova.add_node('cell1', 'a')
    made = discovery.HostDiscovery(conf)
    try:
        results = made.run()
        made.run()
    finally:
        made.stop()
    assert [r.cell.name for r in results] == ['cell1']
    assert nova.mappings() == {'a': 2}
    skipped = [r for r in caplog.records if 'is skipped until' in
               r.getMessage()]
    assert len(skipped) == 1 and 'cell2' in skipped[0].getMessage()


def test_a_cell_that_does_not_answer_is_waited_for_cell_timeout(
        conf, nova, discoverer):
    conf.set_override('cell_timeout', 0.5, 'scheduler')
    nova.add_node('cell1', 'a')
    nova.add_node('cell2', 'b')
    release = threading.Event()
    real = discovery._unmapped

    def frozen(engine):
        if 'cell2' in str(engine.url):
            release.wait(20)
        return real(engine)
    with mock.patch.object(discovery, '_unmapped', side_effect=frozen):
        started = time.monotonic()
        results = discoverer.run()
        took = time.monotonic() - started
        # The late cell is not worked again until its run returns.
        again = discoverer.run()
        before_release = nova.mappings()
        release.set()
    assert [r.cell.name for r in results] == ['cell1'] == [
        r.cell.name for r in again]
    assert 0.5 <= took < 2.0
    assert before_release == {'a': 2}
    # The late run finishes by itself.
    deadline = time.monotonic() + 10
    while nova.mappings() != {'a': 2, 'b': 3}:
        assert time.monotonic() < deadline, nova.mappings()
        time.sleep(0.05)


def test_a_cell_created_after_the_start_is_discovered(nova, discoverer,
                                                      tmp_path):
    assert [r.cell.name for r in discoverer.run()] == ['cell1', 'cell2']
    url = _sqlite(tmp_path, 'cell3')
    engine = sa.create_engine(url)
    schema.CELL.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(schema.COMPUTE_NODES).values(
            host='c', hypervisor_hostname='c', mapped=0, deleted=0))
    engine.dispose()
    with nova.api.begin() as connection:
        connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
            id=4, uuid='6c7f2f7e-9dd2-4163-8b2f-6b8f9f3d3c33', name='cell3',
            disabled=True, database_connection=url))
    names = [r.cell.name for r in discoverer.run()]
    # Disabled cells are discovered too, as Nova does.
    assert names == ['cell1', 'cell2', 'cell3']
    assert nova.mappings() == {'c': 4}
    # A cell mapping deleted: its engine and lane are closed.
    with nova.api.begin() as connection:
        connection.execute(sa.delete(schema.CELL_MAPPINGS).where(
            schema.CELL_MAPPINGS.c.id == 4))
    assert [r.cell.name for r in discoverer.run()] == ['cell1', 'cell2']
    assert sorted(key[0] for key in discoverer._lanes) == [2, 3]


def test_an_unreachable_api_database_is_one_error(conf, tmp_path):
    conf.set_override('connection', 'sqlite:///%s/missing/api.sqlite'
                      % tmp_path, 'api_database')
    conf.set_override('max_retries', 1, 'api_database')
    conf.set_override('retry_interval', 0, 'api_database')
    made = discovery.HostDiscovery(conf)
    with pytest.raises(cells.CellsError,
                       match=r'^\[api_database\] connection: cannot'):
        made.run()
    made.stop()


def test_a_stopped_discovery_opens_nothing_again(nova, discoverer):
    discoverer.run()
    discoverer.stop()
    with pytest.raises(cells.CellsError, match='stopped'):
        discoverer.run()
    assert discoverer._api is None and discoverer._cells == {}
