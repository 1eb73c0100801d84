"""devstack/plugin.sh on MySQL and PostgreSQL as devstack configures them.

The plugin's ``stack install`` and ``stack post-config`` phases run
against the stand-ins of devstack's functions
(tests/unit/devstack/devstack_stubs.sh, which follow devstack master at
commit 493835a6 of 2026-07-17; devstack cannot be fetched at test time),
with DATABASE_TYPE, DATABASE_USER, DATABASE_PASSWORD and DATABASE_HOST
naming the session's real PostgreSQL or MariaDB server.  The stand-in
``database_connection_url`` writes devstack's URLs:

* MySQL: ``mysql+pymysql://USER:PASS@HOST/DB?charset=utf8&plugin=dbcounter``
  (devstack's ``dbcounter`` SQLAlchemy plugin, which devstack installs into
  its global venv, is a stand-in plugin of the same entry point here);
* PostgreSQL: ``postgresql://USER:PASS@HOST/DB?client_encoding=utf8``,
  no driver named: SQLAlchemy 2.1 loads psycopg (3) for it, which the
  plugin installs with this service's ``postgresql`` extra.

Then the real ``scheduler-manage --config-file ... db sync`` (the
plugin's init phase, not stubbed) must make the schema through the
written URL.
"""

import os
import sysconfig
import uuid

import pytest
import sqlalchemy as sa
from devstack.devstack_node import REPO
from devstack.devstack_node import Devstack

from scheduler_tools import databases

pytestmark = pytest.mark.timeout(90)

PASSWORD = 'secret'

DBCOUNTER_STANDIN = '''\
import os

from sqlalchemy.engine import CreateEnginePlugin


class QueryCounter(CreateEnginePlugin):
    """Records the database of each engine it is loaded for."""

    def update_url(self, url):
        return url

    def engine_created(self, engine):
        with open(os.environ['DBCOUNTER_STANDIN_LOG'], 'a') as f:
            f.write('%s\\n' % engine.url.database)
'''


def _dbcounter_standin(root):
    """A directory to put on PYTHONPATH: a distribution registering the
    ``sqlalchemy.plugins`` entry point ``dbcounter``, as devstack's
    ``pip_install tools/dbcounter`` does."""
    site = root / 'dbcounter-site'
    info = site / 'dbcounter_standin-1.0.dist-info'
    info.mkdir(parents=True)
    (site / 'dbcounter_standin.py').write_text(DBCOUNTER_STANDIN)
    (info / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: dbcounter-standin\nVersion: 1.0\n')
    (info / 'entry_points.txt').write_text(
        '[sqlalchemy.plugins]\ndbcounter = dbcounter_standin:QueryCounter\n')
    return site


@pytest.fixture
def devstack_database(fresh_database):
    """Factory: ``db_url, user = devstack_database(admin_url)``: an empty
    database and a user with ``PASSWORD`` and every privilege, as
    devstack's configure_database_{mysql,postgresql} make DATABASE_USER.
    Both are dropped at teardown, the database first (the user owns
    what ``db sync`` made in it)."""
    made = []

    def create(admin_url):
        db_url = fresh_database(admin_url, prefix='devstack')
        user = 'devstack_%s' % uuid.uuid4().hex[:8]
        if sa.engine.make_url(admin_url).get_backend_name() == 'mysql':
            statements = [
                "CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (user, PASSWORD),
                "GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%'" % user]
            drop = "DROP USER '%s'@'%%'" % user
        else:
            statements = ["CREATE ROLE %s WITH SUPERUSER LOGIN PASSWORD "
                          "'%s'" % (user, PASSWORD)]
            drop = 'DROP ROLE %s' % user
        databases.execute_admin(admin_url, statements)
        made.append((admin_url, db_url, drop))
        return db_url, user

    yield create
    for admin_url, db_url, drop in made:
        fresh_database.drop(db_url)
        databases.execute_admin(admin_url, [drop])


def _tables(db_url):
    engine = sa.create_engine(db_url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'])
def test_plugin_connects_with_devstack_urls(request, tmp_path, backend,
                                            devstack_database):
    db_url, user = devstack_database(
        request.getfixturevalue(backend + '_url'))
    server = sa.engine.make_url(db_url)
    counted = tmp_path / 'dbcounter.log'
    node = Devstack(
        tmp_path, exec_prefix=sysconfig.get_path('scripts'),
        # No n-cpu: the plugin's init is "db sync" alone (its "host add"
        # is tested with stand-ins), which keeps this test short.
        ENABLED_SERVICES='rabbit,%s,n-api,n-cond' % backend,
        DATABASE_TYPE=backend, DATABASE_USER=user,
        DATABASE_PASSWORD=PASSWORD,
        DATABASE_HOST='%s:%d' % (server.host, server.port),
        MYSQL_HOST=server.host, SCHEDULER_DB_NAME=server.database,
        SCHEDULER_CELL_UUID=str(uuid.uuid4()),
        DBCOUNTER_STANDIN_LOG=str(counted),
        PYTHONPATH=os.pathsep.join(
            [str(_dbcounter_standin(tmp_path))]
            + [p for p in [os.environ.get('PYTHONPATH')] if p]))

    proc = node.run(('stack', 'install'), ('stack', 'post-config'),
                    check=False)

    log = node.logdir / 'scheduler.log'
    assert proc.returncode == 0, proc.stderr + (
        log.read_text()[-2000:] if log.exists() else '')
    assert ['setup_package', REPO, '-e', backend] in node.calls()
    connection = node.config()['database']['connection']
    expected = {
        'postgresql': 'postgresql://%s:%s@%s/%s?client_encoding=utf8',
        'mysql': 'mysql+pymysql://%s:%s@%s/%s?charset=utf8&plugin=dbcounter',
    }[backend] % (user, PASSWORD, node.env['DATABASE_HOST'], server.database)
    assert connection == expected
    # db sync made the schema through the written URL.
    assert {'scheduler_alembic_version', 'compute_nodes',
            'services'} <= _tables(db_url)
    if backend == 'mysql':
        # The service passed devstack's plugin=dbcounter to SQLAlchemy.
        assert server.database in counted.read_text().split()
