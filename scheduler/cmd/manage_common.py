"""What the ``scheduler-manage`` commands share.

``DatabaseCommand``, the base of every command but ``help``, refuses to
run without a ``[database] connection`` of the configuration
(``scheduler.conf.database.connection_problem``, the check
``scheduler-service`` makes): the embedded SQLite default is the
replay's, and a command on it would write ``./scheduler.sqlite``, which
no service reads.  A command on the schema refuses a database that is
not at this release's revision ("run ``scheduler-manage db sync``",
``scheduler.db.migration.schema_problem``) before it runs; any other
failure of the database is one line too, never a driver's traceback.

``StandaloneCommand`` refuses to run in Nova database mode (Nova's own
tables are authoritative there, managed with ``nova-manage`` and the
``openstack`` CLI) and turns a refused or impossible change into one
line on stderr with exit status 1.  ``tell_schedulers`` sends the
``update_aggregates`` / ``delete_aggregate`` fanout casts of Nova's API
(the Aggregate objects, through ``scheduler.server.rpcapi`` on ``[DEFAULT]
transport_url``), so that running schedulers see a change at once.
``ListCommand`` and ``ShowCommand`` are its Lister and ShowOne; their
``FormattedList``, ``FormattedDict`` (and ``manage_hosts.Usage``)
values print readably in a table, csv or value output and as
themselves with ``--format json`` or ``yaml``.

The database, oslo.messaging and the objects are imported when a
command runs, not when ``scheduler-manage`` starts: ``--help`` and the
commands that send nothing start without them.
"""

import typing

from cliff import columns
from cliff import command
from cliff import lister
from cliff import show
from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.conf import api_database
from scheduler.conf import database

LOG = logging.getLogger(__name__)

NOVA_MODE_REFUSAL = (
    'refused: [api_database] connection is set (Nova database mode), where '
    "Nova's own tables are authoritative: manage compute services and "
    'aggregates with nova-manage and the openstack CLI')

# The positional arguments naming a host, an aggregate.
HOST = ('host', {'metavar': 'HOST', 'help': 'service host name'})
AGGREGATE = ('aggregate', {'metavar': 'AGGREGATE',
                           'help': 'aggregate name or id'})


# The formatters that print a structured value as its table text.
TEXT_FORMATS = ('csv', 'value')

# The exit status of a request that no host can take (NoValidHost):
# ``explain``'s dry run and ``server boot``.
NO_VALID_HOST = 3

# Connection retries of a cast before it is given up (oslo.messaging's
# default, None, retries for ever).
CAST_RETRIES = 2

CHANGE_NOT_SENT = (
    'warning: the database has the change, but the schedulers could not be '
    'told (%s): running schedulers keep their aggregates until they are '
    'restarted (they read aggregates at start-up only; their refreshes do '
    'not read them again)')


def refusals() -> tuple[type[Exception], ...]:
    """The exceptions that end a command with one line and status 1."""
    from scheduler import exception
    from scheduler.db import hosts

    return (exception.NotFound, exception.Invalid, hosts.Refused)


def database_failures() -> tuple[type[Exception], ...]:
    """The exceptions of a database that cannot be used (oslo.db's and
    the driver's, through SQLAlchemy)."""
    from oslo_db import exception as db_exc
    from sqlalchemy import exc as sa_exc

    return (db_exc.DBError, sa_exc.DBAPIError)


def schema_problem() -> str | None:
    """``scheduler.db.migration.schema_problem`` of ``[database]
    connection``, or the one line of why that database cannot be read;
    None when it is at this release's revision."""
    from scheduler.db import api
    from scheduler.db import migration

    try:
        return migration.schema_problem()
    except database_failures() as exc:
        return unusable(exc)
    finally:
        api.get_engine().dispose()


def unusable(exc: Exception) -> str:
    """The one line of a database failure ``exc`` of ``[database]
    connection`` (its URL without the password)."""
    from scheduler.db.nova import cells

    return ('the database of [database] connection (%s) cannot be used: %s'
            % (cells.safe_url(CONF.database.connection),
               cells.first_line(exc)))


class DatabaseCommand(command.Command):
    """A command on ``[database] connection``, refused (one line on
    stderr, status 1) without one, on a database that is not at this
    release's revision when ``needs_schema``, and when the database
    fails it."""

    # Whether oslo.log writes to stdout when no log file is set (else to
    # stderr, so that stdout holds the output alone).
    logs_to_stdout = False
    # Whether the command reads or writes the schema (not ``db sync``).
    needs_schema = True

    def get_epilog(self) -> str:
        """The command's own epilog.  cliff's also names the plug-in
        distribution of a command that is not the application's, and
        reads the metadata of every installed distribution to learn it
        (about 0.3 s of each call); every command here is the
        application's own."""
        return self._epilog or ''

    def run(self, parsed_args) -> int:
        problem = database.connection_problem(CONF)
        if problem is None and self.needs_schema:
            problem = schema_problem()
        if problem is not None:
            return self.refuse(problem)
        try:
            return super().run(parsed_args)
        except database_failures() as exc:
            LOG.debug('%s failed', self.cmd_name, exc_info=True)
            return self.refuse(unusable(exc))

    def refuse(self, problem: str) -> int:
        """Write ``scheduler-manage COMMAND: problem`` on stderr; the
        exit status of a refusal, 1."""
        self.app.stderr.write('%s %s: %s\n' % (self.app.NAME,
                                               self.cmd_name, problem))
        return 1


