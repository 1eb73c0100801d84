"""Compute services and compute nodes written as Nova writes them.

The rows a ``nova-compute`` service writes (its ``services`` row, binary
``nova-compute`` and topic ``compute``, and a ``compute_nodes`` row per
node, with its usage report) and the changes an operator makes to them
(``openstack compute service set --disable``/``delete``), for
``scheduler-manage host`` on the standalone schema; the tools' writers
(``scheduler_tools.writers``) are these functions too.

As in ``scheduler.db.api``, every function takes a
``scheduler.context.RequestContext`` first and runs in an enginefacade
transaction on it (joining an enclosing ``writer.using`` block), takes
and returns plain dicts keyed by Nova's column names, and sizes are
Nova's (``memory_mb`` in MiB, ``local_gb`` in GiB).  ``compute_nodes``
and ``services`` rows are soft-deleted as Nova does (``deleted = id``,
``deleted_at`` now).

Liveness: a compute service counts as up while its last heartbeat
(``last_seen_up``, else ``created_at``) is at most ``[DEFAULT]
service_down_time`` old (``scheduler.view.servicegroup``).  A real
``nova-compute`` beats every ``report_interval``; a host registered here
has nothing beating for it unless ``heartbeat_compute_services`` is run
(``scheduler-manage host heartbeat``).
"""

import collections
import datetime
import typing

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_utils import versionutils

from scheduler import exception
from scheduler.db import api
from scheduler.db import claim_sql
from scheduler.db import service_row

Row = dict[str, typing.Any]

# The tables (Tables to the type checker, to which ``__table__`` is a
# FromClause).
AGGREGATE_HOSTS = typing.cast(sa.Table, api.AGGREGATE_HOSTS)
AGGREGATES = typing.cast(sa.Table, api.AGGREGATES)
COMPUTE_NODES = typing.cast(sa.Table, api.COMPUTE_NODES)
INSTANCES = typing.cast(sa.Table, api.INSTANCES)
SERVICES = typing.cast(sa.Table, api.SERVICES)

COMPUTE_BINARY = 'nova-compute'
COMPUTE_TOPIC = 'compute'

# compute_nodes columns holding JSON text; writers also accept objects.
COMPUTE_NODE_JSON_COLUMNS = frozenset((
    'cpu_info', 'supported_instances', 'metrics', 'pci_stats',
    'extra_resources', 'stats', 'numa_topology'))

# Columns a caller may not set when updating a row.
NOT_UPDATABLE = frozenset(('id', 'generation', 'deleted', 'deleted_at'))

RATIO_NAMES = claim_sql.RATIO_NAMES


class Refused(exception.SchedulerException):
    """The change is refused, as Nova's API refuses it (a duplicate, a
    host still hosting instances, a zone conflict...)."""

    msg_fmt = '%(reason)s'


# -------------------------------------------------------------- helpers --

def checked_values(table: sa.Table, values: Row,
                   forbidden: frozenset = frozenset()) -> Row:
    """Copy ``values``, refusing keys that are not columns of ``table``
    or that are in ``forbidden``.

    :raises scheduler.exception.Invalid: such a key is given.
    """
    bad = sorted(key for key in values
                 if key not in table.c or key in forbidden)
    if bad:
        raise exception.Invalid(reason='cannot set %s of %s'
                                % (', '.join(bad), table.name))
    return dict(values)


def json_text(value: typing.Any) -> str | None:
    """A JSON column's text: strings are stored as given, other values
    are serialised."""
    if value is None or isinstance(value, str):
        return value
    return jsonutils.dumps(value)


def _compute_node_values(values, forbidden=frozenset()):
    values = checked_values(COMPUTE_NODES, values, forbidden)
    for key in COMPUTE_NODE_JSON_COLUMNS.intersection(values):
        values[key] = json_text(values[key])
    return values


def _update_live(session, table, row_id, values, what):
    """UPDATE one live row by id; NotFound when there is none."""
    statement = (sa.update(table)
                 .where(table.c.id == row_id, api._live(table))
                 .values(**values))
    if not session.execute(statement).rowcount:
        raise api._not_found(what, row_id)


def soft_delete(session: typing.Any, table: sa.Table,
                condition: typing.Any, what: str, key: typing.Any) -> int:
    """Nova's soft delete of the live rows matching ``condition`` on a
    Session or Connection: ``deleted = id``, ``deleted_at = now``,
    ``updated_at`` kept.  Returns the row count.

    :raises scheduler.exception.NotFound: no live row matches (``what``
        and ``key`` name it in the message).
    """
    statement = (sa.update(table)
                 .where(condition, api._live(table))
                 .values(deleted=table.c.id, deleted_at=api._utcnow(),
                         updated_at=table.c.updated_at))
    count = session.execute(statement).rowcount
    if not count:
        raise api._not_found(what, key)
    return count


