"""Host aggregates written as Nova's API writes them.

The rows of ``aggregates``, ``aggregate_hosts`` and
``aggregate_metadata`` (API-database shape: rows are deleted for real),
for ``scheduler-manage aggregate`` on the standalone schema; the tools'
writers (``scheduler_tools.writers``) are the plain writes here too.

Two layers, as in Nova:

* the plain writes (``aggregate_create``, ``aggregate_add_host``,
  ``aggregate_remove_host``, ``aggregate_update_metadata``,
  ``aggregate_delete``), Nova's ``nova.db.api`` aggregate functions;
* the operator's actions (``create``, ``add_host``, ``remove_host``,
  ``set_metadata``, ``delete``), which first check what Nova's
  ``AggregateAPI`` checks: a zone name without ``:``, a member that is a
  compute host, a host in one availability zone only, an empty aggregate
  before its deletion.

A zone is an aggregate whose metadata sets ``availability_zone``
(``ZONE_KEY``); a host in no zone is in ``[DEFAULT]
default_availability_zone``.  Every function takes a
``scheduler.context.RequestContext`` first and returns aggregates shaped
as ``scheduler.db.api.aggregate_get`` returns them.  Running schedulers
learn of a change only from the ``update_aggregates`` /
``delete_aggregate`` casts (``scheduler.server.rpcapi``) or when they start.
"""

import typing
from collections.abc import Mapping

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.db import api
from scheduler.db import hosts

Row = dict[str, typing.Any]

AGGREGATE_HOSTS = hosts.AGGREGATE_HOSTS
AGGREGATES = hosts.AGGREGATES
AGGREGATE_METADATA = typing.cast(sa.Table, api.AGGREGATE_METADATA)

ZONE_KEY = 'availability_zone'


# ---------------------------------------------------------- plain writes --

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


def aggregate_create(context, name: str,
                     metadata: Mapping[str, str | None] | None = None,
                     uuid: str | None = None) -> Row:
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


def aggregate_add_host(context, aggregate_id: int, host: str) -> Row:
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


def aggregate_remove_host(context, aggregate_id: int, host: str) -> Row:
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


def aggregate_update_metadata(context, aggregate_id: int,
                              metadata: Mapping[str, str | None]) -> Row:
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


def aggregate_delete(context, aggregate_id: int) -> None:
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


# ------------------------------------------------------ operator actions --

def find(context, name_or_id: str) -> Row:
    """The aggregate named ``name_or_id``, else the one with that id (as
    the ``openstack aggregate`` commands find one).

    :raises scheduler.exception.NotFound: neither exists.
    """
    by_name = sa.select(AGGREGATES.c.id).where(AGGREGATES.c.name == name_or_id)
    with api.context_manager.reader.using(context) as session:
        aggregate_id = session.execute(by_name).scalar()
        if aggregate_id is None and name_or_id.isdigit():
            aggregate_id = int(name_or_id)
        found = (api.aggregates_read(session, aggregate_id)
                 if aggregate_id is not None else [])
    if not found:
        raise api._not_found('Aggregate', name_or_id)
    return found[0]


def _check_zone_name(zone):
    """Nova's rules for a zone name: not empty, no ``:`` (the separator
    of ``zone:host:node`` in a forced destination)."""
    if zone is not None and (not zone.strip() or ':' in zone):
        raise exception.Invalid(
            reason='availability zone %r: a zone name is not empty and has '
            'no ":"' % zone)


def _check_one_zone(session, aggregate, members, zone):
    """Nova's rule: a host is in one availability zone.  Refuse putting
    ``members`` into ``zone`` through ``aggregate`` when another
    aggregate of theirs sets another zone."""
    if not zone or not members:
        return
    for other in api.aggregates_read(session):
        theirs = other['metadata'].get(ZONE_KEY)
        if other['id'] == aggregate['id'] or not theirs or theirs == zone:
            continue
        clash = sorted(set(members) & set(other['hosts']))
        if clash:
            raise hosts.Refused(
                reason='host(s) %s already in availability zone %s '
                '(aggregate %s): a host is in one zone only'
                % (', '.join(clash), theirs, other['name']))


