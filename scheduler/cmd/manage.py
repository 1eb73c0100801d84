"""``scheduler-manage``: administrative commands on the scheduler database.

Usage::

    scheduler-manage [--config-file F] db sync [VERSION]
    scheduler-manage [--config-file F] db version
    scheduler-manage [--config-file F] host add|list|show|disable|enable|
                                            delete|heartbeat ...
    scheduler-manage [--config-file F] aggregate create|delete|add-host|
                                                 remove-host|set-metadata|
                                                 list|show ...
    scheduler-manage [--config-file F] explain [--spec FILE | --vcpus N ...]
    scheduler-manage [--config-file F] server boot [--vcpus N ...]
    scheduler-manage [--config-file F] server delete HOST INSTANCE
    scheduler-manage help [COMMAND]

``db sync`` creates or upgrades the schema of ``[database] connection``
to revision ``VERSION`` (default: the newest) and is harmless to repeat;
``db version`` prints the current revision, or ``None`` for an empty
database.

``[database] connection`` is always the scheduler's own database, in
Nova database mode too (``[api_database] connection`` set): ``db sync``
never reads or changes Nova's databases, and refuses, with one line on
stderr and exit status 1, a database that holds another application's
schema (a Nova cell or API database).  The ``host`` and ``aggregate``
commands (``scheduler.cmd.manage_hosts``,
``scheduler.cmd.manage_aggregates``) manage the compute services,
compute nodes and aggregates of the standalone schema, and refuse to run
in Nova database mode, where Nova's own tables are authoritative.
``server boot`` asks the running schedulers for hosts as Nova's
conductor does, and ``server delete`` tells them an instance is gone
(``scheduler.cmd.manage_servers``).

Every command but ``help`` refuses to run, with one line on stderr and
exit status 1, when no ``[database] connection`` is configured (the
embedded SQLite default is the replay's: a command on it would write
``./scheduler.sqlite`` in the current directory, which no service
reads), and the commands on the schema refuse a database that is not at
this release's revision: "run ``scheduler-manage db sync``"
(``scheduler.cmd.manage_common.DatabaseCommand``).

The commands are cliff commands (a static command map, as
python-openstackclient's ``App``/``CommandManager`` runs them): the
listing and showing ones, ``explain`` included, take openstackclient's
``-f/--format table|json|value|yaml`` (``csv`` too for listings) and
``-c/--column COLUMN``.  oslo.config reads the
``--config-file``/``--config-dir`` given before the command.  Exit
status: 0 on success, 1 when a command fails or is refused, 2 for a
command line that cannot be parsed (usage on stderr), 3 when ``explain``
or ``server boot`` finds no host for the request (NoValidHost).
Logging goes to ``[DEFAULT] log_file`` alone when it is set
(``scheduler.config.log_to_terminal``).

The database layer, alembic, oslo.messaging and the engine are imported
when a command runs and needs them: ``--help`` starts without any of
them, and only the commands that send casts set oslo.messaging's
defaults.
"""

import argparse
import sys

from cliff import app
from cliff import command
from cliff import commandmanager
from cliff import complete
from cliff import help as cliff_help
from oslo_log import log as logging

from scheduler import config
from scheduler.cmd import manage_aggregates
from scheduler.cmd import manage_common
from scheduler.cmd import manage_explain
from scheduler.cmd import manage_hosts
from scheduler.cmd import manage_servers
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)

DESCRIPTION = 'Administrative commands on the scheduler database.'


class DbSync(manage_common.DatabaseCommand):
    """Create or upgrade the schema (harmless to repeat)."""

    # oslo.log writes to stdout without a log file, as it always did here.
    logs_to_stdout = True
    needs_schema = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        # Positional, as nova-manage's: a "--version" anywhere is the
        # application's (cliff reads it before the command's options).
        parser.add_argument('target_version', nargs='?', default=None,
                            metavar='VERSION',
                            help='alembic revision to reach (default: head)')
        return parser

    def take_action(self, parsed_args):
        from scheduler.db import migration

        version = parsed_args.target_version or 'head'
        try:
            migration.db_sync(version=version)
        except migration.ForeignSchema as exc:
            self.app.stderr.write('db sync: %s\n' % exc)
            return 1
        LOG.info('Database synced to %s', version)
        return 0


class DbVersion(manage_common.DatabaseCommand):
    """Print the current schema revision."""

    logs_to_stdout = True
    needs_schema = False

    def take_action(self, parsed_args):
        from scheduler.db import migration

        self.app.stdout.write('%s\n' % migration.db_version())
        return 0


