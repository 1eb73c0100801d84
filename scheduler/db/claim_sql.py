"""The SQL of the claims: tables, statements and row-level steps.

The building blocks of ``scheduler.db.claims`` (claim and release),
``scheduler.db.claim_reconcile``, ``scheduler.db.claim_reports`` and
``scheduler.db.nova.reconcile``: the claimable resources, the ratio
resolution, the conditional UPDATE of a claim and the release of claim
rows, each run in a transaction its caller holds (docs/claims.rst).

Datetimes are naive UTC, as everywhere in ``scheduler.db``.
"""

import collections
import datetime
import functools

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db import api
from scheduler.db import models
from scheduler.db import source
from scheduler.db.nova import node_claims
from scheduler.resources import ratios

context_manager = api.context_manager

COMPUTE_NODES = api.COMPUTE_NODES
INSTANCES = api.INSTANCES
CLAIMS = models.SchedulerClaim.__table__

RATIO_NAMES = ('cpu_allocation_ratio', 'ram_allocation_ratio',
               'disk_allocation_ratio')

# Retries of a claim or release after a deadlock or a lost re-check.
MAX_RETRIES = 10


class Resource(collections.namedtuple(
        'Resource', 'name total used claimed ratio')):
    """One claimable resource: its name in the claim (``vcpus``,
    ``memory_mb``, ``disk_gb``), and the ``compute_nodes`` columns of its
    total, reported usage and claimed sum, and its ratio's name."""


RESOURCES = (
    Resource('vcpus', 'vcpus', 'vcpus_used', 'claimed_vcpus',
             'cpu_allocation_ratio'),
    Resource('memory_mb', 'memory_mb', 'memory_mb_used', 'claimed_memory_mb',
             'ram_allocation_ratio'),
    Resource('disk_gb', 'local_gb', 'local_gb_used', 'claimed_disk_gb',
             'disk_allocation_ratio'),
)
BY_NAME = {resource.name: resource for resource in RESOURCES}


class ClaimChanged(Exception):
    """A claim row changed between its read and the writer's check, more
    than ``MAX_RETRIES`` times in a row (only under extreme contention on
    one instance uuid)."""


# Conflicts with a concurrent transaction, retried besides deadlocks and
# RetryRequest.  DBDuplicateEntry: a concurrent claim for the same
# instance uuid inserted its row first; the retry replaces it.
CONFLICTS = (db_exc.DBDuplicateEntry, db_exc.DBConsistencyError)


def _is_retryable(exc):
    return isinstance(exc, CONFLICTS)


retry = oslo_db_api.wrap_db_retry(
    max_retries=MAX_RETRIES, retry_interval=0.02, max_retry_interval=0.5,
    retry_on_deadlock=True, exception_checker=_is_retryable, jitter=True)


# -------------------------------------------------------------- helpers --

def utcnow():
    return timeutils.utcnow()


def config_ratios():
    """The allocation ratios configured for nodes that set none.

    :returns: ``{'cpu_allocation_ratio': float, 'ram_allocation_ratio':
        float, 'disk_allocation_ratio': float}``: ``[DEFAULT]`` options,
        else Nova's defaults: ``ratios.resolve_allocation_ratio``, the
        host view's rule.
    """
    return {name: ratios.resolve_allocation_ratio(name, None)
            for name in RATIO_NAMES}


def default_expires_at(now=None):
    """``now`` (default: the current naive UTC time) plus
    ``[scheduler] claim_timeout`` seconds."""
    now = now or utcnow()
    return now + datetime.timedelta(seconds=CONF.scheduler.claim_timeout)


def resolved_ratios(ratios):
    """Complete ``ratios``: missing, None or 0 entries come from
    ``config_ratios``; all must be positive numbers."""
    resolved = config_ratios()
    for name, value in (ratios or {}).items():
        if name not in resolved:
            raise exception.Invalid(reason='unknown ratio %r' % name)
        if value:
            resolved[name] = value
    for name, value in resolved.items():
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not value > 0):
            raise exception.Invalid(reason='%s must be a positive number, '
                                    'not %r' % (name, value))
        resolved[name] = float(value)
    return resolved


def checked_amounts(vcpus, memory_mb, disk_gb):
    """``{'vcpus': n, 'memory_mb': n, 'disk_gb': n}`` of non-negative
    ints, or Invalid."""
    amounts = {'vcpus': vcpus, 'memory_mb': memory_mb, 'disk_gb': disk_gb}
    for name, value in amounts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise exception.Invalid(reason='claimed %s must be a '
                                    'non-negative integer, not %r'
                                    % (name, value))
    return amounts


def chunks(items, size):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]


