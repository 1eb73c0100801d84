"""Cells read side by side within ``[scheduler] cell_timeout`` (issue 31,
item 5): ``scheduler.db.nova.scatter`` on its own, then ``NovaSource``
on two SQLite cell databases, one of which stops answering (its
statements wait on an Event, as on a frozen server).

The functional test on a frozen PostgreSQL is
``tests/functional/test_nova_cells_faults.py``.
"""

import contextlib
import datetime
import logging
import threading
import time

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from scheduler import context
from scheduler.db import migration
from scheduler.db.nova import scatter
from scheduler.db.nova import schema
from scheduler.db.nova import source as nova_source
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(60)

BOUND = 0.3
CELL1 = '4a5d0d5c-7bb0-4f41-8f0d-4f6d7d1b1a11'
CELL2 = '5b6e1e6d-8cc1-4052-9e1e-5e7e8e2c2b22'
ERRORS = (db_exc.DBError,)


def _threads(lane):
    return [thread for thread in threading.enumerate()
            if thread.name == 'cell-read %s' % lane.label]


@pytest.fixture
def lanes():
    made = []

    def lane(label):
        made.append(scatter.Lane(label))
        return made[-1]
    yield lane
    for each in made:
        each.close()


# -- scatter ------------------------------------------------------------------

def test_every_cell_answers_in_order(lanes):
    one, two = lanes('one'), lanes('two')
    outcomes = scatter.gather([(one, lambda: 1), (two, lambda: 2)], BOUND,
                              ERRORS)
    assert outcomes == [scatter.Outcome(1, None), scatter.Outcome(2, None)]


def test_a_database_error_is_an_outcome_and_a_bug_is_raised(lanes):
    one, two = lanes('one'), lanes('two')
    failure = db_exc.DBConnectionError('gone')

    def fails():
        raise failure
    assert scatter.gather([(one, fails), (two, lambda: 2)], BOUND,
                          ERRORS) == [scatter.Outcome(None, failure),
                                      scatter.Outcome(2, None)]

    def bug():
        raise KeyError('bug')
    with pytest.raises(KeyError):
        scatter.gather([(one, bug), (two, lambda: 2)], BOUND, ERRORS)


def test_a_cell_that_does_not_answer_is_left_out_then_not_read_again(
        lanes):
    frozen, healthy = lanes('frozen'), lanes('healthy')
    thaw = threading.Event()
    calls = []

    def stuck():
        calls.append('stuck')
        thaw.wait(30)
        return 'late'
    try:
        started = time.monotonic()
        first = scatter.gather([(frozen, stuck), (healthy, lambda: 'ok')],
                               BOUND, ERRORS)
        waited = time.monotonic() - started
        assert BOUND <= waited < BOUND + 0.5
        assert first[1] == scatter.Outcome('ok', None)
        assert isinstance(first[0].error, scatter.NotAnswering)
        assert 'did not answer within 0.3 s' in str(first[0].error)
        assert frozen.late
        # Later reads neither wait for it nor start another thread.
        for _ in range(20):
            started = time.monotonic()
            again = scatter.gather(
                [(frozen, stuck), (healthy, lambda: 'ok')], BOUND, ERRORS)
            assert time.monotonic() - started < BOUND / 2
            assert again[1] == scatter.Outcome('ok', None)
            assert 'earlier read has not returned' in str(again[0].error)
        assert calls == ['stuck']
        assert len(_threads(frozen)) == frozen.workers == 1
        assert frozen.workers <= scatter.THREADS
    finally:
        thaw.set()
    deadline = time.monotonic() + 5
    while frozen.late and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not frozen.late
    assert scatter.gather([(frozen, lambda: 'back')], BOUND,
                          ERRORS) == [scatter.Outcome('back', None)]


def test_concurrent_readers_of_a_cell_use_at_most_its_threads(lanes):
    lane = lanes('busy')
    release = threading.Event()
    results = []

    def reader():
        results.append(scatter.gather(
            [(lane, lambda: release.wait(30))], 5, ERRORS))
    readers = [threading.Thread(target=reader) for _ in range(5)]
    for thread in readers:
        thread.start()
    time.sleep(0.2)
    assert len(_threads(lane)) == scatter.THREADS
    release.set()
    for thread in readers:
        thread.join(10)
    assert results == [[scatter.Outcome(True, None)]] * 5


def test_closed_lanes_end_their_threads(lanes):
    lane = lanes('closing')
    scatter.gather([(lane, lambda: 1)], BOUND, ERRORS)
    assert len(_threads(lane)) == 1
    lane.close()
    deadline = time.monotonic() + 5
    while _threads(lane) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads(lane) == []
    assert lane.submit(lambda: 1) is None
    [outcome] = scatter.gather([(lane, lambda: 1)], BOUND, ERRORS)
    assert str(outcome.error) == 'cell closing: its reads are closed'


