"""``scheduler_node_claims``: the claims on Nova's compute nodes, in our
own database (Nova database mode).

A claim is checked against a node's totals, reported usage and ratios,
which Nova keeps in the cell database's ``compute_nodes`` row, and our
claimed sums, which cannot go there.  One row per claimed node of our own
database holds both (``models.NodeClaims``): the claimed sums, and the
*snapshot* of the newest usage report of the node that any scheduler
sharing the database has seen (``Snapshot``).  Before a claim, the
claimer hands the snapshot its view read (``refresh``): it replaces the
stored one only when its ``reported_at`` is later, so the stored snapshot
only moves forward, and the claim's conditional UPDATE (the statements of
``scheduler.db.claims``, on this table) checks the newest report any
scheduler saw, as the standalone claim checks the node's row.  Reports
stamped in the same second (MySQL keeps whole seconds) keep the larger
usage of the two.  ``reconcile`` refreshes the snapshot from the row it
reads before it releases a claim that report includes.

The view reads the claimed sums (``sums``, ``changed_since``) to add
them to Nova's rows.  All datetimes are naive UTC.
"""

import importlib
import typing

import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler.db import models

NODE_CLAIMS = models.NodeClaims.__table__

# The usage columns: at equal report times the larger value is kept.
USED = ('vcpus_used', 'memory_mb_used', 'local_gb_used')
# The rest of a snapshot, taken whole from a later report.
OTHERS = ('uuid', 'cell_uuid', 'host', 'vcpus', 'memory_mb', 'local_gb',
          'cpu_allocation_ratio', 'ram_allocation_ratio',
          'disk_allocation_ratio', 'deleted')


class Snapshot(typing.NamedTuple):
    """What a claim on a Nova node checks, as one read of its row gave it:
    the view's node ``id``, Nova's ``uuid``, ``cell_uuid``, ``host``,
    ``vcpus``, ``memory_mb`` (MiB), ``local_gb`` (GiB), their ``*_used``,
    the three ratios (None: unset), ``deleted`` (0: live) and
    ``reported_at`` (the row's ``updated_at``, else ``created_at``)."""

    id: int
    uuid: str
    cell_uuid: str
    host: str | None
    vcpus: int
    memory_mb: int
    local_gb: int
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    cpu_allocation_ratio: float | None
    ram_allocation_ratio: float | None
    disk_allocation_ratio: float | None
    deleted: int
    reported_at: typing.Any


class Sums(typing.NamedTuple):
    """A node's claimed sums: ``claimed_vcpus``, ``claimed_memory_mb``
    (MiB), ``claimed_disk_gb`` (GiB), the ``generation`` of the claims
    (bumped by each claim and release) and ``claims_updated_at``."""

    claimed_vcpus: int
    claimed_memory_mb: int
    claimed_disk_gb: int
    generation: int
    claims_updated_at: typing.Any


NO_SUMS = Sums(0, 0, 0, 0, None)


def snapshot_of(view_id, cell_uuid, row):
    """The Snapshot of a ``compute_nodes`` row (a dict of Nova's columns)
    read from the cell ``cell_uuid``, for the view's id ``view_id``."""
    return Snapshot(
        id=view_id, uuid=row['uuid'], cell_uuid=cell_uuid, host=row['host'],
        vcpus=row['vcpus'], memory_mb=row['memory_mb'],
        local_gb=row['local_gb'], vcpus_used=row['vcpus_used'] or 0,
        memory_mb_used=row['memory_mb_used'] or 0,
        local_gb_used=row['local_gb_used'] or 0,
        cpu_allocation_ratio=row['cpu_allocation_ratio'],
        ram_allocation_ratio=row['ram_allocation_ratio'],
        disk_allocation_ratio=row['disk_allocation_ratio'],
        deleted=row['deleted'] or 0,
        reported_at=row['updated_at'] or row['created_at'])


# ---------------------------------------------------------------- reads --

_SUM_COLUMNS = [NODE_CLAIMS.c[name] for name in Sums._fields]


def _sums_select():
    return sa.select(NODE_CLAIMS.c.id, *_SUM_COLUMNS)


def _as_sums(rows):
    return {row[0]: Sums(*row[1:]) for row in rows}


def sums(connection, ids=None):
    """``{node id: Sums}`` of every row, or of the ``ids`` (a collection
    of view node ids; one query per 1000), read on ``connection``."""
    if ids is None:
        return _as_sums(connection.execute(_sums_select()))
    found = {}
    ids = sorted(ids)
    for start in range(0, len(ids), 1000):
        chunk = ids[start:start + 1000]
        found.update(_as_sums(connection.execute(
            _sums_select().where(NODE_CLAIMS.c.id.in_(chunk)))))
    return found


def changed_since(connection, since):
    """``{node id: Sums}`` of the rows a claim or release wrote after
    ``since`` (naive UTC; ``updated_at`` is indexed)."""
    return _as_sums(connection.execute(
        _sums_select().where(NODE_CLAIMS.c.updated_at > since)))


# --------------------------------------------------------------- writes --

def _merged(table, new, name):
    """SQL: the stored column ``name`` after a refresh with ``new`` (the
    statement's proposed row)."""
    stored = table.c[name]
    newer = sa.or_(table.c.reported_at.is_(None),
                   table.c.reported_at < new.reported_at)
    whens = [(newer, new[name])]
    if name in USED:
        whens.append((sa.and_(table.c.reported_at == new.reported_at,
                              new[name] > stored), new[name]))
    return sa.case(*whens, else_=stored)


def _refresh_statement(dialect):
    """INSERT the proposed snapshot, or on an existing row keep the newer
    of the two (``_merged``); ``reported_at`` is assigned last (MySQL
    evaluates its assignments in order; ``mariadb://`` URLs name their
    dialect ``mariadb``).  The dialect's module is imported here, by the
    engine that needs it, not by every command line that imports this
    module."""
    names = list(USED) + list(OTHERS) + ['reported_at']
    module = 'mysql' if dialect in ('mysql', 'mariadb') else dialect
    statement = importlib.import_module(
        'sqlalchemy.dialects.%s' % module).insert(NODE_CLAIMS)
    if module == 'mysql':
        new = statement.inserted
        return statement.on_duplicate_key_update(
            [(name, _merged(NODE_CLAIMS, new, name)) for name in names])
    new = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=[NODE_CLAIMS.c.id],
        set_={name: _merged(NODE_CLAIMS, new, name) for name in names})


_STATEMENTS: dict = {}


def refresh(connection, snapshots):
    """Store the ``snapshots`` (Snapshot, any number, distinct ids) on
    ``connection`` in its transaction: insert the rows of nodes never
    claimed, move the others forward to a later report (one executemany).
    Claimed sums, ``generation`` and ``updated_at`` are left as they
    are: a new report is no claim."""
    if not snapshots:
        return
    dialect = connection.dialect.name
    statement = _STATEMENTS.get(dialect)
    if statement is None:
        statement = _STATEMENTS[dialect] = _refresh_statement(dialect)
    now = timeutils.utcnow()
    connection.execute(statement, [dict(snapshot._asdict(), created_at=now)
                                   for snapshot in sorted(snapshots)])