class StandaloneCommand(DatabaseCommand):
    """A command on the standalone schema's hosts and aggregates."""

    # What the command's help says after the docstring's one line.
    details = ''
    # The arguments, positional and optional: (name or flag, keywords of
    # ``add_argument``).
    arguments: tuple[tuple[str, dict[str, typing.Any]], ...] = ()

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        for name, options in self.arguments:
            parser.add_argument(name, **options)
        return parser

    def get_description(self) -> str:
        summary = super().get_description()
        if not self.details:
            return summary
        return '%s\n\n%s' % (summary, self.details)

    def run(self, parsed_args) -> int:
        if api_database.nova_mode(CONF):
            self.app.stderr.write(NOVA_MODE_REFUSAL + '\n')
            return 1
        try:
            return super().run(parsed_args)
        except refusals() as exc:
            return self.refuse(str(exc))

    @staticmethod
    def context() -> typing.Any:
        """An admin context for the database and the casts."""
        from scheduler import context as scheduler_context

        return scheduler_context.get_admin_context()

    def tell_schedulers(self, context: typing.Any, method: str,
                        aggregates: list[dict[str, typing.Any]]) -> bool:
        """Send ``method`` (``update_aggregates``, with every aggregate
        of ``aggregates``, or ``delete_aggregate``, with the one) to the
        running schedulers, as Nova's API does after its write; each
        aggregate is a dict of ``scheduler.db.api.aggregate_get``'s
        shape.  Connection attempts are bounded (``CAST_RETRIES``); a
        cast that cannot be sent is a warning on stderr, the database
        write standing.  Returns whether the cast was sent.
        """
        if not aggregates:
            return True
        # oslo.messaging: imported by the commands that send only.
        from scheduler import rpc
        from scheduler.objects import aggregate as aggregate_obj
        from scheduler.server import rpcapi

        objects = [aggregate_obj.Aggregate.from_db(row)
                   for row in aggregates]
        transport = None
        try:
            rpc.set_defaults(CONF)
            transport = rpc.get_transport(CONF)
            client = rpcapi.SchedulerAPI(transport)
            client.client = client.client.prepare(retry=CAST_RETRIES)
            if method == 'delete_aggregate':
                client.delete_aggregate(context, objects[0])
            else:
                client.update_aggregates(context, objects)
        except Exception as exc:
            LOG.debug('The %s cast failed', method, exc_info=True)
            self.app.stderr.write(CHANGE_NOT_SENT % exc + '\n')
            return False
        finally:
            if transport is not None:
                transport.cleanup()
        return True


def text(value: typing.Any) -> typing.Any:
    """A cell's value as a table prints it (``human_readable`` of a
    formattable column), else the value itself."""
    if isinstance(value, columns.FormattableColumn):
        return value.human_readable()
    return value


class ListCommand(StandaloneCommand, lister.Lister):
    """A listing; ``--format csv|value`` print lists, dicts and usages
    as a table does (``json`` and ``yaml`` keep their structure)."""

    def produce_output(self, parsed_args, column_names, data):
        if parsed_args.formatter in TEXT_FORMATS:
            data = [tuple(text(value) for value in row) for row in data]
        return super().produce_output(parsed_args, column_names, data)


class ShowCommand(StandaloneCommand, show.ShowOne):
    """One object's fields, printed as ``ListCommand`` prints a row."""

    def produce_output(self, parsed_args, column_names, data):
        if parsed_args.formatter in TEXT_FORMATS:
            data = tuple(text(value) for value in data)
        return super().produce_output(parsed_args, column_names, data)


class FormattedList(columns.FormattableColumn):
    """A list: ``a, b`` in a table, the list itself in JSON."""

    def human_readable(self) -> str:
        return ', '.join(str(item) for item in self._value)


class FormattedDict(columns.FormattableColumn):
    """A dict: ``k='v', k2='v2'`` in a table (as the openstack CLI shows
    properties), the dict itself in JSON."""

    def human_readable(self) -> str:
        return ', '.join('%s=%r' % item
                         for item in sorted(self._value.items()))


def shown(fields: dict[str, typing.Any]) -> tuple[tuple, tuple]:
    """A ShowOne's ``(names, values)`` of ``fields``, in their order."""
    return tuple(fields), tuple(fields.values())


def listing(columns: tuple[tuple[str, str], ...],
            rows: typing.Iterable[dict[str, typing.Any]]
            ) -> tuple[tuple, list[tuple]]:
    """A Lister's ``(headings, rows)``: ``columns`` are ``(heading,
    field)`` pairs, each row a dict of fields."""
    return (tuple(heading for heading, _ in columns),
            [tuple(row[field] for _, field in columns) for row in rows])


def timestamp(value: typing.Any) -> str | None:
    """A naive UTC datetime as ISO 8601 text to the second, or None."""
    return value.isoformat(timespec='seconds') if value else None
