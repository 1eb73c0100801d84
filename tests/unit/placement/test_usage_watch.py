"""The usage watch over the two tables of Placement's schema it reads
(``allocations``, ``resource_classes``, in SQLite), and the view's
reconciliation of what it reads: a usage removed without a generation
bump is read again, even when it rose and fell between two reads."""

import dataclasses
import logging
import threading

import pytest
import sqlalchemy as sa

from scheduler.placement import candidates as pc
from scheduler.placement import database
from scheduler.placement import provider_trees
from scheduler.placement import usage_watch
from scheduler.placement import view as view_lib

METADATA = sa.MetaData()
ALLOCATIONS = sa.Table(
    'allocations', METADATA,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer, nullable=False),
    sa.Column('consumer_id', sa.String(36), nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    sqlite_autoincrement=True)    # ids only grow, as in Placement's
CLASSES = sa.Table('resource_classes', METADATA,
                   sa.Column('id', sa.Integer, primary_key=True),
                   sa.Column('name', sa.String(255)))


@pytest.fixture
def engine(tmp_path):
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'pl.sqlite'))
    METADATA.create_all(engine)
    with engine.begin() as connection:
        connection.execute(CLASSES.insert(), [
            {'id': 0, 'name': 'VCPU'}, {'id': 1, 'name': 'MEMORY_MB'}])
    yield engine
    engine.dispose()


def _allocate(engine, rp_id, consumer, vcpus, memory_mb):
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.insert(), [
            {'resource_provider_id': rp_id, 'consumer_id': consumer,
             'resource_class_id': 0, 'used': vcpus},
            {'resource_provider_id': rp_id, 'consumer_id': consumer,
             'resource_class_id': 1, 'used': memory_mb}])


def _delete(engine, consumer):
    with engine.begin() as connection:
        connection.execute(ALLOCATIONS.delete().where(
            ALLOCATIONS.c.consumer_id == consumer))


def test_read_usages_sums_every_providers_allocations(engine):
    _allocate(engine, 1, 'a', 1, 512)
    _allocate(engine, 1, 'b', 2, 1024)
    _allocate(engine, 2, 'c', 4, 2048)
    with engine.connect() as connection:
        assert database.read_usages(connection) == {
            1: {'VCPU': 3, 'MEMORY_MB': 1536},
            2: {'VCPU': 4, 'MEMORY_MB': 2048}}


def test_the_fingerprint_changes_with_every_insert_or_delete(engine):
    def fingerprint():
        with engine.connect() as connection:
            return database.allocations_fingerprint(connection)

    empty = fingerprint()
    _allocate(engine, 1, 'a', 1, 512)
    one = fingerprint()
    _delete(engine, 'a')
    _allocate(engine, 1, 'b', 1, 512)     # the same usage, new rows
    assert len({empty, one, fingerprint()}) == 3


def _nothing_read(count):
    """``reads_since`` of a view that never reads."""
    return 0, None if count is None else frozenset()


def _ignore(usages, only):
    pass


def test_a_read_returns_usages_only_when_a_row_went(engine):
    """Every usage at the first read and after a row it counted went;
    nothing when rows were only added (their providers' generations
    moved) and the view read no provider since."""
    watch = usage_watch.UsageWatch(engine, 0.05, _ignore, _nothing_read)
    _allocate(engine, 1, 'a', 1, 512)
    assert watch.read() == ({1: {'VCPU': 1, 'MEMORY_MB': 512}}, None)
    assert watch.read() is None
    _allocate(engine, 2, 'b', 2, 1024)
    assert watch.read() is None
    _delete(engine, 'a')
    assert watch.read() == ({2: {'VCPU': 2, 'MEMORY_MB': 1024}}, None)


def test_the_older_fingerprint_is_the_last_one_until_a_row_goes(engine):
    _allocate(engine, 1, 'a', 1, 512)
    with engine.connect() as connection:
        last, older = database.allocations_fingerprints(connection, None)
    assert older is None
    _allocate(engine, 2, 'b', 2, 1024)
    with engine.connect() as connection:
        whole, older = database.allocations_fingerprints(connection,
                                                         last[1])
    assert older == last and whole != last
    _delete(engine, 'a')
    with engine.connect() as connection:
        _whole, older = database.allocations_fingerprints(connection,
                                                          last[1])
    assert older != last


def test_after_inserts_only_the_providers_the_view_read_are_compared(
        engine):
    read_since = []

    def reads_since(count):
        read_since.append(count)
        return (0, None) if count is None else (3, frozenset({2, 9}))

    watch = usage_watch.UsageWatch(engine, 0.05, _ignore, reads_since)
    _allocate(engine, 1, 'a', 1, 512)
    watch.read()
    _allocate(engine, 2, 'b', 2, 1024)
    assert watch.read() == ({2: {'VCPU': 2, 'MEMORY_MB': 1024}},
                            frozenset({2, 9}))
    assert read_since == [None, 0]


def _view(engine, providers):
    """A loaded view of ``providers`` (``{id: Provider}``, roots)."""
    view = view_lib.PlacementView(engine)
    view.table = pc.ProviderTable(providers.values())
    view.children = pc.ProviderTable([])
    view.forest = provider_trees.Forest(view.table, view.children)
    view._id_of = {p.uuid: rp_id for rp_id, p in providers.items()}
    view._uuid_of = {rp_id: p.uuid for rp_id, p in providers.items()}
    return view


