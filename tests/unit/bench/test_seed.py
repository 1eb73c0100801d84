"""The fleet seeder's bulk path (``scheduler_tools.seed.bulk_seed``), as
the benchmark uses it: the rows it writes, the ids it returns, and
``remove_seeded`` leaving the database as it was found."""

import pytest
import sqlalchemy as sa

from scheduler.db import api as db
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import workload

TABLES = (db.SERVICES, db.COMPUTE_NODES, db.AGGREGATES, db.AGGREGATE_HOSTS,
          db.AGGREGATE_METADATA)


@pytest.fixture
def ctx(tmp_path):
    yield seed.use_database('sqlite:///%s' % (tmp_path / 'seed.sqlite'))
    writers.reset_engine()


def _counts(ctx):
    with db.context_manager.reader.using(ctx) as session:
        return {table.name: session.execute(
            sa.select(sa.func.count()).select_from(table)).scalar()
            for table in TABLES}


def test_bulk_seed_and_remove(ctx):
    # A compute service without a node: not the seeder's to remove.
    other = writers.service_create(ctx, {
        'host': 'other', 'binary': seed.COMPUTE_BINARY,
        'topic': seed.COMPUTE_TOPIC})
    before = _counts(ctx)
    hosts = workload.generate_hosts(40, seed=1)
    seeded = workload.seed_hosts(ctx, hosts)
    nodes = db.compute_node_get_all(ctx)
    assert [node['id'] for node in nodes] == seeded.compute_node_ids
    assert [node['host'] for node in nodes] == [h.host for h in hosts]
    services = {s['host']: s for s in db.service_get_all_by_binary(ctx)}
    assert sorted(services[h.host]['id'] for h in hosts) == (
        seeded.service_ids)
    assert other['host'] in services
    assert all(node['service_id'] == services[node['host']]['id']
               for node in nodes)
    aggregates = {agg['name']: agg for agg in db.aggregate_get_all(ctx)}
    assert sorted(agg['id'] for agg in aggregates.values()) == sorted(
        seeded.aggregate_ids)
    assert aggregates[workload.DENSE_AGGREGATE]['metadata'] == (
        workload.DENSE_METADATA)
    assert seed.aggregate_members([h.spec for h in hosts]).keys() == (
        aggregates.keys())
    seed.remove_seeded(ctx, seeded)
    assert _counts(ctx) == before


def test_seed_hosts_wants_an_empty_database(ctx):
    seed.add_compute(ctx, 'h1')
    with pytest.raises(workload.WorkloadError, match='already has 1'):
        workload.seed_hosts(ctx, workload.generate_hosts(2))
