"""Every SQL query of the scheduler, on Nova's Newton/Ocata schema.

The tables are those of ``scheduler.db.models`` (reference section 9).
Each function takes a ``scheduler.context.RequestContext`` first and runs
in an oslo.db enginefacade transaction on it, so calls made inside an
enclosing ``context_manager.writer.using(context)`` block join that
transaction.  Results are plain dicts keyed by Nova's column names (never
ORM objects); rows of the soft-deleted tables (``compute_nodes``,
``services``, ``instances``) are only returned while ``deleted = 0``.
Datetimes are naive UTC, as Nova stores them; sizes follow Nova's units
(``memory_mb`` in MiB, ``local_gb``/``root_gb``/``ephemeral_gb`` in GiB).

The engine is configured from ``[database]`` of ``CONF`` when first used
(or explicitly with ``configure``); ``reset_for_tests`` points the module
at another database.  On a ``sqlite:///file`` URL, connections are kept
in a pool, as SQLAlchemy 2 does by default (oslo.db opens a new one per
transaction, which costs more than a decision's queries), and the file
uses SQLite's write-ahead log (``_pool_sqlite_connections``); the
threads of a process share the file through the pool, one connection
each at a time.  Foreign keys are not
enforced on SQLite; writers delete child rows first, so they hold on
PostgreSQL and MySQL too.  oslo.db's ``thread_checkin`` (a yield to other
green threads on every connection check-in) is off: the service runs on
native threads.

The reads made for every decision (``get_changes_since`` and its
narrow forms) and the claims of ``scheduler.db.claims`` run on an
enginefacade Core connection (``context_manager.reader.connection``)
rather than an ORM Session: the same transaction, without the Session's
bookkeeping, which cost a tenth of a small decision.

The writers exist for tests, fixtures and the trace replay's simulated
compute agents: the scheduler itself only reads.
"""

import datetime
import functools
import json
import threading

import sqlalchemy as sa
from oslo_db.sqlalchemy import enginefacade
from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db import models

context_manager = enginefacade.transaction_context()
_CONFIGURE_LOCK = threading.Lock()

# [database] options handed to enginefacade besides ``connection``.
_ENGINE_OPTIONS = (
    'slave_connection', 'sqlite_synchronous', 'connection_recycle_time',
    'connection_debug', 'connection_trace', 'connection_parameters',
    'max_pool_size', 'max_overflow', 'pool_timeout', 'max_retries',
    'retry_interval', 'mysql_sql_mode', 'mysql_wsrep_sync_wait',
)

# enginefacade settings that are not ``[database]`` options.
_FACADE_SETTINGS = {'thread_checkin': False}
# SQLite connections kept open per process (more are opened when needed
# and closed when given back).
SQLITE_POOL_SIZE = 4

# Most values in one ``IN (...)`` list.
IN_CHUNK_SIZE = 1000

COMPUTE_NODES = models.ComputeNode.__table__
SERVICES = models.Service.__table__
AGGREGATES = models.Aggregate.__table__
AGGREGATE_HOSTS = models.AggregateHost.__table__
AGGREGATE_METADATA = models.AggregateMetadata.__table__
INSTANCES = models.Instance.__table__
INSTANCE_GROUPS = models.InstanceGroup.__table__
INSTANCE_GROUP_MEMBERS = models.InstanceGroupMember.__table__
INSTANCE_GROUP_POLICIES = models.InstanceGroupPolicy.__table__

# compute_nodes columns holding JSON text; writers also accept objects.
COMPUTE_NODE_JSON_COLUMNS = frozenset((
    'cpu_info', 'supported_instances', 'metrics', 'pci_stats',
    'extra_resources', 'stats', 'numa_topology'))

# Columns a caller may not set when updating a row.
_NOT_UPDATABLE = frozenset(('id', 'generation', 'deleted', 'deleted_at'))


# --------------------------------------------------------------- engine --