def test_an_outage_is_logged_once(lanes, caplog):
    lane = lanes('cell9')
    with caplog.at_level(logging.DEBUG, 'scheduler.db.nova.scatter'):
        for _ in range(3):
            lane.down('did not answer')
        lane.up()
        lane.up()
    levels = [(record.levelname, record.getMessage().split(':')[0])
              for record in caplog.records]
    assert levels == [
        ('WARNING', 'Cell cell9 is skipped until its database answers '
                    'again'),
        ('DEBUG', 'Cell cell9 is still skipped'),
        ('DEBUG', 'Cell cell9 is still skipped'),
        ('INFO', 'Cell cell9 answers again, after 0.0 s skipped')]


# -- NovaSource on a cell that stops answering -------------------------------

def _cell_database(path, host):
    url = 'sqlite:///%s' % path
    engine = sa.create_engine(url)
    schema.CELL.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(schema.COMPUTE_NODES).values(
            id=1, uuid='00000000-0000-4000-8000-00000000000%d' % len(host),
            host=host, hypervisor_hostname=host, vcpus=4, memory_mb=4096,
            local_gb=10, vcpus_used=0, memory_mb_used=0, local_gb_used=0,
            deleted=0, created_at=datetime.datetime(2027, 1, 18)))
    engine.dispose()
    return url


@pytest.fixture
def two_cells(conf, tmp_path):
    """A started NovaSource on cells ``one`` (host ``h1``) and ``two``
    (host ``h22``), with ``[scheduler] cell_timeout`` BOUND."""
    api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
    engine = sa.create_engine(api_url)
    schema.API.create_all(engine)
    with engine.begin() as connection:
        for cell_id, uuid, name, host in ((2, CELL1, 'one', 'h1'),
                                          (3, CELL2, 'two', 'h22')):
            connection.execute(sa.insert(schema.CELL_MAPPINGS).values(
                id=cell_id, uuid=uuid, name=name, disabled=False,
                database_connection=_cell_database(
                    tmp_path / ('%s.sqlite' % name), host)))
    engine.dispose()
    conf.set_override('connection', api_url, 'api_database')
    conf.set_override('cell_timeout', BOUND, 'scheduler')
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    migration.db_sync()
    made = nova_source.NovaSource(conf)
    made.start()
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


def test_the_answering_cell_is_read_while_the_other_is_frozen(
        two_cells, caplog):
    _one, two = two_cells.cells
    ctx = context.get_admin_context()
    assert two_cells.compute_node_get_hosts(None) == {'h1', 'h22'}
    with caplog.at_level(logging.INFO, 'scheduler.db.nova.scatter'):
        with _frozen(two):
            started = time.monotonic()
            assert two_cells.compute_node_get_hosts(None) == {'h1'}
            first = time.monotonic() - started
            started = time.monotonic()
            for _ in range(10):
                assert two_cells.compute_node_get_hosts(None) == {'h1'}
                assert [row['host'] for row in
                        two_cells.compute_node_iter_all(ctx)] == ['h1']
            later = time.monotonic() - started
        deadline = time.monotonic() + 5
        while (two_cells.compute_node_get_hosts(None) != {'h1', 'h22'} and
               time.monotonic() < deadline):
            time.sleep(0.05)
    assert BOUND <= first < BOUND + 0.5
    assert later < BOUND
    assert two_cells.compute_node_get_hosts(None) == {'h1', 'h22'}
    messages = [record.getMessage() for record in caplog.records]
    assert [m for m in messages if 'is skipped' in m] == [
        'Cell two (%s) is skipped until its database answers again: cell '
        'two (%s) did not answer within 0.3 s' % (CELL2, CELL2)]
    assert len([m for m in messages if 'answers again, after' in m]) == 1


def test_a_change_read_of_a_frozen_cell_counts_its_nodes_gone(two_cells):
    _one, two = two_cells.cells
    epoch = nova_source.EPOCH
    ctx = context.get_admin_context()
    changes = two_cells.get_changes_since(ctx, epoch)
    assert {row['host'] for row in changes['compute_nodes']} == {'h1', 'h22'}
    with _frozen(two):
        changes = two_cells.get_changes_since(ctx, epoch)
    assert {row['host'] for row in changes['compute_nodes']} == {'h1'}
    assert len(changes['deleted_compute_node_ids']) == 1


def test_every_cell_frozen_is_a_database_error(two_cells):
    one, two = two_cells.cells
    with _frozen(one), _frozen(two):
        with pytest.raises(scatter.NotAnswering):
            two_cells.compute_node_get_hosts(None)
        with pytest.raises(db_exc.DBError):
            two_cells.compute_node_get_hosts(None)
