"""Atomic resource claims: many schedulers, one database, no overcommit.

``claim`` (and ``claim_many`` / ``claim_many_in``) takes an instance's
vCPUs, RAM (MiB) and disk (GiB) on a compute node with one conditional
UPDATE that matches only while they still fit; ``release`` /
``release_many`` give them back, and ``reconcile`` releases the claims a
usage report superseded or that expired.  The protocol, its invariants,
its transactions and Nova database mode are described in docs/claims.rst.

Datetimes are naive UTC, as everywhere in ``scheduler.db``.
"""

import collections
import contextlib
import datetime
import functools

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from scheduler import exception
from scheduler import host_state
from scheduler.conf import CONF
from scheduler.db import api
from scheduler.db import models
from scheduler.db import source
from scheduler.db.nova import node_claims

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
_BY_NAME = {resource.name: resource for resource in RESOURCES}


class ClaimChanged(Exception):
    """A claim row changed between its read and the writer's check, more
    than ``MAX_RETRIES`` times in a row (only under extreme contention on
    one instance uuid)."""


# Conflicts with a concurrent transaction, retried besides deadlocks and
# RetryRequest.  DBDuplicateEntry: a concurrent claim for the same
# instance uuid inserted its row first; the retry replaces it.
_CONFLICTS = (db_exc.DBDuplicateEntry, db_exc.DBConsistencyError)


def _is_retryable(exc):
    return isinstance(exc, _CONFLICTS)


_retry = oslo_db_api.wrap_db_retry(
    max_retries=MAX_RETRIES, retry_interval=0.02, max_retry_interval=0.5,
    retry_on_deadlock=True, exception_checker=_is_retryable, jitter=True)


# -------------------------------------------------------------- helpers --

def _utcnow():
    return timeutils.utcnow()


def config_ratios():
    """The allocation ratios configured for nodes that set none.

    :returns: ``{'cpu_allocation_ratio': float, 'ram_allocation_ratio':
        float, 'disk_allocation_ratio': float}``: ``[DEFAULT]`` options,
        else Nova's defaults (16.0, 1.5, 1.0), as
        ``host_state.resolve_allocation_ratio`` resolves them.
    """
    return {name: host_state.resolve_allocation_ratio(name, None)
            for name in RATIO_NAMES}


def default_expires_at(now=None):
    """``now`` (default: the current naive UTC time) plus
    ``[scheduler] claim_timeout`` seconds."""
    now = now or _utcnow()
    return now + datetime.timedelta(seconds=CONF.scheduler.claim_timeout)


def _resolved_ratios(ratios):
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


def _amounts(vcpus, memory_mb, disk_gb):
    """``{'vcpus': n, 'memory_mb': n, 'disk_gb': n}`` of non-negative
    ints, or Invalid."""
    amounts = {'vcpus': vcpus, 'memory_mb': memory_mb, 'disk_gb': disk_gb}
    for name, value in amounts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise exception.Invalid(reason='claimed %s must be a '
                                    'non-negative integer, not %r'
                                    % (name, value))
    return amounts


def _rows(session, statement, params=None):
    """Run a Core ``select``; return its rows as dicts."""
    return [dict(row) for row in
            session.execute(statement, params).mappings()]


def _chunks(items, size):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _nodes():
    """The table whose rows hold the nodes' claimed sums: our
    ``compute_nodes`` on the standalone schema, ``scheduler_node_claims``
    in Nova database mode (the same column names)."""
    return node_claims.NODE_CLAIMS if source.nova_mode() else COMPUTE_NODES


def _column(name, nodes):
    return nodes.c[name]


def _ratio(resource, nodes, ratios=None):
    """SQL: the row's ratio when neither NULL nor 0, else the default:
    ``ratios[resource.ratio]``, or the bound parameter
    ``default_<ratio name>`` when ``ratios`` is None."""
    column = _column(resource.ratio, nodes)
    default = (sa.bindparam('default_' + resource.ratio, type_=sa.Float)
               if ratios is None
               else sa.literal(ratios[resource.ratio], sa.Float))
    return sa.func.coalesce(sa.func.nullif(column, 0.0), default)


def _capacity(resource, nodes, ratios=None):
    """SQL: ``total * ratio`` (a float)."""
    return _column(resource.total, nodes) * _ratio(resource, nodes, ratios)


