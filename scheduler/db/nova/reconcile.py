"""``reconcile`` of the claims in Nova database mode.

The claims and the nodes' claimed sums are in our own database
(``scheduler_claims``, ``scheduler_node_claims``); the instances and the
nodes' usage reports are in the cell databases.  So the one query of the
standalone ``reconcile`` becomes: the claims with their node's uuid and
cell from our database, then, per cell, the claimed instances and the
claimed nodes' rows from the cell database, compared here:

* *superseded* (rules 3a-b of docs/claims.rst): a live
  ``instances`` row has the claim's instance uuid and host, and the
  node's ``compute_nodes.updated_at`` is later than the instance row's
  ``COALESCE(updated_at, created_at)``.  Rule 3c is not needed: the
  scheduler never writes Nova's rows, so every ``updated_at`` there is
  Nova's own;
* *expired*: ``expires_at <= now`` and not superseded.

Each claim is released in its own writer transaction of our database,
which first stores the node's row as read here as the node's snapshot
when it is later than the stored one (``node_claims.refresh``): a
release never leaves the claims' check with a report older than the
one the release relied on.  The cells are read side by side within
``[scheduler] cell_timeout`` (``NovaSource.read_cells``); a cell whose
database cannot be read, or does not answer in time, is skipped (its
outage is logged once): its claims can only expire, unrefreshed.
"""

import sqlalchemy as sa
from oslo_log import log as logging

from scheduler.db import api
from scheduler.db import claim_sql
from scheduler.db import source
from scheduler.db.nova import node_claims
from scheduler.db.nova import schema

LOG = logging.getLogger(__name__)

NODES = schema.COMPUTE_NODES
INSTANCES = schema.INSTANCES
CLAIMS = claim_sql.CLAIMS
NODE_CLAIMS = node_claims.NODE_CLAIMS


def _claims_with_nodes(context):
    """Every claim row (dict), with its node's ``node_uuid`` and
    ``cell_uuid`` (None when the node has no ``scheduler_node_claims``
    row), by id."""
    statement = (sa.select(CLAIMS, NODE_CLAIMS.c.uuid.label('node_uuid'),
                           NODE_CLAIMS.c.cell_uuid)
                 .select_from(CLAIMS.outerjoin(
                     NODE_CLAIMS,
                     NODE_CLAIMS.c.id == CLAIMS.c.compute_node_id))
                 .order_by(CLAIMS.c.id))
    with claim_sql.context_manager.reader.using(context) as session:
        return api.dict_rows(session, statement)


def _read_cell(rows):
    """The read of one cell for its claim ``rows``: ``(instances by uuid,
    compute node rows by uuid)``."""
    uuids = sorted({row['instance_uuid'] for row in rows})
    node_uuids = sorted({row['node_uuid'] for row in rows})

    def read(cell, connection):
        instances, nodes = {}, {}
        for chunk in claim_sql.chunks(uuids, api.IN_CHUNK_SIZE):
            for found in connection.execute(sa.select(
                    INSTANCES.c.uuid, INSTANCES.c.host,
                    INSTANCES.c.updated_at, INSTANCES.c.created_at).where(
                    INSTANCES.c.uuid.in_(chunk),
                    INSTANCES.c.deleted == 0)).mappings():
                instances[found['uuid']] = dict(found)
        for chunk in claim_sql.chunks(node_uuids, api.IN_CHUNK_SIZE):
            for found in connection.execute(sa.select(NODES).where(
                    NODES.c.uuid.in_(chunk))).mappings():
                nodes[found['uuid']] = dict(found)
        return instances, nodes
    return read


def _reports(nova, rows):
    """``{cell uuid: (instances, nodes)}`` read from the cells of the
    claim ``rows`` that answer."""
    by_cell = {}
    for row in rows:
        if row['cell_uuid'] is not None:
            by_cell.setdefault(row['cell_uuid'], []).append(row)
    wanted = {cell.id for cell in nova.cells if cell.uuid in by_cell}
    if not wanted:
        return {}
    found = {cell.uuid: reports for cell, reports in nova.read_cells(
        lambda cell, connection: _read_cell(by_cell[cell.uuid])(
            cell, connection), only=wanted)}
    for cell in nova.cells:
        if cell.id in wanted and cell.uuid not in found:
            LOG.debug('Claims on cell %s are not reconciled with its '
                      'reports: its database was not read', cell.label)
    return found


def _superseded(row, instances, nodes):
    instance = instances.get(row['instance_uuid'])
    node = nodes.get(row['node_uuid'])
    if instance is None or node is None or instance['host'] != row['host']:
        return False
    recorded = instance['updated_at'] or instance['created_at']
    return (node['updated_at'] is not None and recorded is not None and
            node['updated_at'] > recorded)


@claim_sql.retry
def _release(context, row, snapshot):
    """Release one claim ``row``, storing the node's ``snapshot`` first
    (when not None); True when this call removed the claim."""
    with claim_sql.context_manager.writer.connection.using(
            context) as connection:
        if snapshot is not None:
            node_claims.refresh(connection, [snapshot])
        return bool(claim_sql.release_rows(connection, [row],
                                             claim_sql.utcnow()))


def _snapshot(row, nodes):
    node = nodes.get(row['node_uuid'])
    if node is None:
        return None
    return node_claims.snapshot_of(row['compute_node_id'], row['cell_uuid'],
                                   node)


def _without_node_columns(row):
    return {key: value for key, value in row.items()
            if key not in ('node_uuid', 'cell_uuid')}


def reconcile(context, now):
    """Release the superseded and expired claims (module docstring).

    :param now: naive UTC datetime compared with ``expires_at``.
    :returns: ``{'expired': int, 'superseded': int}``, as
        ``claim_reconcile.reconcile``.
    :raises oslo_db.exception.DBError: errors of our own database.
    """
    rows = _claims_with_nodes(context)
    reports = _reports(source.get_source(), rows)
    released = {'expired': 0, 'superseded': 0}
    for row in rows:
        instances, nodes = reports.get(row['cell_uuid'], ({}, {}))
        if _superseded(row, instances, nodes):
            kind = 'superseded'
        elif row['expires_at'] <= now:
            kind = 'expired'
        else:
            continue
        released[kind] += _release(context, _without_node_columns(row),
                                   _snapshot(row, nodes))
    return released
