"""Reconciliation of claims with the nodes' usage reports.

``reconcile`` releases the claims that a usage report superseded or that
expired (rules 3 and 4 of docs/claims.rst), on the standalone schema, or
through ``scheduler.db.nova.reconcile`` in Nova database mode.  The
filter scheduler runs it as its periodic task.
"""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa

from scheduler.db import api
from scheduler.db import source
from scheduler.db.claim_sql import CLAIMS
from scheduler.db.claim_sql import COMPUTE_NODES
from scheduler.db.claim_sql import INSTANCES
from scheduler.db.claim_sql import claim_row_select
from scheduler.db.claim_sql import context_manager
from scheduler.db.claim_sql import release_rows
from scheduler.db.claim_sql import retry
from scheduler.db.claim_sql import utcnow
from scheduler.db.nova import reconcile as nova_reconcile


@retry
def _release_one(context, row):
    """Release one claim row (dict) found by ``reconcile``; True when this
    call removed it."""
    with context_manager.writer.using(context) as session:
        return bool(release_rows(session, [row], utcnow()))


def _superseded_select():
    instance_time = sa.func.coalesce(INSTANCES.c.updated_at,
                                     INSTANCES.c.created_at)
    node = COMPUTE_NODES.c
    joined = CLAIMS.join(
        COMPUTE_NODES, node.id == CLAIMS.c.compute_node_id).join(
        INSTANCES, sa.and_(INSTANCES.c.uuid == CLAIMS.c.instance_uuid,
                           INSTANCES.c.host == CLAIMS.c.host,
                           INSTANCES.c.deleted == 0))
    return (sa.select(CLAIMS).select_from(joined)
            .where(node.updated_at > instance_time,
                   sa.or_(node.claims_updated_at.is_(None),
                          node.updated_at != node.claims_updated_at))
            .order_by(CLAIMS.c.id))


def _expired_select(now):
    return claim_row_select().where(CLAIMS.c.expires_at <= now)


def reconcile(context: Any, now: datetime.datetime | None = None
              ) -> dict[str, int]:
    """Release the claims that usage reports superseded or that expired.

    A claim is *superseded* when its instance is recorded on its host and
    its node wrote a usage report since (rules 3a-c of
    docs/claims.rst), and *expired* when ``expires_at <= now`` and it is not
    superseded.  Candidates are read in one read transaction, then each
    is released by id in its own writer transaction, as ``release`` does,
    so concurrent reconcilers (and releases) subtract every claim once.

    :param now: naive UTC datetime compared with ``expires_at``; default
        the current time.
    :returns: ``{'expired': int, 'superseded': int}``, the claims this
        call released (those another caller released first not counted).
    In Nova database mode the instances and the nodes' reports are read
    from the cell databases (``scheduler.db.nova.reconcile``).

    :raises oslo_db.exception.DBError: database errors, unchanged.
    """
    now = now or utcnow()
    if source.nova_mode():
        return nova_reconcile.reconcile(context, now)
    with context_manager.reader.using(context) as session:
        superseded = api.dict_rows(session, _superseded_select())
        expired = api.dict_rows(session, _expired_select(now))
    superseded_ids = {row['id'] for row in superseded}
    expired = [row for row in expired if row['id'] not in superseded_ids]
    return {'expired': sum(_release_one(context, row) for row in expired),
            'superseded': sum(_release_one(context, row)
                              for row in superseded)}