COMMANDS: dict[str, type[command.Command]] = {
    'db sync': DbSync,
    'db version': DbVersion,
    **manage_hosts.COMMANDS,
    **manage_aggregates.COMMANDS,
    **manage_explain.COMMANDS,
    **manage_servers.COMMANDS,
}


class ManageApp(app.App):
    """The ``scheduler-manage`` application: cliff's App over
    ``COMMANDS``, with oslo.config's ``--config-file``/``--config-dir``
    and oslo.log's logging."""

    NAME = 'scheduler-manage'

    def __init__(self):
        # No command entry points: the group only names the manager.
        manager = commandmanager.CommandManager('scheduler.manage')
        for name, factory in COMMANDS.items():
            manager.add_command(name, factory)
        super().__init__(description=DESCRIPTION,
                         version=config.version(),
                         command_manager=manager,
                         # "COMMAND --help" is the command's help.
                         deferred_help=True)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        for action in parser._actions:
            if isinstance(action, argparse._VersionAction):
                action.version = '%s %s' % (self.NAME, version)
        parser.add_argument('--config-file', action='append', default=[],
                            metavar='PATH',
                            help='an oslo.config file (repeat for several; '
                            'default: /etc/scheduler/scheduler.conf and '
                            'the others oslo.config looks for)')
        parser.add_argument('--config-dir', action='append', default=[],
                            metavar='DIR',
                            help='a directory of *.conf files')
        return parser

    def configure_logging(self):
        """oslo.log sets up logging (``prepare_to_run_command``)."""

    def run(self, argv):
        """Run one command (no interactive mode); returns the exit
        status."""
        try:
            options, remainder = self.parser.parse_known_args(argv)
        except SystemExit as exc:
            return _status(exc)
        if not remainder and not options.deferred_help:
            return self._usage_error('a command is required')
        try:
            return super().run(argv)
        except SystemExit as exc:
            return _status(exc)

    def run_subcommand(self, argv):
        try:
            self.command_manager.find_command(argv)
        except ValueError:
            words = [word for word in argv if not word.startswith('-')]
            if not words:
                return self._usage_error('unrecognized arguments: %s'
                                         % ' '.join(argv))
            known = sorted(name for name in self.command_manager.commands
                           if name.split()[0] == words[0])
            return self._usage_error('unknown command %r%s' % (
                ' '.join(words[:2]),
                '; %s takes one of: %s' % (words[0], ', '.join(known))
                if known else '; "%s help" lists the commands' % self.NAME))
        return super().run_subcommand(argv)

    def _usage_error(self, message):
        self.stderr.write('usage: %s [--config-file PATH] COMMAND ...\n'
                          '%s: error: %s\n' % (self.NAME, self.NAME, message))
        return 2

    def prepare_to_run_command(self, cmd):
        """Parse the configuration (``--config-file``, ``--config-dir``;
        ``--debug`` and ``--log-file`` go to oslo.log) before a command
        of ours runs."""
        if isinstance(cmd, (cliff_help.HelpCommand,
                            complete.CompleteCommand)):
            return
        args = []
        for path in self.options.config_file:
            args += ['--config-file', path]
        for path in self.options.config_dir:
            args += ['--config-dir', path]
        if self.options.debug:
            args.append('--debug')
        if self.options.log_file:
            args += ['--log-file', self.options.log_file]
        # Parsed state of an earlier parse in this process (main() run
        # in-process) would refuse oslo.log's command-line options.
        CONF.clear()
        config.register_log_options()
        CONF.set_default('default_log_levels',
                         logging.get_default_log_levels()
                         + quiet_log_levels(cmd))
        # oslo.messaging's defaults are set by the commands that send
        # (``StandaloneCommand.tell_schedulers``), which import it.
        # The log file alone when one is set (``config.log_to_terminal``).
        terminal = ('stdout' if getattr(cmd, 'logs_to_stdout', False)
                    else 'stderr')
        config.parse_args(args, messaging=False, terminal=terminal)


def quiet_log_levels(cmd):
    """oslo.log ``default_log_levels`` entries that keep the INFO lines
    of the libraries out of ``cmd``'s terminal: oslo.service's backend
    choice, and alembic's for the schema check of a command on the
    schema (``db sync`` and ``db version`` keep alembic's, which tell
    what they did)."""
    levels = ['oslo_service.backend=WARNING']
    if getattr(cmd, 'needs_schema', False):
        levels.append('alembic=WARNING')
    return levels


def _status(exc):
    """The exit status a ``SystemExit`` (argparse's, cliff's help)
    stands for, as Python's own exit takes it."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and
    return its exit status."""
    return ManageApp().run(sys.argv[1:] if argv is None else list(argv))


if __name__ == '__main__':
    sys.exit(main())