def create(context, name: str, zone: str | None = None,
           metadata: dict[str, str] | None = None) -> Row:
    """Create the aggregate ``name``, in ``zone`` (its
    ``availability_zone`` metadata) when given, as ``openstack aggregate
    create [--zone Z] [--property k=v]`` does.

    :raises scheduler.exception.Invalid: a bad zone name.
    :raises scheduler.db.hosts.Refused: the name is taken.
    """
    metadata = dict(metadata or {})
    if zone is not None:
        metadata[ZONE_KEY] = zone
    _check_zone_name(metadata.get(ZONE_KEY))
    with api.context_manager.reader.using(context) as session:
        taken = session.execute(sa.select(AGGREGATES.c.id).where(
            AGGREGATES.c.name == name)).first()
    if taken is not None:
        raise hosts.Refused(reason='aggregate %s already exists' % name)
    try:
        return aggregate_create(context, name, metadata=metadata)
    except db_exc.DBDuplicateEntry as exc:
        raise hosts.Refused(reason='aggregate %s already exists'
                            % name) from exc


def add_host(context, aggregate: Row, host: str) -> Row:
    """Add the compute host ``host`` to ``aggregate`` (as Nova's
    ``add_host_to_aggregate``) and return the aggregate after it.

    :raises scheduler.exception.ComputeHostNotFound: ``host`` has no live
        ``nova-compute`` service.
    :raises scheduler.db.hosts.Refused: already a member, or the host is
        in another zone.
    """
    with api.context_manager.writer.using(context) as session:
        hosts.compute_service_get(context, host)
        if host in api._aggregate_get(session, aggregate['id'])['hosts']:
            raise hosts.Refused(reason='host %s is already in aggregate %s'
                                % (host, aggregate['name']))
        _check_one_zone(session, aggregate, [host],
                        aggregate['metadata'].get(ZONE_KEY))
        return aggregate_add_host(context, aggregate['id'], host)


def remove_host(context, aggregate: Row, host: str) -> Row:
    """Remove ``host`` from ``aggregate``; return the aggregate after it.

    :raises scheduler.db.hosts.Refused: the host is not a member.
    """
    if host not in aggregate['hosts']:
        raise hosts.Refused(reason='host %s is not in aggregate %s'
                            % (host, aggregate['name']))
    return aggregate_remove_host(context, aggregate['id'], host)


def set_metadata(context, aggregate: Row,
                 metadata: Mapping[str, str | None]) -> Row:
    """Set the keys of ``metadata`` on ``aggregate``; a None value unsets
    the key (``nova aggregate-set-metadata AGG key``).  Setting
    ``availability_zone`` moves the members to that zone, refused when
    one of them is in another zone through another aggregate.  Returns
    the aggregate after it.

    :raises scheduler.exception.Invalid: a bad zone name.
    :raises scheduler.db.hosts.Refused: a member in another zone.
    """
    zone = metadata.get(ZONE_KEY)
    _check_zone_name(zone)
    with api.context_manager.writer.using(context) as session:
        current = api._aggregate_get(session, aggregate['id'])
        _check_one_zone(session, current, current['hosts'], zone)
        return aggregate_update_metadata(context, aggregate['id'], metadata)


def delete(context, aggregate: Row) -> Row:
    """Delete ``aggregate`` with its metadata; refused while it has
    hosts, as Nova refuses it.  Returns the aggregate as it was (for the
    ``delete_aggregate`` cast).

    :raises scheduler.db.hosts.Refused: the aggregate has hosts.
    """
    with api.context_manager.writer.using(context) as session:
        current = api._aggregate_get(session, aggregate['id'])
        if current['hosts']:
            raise hosts.Refused(
                reason='aggregate %s has host(s) %s: remove them first'
                % (current['name'], ', '.join(current['hosts'])))
        aggregate_delete(context, aggregate['id'])
        return current
