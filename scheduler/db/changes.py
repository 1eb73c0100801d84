"""Reads of what changed: the rows the host view's refresh asks for.

``get_changes_since`` returns the compute node, service and instance
rows created, updated or soft-deleted after a time (through the
timestamp indexes), ``get_change_versions_since`` only their ids and
versions (``row_version``) for the sweep, and ``get_rows_by_ids`` the
rows a sweep found late.  See docs/refresh.rst.
"""

import datetime
import functools

import sqlalchemy as sa

from scheduler.db import api

_CHANGE_TIMESTAMPS = ('updated_at', 'created_at', 'deleted_at')


def changed_since(table):
    """SQL: the row of ``table`` (with Nova's ``created_at``,
    ``updated_at`` and ``deleted_at``) was created, updated or
    soft-deleted after the bound parameter ``since``."""
    since = sa.bindparam('since', type_=sa.DateTime)
    return sa.or_(*(table.c[name] > since for name in _CHANGE_TIMESTAMPS))


def _changed_since_select(table, dialect):
    """SELECT the rows of ``table`` created, updated or soft-deleted after
    the bound parameter ``since``, by id, in the form that costs
    O(rows changed) on the ``dialect`` (its ``name``).

    PostgreSQL answers an ``OR`` of the three comparisons with a bitmap
    OR of the three timestamp indexes, and plans it in a fraction of the
    time the UNION below takes (planning is most of a small read's cost
    there).  Elsewhere the ids come from a UNION of three range scans,
    one per indexed timestamp, joined back to the table by primary key:
    an ``OR`` is a full table scan on SQLite (which does not combine
    indexes for it), and ``IN (... UNION ...)`` can become a per-row
    subquery on MySQL, where a derived table is materialised once.
    """
    if dialect == 'postgresql':
        return (sa.select(table).where(changed_since(table))
                .order_by(table.c.id))
    since = sa.bindparam('since', type_=sa.DateTime)
    changed = sa.union(*(sa.select(table.c.id).where(table.c[name] > since)
                         for name in _CHANGE_TIMESTAMPS)).subquery('changed')
    return (sa.select(table)
            .join(changed, table.c.id == changed.c.id)
            .order_by(table.c.id))


@functools.cache
def _changes_statements(dialect):
    """The three statements of ``get_changes_since`` for the ``dialect``
    (its name), built once (building a statement costs more than running
    it on a small result)."""
    return {
        'compute_nodes': _changed_since_select(api.COMPUTE_NODES, dialect),
        'services': _changed_since_select(api.SERVICES, dialect).where(
            api.SERVICES.c.binary == sa.bindparam('binary')),
        'instances': _changed_since_select(api.INSTANCES, dialect),
    }


# The columns telling whether a row changed (``row_version``).
VERSION_COLUMNS = {
    'compute_nodes': ('generation', 'updated_at', 'created_at', 'deleted'),
    'services': ('updated_at', 'created_at', 'deleted'),
}


def row_version(table_name, row):
    """The version of a ``compute_nodes`` or ``services`` row (a dict):
    the tuple of its ``VERSION_COLUMNS``.  Every write changes it."""
    return tuple(row.get(name) for name in VERSION_COLUMNS[table_name])


def changes_of(computes, services, instances):
    """The result of ``get_changes_since`` from the compute node, service
    and instance rows (lists of dicts) read: the compute nodes split
    into the live ones and the set of the deleted ones' ids."""
    return {'compute_nodes': [r for r in computes if not r['deleted']],
            'deleted_compute_node_ids': {r['id'] for r in computes
                                         if r['deleted']},
            'services': services, 'instances': instances}


def get_changes_since(context, since, binary='nova-compute'):
    """What changed after ``since`` (naive UTC), in one read transaction.

    Returns a dict:

    * ``compute_nodes``: the live compute nodes created or updated after
      ``since`` (dicts shaped as ``compute_node_get_all``'s, by id);
    * ``deleted_compute_node_ids``: set of ids of the nodes soft-deleted
      after it;
    * ``services``: the services of ``binary`` created, updated (a
      heartbeat updates ``updated_at``) or soft-deleted after it, deleted
      ones included (``deleted`` non-zero), by id;
    * ``instances``: the instances created, updated or soft-deleted after
      it, deleted ones included, by id.

    The cost is O(rows changed) (see ``_changed_since_select``).  Writers
    stamp rows with their own clocks before they commit, and MySQL
    ``DATETIME`` keeps whole seconds (``timestamp_resolution``): a row
    stamped before ``since`` may commit after a read; callers re-check a
    window with ``get_change_versions_since`` (see docs/refresh.rst).
    """
    params = {'since': since, 'binary': binary}
    with api.context_manager.reader.connection.using(context) as connection:
        statements = _changes_statements(connection.dialect.name)
        return changes_of(
            api.dict_rows(connection, statements['compute_nodes'], params),
            api.dict_rows(connection, statements['services'], params),
            api.dict_rows(connection, statements['instances'], params))


def get_instance_changes_since(context, since):
    """The ``instances`` part of ``get_changes_since`` alone."""
    params = {'since': since}
    with api.context_manager.reader.connection.using(context) as connection:
        return api.dict_rows(connection, _changes_statements(
            connection.dialect.name)['instances'], params)


@functools.cache
def _version_statements(dialect):
    statements = {}
    for table in (api.COMPUTE_NODES, api.SERVICES):
        full = _changed_since_select(table, dialect)
        columns = [table.c.id] + [table.c[name] for name in
                                  VERSION_COLUMNS[table.name]]
        statements[table.name] = full.with_only_columns(*columns)
    statements['services'] = statements['services'].where(
        api.SERVICES.c.binary == sa.bindparam('binary'))
    return statements


def get_change_versions_since(context, since, binary='nova-compute'):
    """The ids and versions (``row_version``) of the compute node and
    ``binary`` service rows created, updated or soft-deleted after
    ``since``: ``{'compute_nodes': {id: version}, 'services': {id:
    version}}``, deleted rows included.  A narrow read of the same rows
    as ``get_changes_since``'s, for a caller that holds most of them
    already."""
    params = {'since': since, 'binary': binary}
    with api.context_manager.reader.connection.using(context) as connection:
        return {name: {row[0]: tuple(row[1:]) for row in
                       connection.execute(statement, params)}
                for name, statement in _version_statements(
                    connection.dialect.name).items()}


def get_rows_by_ids(context, compute_node_ids=(), service_ids=()):
    """The compute node and service rows of these ids, deleted ones
    included, in one read transaction; shaped as ``get_changes_since``'s
    result (with no instances).  One query per ``api.IN_CHUNK_SIZE`` ids."""
    found = {}
    with api.context_manager.reader.using(context) as session:
        for table, ids in ((api.COMPUTE_NODES, compute_node_ids),
                           (api.SERVICES, service_ids)):
            found[table.name] = []
            for chunk in api._chunks(sorted(ids), api.IN_CHUNK_SIZE):
                statement = (sa.select(table).where(table.c.id.in_(chunk))
                             .order_by(table.c.id))
                found[table.name].extend(api.dict_rows(session, statement))
    return changes_of(found['compute_nodes'], found['services'], [])


def timestamp_resolution():
    """How much earlier than its true time a stored timestamp can read:
    one second on MySQL/MariaDB (``DATETIME`` keeps whole seconds, and
    MySQL rounds), none on PostgreSQL and SQLite (microseconds)."""
    if api.get_engine().dialect.name == 'mysql':
        return datetime.timedelta(seconds=1)
    return datetime.timedelta(0)
