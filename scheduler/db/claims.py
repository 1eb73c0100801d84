"""Atomic resource claims: many schedulers, one database, no overcommit.

``claim`` (and ``claim_many`` / ``claim_many_in``, over ``ClaimRequest``
lists) takes an instance's vCPUs, RAM (MiB) and disk (GiB) on a compute
node with one conditional UPDATE that matches only while they still
fit; ``release`` / ``release_many`` give them back, and ``reconcile``
(``scheduler.db.claim_reconcile``) releases the claims a usage report
superseded or that expired.  The statements are
``scheduler.db.claim_sql``'s, the audits ``scheduler.db.claim_reports``'.
The protocol, its invariants, its transactions and Nova database mode
are described in docs/claims.rst.

Datetimes are naive UTC, as everywhere in ``scheduler.db``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from oslo_db import exception as db_exc

from scheduler.db import api
from scheduler.db import claim_reconcile
from scheduler.db import claim_reports
from scheduler.db import source
from scheduler.db.claim_sql import CONFLICTS
from scheduler.db.claim_sql import ClaimChanged
from scheduler.db.claim_sql import checked_amounts
from scheduler.db.claim_sql import context_manager
from scheduler.db.claim_sql import default_expires_at
from scheduler.db.claim_sql import delete_row
from scheduler.db.claim_sql import find_claim
from scheduler.db.claim_sql import find_claims
from scheduler.db.claim_sql import nodes_table
from scheduler.db.claim_sql import release_rows
from scheduler.db.claim_sql import resolved_ratios
from scheduler.db.claim_sql import retry
from scheduler.db.claim_sql import statements_for
from scheduler.db.claim_sql import subtract_rows
from scheduler.db.claim_sql import take_all_new
from scheduler.db.claim_sql import take_node
from scheduler.db.claim_sql import utcnow
from scheduler.db.nova import node_claims

# The audits, under their historical names.
overcommitted_nodes = claim_reports.overcommitted_nodes
unbalanced_nodes = claim_reports.unbalanced_nodes
claims_count = claim_reports.claims_count
get_claims = claim_reports.get_claims


@dataclasses.dataclass(frozen=True)
class ClaimRequest:
    """One instance's claim on one compute node: ``compute_nodes.id``
    (the view's node id in Nova database mode), the instance's uuid, the
    vCPUs, RAM (MiB) and disk (GiB) to claim, and the node's ``host``
    when the caller knows it (else it is read)."""

    compute_node_id: int
    instance_uuid: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    host: str | None = None


@contextlib.contextmanager
def decision_transaction(context: Any) -> Iterator[Any]:
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
RACE_ERRORS = (NoRoom, db_exc.RetryRequest, db_exc.DBDeadlock) + CONFLICTS


def claim(context: Any, compute_node_id: int, instance_uuid: str,
          vcpus: int, memory_mb: int, disk_gb: int,
          ratios: dict[str, float] | None = None,
          expires_at: datetime.datetime | None = None) -> bool:
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
    return claim_many(context, [ClaimRequest(compute_node_id, instance_uuid,
                                             vcpus, memory_mb, disk_gb)],
                      ratios, expires_at)


@retry
def claim_many(context: Any, wanted: Sequence[ClaimRequest],
               ratios: dict[str, float] | None = None,
               expires_at: datetime.datetime | None = None) -> bool:
    """Claim room for several instances, all or none, in one transaction.

    :param wanted: list of ``ClaimRequest`` (as ``claim``'s arguments,
        with the node's ``host`` when the caller knows it, which saves a
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


def claim_many_in(connection: Any, wanted: Sequence[ClaimRequest],
                  ratios: dict[str, float] | None = None,
                  expires_at: datetime.datetime | None = None,
                  batch: bool = False) -> None:
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
    ratios = resolved_ratios(ratios)
    hosts = {item.compute_node_id: item.host for item in wanted
             if item.host is not None}
    rows = sorted(((item.compute_node_id, item.instance_uuid,
                    checked_amounts(item.vcpus, item.memory_mb,
                                    item.disk_gb))
                   for item in wanted),
                  key=lambda row: row[0])
    expires_at = expires_at or default_expires_at()
    now = utcnow()
    statements = statements_for(nodes_table())
    if connection.dialect.name == 'sqlite':
        connection.execute(statements['begin_write'])
    if source.nova_mode():
        nova = source.get_source()  # a NovaSource in Nova database mode
        snapshots = nova.snapshots  # type: ignore[attr-defined]
        node_claims.refresh(connection, snapshots({row[0] for row in rows}))
    unknown = sorted({row[0] for row in rows} - hosts.keys())
    if unknown:
        hosts.update(connection.execute(statements['hosts'],
                                        {'node_ids': unknown}).all())
    if (batch and len(rows) > 1 and
            connection.dialect.supports_sane_multi_rowcount):
        if not take_all_new(connection, rows, ratios, now):
            raise _NotAllNew()
    else:
        for node_id, uuid, amounts in rows:
            if not _claim_in(connection, node_id, uuid, amounts, ratios,
                             now):
                raise NoRoom()
    # One statement for every claim row (an executemany).
    connection.execute(statements['insert'], [
        {'new_' + name: value for name, value in dict(
            amounts, instance_uuid=uuid, compute_node_id=node_id,
            host=hosts.get(node_id), expires_at=expires_at,
            created_at=now).items()}
        for node_id, uuid, amounts in rows])


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
    if take_node(connection, compute_node_id, amounts, no_credit, ratios,
                 now, new_instance=instance_uuid):
        return True
    found = api.dict_rows(connection,
                          statements_for(nodes_table())['claim_of'],
                          {'instance_uuid': instance_uuid})
    if not found:
        return False
    old = found[0]
    same_node = old['compute_node_id'] == compute_node_id
    credit = {name: old[name] if same_node else 0 for name in amounts}
    if not take_node(connection, compute_node_id, amounts, credit, ratios,
                     now):
        return False
    if not delete_row(connection, old):
        # Released or replaced since it was read: roll back and start
        # over with the current claim.
        raise db_exc.RetryRequest(ClaimChanged(
            'claim of instance %s changed' % instance_uuid))
    if not same_node:
        subtract_rows(connection, [old], now)
    return True


@retry
def release(context: Any, instance_uuid: str) -> bool:
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
    old = find_claim(context, instance_uuid)
    if old is None:
        return False
    with context_manager.writer.using(context) as session:
        return bool(release_rows(session, [old], utcnow()))


@retry
def release_many(context: Any, instance_uuids: Iterable[str]) -> int:
    """Release the claims of all ``instance_uuids`` (an iterable of str),
    e.g. of a multi-instance request that failed, in one writer
    transaction; uuids without a claim are skipped.  Same guarantees as
    ``release``.

    :returns: the number of claims this call released (int).
    :raises oslo_db.exception.DBError: database errors, unchanged.
    """
    rows = find_claims(context, instance_uuids)
    if not rows:
        return 0
    with context_manager.writer.using(context) as session:
        return len(release_rows(session, rows, utcnow()))


def reconcile(context: Any, now: datetime.datetime | None = None
              ) -> dict[str, int]:
    """Release the claims that usage reports superseded or that expired
    (see ``scheduler.db.claim_reconcile.reconcile``).

    :returns: ``{'expired': int, 'superseded': int}``.
    """
    return claim_reconcile.reconcile(context, now)
