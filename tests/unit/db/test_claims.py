"""Tests of ``scheduler.db.claims``: the conditional claim, releases,
reconciliation with the compute nodes' usage reports, and the reports.

The example tests run on SQLite, PostgreSQL and MySQL (``ctx`` fixture of
this directory's conftest); the property test runs on SQLite only.
Timestamps that reconciliation compares are written explicitly, minutes
apart, because MySQL ``DATETIME`` keeps whole seconds.
"""

import datetime
import uuid

import hypothesis
import pytest
import sqlalchemy as sa
from hypothesis import strategies as st
from oslo_utils import timeutils

from scheduler import context
from scheduler import exception
from scheduler.db import api
from scheduler.db import claim_sql
from scheduler.db import claims
from scheduler.db import migration
from scheduler_tools import seed
from scheduler_tools import writers

ONE = {'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
       'disk_allocation_ratio': 1.0}
MINUTE = datetime.timedelta(minutes=1)


def _uuid():
    return str(uuid.uuid4())


def _node(ctx, host='host1', vcpus=8, memory_mb=8192, local_gb=100,
          **extra):
    """A compute node without ratios of its own (ratios come from the
    ``ratios`` argument of the calls) unless ``extra`` sets them."""
    return seed.add_compute(ctx, host, vcpus=vcpus, memory_mb=memory_mb,
                            local_gb=local_gb, **extra)


def _claim(ctx, node, instance_uuid=None, vcpus=1, memory_mb=1024,
           disk_gb=10, ratios=ONE, **kwargs):
    return claims.claim(ctx, node['id'], instance_uuid or _uuid(), vcpus,
                        memory_mb, disk_gb, ratios, **kwargs)


def _claimed(ctx, node):
    row = api.compute_node_get(ctx, node['id'])
    return (row['claimed_vcpus'], row['claimed_memory_mb'],
            row['claimed_disk_gb'])


def _assert_balanced(ctx):
    assert claims.unbalanced_nodes(ctx) == []


# ---------------------------------------------------------------- claim --

def test_claim_adds_to_the_node_and_records_the_claim(ctx):
    node = _node(ctx)
    expires = timeutils.utcnow().replace(microsecond=0) + 5 * MINUTE
    instance = _uuid()
    assert _claim(ctx, node, instance, 2, 2048, 20, expires_at=expires)
    row = api.compute_node_get(ctx, node['id'])
    assert _claimed(ctx, node) == (2, 2048, 20)
    assert row['generation'] == node['generation'] + 1
    assert row['updated_at'] is not None
    assert row['updated_at'] == row['claims_updated_at']
    (found,) = claims.get_claims(ctx)
    assert found['instance_uuid'] == instance
    assert found['compute_node_id'] == node['id']
    assert found['host'] == 'host1'
    assert (found['vcpus'], found['memory_mb'], found['disk_gb']) == (
        2, 2048, 20)
    assert found['expires_at'] == expires
    assert claims.claims_count(ctx) == 1
    assert claims.get_claims(ctx, compute_node_id=node['id'] + 1) == []


def test_claim_default_expiry_is_the_claim_timeout(ctx, conf):
    conf.set_override('claim_timeout', 600, group='scheduler')
    before = timeutils.utcnow()
    assert _claim(ctx, _node(ctx))
    (found,) = claims.get_claims(ctx)
    delta = found['expires_at'] - before
    assert datetime.timedelta(seconds=598) < delta
    assert delta < datetime.timedelta(seconds=602)


@pytest.mark.parametrize('resource,amounts', [
    ('vcpus', (5, 1024, 10)),
    ('memory_mb', (1, 4097, 10)),
    ('disk_gb', (1, 1024, 51)),
])
def test_claim_that_does_not_fit_changes_nothing(ctx, resource, amounts):
    # Half of each resource is in use: 4 vCPUs, 4096 MiB, 50 GiB free.
    node = _node(ctx, vcpus_used=4, memory_mb_used=4096, local_gb_used=50)
    assert not _claim(ctx, node, None, *amounts)
    assert api.compute_node_get(ctx, node['id']) == node
    assert claims.claims_count(ctx) == 0
    exact = {'vcpus': (4, 1, 1), 'memory_mb': (1, 4096, 1),
             'disk_gb': (1, 1, 50)}[resource]
    assert _claim(ctx, node, None, *exact)