# -------------------------------------------------------- compute nodes --

def compute_node_create(context, values: Row) -> Row:
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


def compute_node_update(context, compute_id: int, values: Row) -> Row:
    """Update a live compute node (a usage report) and return its new
    dict.

    The same UPDATE adds 1 to ``generation`` and sets ``updated_at`` to
    now (unless ``values`` gives one).  ``id``, ``generation``,
    ``deleted`` and ``deleted_at`` cannot be set; JSON columns take a
    string or any JSON-serialisable object.

    :raises scheduler.exception.NotFound: no live node has this id.
    """
    values = _compute_node_values(values, NOT_UPDATABLE)
    values['generation'] = COMPUTE_NODES.c.generation + 1
    values.setdefault('updated_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        _update_live(session, COMPUTE_NODES, compute_id, values,
                     'Compute node')
        return api._compute_node_get(session, compute_id)


def compute_node_delete(context, compute_id: int) -> None:
    """Soft-delete a compute node (``deleted = id``, ``deleted_at`` now).

    :raises scheduler.exception.NotFound: no live node has this id.
    """
    with api.context_manager.writer.using(context) as session:
        soft_delete(session, COMPUTE_NODES, COMPUTE_NODES.c.id == compute_id,
                    'Compute node', compute_id)


# ------------------------------------------------------------- services --

def _service_get(session, service_id):
    row = api._row_by_id(session, SERVICES, service_id)
    if row is None or row['deleted']:
        raise api._not_found('Service', service_id)
    return row


def service_create(context, values: Row) -> Row:
    """Insert a service and return it as a dict.

    :param values: column -> value, typically ``host``, ``binary``,
        ``topic``.  ``uuid`` defaults to a random UUID4 and
        ``created_at`` to now; ``report_count`` starts at 0.
    """
    values = checked_values(SERVICES, values)
    values.setdefault('uuid', uuidutils.generate_uuid())
    values.setdefault('created_at', api._utcnow())
    with api.context_manager.writer.using(context) as session:
        return _service_get(session, api._insert(session, SERVICES, values))


