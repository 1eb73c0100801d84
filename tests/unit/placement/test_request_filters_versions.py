"""The minimum nova-compute version ``owner_nova_filter`` reads
(``scheduler.placement.compute_versions``), from the ``services`` table
of each cell database in Nova database mode: two SQLite cells under a
started ``NovaSource``, one of which stops answering."""

import contextlib
import datetime
import threading
import time

import pytest
import sqlalchemy as sa

from scheduler.db import migration
from scheduler.db import source as db_source
from scheduler.db.nova import schema
from scheduler.db.nova import source as nova_source
from scheduler.placement import compute_versions
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(60)

BOUND = 0.3
CELL1 = '6c7f2f7e-9dd2-4163-8f2f-6f8f9f3d3c33'
CELL2 = '7d803080-aee3-4274-9030-7090a04e4d44'


def _cell_database(path, services):
    """A cell database whose ``services`` are ``(host, binary, version,
    forced_down, deleted)`` rows."""
    url = 'sqlite:///%s' % path
    engine = sa.create_engine(url)
    schema.CELL.create_all(engine)
    with engine.begin() as connection:
        for n, (host, binary, version, forced_down, deleted) in enumerate(
                services, start=1):
            connection.execute(sa.insert(schema.SERVICES).values(
                id=n, host=host, binary=binary, topic='compute',
                report_count=1, disabled=False, forced_down=forced_down,
                version=version, deleted=n if deleted else 0,
                created_at=datetime.datetime(2027, 1, 18)))
    engine.dispose()
    return url


@pytest.fixture
def two_cells(conf, tmp_path, monkeypatch):
    """A started NovaSource, the process's source, on two cells: one
    (computes at 80 and 75; a forced-down one at 60, a deleted one at
    50, a conductor at 40) and two (computes at 74 and at 0)."""
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    engine = sa.create_engine(api_url)
    schema.API.create_all(engine)
    cells = (
        (2, CELL1, 'one', [('h1', 'nova-compute', 80, False, False),
                           ('h2', 'nova-compute', 75, False, False),
                           ('h3', 'nova-compute', 60, True, False),
                           ('h4', 'nova-compute', 50, False, True),
                           ('c1', 'nova-conductor', 40, False, False)]),
        (3, CELL2, 'two', [('h5', 'nova-compute', 74, False, False),
                           ('h6', 'nova-compute', 0, False, False)]))
    with engine.begin() as connection:
        for cell_id, uuid, name, services in cells:
            connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
                id=cell_id, uuid=uuid, name=name, disabled=False,
                database_connection=_cell_database(
                    tmp_path / ('%s.sqlite' % name), services)))
    engine.dispose()
    conf.set_override('connection', api_url, 'api_database')
    conf.set_override('cell_timeout', BOUND, 'scheduler')
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    migration.db_sync()
    made = nova_source.NovaSource(conf)
    made.start()
    monkeypatch.setattr(db_source, 'get_source', lambda: made)
    yield made
    made.stop()
    writers.reset_engine()


@contextlib.contextmanager
def _frozen(cell):
    """Every statement on ``cell``'s engine waits until the block ends."""
    thaw = threading.Event()

    def wait(*_args):
        thaw.wait(30)
    sa.event.listen(cell.engine, 'before_cursor_execute', wait)
    try:
        yield
    finally:
        thaw.set()
        sa.event.remove(cell.engine, 'before_cursor_execute', wait)


def test_the_minimum_is_read_across_the_cells(two_cells):
    """Versions 0, forced-down, deleted and other binaries left out, as
    Nova's get_minimum_version_all_cells."""
    assert compute_versions.MinComputeVersion(ttl=0)() == 74


def test_a_cell_that_does_not_answer_is_left_out_within_the_bound(
        two_cells):
    """As Nova leaves out a cell that did not respond: only cell one's
    computes count, after at most ``cell_timeout``; the next reads do
    not wait for the frozen cell."""
    _one, two = two_cells.cells
    versions = compute_versions.MinComputeVersion(ttl=0)
    with _frozen(two):
        started = time.monotonic()
        assert versions() == 75
        first = time.monotonic() - started
        started = time.monotonic()
        assert versions() == 75
        second = time.monotonic() - started
    assert first < BOUND + 0.5
    assert second < BOUND


def test_no_cell_answering_reads_zero_and_is_not_kept(two_cells):
    one, two = two_cells.cells
    versions = compute_versions.MinComputeVersion(ttl=60)
    with _frozen(one), _frozen(two):
        assert versions() == 0
    deadline = time.monotonic() + 5
    while versions() != 74 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert versions() == 74