def test_claims_add_up_to_the_capacity_exactly(ctx):
    node = _node(ctx, memory_mb_used=1024)
    results = [_claim(ctx, node, None, 0, 1024, 0) for _ in range(8)]
    assert results == [True] * 7 + [False]
    assert _claimed(ctx, node) == (0, 7168, 0)
    assert claims.overcommitted_nodes(ctx, ONE) == []
    _assert_balanced(ctx)


def test_ratio_of_the_row_wins_over_the_default(ctx):
    node = _node(ctx, ram_allocation_ratio=2.0)
    assert _claim(ctx, node, None, 1, 8192, 1)
    assert _claim(ctx, node, None, 1, 8192, 1)
    assert not _claim(ctx, node, None, 1, 1, 1)


@pytest.mark.parametrize('row_ratio', [None, 0.0])
def test_unset_ratio_of_the_row_takes_the_default(ctx, row_ratio):
    node = _node(ctx, ram_allocation_ratio=row_ratio)
    ratios = dict(ONE, ram_allocation_ratio=1.5)
    assert _claim(ctx, node, None, 1, 8192, 1, ratios)
    assert _claim(ctx, node, None, 1, 4096, 1, ratios)
    assert not _claim(ctx, node, None, 1, 1, 1, ratios)


def test_missing_ratios_come_from_the_config(ctx, conf):
    conf.set_override('cpu_allocation_ratio', 2.0)
    node = _node(ctx, vcpus=4)
    assert claims.claim(ctx, node['id'], _uuid(), 4, 1, 1, None)
    assert claims.claim(ctx, node['id'], _uuid(), 4, 1, 1,
                        {'cpu_allocation_ratio': None})
    assert not claims.claim(ctx, node['id'], _uuid(), 1, 1, 1, {})


def test_node_without_vcpus_is_not_checked_for_cpu(ctx):
    node = _node(ctx, vcpus=0)
    assert _claim(ctx, node, None, 64, 1024, 1)
    assert _claimed(ctx, node) == (64, 1024, 1)
    assert claims.overcommitted_nodes(ctx, ONE) == []


@pytest.mark.parametrize('amounts', [(3, 1, 1), (1, 4097, 1), (1, 1, 11)])
def test_instance_may_not_overcommit_against_itself(ctx, amounts):
    # Ratios of 10 leave room for all three requests, but each is larger
    # than the node's un-overcommitted total of one resource.
    node = _node(ctx, vcpus=2, memory_mb=4096, local_gb=10)
    ratios = dict.fromkeys(claim_sql.RATIO_NAMES, 10.0)
    assert not _claim(ctx, node, None, *amounts, ratios=ratios)
    assert _claim(ctx, node, None, 2, 4096, 10, ratios)


def test_claim_on_a_deleted_or_missing_node_fails(ctx):
    node = _node(ctx)
    writers.compute_node_delete(ctx, node['id'])
    assert not _claim(ctx, node)
    assert not _claim(ctx, {'id': node['id'] + 100})
    assert claims.claims_count(ctx) == 0


@pytest.mark.parametrize('amounts', [(-1, 1, 1), (1, 1.5, 1), (1, 1, None),
                                     (True, 1, 1)])
def test_claim_rejects_bad_amounts(ctx, amounts):
    node = _node(ctx)
    with pytest.raises(exception.Invalid):
        _claim(ctx, node, None, *amounts)


def test_claim_rejects_bad_ratios(ctx):
    node = _node(ctx)
    with pytest.raises(exception.Invalid):
        _claim(ctx, node, ratios={'cpu_allocation_ratio': -1.0})
    with pytest.raises(exception.Invalid):
        _claim(ctx, node, ratios={'bogus_ratio': 1.0})


# ---------------------------------------------------------- re-schedule --

def test_reclaim_on_the_same_node_replaces_the_claim(ctx):
    node = _node(ctx, memory_mb=4096)
    instance = _uuid()
    assert _claim(ctx, node, instance, 1, 4096, 10)
    (first,) = claims.get_claims(ctx)
    # The node is full, but the old claim of the instance counts as free.
    assert _claim(ctx, node, instance, 2, 3072, 20)
    (second,) = claims.get_claims(ctx)
    assert second['id'] != first['id']
    assert (second['vcpus'], second['memory_mb'], second['disk_gb']) == (
        2, 3072, 20)
    assert _claimed(ctx, node) == (2, 3072, 20)
    _assert_balanced(ctx)


