"""Every SQL query of the scheduler, on Nova's Newton/Ocata schema.

The tables are those of ``scheduler.db.models``.
Each function takes a ``scheduler.context.RequestContext`` first and runs
in an oslo.db enginefacade transaction on it, so calls made inside an
enclosing ``context_manager.writer.using(context)`` block join that
transaction.  Results are plain dicts keyed by Nova's column names (never
ORM objects); rows of the soft-deleted tables (``compute_nodes``,
``services``, ``instances``) are only returned while ``deleted = 0``.
Datetimes are naive UTC, as Nova stores them; sizes follow Nova's units
(``memory_mb`` in MiB, ``local_gb``/``root_gb``/``ephemeral_gb`` in GiB).

The engine is configured from ``[database]`` of ``CONF`` when first used
(or explicitly with ``configure``; ``scheduler_tools.writers.reset_engine``
points the module at another database).  On a ``sqlite:///file`` URL,
connections are kept in a pool, as SQLAlchemy 2 does by default (oslo.db
opens a new one per transaction, which costs more than a decision's
queries), and the file uses SQLite's write-ahead log
(``_pool_sqlite_connections``); the threads of a process share the file
through the pool, one connection each at a time.  oslo.db's
``thread_checkin`` (a yield to other green threads on every connection
check-in) is off: the service runs on native threads.

The reads made for every decision (``get_changes_since`` and its
narrow forms) and the claims of ``scheduler.db.claims`` run on an
enginefacade Core connection (``context_manager.reader.connection``)
rather than an ORM Session: the same transaction, without the Session's
bookkeeping.

The scheduler reads these tables.  Compute nodes, services and
aggregates are written by ``scheduler.db.hosts`` and
``scheduler.db.host_aggregates`` (``scheduler-manage host`` and
``aggregate``); instances and server groups, which only the fleet
seeder, the replay's simulated compute agents, the benchmark and the
tests write, by ``scheduler_tools.writers``.
"""

import json
import threading

import sqlalchemy as sa
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import timeutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db import models
from scheduler.db import timeouts

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
      transaction (the schema being parsed again each time).
      The pool keeps oslo.db's connection event listeners (``_dispatch``,
      as ``Pool.recreate`` does).
    * Its connections use SQLite's write-ahead log (``journal_mode =
      WAL``, kept by the file): readers and the writer no longer block
      each other, and a commit appends to the log instead of writing a
      rollback journal.  The log needs the file on a local file system,
      as SQLite's locks do anyway.
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


def _read_committed_on_mysql(engine):
    """enginefacade ``on_engine_create`` hook: a MySQL/MariaDB engine's
    connections read committed data (``READ COMMITTED``, PostgreSQL's
    default), not InnoDB's ``REPEATABLE READ``.  Under the latter the
    claim's "no claim yet" check (``claim_sql``: an UPDATE whose
    subquery reads ``scheduler_claims``) locks the index gap where the
    instance's claim would go, and two decisions inserting their claims
    into one gap deadlock whatever the order of their nodes.  Writes
    then need row-based binary logging where a binary log is kept
    (``binlog_format`` ROW or MIXED, MariaDB's default; Galera needs
    ROW anyway)."""
    if engine.dialect.name == 'mysql':
        sa.event.listen(engine, 'connect', _set_read_committed)
        engine.dispose()


def _set_read_committed(dbapi_connection, connection_record):
    """``connect`` listener of ``_read_committed_on_mysql``."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(
            'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
    finally:
        cursor.close()


# The enginefacade ``on_engine_create`` hooks of the DB API's engine
# (and of any factory put in its place: ``scheduler_tools.writers``).
ENGINE_HOOKS = (_pool_sqlite_connections, _read_committed_on_mysql,
                timeouts.install)
for _hook in ENGINE_HOOKS:
    context_manager.append_on_engine_create(_hook)


def get_engine():
    """Return the writer ``sqlalchemy.engine.Engine`` (starts it)."""
    return context_manager.writer.get_engine()


# -------------------------------------------------------------- helpers --

def _utcnow():
    return timeutils.utcnow()


def dict_rows(session, statement, params=None):
    """Run a Core ``select`` (with bound ``params``) on a Session or a
    Connection and return its rows as dicts.

    Zipping the keys onto plain row tuples is cheaper than
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


def _insert(session, table, values):
    """Insert one row and return its id."""
    result = session.execute(sa.insert(table).values(**values))
    return result.inserted_primary_key[0]


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
        return dict_rows(session, statement)


def service_get_all_by_topic(context, topic):
    """Return the live, enabled services of ``topic`` (e.g. ``compute``)
    as dicts, ordered by id."""
    table = SERVICES
    statement = (sa.select(table)
                 .where(_live(table), table.c.topic == topic,
                        table.c.disabled == sa.false())
                 .order_by(table.c.id))
    with context_manager.reader.using(context) as session:
        return dict_rows(session, statement)


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
             for row in dict_rows(session, aggregates)}
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
        return dict_rows(session, _instances_on([host]))


def instance_get_all_by_hosts(context, hosts):
    """Return ``{host: [instance dict, ...]}`` for the live instances of
    ``hosts``, with an entry (maybe empty) for every host asked for.

    One query per ``IN_CHUNK_SIZE`` (1000) hosts, in one transaction.
    """
    by_host = {host: [] for host in hosts}
    with context_manager.reader.using(context) as session:
        for chunk in _chunks(by_host, IN_CHUNK_SIZE):
            for row in dict_rows(session, _instances_on(chunk)):
                by_host[row['host']].append(row)
    return by_host


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


