"""The rows compute services and the API write, for the tools and tests.

The service only reads these tables (and writes its claims and its own
service row, in ``scheduler.db``): what puts compute nodes, services,
aggregates, instances and server groups into a database lives here,
for the fleet seeder (``scheduler_tools.seed``), the replay's simulated
compute agents, the benchmark and the tests.  The functions run, as
those of ``scheduler.db.api``, in an enginefacade transaction on the
context given first (joining an enclosing ``writer.using`` block), take
and return plain dicts keyed by Nova's column names, and soft-delete
``compute_nodes``, ``services`` and ``instances`` rows as Nova does
(``deleted = id``).  Foreign keys are not enforced on SQLite; writers
delete child rows first, so they hold on PostgreSQL and MySQL too.

``reset_engine(url)`` points ``scheduler.db.api`` at another database
(and back to its initial state without a URL).
"""

import sqlalchemy as sa
from oslo_db.sqlalchemy import enginefacade
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.db import api
from scheduler.db.api import AGGREGATE_HOSTS
from scheduler.db.api import AGGREGATE_METADATA
from scheduler.db.api import AGGREGATES
from scheduler.db.api import COMPUTE_NODES
from scheduler.db.api import INSTANCE_GROUP_MEMBERS
from scheduler.db.api import INSTANCE_GROUP_POLICIES
from scheduler.db.api import INSTANCE_GROUPS
from scheduler.db.api import INSTANCES
from scheduler.db.api import SERVICES

# compute_nodes columns holding JSON text; writers also accept objects.
COMPUTE_NODE_JSON_COLUMNS = frozenset((
    'cpu_info', 'supported_instances', 'metrics', 'pci_stats',
    'extra_resources', 'stats', 'numa_topology'))

# Columns a caller may not set when updating a row.
_NOT_UPDATABLE = frozenset(('id', 'generation', 'deleted', 'deleted_at'))


# --------------------------------------------------------------- engine --

def reset_engine(connection=None):
    """Point every function of ``scheduler.db.api`` (and the writers here)
    at the database URL ``connection``.

    The current engine's pool is disposed of and a brand-new enginefacade
    factory is patched into ``api.context_manager``, so references to it
    held elsewhere see the change.  The other engine options still come from
    ``CONF.database``.  Without ``connection``, the module is back in its
    initial state: unconfigured, to be set up by ``api.configure`` or
    from ``CONF`` on first use.
    """
    fresh = enginefacade.transaction_context()
    fresh.append_on_engine_create(api._pool_sqlite_connections)
    if connection is not None:
        fresh.configure(connection=connection, **api._FACADE_SETTINGS)
    with api._CONFIGURE_LOCK:
        api.context_manager.dispose_pool()
        api.context_manager.patch_factory(fresh)


# -------------------------------------------------------------- helpers --

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


def _update_live(session, table, row_id, values, what):
    """UPDATE one live row by id; NotFound when there is none."""
    statement = (sa.update(table)
                 .where(table.c.id == row_id, api._live(table))
                 .values(**values))
    if not session.execute(statement).rowcount:
        raise api._not_found(what, row_id)


def _soft_delete(session, table, condition, what, key):
    """Nova's soft delete of the live rows matching ``condition``:
    ``deleted = id``, ``deleted_at = now``, ``updated_at`` kept."""
    statement = (sa.update(table)
                 .where(condition, api._live(table))
                 .values(deleted=table.c.id, deleted_at=api._utcnow(),
                         updated_at=table.c.updated_at))
    if not session.execute(statement).rowcount:
        raise api._not_found(what, key)


# -------------------------------------------------------- compute nodes --

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
    values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        compute_id = api._insert(session, COMPUTE_NODES, values)
        return api._compute_node_get(session, compute_id)


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
    values.setdefault('updated_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        _update_live(session, COMPUTE_NODES, compute_id, values,
                     'Compute node')
        return api._compute_node_get(session, compute_id)


def compute_node_delete(context, compute_id):
    """Soft-delete a compute node (``deleted = id``, ``deleted_at`` now).

    :raises scheduler.exception.NotFound: no live node has this id.
    """
    with api.context_manager.writer.using(context) as session:
        _soft_delete(session, COMPUTE_NODES,
                     COMPUTE_NODES.c.id == compute_id,
                     'Compute node', compute_id)


# ------------------------------------------------------------- services --

def _service_get(session, service_id):
    row = api._row_by_id(session, SERVICES, service_id)
    if row is None or row['deleted']:
        raise api._not_found('Service', service_id)
    return row


