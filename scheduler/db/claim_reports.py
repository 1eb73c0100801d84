"""Audits of the claims: overcommitted or unbalanced nodes, live claims.

For load tests, audits and tests: ``overcommitted_nodes`` (reported
usage plus claims above capacity), ``unbalanced_nodes`` (``claimed_*``
not the sums of the claim rows), ``claims_count`` and ``get_claims``.
Read-only; ``scheduler.db.claims`` exports them under the same names.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from scheduler.db import api
from scheduler.db.claim_sql import BY_NAME
from scheduler.db.claim_sql import CLAIMS
from scheduler.db.claim_sql import RESOURCES
from scheduler.db.claim_sql import capacity_sql
from scheduler.db.claim_sql import claim_row_select
from scheduler.db.claim_sql import column_of
from scheduler.db.claim_sql import context_manager
from scheduler.db.claim_sql import nodes_table
from scheduler.db.claim_sql import overcommitted_sql
from scheduler.db.claim_sql import resolved_ratios


def overcommitted_nodes(context: Any,
                        ratios: dict[str, float] | None = None
                        ) -> list[dict[str, Any]]:
    """Find the live nodes whose reported usage plus claims exceed their
    capacity, for load tests and audits.

    Uses the ratio resolution and the ``vcpus = 0`` exception of
    ``claim``; a node overcommitted on several resources appears once per
    resource.  Floats are compared as the database computes them.

    :param ratios: as for ``claim`` (defaults of nodes without ratios).
    :returns: list of ``{'id', 'host', 'hypervisor_hostname', 'resource'
        ('vcpus', 'memory_mb' or 'disk_gb'), 'used' (reported, int),
        'claimed' (int), 'capacity' (total * ratio, float)}``, by node id
        then resource in that order; empty when nothing is overcommitted.
    :raises scheduler.exception.Invalid: a ratio is not a positive number.
    """
    ratios = resolved_ratios(ratios)
    nodes = nodes_table()
    node = nodes.c
    columns = [node.id, node.host,
               node.get('hypervisor_hostname',
                        sa.null().label('hypervisor_hostname'))]
    for resource in RESOURCES:
        columns += [
            column_of(resource.used, nodes).label(resource.name + '_used'),
            column_of(resource.claimed, nodes).label(
                resource.name + '_claimed'),
            capacity_sql(resource, nodes, ratios).label(
                resource.name + '_capacity'),
            sa.case((overcommitted_sql(resource, nodes, ratios), 1),
                    else_=0).label(resource.name + '_over')]
    statement = (sa.select(*columns)
                 .where(node.deleted == 0,
                        sa.or_(*[overcommitted_sql(resource, nodes, ratios)
                                 for resource in RESOURCES]))
                 .order_by(node.id))
    with context_manager.reader.using(context) as session:
        rows = api.dict_rows(session, statement)
    return [{'id': row['id'], 'host': row['host'],
             'hypervisor_hostname': row['hypervisor_hostname'],
             'resource': resource.name,
             'used': row[resource.name + '_used'],
             'claimed': row[resource.name + '_claimed'],
             'capacity': float(row[resource.name + '_capacity'])}
            for row in rows for resource in RESOURCES
            if row[resource.name + '_over']]


def unbalanced_nodes(context: Any) -> list[dict[str, Any]]:
    """Find the nodes whose ``claimed_*`` differ from the sums of their
    claim rows (which must never happen), deleted nodes included.

    :returns: list of ``{'id', 'resource', 'claimed' (the column),
        'sum' (of the claim rows)}`` by node id then resource; empty when
        the bookkeeping is exact.
    """
    sums = (sa.select(CLAIMS.c.compute_node_id,
                      *[sa.func.sum(CLAIMS.c[name]).label(name)
                        for name in BY_NAME])
            .group_by(CLAIMS.c.compute_node_id).subquery())
    nodes = nodes_table()
    node = nodes.c
    statement = (sa.select(node.id,
                           *[column_of(r.claimed, nodes) for r in RESOURCES],
                           *[sums.c[name] for name in BY_NAME])
                 .select_from(nodes.outerjoin(
                     sums, sums.c.compute_node_id == node.id))
                 .order_by(node.id))
    with context_manager.reader.using(context) as session:
        rows = api.dict_rows(session, statement)
    return [{'id': row['id'], 'resource': resource.name,
             'claimed': row[resource.claimed],
             'sum': int(row[resource.name] or 0)}
            for row in rows for resource in RESOURCES
            if row[resource.claimed] != int(row[resource.name] or 0)]


def claims_count(context: Any) -> int:
    """Return the number of live claims (int)."""
    statement = sa.select(sa.func.count()).select_from(CLAIMS)
    with context_manager.reader.using(context) as session:
        return session.execute(statement).scalar()


def get_claims(context: Any, compute_node_id: int | None = None
               ) -> list[dict[str, Any]]:
    """Return the claims, all or those on ``compute_node_id``, by id.

    :returns: list of dicts with every ``scheduler_claims`` column:
        ``id``, ``instance_uuid``, ``compute_node_id``, ``host``,
        ``vcpus``, ``memory_mb`` (MiB), ``disk_gb`` (GiB), ``expires_at``,
        ``created_at``, ``updated_at`` (naive UTC datetimes).
    """
    statement = claim_row_select()
    if compute_node_id is not None:
        statement = statement.where(
            CLAIMS.c.compute_node_id == compute_node_id)
    with context_manager.reader.using(context) as session:
        return api.dict_rows(session, statement)