def nodes_table():
    """The table whose rows hold the nodes' claimed sums: our
    ``compute_nodes`` on the standalone schema, ``scheduler_node_claims``
    in Nova database mode (the same column names)."""
    return node_claims.NODE_CLAIMS if source.nova_mode() else COMPUTE_NODES


def column_of(name, nodes):
    return nodes.c[name]


def _ratio(resource, nodes, ratios=None):
    """SQL: the row's ratio when neither NULL nor 0, else the default:
    ``ratios[resource.ratio]``, or the bound parameter
    ``default_<ratio name>`` when ``ratios`` is None."""
    column = column_of(resource.ratio, nodes)
    default = (sa.bindparam('default_' + resource.ratio, type_=sa.Float)
               if ratios is None
               else sa.literal(ratios[resource.ratio], sa.Float))
    return sa.func.coalesce(sa.func.nullif(column, 0.0), default)


def capacity_sql(resource, nodes, ratios=None):
    """SQL: ``total * ratio`` (a float)."""
    return column_of(resource.total, nodes) * _ratio(resource, nodes, ratios)


def _fits(resource, nodes):
    """SQL: the bound parameter ``request_<resource>`` more of ``resource``
    fit on the row, counting ``credit_<resource>`` (the part of
    ``claimed`` that this claim replaces) as free."""
    requested = sa.bindparam('request_' + resource.name, type_=sa.Integer)
    credit = sa.bindparam('credit_' + resource.name, type_=sa.Integer)
    total = column_of(resource.total, nodes)
    free = (capacity_sql(resource, nodes) - column_of(resource.used, nodes)
            - column_of(resource.claimed, nodes))
    fits = sa.and_(total >= requested, free >= requested - credit)
    if resource.name == 'vcpus':
        return sa.or_(total == 0, fits)  # Nova's CoreFilter lets it pass
    return fits


def overcommitted_sql(resource, nodes, ratios):
    """SQL: reported usage plus claims exceed the capacity."""
    over = (column_of(resource.used, nodes)
            + column_of(resource.claimed, nodes)
            > capacity_sql(resource, nodes, ratios))
    if resource.name == 'vcpus':
        return sa.and_(column_of(resource.total, nodes) != 0, over)
    return over


def claim_row_select():
    return sa.select(CLAIMS).order_by(CLAIMS.c.id)


def _node_claim_values(nodes):
    """SET values adding the bound parameters ``delta_<resource>`` to the
    ``claimed_*`` columns, bumping ``generation`` and stamping
    ``updated_at`` and ``claims_updated_at`` with the parameter ``now``."""
    now = sa.bindparam('now', type_=sa.DateTime)
    values = {resource.claimed: column_of(resource.claimed, nodes) +
              sa.bindparam('delta_' + resource.name, type_=sa.Integer)
              for resource in RESOURCES}
    values.update(generation=nodes.c.generation + 1,
                  updated_at=now, claims_updated_at=now)
    return values


@functools.cache
def statements_for(nodes):
    """The statements of a claim and a release on the ``nodes`` table
    (``nodes_table()``), built once with bound parameters (building one costs
    more than running it)."""
    node_id = sa.bindparam('node_id', type_=nodes.c.id.type)
    take = (sa.update(nodes)
            .where(nodes.c.id == node_id,
                   nodes.c.deleted == 0,
                   *[_fits(resource, nodes) for resource in RESOURCES])
            .values(**_node_claim_values(nodes)))
    claim_columns = ['instance_uuid', 'compute_node_id', 'vcpus',
                     'memory_mb', 'disk_gb', 'expires_at', 'created_at']
    return {
        # Matches nothing, but opens a SQLite transaction for writing: a
        # transaction whose first statement reads cannot always become a
        # writer while another one writes ("database is locked", not
        # waited for).  Server databases do not need it.
        'begin_write': sa.delete(CLAIMS).where(sa.false()),
        'claim_of': claim_row_select().where(
            CLAIMS.c.instance_uuid == sa.bindparam('instance_uuid')),
        'take': take,
        # ``take`` for an instance that has no claim yet (the usual case):
        # no read of its claim first.
        'take_new': take.where(~sa.exists().where(
            CLAIMS.c.instance_uuid == sa.bindparam('instance_uuid'))),
        'subtract': (sa.update(nodes)
                     .where(nodes.c.id == node_id)
                     .values(**_node_claim_values(nodes))),
        'delete': sa.delete(CLAIMS).where(
            CLAIMS.c.id == sa.bindparam('claim_id'),
            CLAIMS.c.instance_uuid == sa.bindparam('instance_uuid')),
        # A plain INSERT ... VALUES: with a SELECT in it, InnoDB would hold
        # its table-level auto-increment lock while waiting for the node
        # row another claim has locked (MariaDB error 1467 under load).
        'insert': sa.insert(CLAIMS).values(
            {name: sa.bindparam('new_' + name, type_=CLAIMS.c[name].type)
             for name in claim_columns + ['host']}),
        'hosts': sa.select(nodes.c.id, nodes.c.host).where(
            nodes.c.id.in_(sa.bindparam('node_ids', expanding=True))),
    }


