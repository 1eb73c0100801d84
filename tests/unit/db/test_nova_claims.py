"""Claims in Nova database mode: ``scheduler_node_claims`` holds what the
claim checks, ``scheduler.db.nova.node_claims.refresh`` moves it forward.

On SQLite, PostgreSQL and MySQL (``ctx`` of this directory's conftest),
with a stand-in for the Nova source: the snapshots the view would have
read from Nova's ``compute_nodes`` rows (the functional tests read them
from databases Nova's migrations made).
"""

import datetime
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api
from scheduler.db import claims
from scheduler.db import source
from scheduler.db.nova import ids
from scheduler.db.nova import node_claims

ONE = {'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
       'disk_allocation_ratio': 1.0}
CELL = '4a5d0d5c-7bb0-4f41-8f0d-4f6d7d1b1a11'
T0 = datetime.datetime(2027, 1, 18, 10, 0, 0)
MINUTE = datetime.timedelta(minutes=1)


class FakeNova:
    """The Nova source's part the claims use: ``snapshots`` of the nodes
    as the view last read them, and no cell to reconcile with."""

    cells = []

    def __init__(self):
        self.read = {}

    def snapshots(self, view_ids):
        return [self.read[view_id] for view_id in sorted(view_ids)
                if view_id in self.read]


@pytest.fixture
def nova(ctx, monkeypatch):
    fake = FakeNova()
    monkeypatch.setattr(source, 'nova_mode', lambda: True)
    monkeypatch.setattr(source, 'get_source', lambda: fake)
    return fake


def _report(nova, local_id=1, at=T0, memory_mb=4096, memory_mb_used=0,
            vcpus=4, vcpus_used=0, deleted=0):
    """The view reads node ``local_id`` of cell 2 as reported at ``at``;
    returns its view id."""
    view_id = ids.global_id(2, local_id)
    nova.read[view_id] = node_claims.Snapshot(
        id=view_id, uuid='00000000-0000-4000-8000-%012d' % local_id,
        cell_uuid=CELL, host='host%d' % local_id, vcpus=vcpus,
        memory_mb=memory_mb, local_gb=100, vcpus_used=vcpus_used,
        memory_mb_used=memory_mb_used, local_gb_used=0,
        cpu_allocation_ratio=None, ram_allocation_ratio=None,
        disk_allocation_ratio=None, deleted=deleted, reported_at=at)
    return view_id


def _claim(ctx, view_id, memory_mb=1024, instance=None):
    return claims.claim(ctx, view_id, instance or str(uuid.uuid4()), 1,
                        memory_mb, 1, ONE)


def _stored(ctx, view_id):
    with api.get_engine().connect() as connection:
        return connection.execute(sa.select(node_claims.NODE_CLAIMS).where(
            node_claims.NODE_CLAIMS.c.id == view_id)).mappings().one()


def test_claims_sum_in_our_table_up_to_the_capacity(ctx, nova):
    node = _report(nova)
    assert [_claim(ctx, node) for _ in range(5)] == [True] * 4 + [False]
    stored = _stored(ctx, node)
    assert (stored['claimed_memory_mb'], stored['claimed_vcpus']) == (4096, 4)
    assert (stored['uuid'], stored['cell_uuid'], stored['host']) == (
        nova.read[node].uuid, CELL, 'host1')
    assert stored['generation'] == 4
    assert claims.get_claims(ctx)[0]['compute_node_id'] == node
    assert claims.unbalanced_nodes(ctx) == []
    assert claims.overcommitted_nodes(ctx, ONE) == []


def test_a_node_the_view_never_read_cannot_be_claimed(ctx, nova):
    assert not _claim(ctx, ids.global_id(2, 99))
    assert claims.claims_count(ctx) == 0


def test_a_deleted_node_cannot_be_claimed(ctx, nova):
    assert not _claim(ctx, _report(nova, deleted=1))


def test_a_later_report_moves_the_snapshot_forward(ctx, nova):
    node = _report(nova, at=T0, memory_mb=8192, memory_mb_used=0)
    assert _claim(ctx, node, memory_mb=1024)
    _report(nova, at=T0 + MINUTE, memory_mb=8192, memory_mb_used=6144)
    # 6144 + 1024 + 2048 > 8192: refused, and rolled back with it.
    assert not _claim(ctx, node, memory_mb=2048)
    assert _stored(ctx, node)['memory_mb_used'] == 0
    assert _claim(ctx, node, memory_mb=512)
    assert _stored(ctx, node)['memory_mb_used'] == 6144
    assert _stored(ctx, node)['reported_at'] == T0 + MINUTE


def test_an_older_view_does_not_move_the_snapshot_back(ctx, nova):
    """A scheduler whose view predates the newest report another one
    stored is checked against the newest report."""
    node = _report(nova, at=T0 + MINUTE, memory_mb_used=3072)
    assert _claim(ctx, node, memory_mb=512)
    _report(nova, at=T0, memory_mb_used=0)      # a stale view
    assert not _claim(ctx, node, memory_mb=1024)
    assert _stored(ctx, node)['memory_mb_used'] == 3072


def test_reports_of_the_same_time_keep_the_larger_usage(ctx, nova):
    node = _report(nova, at=T0, memory_mb_used=2048)
    assert _claim(ctx, node, memory_mb=512)
    _report(nova, at=T0, memory_mb_used=1024)
    assert _claim(ctx, node, memory_mb=512)
    assert _stored(ctx, node)['memory_mb_used'] == 2048
    _report(nova, at=T0, memory_mb_used=3000)
    assert _claim(ctx, node, memory_mb=64)
    assert _stored(ctx, node)['memory_mb_used'] == 3000


def test_release_subtracts_from_our_table(ctx, nova):
    node = _report(nova)
    instance = str(uuid.uuid4())
    assert _claim(ctx, node, instance=instance)
    generation = _stored(ctx, node)['generation']
    assert claims.release(ctx, instance)
    stored = _stored(ctx, node)
    assert stored['claimed_memory_mb'] == 0
    assert stored['generation'] == generation + 1
    assert stored['updated_at'] == stored['claims_updated_at']
    assert claims.unbalanced_nodes(ctx) == []


def test_claim_many_on_two_cells(ctx, nova):
    first = _report(nova, local_id=1)
    other = ids.global_id(3, 1)
    nova.read[other] = nova.read[first]._replace(
        id=other, uuid='00000000-0000-4000-8000-999999999999')
    wanted = [claims.ClaimRequest(first, str(uuid.uuid4()), 1, 1024, 1),
              claims.ClaimRequest(other, str(uuid.uuid4()), 1, 1024, 1),
              claims.ClaimRequest(other, str(uuid.uuid4()), 1, 1024, 1)]
    assert claims.claim_many(ctx, wanted, ONE)
    assert _stored(ctx, first)['claimed_memory_mb'] == 1024
    assert _stored(ctx, other)['claimed_memory_mb'] == 2048
    assert claims.unbalanced_nodes(ctx) == []


def test_reconcile_releases_expired_claims(ctx, nova):
    node = _report(nova)
    assert claims.claim(ctx, node, str(uuid.uuid4()), 1, 1024, 1, ONE,
                        expires_at=T0)
    assert claims.claim(ctx, node, str(uuid.uuid4()), 1, 1024, 1, ONE,
                        expires_at=T0 + 10 * MINUTE)
    assert claims.reconcile(ctx, now=T0 + MINUTE) == {'expired': 1,
                                                       'superseded': 0}
    assert _stored(ctx, node)['claimed_memory_mb'] == 1024
    assert claims.unbalanced_nodes(ctx) == []
