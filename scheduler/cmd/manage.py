"""``scheduler-manage``: administrative commands on the scheduler database.

Usage::

    scheduler-manage [--config-file F] db sync [--version V]
    scheduler-manage [--config-file F] db version

``db sync`` creates or upgrades the schema of ``[database] connection``
to revision ``V`` (default: the newest) and is harmless to repeat;
``db version`` prints the current revision, or ``None`` for an empty
database.  Commands are oslo.config sub-commands, as in ``nova-manage``.

``[database] connection`` is always the scheduler's own database, in
Nova database mode too (``[api_database] connection`` set): ``db sync``
never reads or changes Nova's databases, and refuses, with one line on
stderr and exit status 1, a database that holds another application's
schema (a Nova cell or API database).
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from scheduler import config
from scheduler.conf import CONF
from scheduler.db import migration

LOG = logging.getLogger(__name__)


def _db_sync():
    version = CONF.category.target_version or 'head'
    try:
        migration.db_sync(version=version)
    except migration.ForeignSchema as exc:
        print('db sync: %s' % exc, file=sys.stderr)
        return 1
    LOG.info('Database synced to %s', version)
    return 0


def _db_version():
    print(migration.db_version())
    return 0


def _add_command_parsers(subparsers):
    db = subparsers.add_parser('db', help='database schema commands')
    actions = db.add_subparsers(title='db commands', dest='db_command')
    actions.required = True
    sync = actions.add_parser(
        'sync', help='create or upgrade the schema (harmless to repeat)')
    sync.add_argument('--version', dest='target_version', default=None,
                      metavar='VERSION',
                      help='alembic revision to reach (default: head)')
    sync.set_defaults(func=_db_sync)
    version = actions.add_parser(
        'version', help='print the current schema revision')
    version.set_defaults(func=_db_version)


CATEGORY_OPT = cfg.SubCommandOpt('category', title='Command categories',
                                 help='available categories',
                                 handler=_add_command_parsers)


def _register_cli_opts(conf):
    """Register the sub-commands once, before the command line is parsed."""
    if 'category' not in conf:
        conf.register_cli_opt(CATEGORY_OPT)


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command and
    return its exit status."""
    _register_cli_opts(CONF)
    config.parse_args(sys.argv[1:] if argv is None else argv)
    return CONF.category.func()


if __name__ == '__main__':
    sys.exit(main())