def find_claims(context, instance_uuids):
    """The claim rows of ``instance_uuids``, read in one short transaction
    on the writer engine (one query per ``api.IN_CHUNK_SIZE`` uuids), by
    id."""
    with context_manager.writer.using(context) as session:
        rows = []
        for chunk in chunks(sorted(set(instance_uuids)),
                             api.IN_CHUNK_SIZE):
            statement = claim_row_select().where(
                CLAIMS.c.instance_uuid.in_(chunk))
            rows.extend(api.dict_rows(session, statement))
    return sorted(rows, key=lambda row: row['id'])


def find_claim(context, instance_uuid):
    found = find_claims(context, [instance_uuid])
    return found[0] if found else None


def _deltas(deltas):
    """Bound parameters ``delta_<resource>`` for ``_node_claim_values``
    from ``{resource name: int}`` (missing ones 0)."""
    return {'delta_' + name: deltas.get(name, 0) for name in BY_NAME}


def _take_params(compute_node_id, amounts, credit, ratios, now,
                 new_instance=None):
    """The bound parameters of the ``take`` / ``take_new`` UPDATE."""
    params = {'default_' + name: value for name, value in ratios.items()}
    params.update(node_id=compute_node_id, now=now,
                  instance_uuid=new_instance)
    params.update(('request_' + name, value)
                  for name, value in amounts.items())
    params.update(('credit_' + name, value) for name, value in credit.items())
    params.update(_deltas({name: amounts[name] - credit[name]
                           for name in amounts}))
    return params


def take_node(session, compute_node_id, amounts, credit, ratios, now,
          new_instance=None):
    """The conditional UPDATE of a claim; True when the row matched.  With
    ``new_instance`` (a uuid), it matches only while that instance has no
    claim (``credit`` must then be zero)."""
    params = _take_params(compute_node_id, amounts, credit, ratios, now,
                          new_instance)
    statement = statements_for(nodes_table())[
        'take_new' if new_instance else 'take']
    return session.execute(statement, params).rowcount == 1


def take_all_new(connection, wanted, ratios, now):
    """``take_new`` for every ``(node_id, uuid, amounts)`` of ``wanted``
    in one executemany (same statements, same order); True when each
    matched its row.  Only where the driver sums an executemany's row
    counts (``supports_sane_multi_rowcount``: SQLite, MySQL)."""
    no_credit = dict.fromkeys(BY_NAME, 0)
    params = [_take_params(node_id, amounts, no_credit, ratios, now, uuid)
              for node_id, uuid, amounts in wanted]
    result = connection.execute(statements_for(nodes_table())['take_new'],
                                params)
    return result.rowcount == len(wanted)


def subtract_rows(session, rows, now):
    """Take the amounts of the released claim ``rows`` off their nodes'
    ``claimed_*``, one UPDATE per node, in node id order (deleted nodes
    too: their sums stay exact)."""
    by_node = collections.defaultdict(lambda: dict.fromkeys(BY_NAME, 0))
    for row in rows:
        for name in BY_NAME:
            by_node[row['compute_node_id']][name] -= row[name]
    for node_id in sorted(by_node):
        session.execute(statements_for(nodes_table())['subtract'],
                        dict(_deltas(by_node[node_id]), node_id=node_id,
                             now=now))


def delete_row(session, row):
    """DELETE one claim row by id (ids are never reused) and instance
    uuid; True when this call removed it."""
    params = {'claim_id': row['id'], 'instance_uuid': row['instance_uuid']}
    return (session.execute(statements_for(nodes_table())['delete'], params)
            .rowcount == 1)


def _delete_rows(session, rows):
    """DELETE the claim ``rows`` by id; the rows this call removed.  One
    ``DELETE ... RETURNING`` where the database has it (SQLite 3.35,
    PostgreSQL, MariaDB 10.5), else one DELETE per row."""
    if len(rows) < 2 or not api.get_engine().dialect.delete_returning:
        return [row for row in rows if delete_row(session, row)]
    statement = (sa.delete(CLAIMS)
                 .where(CLAIMS.c.id.in_([row['id'] for row in rows]))
                 .returning(CLAIMS.c.id))
    removed = set(session.execute(statement).scalars())
    return [row for row in rows if row['id'] in removed]


def release_rows(session, rows, now):
    """Delete ``rows`` (claim dicts) by id and subtract those this
    transaction removed; return them."""
    released = _delete_rows(session, rows)
    subtract_rows(session, released, now)
    return released