def _fits(resource, nodes):
    """SQL: the bound parameter ``request_<resource>`` more of ``resource``
    fit on the row, counting ``credit_<resource>`` (the part of
    ``claimed`` that this claim replaces) as free."""
    requested = sa.bindparam('request_' + resource.name, type_=sa.Integer)
    credit = sa.bindparam('credit_' + resource.name, type_=sa.Integer)
    total = _column(resource.total, nodes)
    free = (_capacity(resource, nodes) - _column(resource.used, nodes)
            - _column(resource.claimed, nodes))
    fits = sa.and_(total >= requested, free >= requested - credit)
    if resource.name == 'vcpus':
        return sa.or_(total == 0, fits)  # Nova's CoreFilter lets it pass
    return fits


def _overcommitted(resource, nodes, ratios):
    """SQL: reported usage plus claims exceed the capacity."""
    over = (_column(resource.used, nodes) + _column(resource.claimed, nodes)
            > _capacity(resource, nodes, ratios))
    if resource.name == 'vcpus':
        return sa.and_(_column(resource.total, nodes) != 0, over)
    return over


def _claim_row_select():
    return sa.select(CLAIMS).order_by(CLAIMS.c.id)


def _node_claim_values(nodes):
    """SET values adding the bound parameters ``delta_<resource>`` to the
    ``claimed_*`` columns, bumping ``generation`` and stamping
    ``updated_at`` and ``claims_updated_at`` with the parameter ``now``."""
    now = sa.bindparam('now', type_=sa.DateTime)
    values = {resource.claimed: _column(resource.claimed, nodes) +
              sa.bindparam('delta_' + resource.name, type_=sa.Integer)
              for resource in RESOURCES}
    values.update(generation=nodes.c.generation + 1,
                  updated_at=now, claims_updated_at=now)
    return values


