"""The rows compute services and the API write, for the tools and tests.

What puts compute nodes, services, aggregates, instances and server
groups into a database, for the fleet seeder (``scheduler_tools.seed``),
the replay's simulated compute agents, the benchmark and the tests.  The
writes of compute nodes, services and aggregates are the service's own
(``scheduler.db.hosts`` and ``scheduler.db.host_aggregates``, which
``scheduler-manage host`` and ``aggregate`` use), named here as the
tools call them; instances and server groups are written here only.
The functions run, as those of ``scheduler.db.api``, in an enginefacade
transaction on the context given first (joining an enclosing
``writer.using`` block), take and return plain dicts keyed by Nova's
column names, and soft-delete ``compute_nodes``, ``services`` and
``instances`` rows as Nova does (``deleted = id``).  Foreign keys are
not enforced on SQLite; writers delete child rows first, so they hold on
PostgreSQL and MySQL too.

``reset_engine(url)`` points ``scheduler.db.api`` at another database
(and back to its initial state without a URL).
"""

import sqlalchemy as sa
from oslo_db.sqlalchemy import enginefacade
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.db import api
from scheduler.db import host_aggregates
from scheduler.db import hosts
from scheduler.db.api import INSTANCE_GROUP_MEMBERS
from scheduler.db.api import INSTANCE_GROUP_POLICIES
from scheduler.db.api import INSTANCE_GROUPS
from scheduler.db.api import INSTANCES

# --------------------------------------------------------------- engine --

def reset_engine(connection=None):
    """Point every function of ``scheduler.db.api`` (and the writers here)
    at the database URL ``connection``.

    The current engine's pool is disposed of and a brand-new enginefacade
    factory, with the DB API's engine hooks (``api.ENGINE_HOOKS``), is
    patched into ``api.context_manager``, so references to it held
    elsewhere see the change.  The other engine options still come from
    ``CONF.database``.  Without ``connection``, the module is back in its
    initial state: unconfigured, to be set up by ``api.configure`` or
    from ``CONF`` on first use.
    """
    fresh = enginefacade.transaction_context()
    for hook in api.ENGINE_HOOKS:
        fresh.append_on_engine_create(hook)
    if connection is not None:
        fresh.configure(connection=connection, **api._FACADE_SETTINGS)
    with api._CONFIGURE_LOCK:
        api.context_manager.dispose_pool()
        api.context_manager.patch_factory(fresh)


# ------------------------------------- compute nodes, services, aggregates --
# The service's own writes (``scheduler-manage host`` and ``aggregate``),
# under the names the tools and tests use.

COMPUTE_NODE_JSON_COLUMNS = hosts.COMPUTE_NODE_JSON_COLUMNS

compute_node_create = hosts.compute_node_create
compute_node_update = hosts.compute_node_update
compute_node_delete = hosts.compute_node_delete
service_create = hosts.service_create
service_update = hosts.service_update
service_heartbeat = hosts.service_heartbeat

aggregate_create = host_aggregates.aggregate_create
aggregate_add_host = host_aggregates.aggregate_add_host
aggregate_remove_host = host_aggregates.aggregate_remove_host
aggregate_update_metadata = host_aggregates.aggregate_update_metadata
aggregate_delete = host_aggregates.aggregate_delete


# ------------------------------------------------------------ instances --

def instance_create(context, values):
    """Insert an instance and return it as a dict.

    :param values: column -> value; ``uuid`` is required, ``created_at``
        defaults to now.
    :raises scheduler.exception.Invalid: ``uuid`` is missing.
    """
    values = hosts.checked_values(INSTANCES, values)
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
        hosts.soft_delete(session, INSTANCES, INSTANCES.c.uuid == uuid,
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
    values = hosts.checked_values(INSTANCE_GROUPS, values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    now = values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        group_id = api._insert(session, INSTANCE_GROUPS, values)
        policy_rows = [{'group_id': group_id, 'policy': policy,
                        'rules': hosts.json_text(rules), 'created_at': now}
                       for policy in policies or ()]
        member_rows = [{'group_id': group_id, 'instance_uuid': member,
                        'created_at': now}
                       for member in members or ()]
        for table, rows in ((INSTANCE_GROUP_POLICIES, policy_rows),
                            (INSTANCE_GROUP_MEMBERS, member_rows)):
            if rows:
                session.execute(sa.insert(table), rows)
        return api._instance_group_get(session, values['uuid'])