def configure(conf=None):
    """Configure the engine from ``conf.database`` (default ``CONF``).

    Only the first call before the engine starts has an effect: once a
    query has run, the engine is left as it is and this returns False.
    Without any call, the engine is built from ``CONF`` on first use.
    """
    conf = conf or CONF
    options = {name: getattr(conf.database, name)
               for name in _ENGINE_OPTIONS}
    with _CONFIGURE_LOCK:
        if context_manager.is_started:
            return False
        try:
            context_manager.configure(connection=conf.database.connection,
                                      **options, **_FACADE_SETTINGS)
        except enginefacade.AlreadyStartedError:
            return False  # another thread's query started it meanwhile
        return True


def _pool_sqlite_connections(engine):
    """enginefacade ``on_engine_create`` hook for a SQLite file engine
    (other engines are left alone).

    * It gets the connection pool SQLAlchemy 2 gives it by default (a
      ``QueuePool``, connections shared by threads one at a time), in
      place of oslo.db's ``NullPool``, which connects for every
      transaction (about 0.4 ms each, the schema being parsed again).
      The pool keeps oslo.db's connection event listeners (``_dispatch``,
      as ``Pool.recreate`` does).
    * Its connections use SQLite's write-ahead log (``journal_mode =
      WAL``, kept by the file): readers and the writer no longer block
      each other, and a commit appends to the log instead of writing a
      rollback journal (a one-claim transaction 0.44 -> 0.27 ms, a
      decision's reads 0.27 -> 0.23 ms, at 1,000 nodes).  The log needs
      the file on a local file system, as SQLite's locks do anyway.
    """
    old = engine.pool
    if engine.dialect.name != 'sqlite' or type(old) is not sa.pool.NullPool:
        return
    engine.pool = sa.pool.QueuePool(
        old._creator, pool_size=SQLITE_POOL_SIZE, max_overflow=-1,
        reset_on_return=old._reset_on_return, echo=old.echo,
        _dispatch=old.dispatch, dialect=old._dialect)
    sa.event.listen(engine, 'connect', _write_ahead_log)