def test_reclaim_on_another_node_moves_the_claim(ctx):
    old, new = _node(ctx, 'host1'), _node(ctx, 'host2')
    instance = _uuid()
    assert _claim(ctx, old, instance, 1, 1024, 10)
    assert _claim(ctx, new, instance, 2, 2048, 20)
    assert _claimed(ctx, old) == (0, 0, 0)
    assert _claimed(ctx, new) == (2, 2048, 20)
    (found,) = claims.get_claims(ctx)
    assert (found['compute_node_id'], found['host']) == (new['id'], 'host2')
    _assert_balanced(ctx)


def test_failed_reclaim_keeps_the_old_claim(ctx):
    old, full = _node(ctx, 'host1'), _node(ctx, 'host2', memory_mb=512)
    instance = _uuid()
    assert _claim(ctx, old, instance)
    before = claims.get_claims(ctx)
    assert not _claim(ctx, full, instance)
    assert claims.get_claims(ctx) == before
    assert _claimed(ctx, old) == (1, 1024, 10)
    _assert_balanced(ctx)


# -------------------------------------------------------------- release --

def test_release_is_idempotent(ctx):
    node = _node(ctx)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    generation = api.compute_node_get(ctx, node['id'])['generation']
    assert claims.release(ctx, instance) is True
    assert claims.release(ctx, instance) is False
    assert claims.release(ctx, _uuid()) is False
    row = api.compute_node_get(ctx, node['id'])
    assert _claimed(ctx, node) == (0, 0, 0)
    assert row['generation'] == generation + 1
    assert row['updated_at'] == row['claims_updated_at']
    assert claims.claims_count(ctx) == 0


def test_release_of_a_stale_read_subtracts_nothing(ctx):
    """A release that read a claim row another caller released (or
    replaced) in the meantime must not subtract it again."""
    node = _node(ctx)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    (row,) = claims.get_claims(ctx)
    assert claims.release(ctx, instance)
    with api.context_manager.writer.using(ctx) as session:
        assert claim_sql.release_rows(session, [row], timeutils.utcnow()) == []
    assert _claimed(ctx, node) == (0, 0, 0)


def test_release_on_a_deleted_node_keeps_the_sums_exact(ctx):
    node = _node(ctx)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    writers.compute_node_delete(ctx, node['id'])
    assert claims.release(ctx, instance)
    _assert_balanced(ctx)


def test_release_many(ctx):
    node = _node(ctx)
    instances = [_uuid() for _ in range(3)]
    for instance in instances:
        assert _claim(ctx, node, instance)
    assert claims.release_many(ctx, instances[:2] + [_uuid()]) == 2
    assert claims.release_many(ctx, instances[:2]) == 0
    assert claims.release_many(ctx, []) == 0
    (left,) = claims.get_claims(ctx)
    assert left['instance_uuid'] == instances[2]
    assert _claimed(ctx, node) == (1, 1024, 10)
    _assert_balanced(ctx)


# ------------------------------------------------------------ reconcile --

def _instance(ctx, instance_uuid, host, at, **values):
    return writers.instance_create(ctx, dict(
        values, uuid=instance_uuid, host=host, node=host, memory_mb=1024,
        vcpus=1, root_gb=10, created_at=at))


def _report(ctx, node, at, **values):
    """A usage report of the compute node written at ``at``."""
    return writers.compute_node_update(ctx, node['id'],
                                       dict(values, updated_at=at))


def test_reconcile_releases_expired_claims(ctx):
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    old, fresh = _uuid(), _uuid()
    assert _claim(ctx, node, old, expires_at=now - MINUTE)
    assert _claim(ctx, node, fresh, expires_at=now + MINUTE)
    assert claims.reconcile(ctx, now=now) == {'expired': 1,
                                              'superseded': 0}
    assert [c['instance_uuid'] for c in claims.get_claims(ctx)] == [fresh]
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 0}
    assert claims.reconcile(ctx, now=now + 2 * MINUTE)['expired'] == 1
    assert _claimed(ctx, node) == (0, 0, 0)


