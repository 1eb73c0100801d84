"""``scheduler-manage aggregate``: host aggregates and availability zones
on the standalone schema.

The commands of ``openstack aggregate`` (``create [--zone]
[--property]``, ``delete``, ``add host``, ``remove host``, ``list``,
``show``) and novaclient's ``aggregate-set-metadata AGG key=value key``
(a key alone unsets it).  Each change is written to the database
(``scheduler.db.host_aggregates``, with Nova's API checks) and then sent
to the running schedulers as Nova's API sends it: an
``update_aggregates`` cast with the Aggregate, or ``delete_aggregate``.
An aggregate is named by its name or its id.  The database layer is
imported when a command runs, not when ``scheduler-manage`` starts.
"""

import typing

from cliff import command

from scheduler.cmd import manage_common

# The metadata key of an aggregate's availability zone (Nova's).
ZONE_KEY = 'availability_zone'

# ``aggregate list``'s columns: (heading, field of ``aggregate_fields``).
LIST_COLUMNS = (
    ('ID', 'id'), ('Name', 'name'), ('Availability Zone', 'availability_zone'),
    ('Hosts', 'hosts'), ('Properties', 'properties'),
)


def aggregate_fields(aggregate: dict[str, typing.Any]
                     ) -> dict[str, typing.Any]:
    """The fields ``aggregate show`` gives, in order: the zone apart and
    the other metadata as ``properties`` (as ``openstack aggregate show``
    gives them)."""
    metadata = dict(aggregate['metadata'])
    zone = metadata.pop(ZONE_KEY, None)
    return {
        'id': aggregate['id'],
        'uuid': aggregate['uuid'],
        'name': aggregate['name'],
        'availability_zone': zone,
        'hosts': manage_common.FormattedList(list(aggregate['hosts'])),
        'properties': manage_common.FormattedDict(metadata),
        'created_at': manage_common.timestamp(aggregate['created_at']),
        'updated_at': manage_common.timestamp(aggregate['updated_at']),
    }


def _shown(aggregate):
    return manage_common.shown(aggregate_fields(aggregate))


def _pairs(items: list[str], unset_allowed: bool) -> dict[str, str | None]:
    """``key=value`` items as a dict; a bare ``key`` maps to None (unset)
    where ``unset_allowed``.

    :raises scheduler.exception.Invalid: an empty key, or a bare key
        where it is not allowed.
    """
    pairs: dict[str, str | None] = {}
    for item in items:
        key, sep, value = item.partition('=')
        if not key or not (sep or unset_allowed):
            from scheduler import exception

            raise exception.Invalid(reason='%r is not KEY=VALUE' % item)
        pairs[key] = value if sep else None
    return pairs


class _Change(manage_common.ShowCommand):
    """A change of the aggregate named first: written, sent to the
    schedulers (``update_aggregates``), shown."""

    arguments: tuple = (manage_common.AGGREGATE,)

    def change(self, context, aggregate, parsed_args):
        """Write the change; return the aggregate after it."""
        raise NotImplementedError

    def take_action(self, parsed_args):
        from scheduler.db import host_aggregates

        context = self.context()
        aggregate = self.change(
            context, host_aggregates.find(context, parsed_args.aggregate),
            parsed_args)
        self.tell_schedulers(context, 'update_aggregates', [aggregate])
        return _shown(aggregate)


class AggregateCreate(manage_common.ShowCommand):
    """Create an aggregate (an availability zone with --zone)."""

    arguments = (
        ('name', {'metavar': 'NAME', 'help': 'a new name'}),
        ('--zone', {'metavar': 'ZONE', 'help': 'make it the availability '
                    'zone ZONE (its availability_zone metadata)'}),
        ('--property', {'action': 'append', 'default': [],
                        'metavar': 'KEY=VALUE', 'dest': 'properties',
                        'help': 'metadata (repeat for several)'}))

    def take_action(self, parsed_args):
        from scheduler.db import host_aggregates

        context = self.context()
        aggregate = host_aggregates.create(
            context, parsed_args.name, zone=parsed_args.zone,
            metadata=_pairs(parsed_args.properties, unset_allowed=False))
        self.tell_schedulers(context, 'update_aggregates', [aggregate])
        return _shown(aggregate)


class AggregateDelete(manage_common.StandaloneCommand):
    """Delete aggregates (refused while one has hosts)."""

    arguments = (('aggregates', {'nargs': '+', 'metavar': 'AGGREGATE',
                                   'help': 'aggregate names or ids'}),)

    def take_action(self, parsed_args):
        from scheduler.db import host_aggregates

        context = self.context()
        for name in parsed_args.aggregates:
            gone = host_aggregates.delete(
                context, host_aggregates.find(context, name))
            self.tell_schedulers(context, 'delete_aggregate', [gone])


class AggregateAddHost(_Change):
    """Add a compute host to an aggregate."""

    details = ('Refused when the host is not a compute host, or when it '
               'would be in two availability zones.')
    arguments = (manage_common.AGGREGATE, manage_common.HOST)

    def change(self, context, aggregate, parsed_args):
        from scheduler.db import host_aggregates

        return host_aggregates.add_host(context, aggregate, parsed_args.host)


class AggregateRemoveHost(_Change):
    """Remove a host from an aggregate."""

    arguments = (manage_common.AGGREGATE, manage_common.HOST)

    def change(self, context, aggregate, parsed_args):
        from scheduler.db import host_aggregates

        return host_aggregates.remove_host(context, aggregate,
                                           parsed_args.host)


class AggregateSetMetadata(_Change):
    """Set or unset metadata of an aggregate."""

    details = ('KEY=VALUE sets KEY, a KEY alone unsets it (as "nova '
               'aggregate-set-metadata").  availability_zone=ZONE moves '
               'the hosts of the aggregate to ZONE, refused when one of '
               'them is in another zone through another aggregate.')
    arguments = (manage_common.AGGREGATE,
                   ('metadata', {'nargs': '+', 'metavar': 'KEY[=VALUE]',
                                 'help': 'KEY=VALUE to set, KEY to unset'}))

    def change(self, context, aggregate, parsed_args):
        from scheduler.db import host_aggregates

        return host_aggregates.set_metadata(
            context, aggregate,
            _pairs(parsed_args.metadata, unset_allowed=True))


class AggregateList(manage_common.ListCommand):
    """List the aggregates."""

    def take_action(self, parsed_args):
        from scheduler.db import api

        return manage_common.listing(LIST_COLUMNS, [
            aggregate_fields(aggregate)
            for aggregate in api.aggregate_get_all(self.context())])


class AggregateShow(manage_common.ShowCommand):
    """Show an aggregate."""

    arguments = (manage_common.AGGREGATE,)

    def take_action(self, parsed_args):
        from scheduler.db import host_aggregates

        return _shown(host_aggregates.find(self.context(),
                                           parsed_args.aggregate))


COMMANDS: dict[str, type[command.Command]] = {
    'aggregate create': AggregateCreate,
    'aggregate delete': AggregateDelete,
    'aggregate add-host': AggregateAddHost,
    'aggregate remove-host': AggregateRemoveHost,
    'aggregate set-metadata': AggregateSetMetadata,
    'aggregate list': AggregateList,
    'aggregate show': AggregateShow,
}