def service_update(context, service_id: int, values: Row) -> Row:
    """Update a live service and return its new dict.

    ``updated_at`` becomes now; as in Nova, ``last_seen_up`` becomes now
    when ``values`` raises ``report_count``.

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    values = checked_values(SERVICES, values, NOT_UPDATABLE)
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


def _heartbeat_values(at=None):
    """A heartbeat, as Nova's database servicegroup driver writes it:
    ``report_count + 1``, ``last_seen_up`` = ``updated_at`` = ``at``
    (naive UTC, the writer's clock; default now)."""
    now = at or api._utcnow()
    return {'report_count': SERVICES.c.report_count + 1,
            'last_seen_up': now, 'updated_at': now}


def service_heartbeat(context, service_id: int) -> None:
    """Record a heartbeat of one service in one UPDATE
    (``_heartbeat_values``).

    :raises scheduler.exception.NotFound: no live service has this id.
    """
    with api.context_manager.writer.using(context) as session:
        _update_live(session, SERVICES, service_id, _heartbeat_values(),
                     'Service')


# ---------------------------------------------------- compute hosts (ops) --

def _live_compute_services(hosts=None):
    statement = sa.select(SERVICES).where(
        api._live(SERVICES), SERVICES.c.binary == COMPUTE_BINARY)
    if hosts is not None:
        statement = statement.where(SERVICES.c.host.in_(list(hosts)))
    return statement.order_by(SERVICES.c.id)


def compute_service_get(context, host: str) -> Row:
    """The live ``nova-compute`` service of ``host`` as a dict.

    :raises scheduler.exception.ComputeHostNotFound: there is none.
    """
    with api.context_manager.reader.using(context) as session:
        rows = api.dict_rows(session, _live_compute_services([host]))
    if not rows:
        raise exception.ComputeHostNotFound(host=host)
    return rows[0]


def empty_node_values(host: str, node: str, vcpus: int, memory_mb: int,
                      local_gb: int, hypervisor_type: str = 'QEMU',
                      hypervisor_version: str | int = '8.2.0',
                      cpu_arch: str = 'x86_64', host_ip: str | None = None,
                      ratios: dict[str, float] | None = None) -> Row:
    """The ``compute_nodes`` row a compute service reports for a node
    with nothing on it.

    :param vcpus: CPUs; ``memory_mb`` in MiB, ``local_gb`` in GiB; the
        free amounts (``free_ram_mb``, ``free_disk_gb``,
        ``disk_available_least``) are the totals.
    :param hypervisor_version: Nova's integer (``8002000``) or its
        dotted form (``'8.2.0'``, converted as Nova's drivers do).
    :param ratios: ``cpu_allocation_ratio``, ``ram_allocation_ratio``,
        ``disk_allocation_ratio`` the node sets; one left out stays NULL,
        which the scheduler resolves to the configured ratio, else Nova's
        default (16.0, 1.5, 1.0).
    :raises scheduler.exception.Invalid: a size is negative, a ratio not
        positive, or the version cannot be read.
    """
    sizes = {'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb}
    for name, size in sizes.items():
        if size < 0:
            raise exception.Invalid(reason='%s cannot be negative' % name)
    ratios = {name: value for name, value in (ratios or {}).items()
              if value is not None}
    for name, value in ratios.items():
        if name not in RATIO_NAMES or not value > 0:
            raise exception.Invalid(reason='%s must be a positive number'
                                    % name)
    try:
        version = int(hypervisor_version)
    except ValueError:
        try:
            version = versionutils.convert_version_to_int(
                str(hypervisor_version))
        except Exception as exc:
            raise exception.Invalid(
                reason='hypervisor version %r is neither an integer nor '
                'dotted numbers' % (hypervisor_version,)) from exc
    domain_types = (['kvm', 'qemu'] if hypervisor_type.upper() == 'QEMU'
                    else [hypervisor_type.lower()])
    return dict(
        sizes, host=host, hypervisor_hostname=node, vcpus_used=0,
        memory_mb_used=0, local_gb_used=0, free_ram_mb=memory_mb,
        free_disk_gb=local_gb, disk_available_least=local_gb,
        running_vms=0, current_workload=0, hypervisor_type=hypervisor_type,
        hypervisor_version=version, host_ip=host_ip,
        cpu_info={'arch': cpu_arch},
        supported_instances=[[cpu_arch, kind, 'hvm']
                             for kind in domain_types],
        stats={'num_instances': '0', 'io_workload': '0',
               'failed_builds': '0'},
        **ratios)


def add_compute_node(context, values: Row) -> Row:
    """Register a compute node as a starting ``nova-compute`` does: its
    host's service row (binary ``nova-compute``, topic ``compute``,
    created now, no heartbeat yet) unless the host has one, then the
    ``compute_nodes`` row ``values`` (``empty_node_values``), linked to
    the service.  Returns the new node's dict.

    :raises Refused: the host already has a live node of that
        ``hypervisor_hostname``.
    """
    host, node = values['host'], values['hypervisor_hostname']
    duplicate = Refused(reason='compute node %s of host %s is already '
                        'registered' % (node, host))
    existing = sa.select(COMPUTE_NODES.c.id).where(
        api._live(COMPUTE_NODES), COMPUTE_NODES.c.host == host,
        COMPUTE_NODES.c.hypervisor_hostname == node)
    try:
        with api.context_manager.writer.using(context) as session:
            if session.execute(existing).first() is not None:
                raise duplicate
            services = api.dict_rows(session, _live_compute_services([host]))
            if services:
                service = services[0]
            else:
                service = service_create(context, {
                    'host': host, 'binary': COMPUTE_BINARY,
                    'topic': COMPUTE_TOPIC, 'report_count': 0,
                    'disabled': False, 'forced_down': False,
                    'version': service_row.SERVICE_VERSION})
            return compute_node_create(
                context, dict(values, service_id=service['id']))
    except db_exc.DBDuplicateEntry as exc:
        raise duplicate from exc


def set_compute_service_disabled(context, host: str, disabled: bool,
                                 reason: str | None = None) -> Row:
    """Disable (with ``disabled_reason``) or enable the ``nova-compute``
    service of ``host``, as ``openstack compute service set
    --disable``/``--enable`` does (enabling clears the reason); returns
    the service's new dict.  The ComputeFilter passes no node of a
    disabled service.

    :raises scheduler.exception.ComputeHostNotFound: no such service.
    """
    with api.context_manager.writer.using(context):
        service = compute_service_get(context, host)
        return service_update(context, service['id'], {
            'disabled': disabled,
            'disabled_reason': reason if disabled else None})


def heartbeat_compute_services(context,
                               hosts: list[str] | None = None,
                               at: datetime.datetime | None = None
                               ) -> list[str]:
    """Record a heartbeat of the live ``nova-compute`` services of
    ``hosts`` (all of them with None) in one UPDATE, as the services
    themselves do every ``report_interval`` (``_heartbeat_values``),
    stamped ``at`` (naive UTC: the clock of the hosts, which may lag the
    scheduler's; default now).  Returns the host names stamped, sorted.
    """
    condition = [api._live(SERVICES), SERVICES.c.binary == COMPUTE_BINARY]
    if hosts is not None:
        condition.append(SERVICES.c.host.in_(list(hosts)))
    found = sa.select(SERVICES.c.host).where(*condition)
    with api.context_manager.writer.using(context) as session:
        stamped = sorted(session.execute(found).scalars())
        session.execute(sa.update(SERVICES).where(*condition)
                        .values(**_heartbeat_values(at)))
    return stamped


def delete_compute_host(context, host: str) -> list[Row]:
    """Delete the ``nova-compute`` service of ``host`` as ``openstack
    compute service delete`` does: refused while the host has live
    instances; the host leaves every aggregate, and the service and its
    compute nodes are soft-deleted.  Live claims on the nodes are left
    to expire (``claim_timeout``).

    :returns: the aggregates the host left, as ``api.aggregate_get``
        returns them after the change (for the ``update_aggregates``
        cast).
    :raises scheduler.exception.ComputeHostNotFound: no such service.
    :raises Refused: the host has instances.
    """
    hosted = sa.select(sa.func.count()).select_from(INSTANCES).where(
        api._live(INSTANCES), INSTANCES.c.host == host)
    memberships = sa.select(AGGREGATE_HOSTS.c.aggregate_id).where(
        AGGREGATE_HOSTS.c.host == host)
    with api.context_manager.writer.using(context) as session:
        service = compute_service_get(context, host)
        count = session.execute(hosted).scalar()
        if count:
            raise Refused(reason='host %s has %d instance(s): migrate or '
                          'delete them first' % (host, count))
        aggregate_ids = sorted(session.execute(memberships).scalars())
        if aggregate_ids:
            session.execute(sa.delete(AGGREGATE_HOSTS).where(
                AGGREGATE_HOSTS.c.host == host))
            session.execute(sa.update(AGGREGATES)
                            .where(AGGREGATES.c.id.in_(aggregate_ids))
                            .values(updated_at=api._utcnow()))
        nodes = sa.and_(COMPUTE_NODES.c.host == host,
                        api._live(COMPUTE_NODES))
        session.execute(sa.update(COMPUTE_NODES).where(nodes).values(
            deleted=COMPUTE_NODES.c.id, deleted_at=api._utcnow(),
            updated_at=COMPUTE_NODES.c.updated_at))
        soft_delete(session, SERVICES, SERVICES.c.id == service['id'],
                    'Service', service['id'])
        return [api._aggregate_get(session, aggregate_id)
                for aggregate_id in aggregate_ids]


# -------------------------------------------------------------- listing --

def compute_hosts(context, host: str | None = None) -> list[Row]:
    """What ``scheduler-manage host list`` shows: one entry per live
    compute node (of ``host`` only, when given), by node id, in one read
    transaction.

    :returns: list of ``{'node': the compute_nodes dict, 'service': the
        host's live nova-compute services dict (None without one),
        'aggregates': [aggregate dicts the host is in, by id],
        'instances': live instances on the node (int), 'claims': live
        scheduler_claims rows on the node (int)}``.
    """
    nodes = sa.select(COMPUTE_NODES).where(api._live(COMPUTE_NODES))
    if host is not None:
        nodes = nodes.where(COMPUTE_NODES.c.host == host)
    instances = (sa.select(INSTANCES.c.host, INSTANCES.c.node,
                           sa.func.count())
                 .where(api._live(INSTANCES))
                 .group_by(INSTANCES.c.host, INSTANCES.c.node))
    claims = claim_sql.CLAIMS
    claim_counts = (sa.select(claims.c.compute_node_id, sa.func.count())
                    .group_by(claims.c.compute_node_id))
    with api.context_manager.reader.using(context) as session:
        rows = api.dict_rows(session, nodes.order_by(COMPUTE_NODES.c.id))
        services = {svc['host']: svc for svc in api.dict_rows(
            session, _live_compute_services())}
        aggregates = collections.defaultdict(list)
        for aggregate in api.aggregates_read(session):
            for member in aggregate['hosts']:
                aggregates[member].append(aggregate)
        hosted = {(h, n): count for h, n, count in session.execute(instances)}
        claimed = dict(session.execute(claim_counts).all())
    return [{'node': row, 'service': services.get(row['host']),
             'aggregates': aggregates.get(row['host'], []),
             'instances': hosted.get((row['host'],
                                      row['hypervisor_hostname']), 0),
             'claims': claimed.get(row['id'], 0)}
            for row in rows]
