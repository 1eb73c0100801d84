"""``scheduler-status upgrade check``: the checks an operator runs before
(and after) an upgrade, with oslo.upgradecheck, as ``nova-status
upgrade check`` does for Nova.

``scheduler-status --config-file /etc/scheduler/scheduler.conf upgrade
check`` prints a table of the checks of ``scheduler.server.preflight``: the
database connection is set; the driver, filter and weigher names
resolve; the databases can be used and the schema is at this release's
revision; in Placement mode, Placement's database and API can be used.
Exit status: 0 when all succeed, 2 when one fails (oslo.upgradecheck's
codes).
"""

import sys

from oslo_upgradecheck import upgradecheck

from scheduler.conf import CONF
from scheduler.server import preflight


def _result(problem):
    if problem is None:
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)
    return upgradecheck.Result(upgradecheck.Code.FAILURE, problem)


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``scheduler-status upgrade check``."""

    def _connection(self):
        return _result(preflight.connection_problem())

    def _plugins(self):
        return _result(preflight.plugin_problem())

    def _options(self):
        # After _plugins: the plug-ins' own options are registered then.
        preflight.plugin_problem()
        return _result(preflight.options_problem())

    def _databases(self):
        if preflight.connection_problem():
            return _result('not checked: no [database] connection is set')
        return _result(preflight.database_problem())

    def _placement(self):
        if not CONF.scheduler.use_placement:
            return upgradecheck.Result(
                upgradecheck.Code.SUCCESS,
                'not checked: [scheduler] use_placement is off')
        return _result(preflight.placement_problem())

    _upgrade_checks = (
        ('Database connection set', _connection),
        ('Driver, filters and weighers', _plugins),
        ('Option values', _options),
        ('Databases and schema revision', _databases),
        ('Placement mode', _placement),
    )


def main(argv=None):
    return upgradecheck.main(
        CONF, project='scheduler', upgrade_command=Checks(),
        argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