def service_create(context, values):
    """Insert a service and return it as a dict.

    :param values: column -> value, typically ``host``, ``binary``,
        ``topic``.  ``uuid`` defaults to a random UUID4 and
        ``created_at`` to now; ``report_count`` starts at 0.
    """
    values = _checked_values(SERVICES, values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        return _service_get(session, api._insert(session, SERVICES, values))


def service_update(context, service_id, values):
    """Update a live service and return its new dict.

    ``updated_at`` becomes now; as in Nova, ``last_seen_up`` becomes now
    when ``values`` raises ``report_count``.

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    values = _checked_values(SERVICES, values, _NOT_UPDATABLE)
    now = api._utcnow()
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
                 .where(SERVICES.c.id == service_id, api._live(SERVICES))
                 .ordered_values(*assignments))
    with api.context_manager.writer.using(context) as session:
        if not session.execute(statement).rowcount:
            raise api._not_found('Service', service_id)
        return _service_get(session, service_id)


def service_heartbeat(context, service_id):
    """Record a heartbeat in one UPDATE: ``report_count += 1`` and
    ``last_seen_up`` = ``updated_at`` = now.  Returns None.

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    now = api._utcnow()
    values = {'report_count': SERVICES.c.report_count + 1,
              'last_seen_up': now, 'updated_at': now}
    with api.context_manager.writer.using(context) as session:
        _update_live(session, SERVICES, service_id, values, 'Service')


# ----------------------------------------------------------- aggregates --

def _touch_aggregate(session, aggregate_id):
    """Set ``updated_at`` of an aggregate; NotFound when it is missing."""
    statement = (sa.update(AGGREGATES)
                 .where(AGGREGATES.c.id == aggregate_id)
                 .values(updated_at=api._utcnow()))
    if not session.execute(statement).rowcount:
        raise api._not_found('Aggregate', aggregate_id)


def _insert_metadata(session, aggregate_id, metadata):
    now = api._utcnow()
    rows = [{'aggregate_id': aggregate_id, 'key': key, 'value': value,
             'created_at': now}
            for key, value in metadata.items() if value is not None]
    if rows:
        session.execute(sa.insert(AGGREGATE_METADATA), rows)


def aggregate_create(context, name, metadata=None, uuid=None):
    """Create an aggregate, with optional ``metadata`` ({key: value};
    None values are skipped), and return its dict.

    :param uuid: defaults to a random UUID4.
    :raises oslo_db.exception.DBDuplicateEntry: the name is taken.
    """
    values = {'name': name, 'uuid': uuid or uuidutils.generate_uuid(),
              'created_at': api._utcnow()}
    with api.context_manager.writer.using(context) as session:
        aggregate_id = api._insert(session, AGGREGATES, values)
        _insert_metadata(session, aggregate_id, metadata or {})
        return api._aggregate_get(session, aggregate_id)


def aggregate_add_host(context, aggregate_id, host):
    """Add the service host name ``host`` to an aggregate; return the
    aggregate's dict.

    :raises scheduler.exception.NotFound: no aggregate has this id.
    :raises oslo_db.exception.DBDuplicateEntry: the host is already in.
    """
    values = {'aggregate_id': aggregate_id, 'host': host,
              'created_at': api._utcnow()}
    with api.context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        api._insert(session, AGGREGATE_HOSTS, values)
        return api._aggregate_get(session, aggregate_id)


def aggregate_remove_host(context, aggregate_id, host):
    """Remove ``host`` from an aggregate; return the aggregate's dict.

    :raises scheduler.exception.NotFound: no such aggregate, or the host
        is not in it.
    """
    statement = sa.delete(AGGREGATE_HOSTS).where(
        AGGREGATE_HOSTS.c.aggregate_id == aggregate_id,
        AGGREGATE_HOSTS.c.host == host)
    with api.context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        if not session.execute(statement).rowcount:
            raise api._not_found('Host %s in aggregate' % host, aggregate_id)
        return api._aggregate_get(session, aggregate_id)


def aggregate_update_metadata(context, aggregate_id, metadata):
    """Set or replace the keys of ``metadata`` ({key: value string}) on an
    aggregate; a None value deletes that key.  Other keys are kept.
    Returns the aggregate's dict.

    :raises scheduler.exception.NotFound: no aggregate has this id.
    """
    statement = sa.delete(AGGREGATE_METADATA).where(
        AGGREGATE_METADATA.c.aggregate_id == aggregate_id,
        AGGREGATE_METADATA.c.key.in_(list(metadata)))
    with api.context_manager.writer.using(context) as session:
        _touch_aggregate(session, aggregate_id)
        if metadata:
            session.execute(statement)
            _insert_metadata(session, aggregate_id, metadata)
        return api._aggregate_get(session, aggregate_id)


def aggregate_delete(context, aggregate_id):
    """Delete an aggregate with its hosts and metadata (a hard delete,
    as in Nova's API database).

    :raises scheduler.exception.NotFound: no aggregate has this id.
    """
    with api.context_manager.writer.using(context) as session:
        for child in (AGGREGATE_METADATA, AGGREGATE_HOSTS):
            session.execute(sa.delete(child).where(
                child.c.aggregate_id == aggregate_id))
        statement = sa.delete(AGGREGATES).where(
            AGGREGATES.c.id == aggregate_id)
        if not session.execute(statement).rowcount:
            raise api._not_found('Aggregate', aggregate_id)


# ------------------------------------------------------------ instances --

def instance_create(context, values):
    """Insert an instance and return it as a dict.

    :param values: column -> value; ``uuid`` is required, ``created_at``
        defaults to now.
    :raises scheduler.exception.Invalid: ``uuid`` is missing.
    """
    values = _checked_values(INSTANCES, values)
    if not values.get('uuid'):
        raise exception.Invalid(reason='an instance needs a uuid')
    values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        return api._row_by_id(session, INSTANCES,
                          api._insert(session, INSTANCES, values))


def instance_destroy(context, uuid):
    """Soft-delete the live instance ``uuid`` (``deleted = id``).

    :raises scheduler.exception.NotFound: no live instance has this uuid.
    """
    with api.context_manager.writer.using(context) as session:
        _soft_delete(session, INSTANCES, INSTANCES.c.uuid == uuid,
                     'Instance', uuid)


# -------------------------------------------------------- server groups --

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
    now = values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        group_id = api._insert(session, INSTANCE_GROUPS, values)
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
        return api._instance_group_get(session, values['uuid'])