@functools.cache
def _statements(nodes):
    """The statements of a claim and a release on the ``nodes`` table
    (``_nodes()``), built once with bound parameters (building one costs
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
        'claim_of': _claim_row_select().where(
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


def _find_claims(context, instance_uuids):
    """The claim rows of ``instance_uuids``, read in one short transaction
    on the writer engine (one query per ``api.IN_CHUNK_SIZE`` uuids), by
    id."""
    with context_manager.writer.using(context) as session:
        rows = []
        for chunk in _chunks(sorted(set(instance_uuids)),
                             api.IN_CHUNK_SIZE):
            statement = _claim_row_select().where(
                CLAIMS.c.instance_uuid.in_(chunk))
            rows.extend(_rows(session, statement))
    return sorted(rows, key=lambda row: row['id'])


def _find_claim(context, instance_uuid):
    found = _find_claims(context, [instance_uuid])
    return found[0] if found else None


def _deltas(deltas):
    """Bound parameters ``delta_<resource>`` for ``_node_claim_values``
    from ``{resource name: int}`` (missing ones 0)."""
    return {'delta_' + name: deltas.get(name, 0) for name in _BY_NAME}


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


def _take(session, compute_node_id, amounts, credit, ratios, now,
          new_instance=None):
    """The conditional UPDATE of a claim; True when the row matched.  With
    ``new_instance`` (a uuid), it matches only while that instance has no
    claim (``credit`` must then be zero)."""
    params = _take_params(compute_node_id, amounts, credit, ratios, now,
                          new_instance)
    statement = _statements(_nodes())['take_new' if new_instance else 'take']
    return session.execute(statement, params).rowcount == 1


def _take_all_new(connection, wanted, ratios, now):
    """``take_new`` for every ``(node_id, uuid, amounts)`` of ``wanted``
    in one executemany (same statements, same order); True when each
    matched its row.  Only where the driver sums an executemany's row
    counts (``supports_sane_multi_rowcount``: SQLite, MySQL)."""
    no_credit = dict.fromkeys(_BY_NAME, 0)
    params = [_take_params(node_id, amounts, no_credit, ratios, now, uuid)
              for node_id, uuid, amounts in wanted]
    result = connection.execute(_statements(_nodes())['take_new'], params)
    return result.rowcount == len(wanted)


def _subtract(session, rows, now):
    """Take the amounts of the released claim ``rows`` off their nodes'
    ``claimed_*``, one UPDATE per node, in node id order (deleted nodes
    too: their sums stay exact)."""
    by_node = collections.defaultdict(lambda: dict.fromkeys(_BY_NAME, 0))
    for row in rows:
        for name in _BY_NAME:
            by_node[row['compute_node_id']][name] -= row[name]
    for node_id in sorted(by_node):
        session.execute(_statements(_nodes())['subtract'],
                        dict(_deltas(by_node[node_id]), node_id=node_id,
                             now=now))


def _delete_row(session, row):
    """DELETE one claim row by id (ids are never reused) and instance
    uuid; True when this call removed it."""
    params = {'claim_id': row['id'], 'instance_uuid': row['instance_uuid']}
    return (session.execute(_statements(_nodes())['delete'], params)
            .rowcount == 1)


def _delete_rows(session, rows):
    """DELETE the claim ``rows`` by id; the rows this call removed.  One
    ``DELETE ... RETURNING`` where the database has it (SQLite 3.35,
    PostgreSQL, MariaDB 10.5), else one DELETE per row."""
    if len(rows) < 2 or not api.get_engine().dialect.delete_returning:
        return [row for row in rows if _delete_row(session, row)]
    statement = (sa.delete(CLAIMS)
                 .where(CLAIMS.c.id.in_([row['id'] for row in rows]))
                 .returning(CLAIMS.c.id))
    removed = set(session.execute(statement).scalars())
    return [row for row in rows if row['id'] in removed]


def _release_rows(session, rows, now):
    """Delete ``rows`` (claim dicts) by id and subtract those this
    transaction removed; return them."""
    released = _delete_rows(session, rows)
    _subtract(session, released, now)
    return released


# --------------------------------------------------------------- claims --

@contextlib.contextmanager
def decision_transaction(context):
    """The transaction of one scheduling decision: its refresh reads and
    its claims (``claim_many_in``) in one writer transaction, which saves
    a server database the round trips of a second one (connection
    check, BEGIN, end).

    Yields the ``Connection`` of a writer transaction on ``context``
    (the reads made on ``context`` inside join it; it commits at the
    end and rolls back on an exception), or None on SQLite, where the
    reads and the claims keep their own transactions: a SQLite
    transaction that reads first cannot always become a writer, and
    taking the write lock first would hold it during the whole decision.
    """
    if api.get_engine().dialect.name == 'sqlite':
        yield None
        return
    with context_manager.writer.connection.using(context) as connection:
        yield connection


class NoRoom(Exception):
    """A claim of ``claim_many_in`` did not fit: the caller rolls its
    transaction back."""


# What ``claim_many_in`` raises when another transaction got in the way
# (took the room, changed or inserted the instance's claim, or
# deadlocked with it): roll back, read again and claim again.
RACE_ERRORS = (NoRoom, db_exc.RetryRequest, db_exc.DBDeadlock) + _CONFLICTS


def claim(context, compute_node_id, instance_uuid, vcpus, memory_mb,
          disk_gb, ratios=None, expires_at=None):
    """Claim room for one instance on one compute node, atomically.

    In one writer transaction: one conditional ``UPDATE compute_nodes SET
    claimed_* = claimed_* + amount, generation = generation + 1,
    updated_at = claims_updated_at = now WHERE id = :id AND deleted = 0
    AND <each resource fits> AND <the instance has no claim>`` (see
    docs/claims.rst for the fit rule), then, when it matched the row,
    the ``scheduler_claims`` row.  When it did not match, the instance's
    current claim is read: an existing claim (a re-schedule) is replaced
    in the same transaction, its amounts counting as free when it is on
    the same node and taken off its node otherwise.

    :param context: a ``RequestContext``.
    :param compute_node_id: ``compute_nodes.id`` of the chosen node.
    :param instance_uuid: the instance the room is for (str, 36 chars).
    :param vcpus: vCPUs to claim (int >= 0).
    :param memory_mb: RAM to claim in MiB (int >= 0).
    :param disk_gb: disk to claim in GiB (int >= 0): root + ephemeral,
        plus swap rounded up if the caller counts it.
    :param ratios: ``{'cpu_allocation_ratio': float,
        'ram_allocation_ratio': float, 'disk_allocation_ratio': float}``,
        the ratios of nodes whose row sets none (NULL or 0); missing, None
        or 0 entries come from ``config_ratios()``.
    :param expires_at: naive UTC datetime after which ``reconcile``
        releases the claim; default ``default_expires_at()`` (now plus
        ``[scheduler] claim_timeout``).
    :returns: True when claimed; False when it does not fit (no room, a
        lost race, or no live node ``compute_node_id``), in which case
        nothing changed, the old claim of a re-schedule included.
    :raises scheduler.exception.Invalid: a negative or non-integer
        amount, or a ratio that is not a positive number.
    :raises ClaimChanged: the instance's claim kept changing under this
        call (``MAX_RETRIES`` times).
    :raises oslo_db.exception.DBError: database errors, unchanged.
    """
    return claim_many(context, [(compute_node_id, instance_uuid, vcpus,
                                 memory_mb, disk_gb)], ratios, expires_at)


@_retry
def claim_many(context, wanted, ratios=None, expires_at=None):
    """Claim room for several instances, all or none, in one transaction.

    :param wanted: list of ``(compute_node_id, instance_uuid, vcpus,
        memory_mb, disk_gb)`` (as ``claim``'s arguments), or of the same
        with the node's ``host`` last (a caller that knows it saves a
        read), distinct instance uuids; several may name the same node.
        They are claimed in node id order, so that concurrent callers
        lock rows in one order (no deadlock), each as ``claim`` claims
        one.
    :param ratios: as for ``claim``.
    :param expires_at: as for ``claim``, for every claim.
    :returns: True when every claim was taken; False when one did not fit,
        in which case nothing changed.
    :raises: as ``claim``.
    """
    try:
        return _claim_many_once(context, wanted, ratios, expires_at,
                                batch=True)
    except _NotAllNew:
        # A re-schedule or a lost race among them: claim one at a time.
        return _claim_many_once(context, wanted, ratios, expires_at,
                                batch=False)


def _claim_many_once(context, wanted, ratios, expires_at, batch):
    try:
        with context_manager.writer.connection.using(context) as connection:
            claim_many_in(connection, wanted, ratios, expires_at,
                          batch=batch)
    except NoRoom:
        return False
    return True


class _NotAllNew(Exception):
    """A batch of ``take_new`` did not match every row: roll back and
    claim one at a time."""


def claim_many_in(connection, wanted, ratios=None, expires_at=None,
                  batch=False):
    """``claim_many`` in the caller's writer transaction on ``connection``
    (a SQLAlchemy Connection), for a caller that reads in the same
    transaction first (``scheduler.drivers.filter_scheduler``).

    With ``batch``, where the database driver sums an executemany's row
    counts, the conditional UPDATEs of several instances without a claim
    (the usual request) go in one executemany; raises _NotAllNew when
    one did not match (the caller rolls back and claims without it).

    :raises NoRoom: a claim did not fit; the claims before it are written
        in the transaction, which the caller must roll back.
    :raises oslo_db.exception.RetryRequest: the instance's old claim
        changed under this call; roll back and claim again.
    :raises oslo_db.exception.DBDeadlock: and the other database errors,
        unchanged (no retry: the transaction is the caller's).
    :raises scheduler.exception.Invalid: as ``claim``.
    """
    ratios = _resolved_ratios(ratios)
    hosts = {item[0]: item[5] for item in wanted if len(item) > 5}
    wanted = sorted(((node_id, uuid, _amounts(vcpus, memory_mb, disk_gb))
                     for node_id, uuid, vcpus, memory_mb, disk_gb, *_
                     in wanted),
                    key=lambda item: item[0])
    expires_at = expires_at or default_expires_at()
    now = _utcnow()
    statements = _statements(_nodes())
    if connection.dialect.name == 'sqlite':
        connection.execute(statements['begin_write'])
    if source.nova_mode():
        node_claims.refresh(connection, source.get_source().snapshots(
            {item[0] for item in wanted}))
    unknown = sorted({item[0] for item in wanted} - hosts.keys())
    if unknown:
        hosts.update(connection.execute(statements['hosts'],
                                        {'node_ids': unknown}).all())
    if (batch and len(wanted) > 1 and
            connection.dialect.supports_sane_multi_rowcount):
        if not _take_all_new(connection, wanted, ratios, now):
            raise _NotAllNew()
    else:
        for node_id, uuid, amounts in wanted:
            if not _claim_in(connection, node_id, uuid, amounts, ratios,
                             now):
                raise NoRoom()
    # One statement for every claim row (an executemany).
    connection.execute(statements['insert'], [
        {'new_' + name: value for name, value in dict(
            amounts, instance_uuid=uuid, compute_node_id=node_id,
            host=hosts.get(node_id), expires_at=expires_at,
            created_at=now).items()}
        for node_id, uuid, amounts in wanted])


def _claim_in(connection, compute_node_id, instance_uuid, amounts, ratios,
              now):
    """Take one claim of ``claim_many`` off its node, in its transaction,
    replacing the instance's old claim row if it has one; the caller
    inserts the new claim row.  False when it does not fit (the caller
    rolls back).

    The usual instance has no claim yet: one conditional UPDATE that also
    checks that.  Only when it did not match is the instance's claim
    read, to replace it (a re-schedule) or to conclude that there is no
    room.
    """
    no_credit = dict.fromkeys(amounts, 0)
    if _take(connection, compute_node_id, amounts, no_credit, ratios, now,
             new_instance=instance_uuid):
        return True
    found = _rows(connection, _statements(_nodes())['claim_of'],
                  {'instance_uuid': instance_uuid})
    if not found:
        return False
    old = found[0]
    same_node = old['compute_node_id'] == compute_node_id
    credit = {name: old[name] if same_node else 0 for name in amounts}
    if not _take(connection, compute_node_id, amounts, credit, ratios, now):
        return False
    if not _delete_row(connection, old):
        # Released or replaced since it was read: roll back and start
        # over with the current claim.
        raise db_exc.RetryRequest(ClaimChanged(
            'claim of instance %s changed' % instance_uuid))
    if not same_node:
        _subtract(connection, [old], now)
    return True


@_retry
def release(context, instance_uuid):
    """Release the claim of ``instance_uuid``, if there is one.

    In one writer transaction: DELETE the claim row by id and, only when
    that DELETE removed it, subtract its amounts from its node's
    ``claimed_*`` (also bumping ``generation`` and setting ``updated_at``
    and ``claims_updated_at``).  Idempotent, and safe when several workers
    or services release the same instance at once: exactly one of them
    subtracts.

    :returns: True when this call released a claim; False when there was
        none (never claimed, already released, or replaced concurrently).
    :raises oslo_db.exception.DBError: database errors, unchanged.
    """
    old = _find_claim(context, instance_uuid)
    if old is None:
        return False
    with context_manager.writer.using(context) as session:
        return bool(_release_rows(session, [old], _utcnow()))


@_retry
def release_many(context, instance_uuids):
    """Release the claims of all ``instance_uuids`` (an iterable of str),
    e.g. of a multi-instance request that failed, in one writer
    transaction; uuids without a claim are skipped.  Same guarantees as
    ``release``.

    :returns: the number of claims this call released (int).
    :raises oslo_db.exception.DBError: database errors, unchanged.
    """
    rows = _find_claims(context, instance_uuids)
    if not rows:
        return 0
    with context_manager.writer.using(context) as session:
        return len(_release_rows(session, rows, _utcnow()))


@_retry
def _release_one(context, row):
    """Release one claim row (dict) found by ``reconcile``; True when this
    call removed it."""
    with context_manager.writer.using(context) as session:
        return bool(_release_rows(session, [row], _utcnow()))


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
    return _claim_row_select().where(CLAIMS.c.expires_at <= now)


def reconcile(context, now=None):
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
    now = now or _utcnow()
    if source.nova_mode():
        from scheduler.db.nova import reconcile as nova_reconcile
        return nova_reconcile.reconcile(context, now)
    with context_manager.reader.using(context) as session:
        superseded = _rows(session, _superseded_select())
        expired = _rows(session, _expired_select(now))
    superseded_ids = {row['id'] for row in superseded}
    expired = [row for row in expired if row['id'] not in superseded_ids]
    return {'expired': sum(_release_one(context, row) for row in expired),
            'superseded': sum(_release_one(context, row)
                              for row in superseded)}


# -------------------------------------------------------------- reports --

def overcommitted_nodes(context, ratios=None):
    """Find the live nodes whose reported usage plus claims exceed their
    capacity, for load tests and audits.

    Uses the ratio resolution and the ``vcpus = 0`` exception of
    ``claim``; a node overcommitted on several resources appears once per
    resource.  Floats are compared as the database computes them.

    :param ratios: as for ``claim`` (defaults of nodes without ratios).
    :returns: list of ``{'id', 'host', 'hypervisor_hostname', 'resource'
        ('vcpus', 'memory_mb' or 'disk_gb'), 'used' (reported, int),
        'claimed' (int), 'capacity' (total * ratio, float)}``, by node id
        then resource in that order; empty when nothing is overcommitted.
    :raises scheduler.exception.Invalid: a ratio is not a positive number.
    """
    ratios = _resolved_ratios(ratios)
    nodes = _nodes()
    node = nodes.c
    columns = [node.id, node.host,
               node.get('hypervisor_hostname',
                        sa.null().label('hypervisor_hostname'))]
    for resource in RESOURCES:
        columns += [
            _column(resource.used, nodes).label(resource.name + '_used'),
            _column(resource.claimed, nodes).label(
                resource.name + '_claimed'),
            _capacity(resource, nodes, ratios).label(
                resource.name + '_capacity'),
            sa.case((_overcommitted(resource, nodes, ratios), 1),
                    else_=0).label(resource.name + '_over')]
    statement = (sa.select(*columns)
                 .where(node.deleted == 0,
                        sa.or_(*[_overcommitted(resource, nodes, ratios)
                                 for resource in RESOURCES]))
                 .order_by(node.id))
    with context_manager.reader.using(context) as session:
        rows = _rows(session, statement)
    return [{'id': row['id'], 'host': row['host'],
             'hypervisor_hostname': row['hypervisor_hostname'],
             'resource': resource.name,
             'used': row[resource.name + '_used'],
             'claimed': row[resource.name + '_claimed'],
             'capacity': float(row[resource.name + '_capacity'])}
            for row in rows for resource in RESOURCES
            if row[resource.name + '_over']]


def unbalanced_nodes(context):
    """Find the nodes whose ``claimed_*`` differ from the sums of their
    claim rows (which must never happen), deleted nodes included.

    :returns: list of ``{'id', 'resource', 'claimed' (the column),
        'sum' (of the claim rows)}`` by node id then resource; empty when
        the bookkeeping is exact.
    """
    sums = (sa.select(CLAIMS.c.compute_node_id,
                      *[sa.func.sum(CLAIMS.c[name]).label(name)
                        for name in _BY_NAME])
            .group_by(CLAIMS.c.compute_node_id).subquery())
    nodes = _nodes()
    node = nodes.c
    statement = (sa.select(node.id,
                           *[_column(r.claimed, nodes) for r in RESOURCES],
                           *[sums.c[name] for name in _BY_NAME])
                 .select_from(nodes.outerjoin(
                     sums, sums.c.compute_node_id == node.id))
                 .order_by(node.id))
    with context_manager.reader.using(context) as session:
        rows = _rows(session, statement)
    return [{'id': row['id'], 'resource': resource.name,
             'claimed': row[resource.claimed],
             'sum': int(row[resource.name] or 0)}
            for row in rows for resource in RESOURCES
            if row[resource.claimed] != int(row[resource.name] or 0)]


def claims_count(context):
    """Return the number of live claims (int)."""
    statement = sa.select(sa.func.count()).select_from(CLAIMS)
    with context_manager.reader.using(context) as session:
        return session.execute(statement).scalar()


def get_claims(context, compute_node_id=None):
    """Return the claims, all or those on ``compute_node_id``, by id.

    :returns: list of dicts with every ``scheduler_claims`` column:
        ``id``, ``instance_uuid``, ``compute_node_id``, ``host``,
        ``vcpus``, ``memory_mb`` (MiB), ``disk_gb`` (GiB), ``expires_at``,
        ``created_at``, ``updated_at`` (naive UTC datetimes).
    """
    statement = _claim_row_select()
    if compute_node_id is not None:
        statement = statement.where(
            CLAIMS.c.compute_node_id == compute_node_id)
    with context_manager.reader.using(context) as session:
        return _rows(session, statement)
