"""``scheduler-status upgrade check``: the checks an operator runs before
(and after) an upgrade, with oslo.upgradecheck, as ``nova-status
upgrade check`` does for Nova.

``scheduler-status --config-file /etc/scheduler/scheduler.conf upgrade
check`` prints a table of the checks of ``scheduler.server.preflight``: the
database connection is set (``scheduler.conf.database.
connection_problem``, the check ``scheduler-service`` and
``scheduler-manage`` refuse to run without); the driver, filter and
weigher names resolve; the databases can be used and the schema is at
this release's revision (else: run ``scheduler-manage db sync``); in
Placement mode, Placement's database and API can be used.  Exit status:
0 when all succeed, 2 when one fails (oslo.upgradecheck's codes, which
deployment tools read as nova-status's); ``--version`` prints the
version.  ``scheduler.server.preflight`` (the engine, the plug-ins) is
imported when the checks run, so that ``--help`` and ``--version``
start quickly.
"""

import sys

from oslo_upgradecheck import upgradecheck

from scheduler import config
from scheduler.conf import CONF


def _result(problem):
    if problem is None:
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)
    return upgradecheck.Result(upgradecheck.Code.FAILURE, problem)


def _preflight():
    from scheduler.server import preflight

    return preflight


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``scheduler-status upgrade check``."""

    def _connection(self):
        return _result(_preflight().connection_problem())

    def _plugins(self):
        return _result(_preflight().plugin_problem())

    def _options(self):
        # After _plugins: the plug-ins' own options are registered then.
        _preflight().plugin_problem()
        return _result(_preflight().options_problem())

    def _databases(self):
        if _preflight().connection_problem():
            return _result('not checked: no [database] connection is set')
        return _result(_preflight().database_problem())

    def _placement(self):
        if not CONF.scheduler.use_placement:
            return upgradecheck.Result(
                upgradecheck.Code.SUCCESS,
                'not checked: [scheduler] use_placement is off')
        return _result(_preflight().placement_problem())

    _upgrade_checks = (
        ('Database connection set', _connection),
        ('Driver, filters and weighers', _plugins),
        ('Option values', _options),
        ('Databases and schema revision', _databases),
        ('Placement mode', _placement),
    )


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``) as oslo.upgradecheck's
    ``main`` does, with ``--version``; run the command and return its
    exit status."""
    upgradecheck.register_cli_options(CONF, Checks())
    CONF(sys.argv[1:] if argv is None else argv, project='scheduler',
         version=config.version())
    # Where oslo.upgradecheck's check() reads ``upgrade check --json``.
    upgradecheck.CONF = CONF
    return upgradecheck.run(CONF)


if __name__ == '__main__':
    sys.exit(main())