def test_reconcile_releases_claims_a_later_report_includes(ctx):
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    _instance(ctx, instance, 'host1', now + MINUTE)
    _report(ctx, node, now + 2 * MINUTE, memory_mb_used=1024)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 1}
    assert claims.claims_count(ctx) == 0
    assert _claimed(ctx, node) == (0, 0, 0)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 0}


def test_superseded_and_expired_counts_as_superseded(ctx):
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    instance = _uuid()
    assert _claim(ctx, node, instance, expires_at=now)
    _instance(ctx, instance, 'host1', now + MINUTE)
    _report(ctx, node, now + 2 * MINUTE)
    assert claims.reconcile(ctx, now=now + 5 * MINUTE) == {
        'expired': 0, 'superseded': 1}


def test_report_older_than_the_instance_does_not_supersede(ctx):
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    _report(ctx, node, now + MINUTE)
    _instance(ctx, instance, 'host1', now + 2 * MINUTE)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 0}
    # The instance's updated_at counts when it is set.
    _report(ctx, node, now + 3 * MINUTE)
    with api.get_engine().begin() as connection:
        connection.execute(sa.update(api.INSTANCES)
                           .where(api.INSTANCES.c.uuid == instance)
                           .values(updated_at=now + 4 * MINUTE))
    assert claims.reconcile(ctx, now=now)['superseded'] == 0
    _report(ctx, node, now + 5 * MINUTE)
    assert claims.reconcile(ctx, now=now)['superseded'] == 1


def test_claims_of_the_scheduler_do_not_pass_for_a_report(ctx):
    """A claim (or release) writes ``updated_at`` too; it must not make
    another instance's claim look superseded."""
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    _instance(ctx, instance, 'host1', now - MINUTE)
    # The node's last write is this second claim, after the instance.
    assert _claim(ctx, node)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 0}
    _report(ctx, node, now + MINUTE)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 1}


@pytest.mark.parametrize('where', ['other_host', 'deleted', 'absent'])
def test_instance_not_live_on_the_claimed_host_does_not_supersede(ctx,
                                                                   where):
    node = _node(ctx)
    now = timeutils.utcnow().replace(microsecond=0)
    instance = _uuid()
    assert _claim(ctx, node, instance)
    if where != 'absent':
        host = 'host2' if where == 'other_host' else 'host1'
        _instance(ctx, instance, host, now + MINUTE)
    if where == 'deleted':
        writers.instance_destroy(ctx, instance)
    _report(ctx, node, now + 2 * MINUTE)
    assert claims.reconcile(ctx, now=now) == {'expired': 0,
                                              'superseded': 0}
    assert claims.claims_count(ctx) == 1


# -------------------------------------------------------------- reports --

def test_overcommitted_nodes(ctx):
    fine = _node(ctx, 'host1')
    over = _node(ctx, 'host2', vcpus=2, vcpus_used=2, memory_mb_used=8192,
                 ram_allocation_ratio=1.0)
    # Claims can only be made while they fit; the report comes after.
    assert _claim(ctx, fine, None, 1, 1024, 1)
    assert _claim(ctx, over, None, 0, 0, 1,
                  ratios=dict(ONE, cpu_allocation_ratio=2.0))
    _report(ctx, over, timeutils.utcnow(), memory_mb_used=8192 + 1,
            vcpus_used=5)
    found = claims.overcommitted_nodes(
        ctx, dict(ONE, cpu_allocation_ratio=2.0))
    assert found == [
        {'id': over['id'], 'host': 'host2', 'hypervisor_hostname': 'host2',
         'resource': 'vcpus', 'used': 5, 'claimed': 0, 'capacity': 4.0},
        {'id': over['id'], 'host': 'host2', 'hypervisor_hostname': 'host2',
         'resource': 'memory_mb', 'used': 8193, 'claimed': 0,
         'capacity': 8192.0},
    ]
    # With the config's default CPU ratio (16.0) only the RAM is over.
    assert [f['resource'] for f in claims.overcommitted_nodes(ctx)] == [
        'memory_mb']