def _provider(uuid, **usages):
    return pc.Provider(uuid, uuid, {'VCPU': pc.Inventory(total=8),
                                    'MEMORY_MB': pc.Inventory(total=8192)},
                       usages=usages)


def test_the_view_reads_again_what_differs_from_placement(engine):
    view = _view(engine, {1: _provider('a', VCPU=2, MEMORY_MB=1024),
                          2: _provider('b', VCPU=1, MEMORY_MB=512),
                          3: _provider('c')})
    view.reconcile_usages({1: {'VCPU': 2, 'MEMORY_MB': 1024},
                           3: {'VCPU': 1, 'MEMORY_MB': 512}})
    assert view._take_stale() == {2, 3}


def test_a_rise_and_fall_between_two_reads_is_caught(engine):
    """The watch reads; a consumer is allocated on provider 1 (its
    generation moves: the view reads it, with the usage) and deleted
    (no generation move) before the next read: that read still differs
    from the view's, so the view reads provider 1 again."""
    view = _view(engine, {1: _provider('a'), 2: _provider('b')})
    watch = usage_watch.UsageWatch(engine, 0.05, view.reconcile_usages,
                                   view.reads.since)
    watch.start()
    watch.stop()
    _allocate(engine, 2, 'y', 1, 512)    # b: read later, unchanged since
    _allocate(engine, 1, 'x', 4, 4096)
    view.forest.replace([_provider('a', VCPU=4, MEMORY_MB=4096),
                         _provider('b', VCPU=1, MEMORY_MB=512)])
    view.reads.record(frozenset({1, 2}))  # as its refresh records a read
    _delete(engine, 'x')
    watch.check()
    assert view._take_stale() == {1}


def test_the_providers_listed_are_looked_up_among_roots_and_children():
    """The providers of ``only`` are looked up (roots and children
    alike) and give what the walk through every provider gives; an id
    the view does not hold is left out."""
    roots = pc.ProviderTable([_provider('a', VCPU=1), _provider('b')])
    child = dataclasses.replace(_provider('c', VCPU=2), parent_uuid='a',
                                root_uuid='a')
    forest = provider_trees.Forest(roots, pc.ProviderTable([child]))
    id_of = {'a': 1, 'b': 2, 'c': 3}
    uuid_of = {rp_id: uuid for uuid, rp_id in id_of.items()}
    usages = {1: {'VCPU': 1}, 2: {'VCPU': 5}}    # b and c differ
    only = {2, 3, 4}                              # 4: not in the view
    assert usage_watch.stale_providers(forest, id_of, uuid_of, usages,
                                       only) == {2, 3}
    assert usage_watch.stale_providers(forest, id_of, uuid_of,
                                       usages) == {2, 3}
    assert usage_watch.stale_providers(forest, id_of, uuid_of, usages,
                                       {1}) == set()


def test_the_read_log_lists_the_providers_read_since_a_count():
    reads = usage_watch.ReadLog()
    reads.record(frozenset({1}))
    reads.record(frozenset({2, 3}))
    assert reads.since(None) == (2, None)
    assert reads.since(0) == (2, frozenset({1, 2, 3}))
    assert reads.since(1) == (2, frozenset({2, 3}))
    assert reads.since(2) == (2, frozenset())
    reads.record(None)                 # a read of every provider
    assert reads.since(2) == (3, None)
    assert reads.since(3) == (3, frozenset())
    for _ in range(reads.SIZE + 1):    # one more than remembered
        reads.record(frozenset({4}))
    assert reads.since(3) == (4 + reads.SIZE, None)
    assert reads.since(4) == (4 + reads.SIZE, frozenset({4}))


def test_the_thread_reconciles_until_stopped(engine):
    seen = []
    event = threading.Event()

    def reconcile(usages, only):
        seen.append(usages)
        event.set()

    watch = usage_watch.UsageWatch(engine, 0.05, reconcile, _nothing_read)
    _allocate(engine, 7, 'a', 1, 512)
    watch.start()
    _allocate(engine, 8, 'b', 2, 1024)
    _delete(engine, 'a')
    assert event.wait(5)
    watch.stop()
    assert seen[-1] == {8: {'VCPU': 2, 'MEMORY_MB': 1024}}
    assert watch._thread is None


def test_a_failed_read_is_logged_and_the_next_reads_everything(engine,
                                                              caplog):
    calls = []
    watch = usage_watch.UsageWatch(
        engine, 0.05, lambda usages, only: calls.append(usages),
        _nothing_read)
    watch.read()
    with engine.begin() as connection:
        connection.execute(sa.text('ALTER TABLE allocations '
                                   'RENAME TO allocations_off'))
    with caplog.at_level(logging.WARNING):
        watch.check()
    assert "Could not read the usages of Placement's" in caplog.text
    with engine.begin() as connection:
        connection.execute(sa.text('ALTER TABLE allocations_off '
                                   'RENAME TO allocations'))
    watch.check()
    assert calls == [{}]