def _write_ahead_log(dbapi_connection, connection_record):
    """``connect`` listener: switch a new SQLite connection's database to
    the write-ahead log (a no-op once it is)."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute('PRAGMA journal_mode = WAL')
    finally:
        cursor.close()


context_manager.append_on_engine_create(_pool_sqlite_connections)


def get_engine():
    """Return the writer ``sqlalchemy.engine.Engine`` (starts it)."""
    return context_manager.writer.get_engine()


def reset_for_tests(connection=None):
    """Point every function here at the database URL ``connection``.

    The current engine's pool is disposed of and a brand-new enginefacade
    factory is patched into ``context_manager``, so references to it held
    elsewhere see the change.  The other engine options still come from
    ``CONF.database``.  Without ``connection``, the module is back in its
    initial state: unconfigured, to be set up by ``configure`` or from
    ``CONF`` on first use.
    """
    fresh = enginefacade.transaction_context()
    fresh.append_on_engine_create(_pool_sqlite_connections)
    if connection is not None:
        fresh.configure(connection=connection, **_FACADE_SETTINGS)
    with _CONFIGURE_LOCK:
        context_manager.dispose_pool()
        context_manager.patch_factory(fresh)


# -------------------------------------------------------------- helpers --

def _utcnow():
    return timeutils.utcnow()


def _rows(session, statement, params=None):
    """Run a Core ``select`` (with bound ``params``) on a Session or a
    Connection and return its rows as dicts.

    Zipping the keys onto plain row tuples is about a third faster than
    ``dict(row)`` over ``.mappings()``, which counts at 100,000 rows.
    """
    result = session.execute(statement, params)
    keys = tuple(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]


def _live(table):
    return table.c.deleted == 0


def _row_by_id(session, table, row_id):
    statement = sa.select(table).where(table.c.id == row_id)
    row = session.execute(statement).mappings().first()
    return dict(row) if row is not None else None


def _not_found(what, key):
    return exception.NotFound(message='%s %s could not be found.'
                              % (what, key))


def _checked_values(table, values, forbidden=frozenset()):
    """Copy ``values``, refusing keys that are not columns of ``table``
    or that are in ``forbidden``."""
    bad = sorted(key for key in values
                 if key not in table.c or key in forbidden)
    if bad:
        raise exception.Invalid(reason='cannot set %s of %s'
                                % (', '.join(bad), table.name))
    return dict(values)


def _json_text(value):
    """A JSON column's text: strings are stored as given, other values
    are serialised."""
    if value is None or isinstance(value, str):
        return value
    return jsonutils.dumps(value)


def _compute_node_values(values, forbidden=frozenset()):
    values = _checked_values(COMPUTE_NODES, values, forbidden)
    for key in COMPUTE_NODE_JSON_COLUMNS.intersection(values):
        values[key] = _json_text(values[key])
    return values


def _insert(session, table, values):
    """Insert one row and return its id."""
    result = session.execute(sa.insert(table).values(**values))
    return result.inserted_primary_key[0]


def _update_live(session, table, row_id, values, what):
    """UPDATE one live row by id; NotFound when there is none."""
    statement = (sa.update(table)
                 .where(table.c.id == row_id, _live(table))
                 .values(**values))
    if not session.execute(statement).rowcount:
        raise _not_found(what, row_id)


def _soft_delete(session, table, condition, what, key):
    """Nova's soft delete of the live rows matching ``condition``:
    ``deleted = id``, ``deleted_at = now``, ``updated_at`` kept."""
    statement = (sa.update(table)
                 .where(condition, _live(table))
                 .values(deleted=table.c.id, deleted_at=_utcnow(),
                         updated_at=table.c.updated_at))
    if not session.execute(statement).rowcount:
        raise _not_found(what, key)


def _chunks(items, size):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -------------------------------------------------------- compute nodes --

def compute_node_iter_all(context, batch=IN_CHUNK_SIZE):
    """Yield every live compute node, as ``compute_node_get_all`` returns
    them, fetching ``batch`` rows at a time (a server-side cursor where
    the driver has one) within one read transaction: a 100,000-node read
    never holds every row at once."""
    statement = (sa.select(COMPUTE_NODES)
                 .where(_live(COMPUTE_NODES))
                 .order_by(COMPUTE_NODES.c.id))
    with context_manager.reader.using(context) as session:
        result = session.execute(statement,
                                 execution_options={'yield_per': batch})
        keys = tuple(result.keys())
        for row in result:
            yield dict(zip(keys, row, strict=True))


def compute_node_get_hosts(context):
    """Return the set of ``host`` values (str) of the live compute
    nodes."""
    statement = (sa.select(COMPUTE_NODES.c.host).distinct()
                 .where(_live(COMPUTE_NODES),
                        COMPUTE_NODES.c.host.is_not(None)))
    with context_manager.reader.using(context) as session:
        return set(session.execute(statement).scalars())


def compute_node_get_all(context):
    """Return every live compute node, ordered by id.

    :returns: list of dicts with every ``compute_nodes`` column:
        ``vcpus``/``vcpus_used`` in CPUs, ``memory_mb``/``memory_mb_used``/
        ``free_ram_mb`` in MiB, ``local_gb``/``local_gb_used``/
        ``free_disk_gb``/``disk_available_least`` in GiB, JSON columns as
        the stored strings, ``generation`` the write counter.
    """
    return list(compute_node_iter_all(context))


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
    there: 0.23 ms against 0.46 ms per statement, measured at 1,000
    nodes).  Elsewhere the ids come from a UNION of three range scans,
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
        'compute_nodes': _changed_since_select(COMPUTE_NODES, dialect),
        'services': _changed_since_select(SERVICES, dialect).where(
            SERVICES.c.binary == sa.bindparam('binary')),
        'instances': _changed_since_select(INSTANCES, dialect),
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
    window with ``get_change_versions_since`` (see
    ``scheduler.host_manager``).
    """
    params = {'since': since, 'binary': binary}
    with context_manager.reader.connection.using(context) as connection:
        statements = _changes_statements(connection.dialect.name)
        return changes_of(
            _rows(connection, statements['compute_nodes'], params),
            _rows(connection, statements['services'], params),
            _rows(connection, statements['instances'], params))


def get_instance_changes_since(context, since):
    """The ``instances`` part of ``get_changes_since`` alone."""
    params = {'since': since}
    with context_manager.reader.connection.using(context) as connection:
        return _rows(connection, _changes_statements(
            connection.dialect.name)['instances'], params)