def test_unbalanced_nodes_sees_a_difference(ctx):
    node = _node(ctx)
    assert _claim(ctx, node)
    writers.compute_node_update(ctx, node['id'], {'claimed_memory_mb': 1})
    assert claims.unbalanced_nodes(ctx) == [
        {'id': node['id'], 'resource': 'memory_mb', 'claimed': 1,
         'sum': 1024}]


# ------------------------------------------------------ property (SQLite) --

@pytest.fixture
def sqlite_ctx(tmp_path):
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'claims.sqlite'))
    migration.db_sync()
    yield context.get_admin_context()
    writers.reset_engine()


_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just('claim'), st.integers(0, 2), st.integers(0, 5),
                  st.integers(0, 3), st.integers(0, 3000),
                  st.integers(0, 40)),
        st.tuples(st.just('release'), st.integers(0, 5)),
        st.tuples(st.just('release_many'),
                  st.lists(st.integers(0, 5), max_size=3)),
        st.tuples(st.just('expire'), st.integers(0, 5)),
    ),
    max_size=25)

_NODES = [dict(vcpus=4, memory_mb=4096, local_gb=50),
          dict(vcpus=0, memory_mb=2048, local_gb=20, vcpus_used=3),
          dict(vcpus=2, memory_mb=8192, local_gb=100, memory_mb_used=1000,
               ram_allocation_ratio=0.5)]
_RATIOS = {'cpu_allocation_ratio': 2.0, 'ram_allocation_ratio': 1.5,
           'disk_allocation_ratio': 1.0}


