"""The transaction of a decision (``claims.decision_transaction``), on
SQLite, PostgreSQL and MariaDB.

On a server database a decision's refresh reads and its claims share one
writer transaction; on SQLite they keep their own.  Either way a lost
race rolls back every claim of the request and places it again, and a
request that fails writes nothing.
"""

import threading
import uuid

import pytest
import sqlalchemy as sa

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.engine import reservation
from scheduler_tools import seed


@pytest.fixture
def ctx(ram_scheduler_ctx):
    return ram_scheduler_ctx


def _hosts(ctx, *memory):
    for i, mem in enumerate(memory):
        seed.add_compute(ctx, 'host%d' % i, memory_mb=mem)


def _claimed(ctx):
    by_node = {node['id']: node['host']
               for node in db.compute_node_get_all(ctx)}
    counts = {}
    for row in claims.get_claims(ctx):
        host = by_node[row['compute_node_id']]
        counts[host] = counts.get(host, 0) + 1
    return counts


class _Transactions:
    """Counts the transactions begun on the engine."""

    def __init__(self, engine):
        self.engine = engine
        self.count = 0

    def _begun(self, connection):
        self.count += 1

    def __enter__(self):
        sa.event.listen(self.engine, 'begin', self._begun)
        return self

    def __exit__(self, *exc_info):
        sa.event.remove(self.engine, 'begin', self._begun)


def test_a_decision_is_one_transaction_on_a_server_database(ctx):
    _hosts(ctx, 8192, 6144)
    driver = filter_scheduler.FilterScheduler(ctx)
    driver.select_destinations(ctx, seed.make_spec(memory_mb=1024))  # warm
    with _Transactions(db.get_engine()) as transactions:
        selections = driver.select_destinations(
            ctx, seed.make_spec(num_instances=2, memory_mb=1024))
    assert len(selections) == 2
    if db.get_engine().dialect.name == 'sqlite':
        # The reads, the claims (and the once-a-second sweep when due).
        assert transactions.count >= 2
    else:
        assert transactions.count == 1
    assert sum(_claimed(ctx).values()) == 3


def test_a_lost_race_rolls_every_claim_back_and_places_again(
        ctx, monkeypatch, conf):
    """A rival takes host1's room after our reads: of our two claims
    (host0 and host1, in node id order), host0's was taken first in the
    same transaction, and must not survive the roll-back; the request is
    placed again, claiming as it goes."""
    conf.set_override('initial_ram_allocation_ratio', 1.5)   # Ocata's
    _hosts(ctx, 8192, 8192, 8192)
    nodes = {node['host']: node for node in db.compute_node_get_all(ctx)}
    real = reservation.SqlReservation.claim
    rivals = []

    def rival_first(self, context, spec_obj, selected, uuids):
        if not rivals:
            rival = scheduler_context.get_admin_context()
            for _ in range(3):   # 12000 of host1's 12288 MiB (ratio 1.5)
                rival_uuid = str(uuid.uuid4())
                assert claims.claim(rival, nodes['host1']['id'], rival_uuid,
                                    1, 4000, 1)
                rivals.append(rival_uuid)
        return real(self, context, spec_obj, selected, uuids)

    monkeypatch.setattr(reservation.SqlReservation, 'claim', rival_first)
    driver = filter_scheduler.FilterScheduler(ctx)
    # 8192 MiB a piece (12288 MiB free on each host, ratio 1.5): the
    # first instance goes to host0 (a tie, kept in id order) and the
    # second to host1 (4096 MiB left on host0); after the lost race,
    # to host0 and host2.
    selections = driver.select_destinations(
        ctx, seed.make_spec(num_instances=2, memory_mb=8192))
    chosen = [picks[0].service_host for picks in selections]
    assert chosen == ['host0', 'host2']
    assert _claimed(ctx) == {'host0': 1, 'host1': 3, 'host2': 1}
    assert claims.overcommitted_nodes(ctx) == []
    assert claims.unbalanced_nodes(ctx) == []


def test_batches_choosing_nodes_in_opposite_orders_do_not_deadlock(ctx):
    """Two workers' decisions each claim two requests on host0 and
    host1, in opposite orders, and each holds its first claim while the
    other takes its own.  The claims of a decision are written when it
    ends, sorted by node, so both commit.  (Written as each request was
    placed, each transaction held one node row and waited for the
    other's: a deadlock, which the database broke by failing one of
    them, a lost race, after a second on PostgreSQL.  On MariaDB at
    InnoDB's REPEATABLE READ they deadlocked even so, on the gap of the
    claims index their "no claim yet" checks locked: connections read
    at READ COMMITTED.)"""
    dialect = db.get_engine().dialect.name
    if dialect == 'sqlite':
        pytest.skip('SQLite claims commit one by one: no transaction '
                    'holds a node while it claims another')
    _hosts(ctx, 8192, 8192)
    driver = filter_scheduler.FilterScheduler(ctx)
    states = {state.host: state
              for state in driver.host_manager.get_all_host_states(ctx)}
    spec = seed.make_spec(memory_mb=512)
    both_hold_one = threading.Barrier(2, timeout=30)
    outcomes = []

    def worker(order):
        rival = scheduler_context.get_admin_context()
        store = reservation.SqlReservation()
        try:
            with store.decision(rival) as atomic:
                assert atomic
                for index, host in enumerate(order):
                    store.claim(rival, spec, [states[host]],
                                [str(uuid.uuid4())])
                    if index == 0:
                        both_hold_one.wait()
            outcomes.append('committed')
        except reservation.LostRace as exc:
            outcomes.append('lost race: %r' % exc.__cause__)

    threads = [threading.Thread(target=worker, args=(order,))
               for order in (('host0', 'host1'), ('host1', 'host0'))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes == ['committed', 'committed']
    assert _claimed(ctx) == {'host0': 2, 'host1': 2}


def test_a_failed_request_writes_nothing(ctx):
    _hosts(ctx, 4096, 2048)
    driver = filter_scheduler.FilterScheduler(ctx)
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(
            ctx, seed.make_spec(num_instances=5, memory_mb=2048))
    assert claims.claims_count(ctx) == 0
    assert all(node['claimed_memory_mb'] == 0
               for node in db.compute_node_get_all(ctx))