@functools.cache
def _version_statements(dialect):
    statements = {}
    for table in (COMPUTE_NODES, SERVICES):
        full = _changed_since_select(table, dialect)
        columns = [table.c.id] + [table.c[name] for name in
                                  VERSION_COLUMNS[table.name]]
        statements[table.name] = full.with_only_columns(*columns)
    statements['services'] = statements['services'].where(
        SERVICES.c.binary == sa.bindparam('binary'))
    return statements


def get_change_versions_since(context, since, binary='nova-compute'):
    """The ids and versions (``row_version``) of the compute node and
    ``binary`` service rows created, updated or soft-deleted after
    ``since``: ``{'compute_nodes': {id: version}, 'services': {id:
    version}}``, deleted rows included.  A narrow read of the same rows
    as ``get_changes_since``'s, for a caller that holds most of them
    already."""
    params = {'since': since, 'binary': binary}
    with context_manager.reader.connection.using(context) as connection:
        return {name: {row[0]: tuple(row[1:]) for row in
                       connection.execute(statement, params)}
                for name, statement in _version_statements(
                    connection.dialect.name).items()}


def get_rows_by_ids(context, compute_node_ids=(), service_ids=()):
    """The compute node and service rows of these ids, deleted ones
    included, in one read transaction; shaped as ``get_changes_since``'s
    result (with no instances).  One query per ``IN_CHUNK_SIZE`` ids."""
    found = {}
    with context_manager.reader.using(context) as session:
        for table, ids in ((COMPUTE_NODES, compute_node_ids),
                           (SERVICES, service_ids)):
            found[table.name] = []
            for chunk in _chunks(sorted(ids), IN_CHUNK_SIZE):
                found[table.name].extend(_rows(session, sa.select(table).where(
                    table.c.id.in_(chunk)).order_by(table.c.id)))
    return changes_of(found['compute_nodes'], found['services'], [])


def timestamp_resolution():
    """How much earlier than its true time a stored timestamp can read:
    one second on MySQL/MariaDB (``DATETIME`` keeps whole seconds, and
    MySQL rounds), none on PostgreSQL and SQLite (microseconds)."""
    if get_engine().dialect.name == 'mysql':
        return datetime.timedelta(seconds=1)
    return datetime.timedelta(0)


def compute_node_get_ids(context):
    """Return the set of ids (ints) of the live compute nodes."""
    statement = sa.select(COMPUTE_NODES.c.id).where(_live(COMPUTE_NODES))
    with context_manager.reader.using(context) as session:
        return set(session.execute(statement).scalars())


def compute_node_get(context, compute_id):
    """Return the live compute node ``compute_id`` as a dict, or raise
    ``NotFound``."""
    with context_manager.reader.using(context) as session:
        return _compute_node_get(session, compute_id)


def _compute_node_get(session, compute_id):
    row = _row_by_id(session, COMPUTE_NODES, compute_id)
    if row is None or row['deleted']:
        raise _not_found('Compute node', compute_id)
    return row