class _Model:
    """The expected state: {instance index: (node index, amounts)}."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.claims = {}

    def _room(self, node_index, resource, skip):
        node = self.nodes[node_index]
        res = claim_sql.BY_NAME[resource]
        ratio = node[res.ratio] or _RATIOS[res.ratio]
        claimed = sum(amounts[resource]
                      for i, (n, amounts) in self.claims.items()
                      if n == node_index and i != skip)
        return node[res.total] * ratio - node[res.used] - claimed

    def fits(self, node_index, instance, amounts):
        node = self.nodes[node_index]
        for resource, amount in amounts.items():
            res = claim_sql.BY_NAME[resource]
            if resource == 'vcpus' and node['vcpus'] == 0:
                continue
            if node[res.total] < amount:
                return False
            if self._room(node_index, resource, instance) < amount:
                return False
        return True


def _reset(ctx):
    with api.get_engine().begin() as connection:
        for table in (claim_sql.CLAIMS, api.COMPUTE_NODES, api.SERVICES):
            connection.execute(sa.delete(table))
    return [_node(ctx, 'host%d' % i, **values)
            for i, values in enumerate(_NODES)]


@hypothesis.settings(
    max_examples=60, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(operations=_OPERATIONS)
def test_claim_and_release_arithmetic(sqlite_ctx, operations):
    """Any sequence of claims, releases and expiries leaves the node sums
    equal to the claims a Python model of the fit rule expects."""
    ctx = sqlite_ctx
    nodes = _reset(ctx)
    model = _Model(nodes)
    uuids = ['00000000-0000-0000-0000-%012d' % i for i in range(6)]
    now = timeutils.utcnow()
    for operation in operations:
        kind, args = operation[0], operation[1:]
        if kind == 'claim':
            node_index, instance, vcpus, memory_mb, disk_gb = args
            amounts = {'vcpus': vcpus, 'memory_mb': memory_mb,
                       'disk_gb': disk_gb}
            expected = model.fits(node_index, instance, amounts)
            got = claims.claim(ctx, nodes[node_index]['id'],
                               uuids[instance], vcpus, memory_mb, disk_gb,
                               _RATIOS, now + MINUTE)
            assert got == expected
            if got:
                model.claims[instance] = (node_index, amounts)
        elif kind == 'release':
            (instance,) = args
            assert claims.release(ctx, uuids[instance]) == (
                model.claims.pop(instance, None) is not None)
        elif kind == 'release_many':
            (instances,) = args
            expected = len({i for i in instances if i in model.claims})
            for instance in instances:
                model.claims.pop(instance, None)
            assert claims.release_many(
                ctx, [uuids[i] for i in instances]) == expected
        else:
            (instance,) = args
            with api.get_engine().begin() as connection:
                connection.execute(
                    sa.update(claim_sql.CLAIMS)
                    .where(claim_sql.CLAIMS.c.instance_uuid == uuids[instance])
                    .values(expires_at=now - MINUTE))
            expected = int(model.claims.pop(instance, None) is not None)
            assert claims.reconcile(ctx, now=now) == {
                'expired': expected, 'superseded': 0}
    for index, node in enumerate(nodes):
        expected = tuple(
            sum(amounts[name] for n, amounts in model.claims.values()
                if n == index)
            for name in ('vcpus', 'memory_mb', 'disk_gb'))
        assert _claimed(ctx, node) == expected
    assert claims.claims_count(ctx) == len(model.claims)
    assert claims.unbalanced_nodes(ctx) == []
    assert claims.overcommitted_nodes(ctx, _RATIOS) == []


def test_claim_many_batches_new_instances(ctx, db_engine):
    """Three new instances: one executemany of the conditional UPDATE
    where the driver sums its row counts, else one UPDATE each; one
    executemany of the claim rows."""
    node = _node(ctx)
    updates = []

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith('UPDATE'):
            updates.append(len(parameters) if executemany else 1)

    sa.event.listen(db_engine, 'before_cursor_execute', count)
    try:
        assert claims.claim_many(ctx, [
            claims.ClaimRequest(node['id'], _uuid(), 1, 1024, 10)
            for _ in range(3)], ONE)
    finally:
        sa.event.remove(db_engine, 'before_cursor_execute', count)
    if db_engine.dialect.supports_sane_multi_rowcount:
        assert updates == [3]
    else:
        assert updates == [1, 1, 1]
    assert _claimed(ctx, node) == (3, 3072, 30)
    _assert_balanced(ctx)


def test_claim_many_replaces_a_claim_among_new_ones(ctx):
    """A request whose instances are new but one, claimed before on
    another node (a re-schedule): the batch of conditional UPDATEs does
    not match that one, and the request is claimed one instance at a
    time instead, the old claim moving."""
    first, second = _node(ctx, 'host1'), _node(ctx, 'host2')
    moved, new = _uuid(), _uuid()
    assert _claim(ctx, first, moved, memory_mb=2048)
    assert claims.claim_many(ctx, [
        claims.ClaimRequest(second['id'], moved, 1, 1024, 10),
        claims.ClaimRequest(second['id'], new, 1, 1024, 10)], ONE)
    assert _claimed(ctx, first) == (0, 0, 0)
    assert _claimed(ctx, second) == (2, 2048, 20)
    assert {row['instance_uuid'] for row in claims.get_claims(ctx)} == {
        moved, new}
    _assert_balanced(ctx)


def test_claim_many_is_all_or_none_and_records_hosts(ctx):
    first, second = _node(ctx, 'host1'), _node(ctx, 'host2', memory_mb=1024)
    kept, also, too_big = _uuid(), _uuid(), _uuid()
    # The second node has room for one 1 GiB instance: the third claim
    # fails, and the transaction takes none of them.
    assert not claims.claim_many(ctx, [
        claims.ClaimRequest(first['id'], kept, 1, 1024, 10),
        claims.ClaimRequest(second['id'], also, 1, 1024, 10),
        claims.ClaimRequest(second['id'], too_big, 1, 1024, 10)], ONE)
    assert claims.claims_count(ctx) == 0
    assert _claimed(ctx, first) == _claimed(ctx, second) == (0, 0, 0)
    # A host given with a claim is recorded as given; one not given is
    # read from the node.
    assert claims.claim_many(ctx, [
        claims.ClaimRequest(first['id'], kept, 1, 1024, 10, 'host1'),
        claims.ClaimRequest(second['id'], also, 1, 1024, 10)], ONE)
    assert {row['instance_uuid']: row['host']
            for row in claims.get_claims(ctx)} == {kept: 'host1',
                                                   also: 'host2'}
    _assert_balanced(ctx)


def test_default_ratios_are_the_host_views():
    """The claims resolve unset ratios as the host view does."""
    from scheduler.view import host_state
    assert claim_sql.config_ratios() == {
        name: host_state.resolve_allocation_ratio(name, None)
        for name in claim_sql.RATIO_NAMES}