def compute_node_create(context, values):
    """Insert a compute node and return it as a dict.

    :param values: column -> value.  ``vcpus``, ``memory_mb`` (MiB),
        ``local_gb`` (GiB), their ``*_used`` counterparts,
        ``hypervisor_type``, ``hypervisor_version`` and ``cpu_info`` are
        required (NOT NULL).  ``uuid`` defaults to a random UUID4,
        ``stats`` to ``'{}'``, ``created_at`` to now; JSON columns take a
        string or any JSON-serialisable object.
    """
    values = _compute_node_values(values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('stats', '{}')
    values.setdefault('created_at', _utcnow())
    with context_manager.writer.using(context) as session:
        compute_id = _insert(session, COMPUTE_NODES, values)
        return _compute_node_get(session, compute_id)


def compute_node_update(context, compute_id, values):
    """Update a live compute node and return its new dict.

    The same UPDATE adds 1 to ``generation`` and sets ``updated_at`` to
    now (unless ``values`` gives one).  ``id``, ``generation``,
    ``deleted`` and ``deleted_at`` cannot be set; JSON columns take a
    string or any JSON-serialisable object.

    :raises scheduler.exception.NotFound: no live node has this id.
    """
    values = _compute_node_values(values, _NOT_UPDATABLE)
    values['generation'] = COMPUTE_NODES.c.generation + 1
    values.setdefault('updated_at', _utcnow())
    with context_manager.writer.using(context) as session:
        _update_live(session, COMPUTE_NODES, compute_id, values,
                     'Compute node')
        return _compute_node_get(session, compute_id)


def compute_node_delete(context, compute_id):
    """Soft-delete a compute node (``deleted = id``, ``deleted_at`` now).

    :raises scheduler.exception.NotFound: no live node has this id.
    """
    with context_manager.writer.using(context) as session:
        _soft_delete(session, COMPUTE_NODES,
                     COMPUTE_NODES.c.id == compute_id,
                     'Compute node', compute_id)


# ------------------------------------------------------------- services --

def service_get_all_by_binary(context, binary='nova-compute',
                              include_disabled=True):
    """Return the live services running ``binary``, ordered by id.

    :param include_disabled: when False, services with ``disabled`` set
        are left out.
    :returns: list of dicts with every ``services`` column
        (``last_seen_up`` the last heartbeat, naive UTC).
    """
    table = SERVICES
    statement = (sa.select(table)
                 .where(_live(table), table.c.binary == binary)
                 .order_by(table.c.id))
    if not include_disabled:
        statement = statement.where(table.c.disabled == sa.false())
    with context_manager.reader.using(context) as session:
        return _rows(session, statement)


def service_get_all_by_topic(context, topic):
    """Return the live, enabled services of ``topic`` (e.g. ``compute``)
    as dicts, ordered by id."""
    table = SERVICES
    statement = (sa.select(table)
                 .where(_live(table), table.c.topic == topic,
                        table.c.disabled == sa.false())
                 .order_by(table.c.id))
    with context_manager.reader.using(context) as session:
        return _rows(session, statement)


def _service_get(session, service_id):
    row = _row_by_id(session, SERVICES, service_id)
    if row is None or row['deleted']:
        raise _not_found('Service', service_id)
    return row


def service_create(context, values):
    """Insert a service and return it as a dict.

    :param values: column -> value, typically ``host``, ``binary``,
        ``topic``.  ``uuid`` defaults to a random UUID4 and
        ``created_at`` to now; ``report_count`` starts at 0.
    """
    values = _checked_values(SERVICES, values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('created_at', _utcnow())
    with context_manager.writer.using(context) as session:
        return _service_get(session, _insert(session, SERVICES, values))


def service_update(context, service_id, values):
    """Update a live service and return its new dict.

    ``updated_at`` becomes now; as in Nova, ``last_seen_up`` becomes now
    when ``values`` raises ``report_count``.

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    values = _checked_values(SERVICES, values, _NOT_UPDATABLE)
    now = _utcnow()
    values.setdefault('updated_at', now)
    assignments = list(values.items())
    if 'report_count' in values:
        # First in the SET list: MySQL evaluates assignments in order, so
        # the comparison must see report_count before it changes.
        raised = sa.case(
            (SERVICES.c.report_count < values['report_count'], now),
            else_=SERVICES.c.last_seen_up)
        assignments.insert(0, ('last_seen_up', raised))
    statement = (sa.update(SERVICES)
                 .where(SERVICES.c.id == service_id, _live(SERVICES))
                 .ordered_values(*assignments))
    with context_manager.writer.using(context) as session:
        if not session.execute(statement).rowcount:
            raise _not_found('Service', service_id)
        return _service_get(session, service_id)


def service_heartbeat(context, service_id):
    """Record a heartbeat in one UPDATE: ``report_count += 1`` and
    ``last_seen_up`` = ``updated_at`` = now.  Returns None.

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    now = _utcnow()
    values = {'report_count': SERVICES.c.report_count + 1,
              'last_seen_up': now, 'updated_at': now}
    with context_manager.writer.using(context) as session:
        _update_live(session, SERVICES, service_id, values, 'Service')


# ----------------------------------------------------------- aggregates --

def aggregates_read(session, aggregate_id=None,
                    tables=(AGGREGATES, AGGREGATE_HOSTS, AGGREGATE_METADATA)):
    """Build aggregate dicts with 3 queries (aggregates, hosts, metadata),
    all aggregates or just ``aggregate_id``, on a Session or Connection.
    ``tables``: the ``aggregates``, ``aggregate_hosts`` and
    ``aggregate_metadata`` tables (ours, or Nova's API database's)."""
    aggregates_table, hosts_table, metadata_table = tables
    aggregates = sa.select(
        aggregates_table.c.id, aggregates_table.c.uuid,
        aggregates_table.c.name, aggregates_table.c.created_at,
        aggregates_table.c.updated_at).order_by(aggregates_table.c.id)
    hosts = sa.select(hosts_table.c.aggregate_id,
                      hosts_table.c.host).order_by(hosts_table.c.id)
    metadata = (sa.select(metadata_table.c.aggregate_id,
                          metadata_table.c.key, metadata_table.c.value)
                .order_by(metadata_table.c.id))
    if aggregate_id is not None:
        aggregates = aggregates.where(aggregates_table.c.id == aggregate_id)
        hosts = hosts.where(hosts_table.c.aggregate_id == aggregate_id)
        metadata = metadata.where(
            metadata_table.c.aggregate_id == aggregate_id)
    by_id = {row['id']: dict(row, hosts=[], metadata={})
             for row in _rows(session, aggregates)}
    # SQLite does not enforce the foreign keys: rows of an aggregate that
    # is gone are skipped rather than breaking the read.
    for agg_id, host in session.execute(hosts):
        if agg_id in by_id:
            by_id[agg_id]['hosts'].append(host)
    for agg_id, key, value in session.execute(metadata):
        if agg_id in by_id:
            by_id[agg_id]['metadata'][key] = value
    return list(by_id.values())


def _aggregate_get(session, aggregate_id):
    found = aggregates_read(session, aggregate_id)
    if not found:
        raise _not_found('Aggregate', aggregate_id)
    return found[0]


def _touch_aggregate(session, aggregate_id):
    """Set ``updated_at`` of an aggregate; NotFound when it is missing."""
    statement = (sa.update(AGGREGATES)
                 .where(AGGREGATES.c.id == aggregate_id)
                 .values(updated_at=_utcnow()))
    if not session.execute(statement).rowcount:
        raise _not_found('Aggregate', aggregate_id)


def _insert_metadata(session, aggregate_id, metadata):
    now = _utcnow()
    rows = [{'aggregate_id': aggregate_id, 'key': key, 'value': value,
             'created_at': now}
            for key, value in metadata.items() if value is not None]
    if rows:
        session.execute(sa.insert(AGGREGATE_METADATA), rows)


def aggregate_get_all(context):
    """Return every aggregate, ordered by id, in 3 queries.

    :returns: list of ``{'id', 'uuid', 'name', 'hosts': [service host
        names], 'metadata': {key: value string}, 'created_at',
        'updated_at'}``.
    """
    with context_manager.reader.using(context) as session:
        return aggregates_read(session)


def aggregate_get(context, aggregate_id):
    """Return one aggregate, shaped as in ``aggregate_get_all``.

    :raises scheduler.exception.NotFound: no aggregate has this id.
    """
    with context_manager.reader.using(context) as session:
        return _aggregate_get(session, aggregate_id)


def aggregate_create(context, name, metadata=None, uuid=None):
    """Create an aggregate, with optional ``metadata`` ({key: value};
    None values are skipped), and return its dict.

    :param uuid: defaults to a random UUID4.
    :raises oslo_db.exception.DBDuplicateEntry: the name is taken.
    """
    values = {'name': name, 'uuid': uuid or uuidutils.generate_uuid(),
              'created_at': _utcnow()}
    with context_manager.writer.using(context) as session:
        aggregate_id = _insert(session, AGGREGATES, values)
        _insert_metadata(session, aggregate_id, metadata or {})
        return _aggregate_get(session, aggregate_id)


def aggregate_add_host(context, aggregate_id, host):
    """Add the service host name ``host`` to an aggregate; return the
    aggregate's dict.

    :raises scheduler.exception.NotFound: no aggregate has this id.
    :raises oslo_db.exception.DBDuplicateEntry: the host is already in.
    """
    values = {'aggregate_id': aggregate_id, 'host': host,
              'created_at': _utcnow()}
    with context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        _insert(session, AGGREGATE_HOSTS, values)
        return _aggregate_get(session, aggregate_id)


def aggregate_remove_host(context, aggregate_id, host):
    """Remove ``host`` from an aggregate; return the aggregate's dict.

    :raises scheduler.exception.NotFound: no such aggregate, or the host
        is not in it.
    """
    statement = sa.delete(AGGREGATE_HOSTS).where(
        AGGREGATE_HOSTS.c.aggregate_id == aggregate_id,
        AGGREGATE_HOSTS.c.host == host)
    with context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        if not session.execute(statement).rowcount:
            raise _not_found('Host %s in aggregate' % host, aggregate_id)
        return _aggregate_get(session, aggregate_id)


def aggregate_update_metadata(context, aggregate_id, metadata):
    """Set or replace the keys of ``metadata`` ({key: value string}) on an
    aggregate; a None value deletes that key.  Other keys are kept.
    Returns the aggregate's dict.

    :raises scheduler.exception.NotFound: no aggregate has this id.
    """
    statement = sa.delete(AGGREGATE_METADATA).where(
        AGGREGATE_METADATA.c.aggregate_id == aggregate_id,
        AGGREGATE_METADATA.c.key.in_(list(metadata)))
    with context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        if metadata:
            session.execute(statement)
            _insert_metadata(session, aggregate_id, metadata)
        return _aggregate_get(session, aggregate_id)


def aggregate_delete(context, aggregate_id):
    """Delete an aggregate with its hosts and metadata (a hard delete,
    as in Nova's API database).

    :raises scheduler.exception.NotFound: no aggregate has this id.
    """
    with context_manager.writer.using(context) as session:
        for child in (AGGREGATE_METADATA, AGGREGATE_HOSTS):
            session.execute(sa.delete(child).where(
                child.c.aggregate_id == aggregate_id))
        statement = sa.delete(AGGREGATES).where(
            AGGREGATES.c.id == aggregate_id)
        if not session.execute(statement).rowcount:
            raise _not_found('Aggregate', aggregate_id)


# ------------------------------------------------------------ instances --

def _instances_on(hosts):
    return (sa.select(INSTANCES)
            .where(_live(INSTANCES), INSTANCES.c.host.in_(hosts))
            .order_by(INSTANCES.c.id))


def instance_get_all_by_host(context, host):
    """Return the live instances whose ``host`` (service host name) is
    ``host``, ordered by id.

    :returns: list of dicts with every ``instances`` column
        (``memory_mb`` in MiB, ``root_gb``/``ephemeral_gb`` in GiB).
    """
    with context_manager.reader.using(context) as session:
        return _rows(session, _instances_on([host]))


def instance_get_all_by_hosts(context, hosts):
    """Return ``{host: [instance dict, ...]}`` for the live instances of
    ``hosts``, with an entry (maybe empty) for every host asked for.

    One query per ``IN_CHUNK_SIZE`` (1000) hosts, in one transaction.
    """
    by_host = {host: [] for host in hosts}
    with context_manager.reader.using(context) as session:
        for chunk in _chunks(by_host, IN_CHUNK_SIZE):
            for row in _rows(session, _instances_on(chunk)):
                by_host[row['host']].append(row)
    return by_host


def instance_create(context, values):
    """Insert an instance and return it as a dict.

    :param values: column -> value; ``uuid`` is required, ``created_at``
        defaults to now.
    :raises scheduler.exception.Invalid: ``uuid`` is missing.
    """
    values = _checked_values(INSTANCES, values)
    if not values.get('uuid'):
        raise exception.Invalid(reason='an instance needs a uuid')
    values.setdefault('created_at', _utcnow())
    with context_manager.writer.using(context) as session:
        return _row_by_id(session, INSTANCES,
                          _insert(session, INSTANCES, values))


def instance_destroy(context, uuid):
    """Soft-delete the live instance ``uuid`` (``deleted = id``).

    :raises scheduler.exception.NotFound: no live instance has this uuid.
    """
    with context_manager.writer.using(context) as session:
        _soft_delete(session, INSTANCES, INSTANCES.c.uuid == uuid,
                     'Instance', uuid)


# -------------------------------------------------------- server groups --

def _group_hosts(session, group_id):
    """Distinct non-null hosts of the group's live member instances."""
    members = sa.select(INSTANCE_GROUP_MEMBERS.c.instance_uuid).where(
        INSTANCE_GROUP_MEMBERS.c.group_id == group_id)
    statement = (sa.select(INSTANCES.c.host).distinct()
                 .where(_live(INSTANCES), INSTANCES.c.host.is_not(None),
                        INSTANCES.c.uuid.in_(members))
                 .order_by(INSTANCES.c.host))
    return list(session.execute(statement).scalars())


def instance_group_read(session, uuid, tables=(
        INSTANCE_GROUPS, INSTANCE_GROUP_POLICIES, INSTANCE_GROUP_MEMBERS)):
    """The server group ``uuid`` on a Session or Connection, as
    ``instance_group_get_by_uuid`` returns it but without ``hosts``.
    ``tables``: the ``instance_groups``, ``instance_group_policy`` and
    ``instance_group_member`` tables (ours, or Nova's API database's).

    :raises scheduler.exception.NotFound: no group has this uuid.
    """
    groups, policy_table, member_table = tables
    statement = sa.select(groups).where(groups.c.uuid == uuid)
    group = session.execute(statement).mappings().first()
    if group is None:
        raise _not_found('Instance group', uuid)
    group = dict(group)
    policies = (sa.select(policy_table.c.policy, policy_table.c.rules)
                .where(policy_table.c.group_id == group['id'])
                .order_by(policy_table.c.id))
    members = (sa.select(member_table.c.instance_uuid)
               .where(member_table.c.group_id == group['id'])
               .order_by(member_table.c.id))
    group['policies'] = []
    group['rules'] = {}
    for policy, rules in session.execute(policies):
        group['policies'].append(policy)
        group['rules'].update(json.loads(rules) if rules else {})
    group['members'] = list(session.execute(members).scalars())
    return group


def _instance_group_get(session, uuid):
    group = instance_group_read(session, uuid)
    group['hosts'] = _group_hosts(session, group['id'])
    return group


def instance_group_get_by_uuid(context, uuid):
    """Return a server group with what the scheduler needs of it.

    :returns: dict of the ``instance_groups`` columns plus ``policies``
        (list of str), ``rules`` (dict, e.g. ``{'max_server_per_host':
        '2'}``, as stored), ``members`` (instance uuids) and ``hosts``
        (sorted distinct non-null hosts of the live member instances).
    :raises scheduler.exception.NotFound: no group has this uuid.
    """
    with context_manager.reader.using(context) as session:
        return _instance_group_get(session, uuid)


def instance_group_create(context, values, policies=None, members=None,
                          rules=None):
    """Create a server group and return it as ``instance_group_get_by_uuid``
    does.

    :param values: ``instance_groups`` columns (``name``, ``user_id``,
        ``project_id``; ``uuid`` defaults to a random UUID4).
    :param policies: list of policy names.
    :param members: list of instance uuids.
    :param rules: dict stored as JSON on each policy row (Rocky+ shape).
    :raises scheduler.exception.Invalid: ``rules`` without a policy.
    """
    if rules and not policies:
        raise exception.Invalid(reason='group rules need a policy')
    values = _checked_values(INSTANCE_GROUPS, values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    now = values.setdefault('created_at', _utcnow())
    with context_manager.writer.using(context) as session:
        group_id = _insert(session, INSTANCE_GROUPS, values)
        policy_rows = [{'group_id': group_id, 'policy': policy,
                        'rules': _json_text(rules), 'created_at': now}
                       for policy in policies or ()]
        member_rows = [{'group_id': group_id, 'instance_uuid': member,
                        'created_at': now}
                       for member in members or ()]
        for table, rows in ((INSTANCE_GROUP_POLICIES, policy_rows),
                            (INSTANCE_GROUP_MEMBERS, member_rows)):
            if rows:
                session.execute(sa.insert(table), rows)
        return _instance_group_get(session, values['uuid'])
