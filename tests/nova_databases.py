"""A Nova deployment's databases, made by Nova's own code, for tests.

``NovaDatabases.create(admin_url, workdir)`` makes, on the server of
``admin_url`` (``postgresql://...`` or ``sqlite://`` for files), an API
database, cell0 and two cell databases, and lets Nova 34's own commands
create their schemas: ``nova-manage api_db sync``, ``db sync``
(``--local_cell``, one per cell database) and ``cell_v2 map_cell0`` /
``cell_v2 create_cell`` (``cell1``, ``cell2``).  Its ``nova`` is a driver
process (``functional/nova_db_driver/driver.py``) that writes rows with
Nova's objects; this process never imports Nova.

The Nova virtualenv comes from ``tools/test-setup.sh``
(``$SCHEDULER_NOVA_VENV``, default ``~/.cache/scheduler-tests/nova-<v>``);
without it the tests fail with a hint, or are skipped under
``SCHEDULER_TEST_SKIP_NOVA=1``.  When the venv has no PostgreSQL driver,
this interpreter's ``psycopg2`` is lent to Nova's processes (the same
CPython build: the binary module loads in both).
"""

import concurrent.futures
import contextlib
import json
import os
import select
import subprocess
import tempfile
import threading

import sqlalchemy as sa
from nova_venv import nova_venv

from scheduler_tools import databases
from scheduler_tools.bench.versus_nova_venv import lent_psycopg2

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'functional', 'nova_db_driver', 'driver.py')
ANSWER_TIMEOUT = 60
COMMAND_TIMEOUT = 180
CELLS = ('cell1', 'cell2')




def _nova_conf(path, api_url, cell_url, workdir):
    with open(path, 'w') as conf:
        conf.write('[DEFAULT]\ntransport_url = fake://\nstate_path = %s\n'
                   '[api_database]\nconnection = %s\n'
                   '[database]\nconnection = %s\n'
                   '[oslo_messaging_notifications]\ndriver = noop\n'
                   '[oslo_concurrency]\nlock_path = %s\n'
                   % (workdir, api_url, cell_url, workdir))
    return path


class NovaDriver:
    """The driver process: ``request(op, **args)`` returns its ``ok``
    answer, or raises AssertionError with its error (or its log, when it
    does not answer within ANSWER_TIMEOUT seconds).  ``script``: another
    driver of the same protocol (default: ``DRIVER``)."""

    def __init__(self, venv, conf_path, env, log_path, script=DRIVER):
        self.log_path = log_path
        with open(log_path, 'w') as log:
            self._process = subprocess.Popen(
                [os.path.join(venv, 'bin', 'python'), '-I', script,
                 conf_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True, env=env)
        assert self._answer() == 'ready'

    def _answer(self):
        stdout = self._process.stdout
        ready, _, _ = select.select([stdout], [], [], ANSWER_TIMEOUT)
        line = stdout.readline() if ready else ''
        if not line:
            self.close()
            with open(self.log_path) as log:
                raise AssertionError('the Nova driver did not answer:\n%s'
                                     % log.read()[-5000:])
        answer = json.loads(line)
        assert 'ok' in answer, answer
        return answer['ok']

    def request(self, op, **args):
        print(json.dumps(dict(args, op=op)), file=self._process.stdin,
              flush=True)
        return self._answer()

    def close(self):
        """End of input, then a kill if it has not ended 10 s later."""
        if self._process.poll() is not None:
            return
        self._process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


class NovaDatabases:
    """The URLs (``api``, ``cell0``, ``cell1``, ``cell2``), the cell
    mappings (``cells``: name -> uuid) and the ``nova`` driver of a Nova
    deployment made by Nova's migrations."""

    def __init__(self, admin_url, workdir):
        self.workdir = str(workdir)
        self.venv = nova_venv()
        self.urls = {name: databases.create_database(admin_url, 'nova_' + name)
                     for name in ('api', 'cell0') + CELLS}
        env = {key: value for key, value in os.environ.items()
               if not key.startswith('PYTHON')}
        lent = lent_psycopg2(
            os.path.join(self.venv, 'bin', 'python'), self.workdir)
        if lent:
            env['PYTHONPATH'] = env['NOVA_DB_DRIVER_PATH'] = lent
        self.env = env
        self.confs = {name: _nova_conf(
            os.path.join(self.workdir, 'nova-%s.conf' % name),
            self.urls['api'], self.urls[name], self.workdir)
            for name in ('cell0',) + CELLS}
        self.nova = None
        self.cells = {}

    def manage(self, conf_name, *args):
        """Run ``nova-manage --config-file <conf> args``; its output."""
        result = subprocess.run(
            [os.path.join(self.venv, 'bin', 'nova-manage'), '--config-file',
             self.confs[conf_name]] + list(args),
            capture_output=True, text=True, env=self.env,
            timeout=COMMAND_TIMEOUT, cwd=self.workdir)
        assert result.returncode == 0, (args, result.stdout,
                                        result.stderr[-5000:])
        return result.stdout

    def create(self):
        """Nova's schemas and cell mappings on every database, then the
        driver.  On one PostgreSQL server the databases are copies of
        templates that Nova's migrations made once per server and test
        session (``CREATE DATABASE ... TEMPLATE``: seconds instead of a
        minute), their cell mappings pointed at the copies; elsewhere
        Nova's migrations run on them."""
        template = _template_for(self)
        if template is None:
            self.migrate()
        else:
            self._copy(template)
        self.nova = NovaDriver(self.venv, self.confs['cell1'], self.env,
                               os.path.join(self.workdir, 'driver.log'))
        self.cells = {cell['name']: cell['uuid']
                      for cell in self.nova.request('cells')}
        return self

    def migrate(self):
        """Nova's migrations on every database (the cell databases in
        parallel), then the cell mappings."""
        self.manage('cell1', 'api_db', 'sync')
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda name: self.manage(
                name, 'db', 'sync', '--local_cell'), ('cell0',) + CELLS))
        self.manage('cell1', 'cell_v2', 'map_cell0', '--database_connection',
                    self.urls['cell0'])
        for name in CELLS:
            self.manage(name, 'cell_v2', 'create_cell', '--name', name,
                        '--database_connection', self.urls[name],
                        '--transport-url', 'fake://%s/' % name)

    def _copy(self, template):
        """Make each database a copy of ``template``'s, then point the
        copied API database's cell mappings at the copies."""
        for name, url in self.urls.items():
            _copy_database(template.urls[name], url)
        engine = sa.create_engine(self.urls['api'],
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.begin() as connection:
                for name in ('cell0',) + CELLS:
                    connection.execute(sa.text(
                        'UPDATE cell_mappings SET database_connection = :url'
                        ' WHERE name = :name'),
                        {'url': self.urls[name], 'name': name})
        finally:
            engine.dispose()

    def close(self):
        if self.nova is not None:
            self.nova.close()
        for url in self.urls.values():
            databases.drop_database(url)

    # ``with NovaDatabases(...) as made:`` creates them (closed again
    # when that fails) and closes them at the end: a module fixture's
    # set-up and tear-down, the set-up of its own inside the block.
    def __enter__(self):
        try:
            return self.create()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc_info):
        self.close()


# Per PostgreSQL server (host, port): the NovaDatabases whose migrated
# databases the later ones copy, for the test session.
_TEMPLATES = {}
_TEMPLATES_LOCK = threading.Lock()


def _server(url):
    """``(host, port)`` of a PostgreSQL URL, else None."""
    url = sa.engine.make_url(url)
    if url.get_backend_name() != 'postgresql':
        return None
    return url.host, url.port


def _template_for(made):
    """The migrated template NovaDatabases for ``made`` (made once per
    server), or None when ``made``'s databases are not all on one
    PostgreSQL server or ``made`` is a subclass (its own layout)."""
    servers = {_server(url) for url in made.urls.values()}
    if type(made) is not NovaDatabases or len(servers) != 1 or None in servers:
        return None
    server = servers.pop()
    with _TEMPLATES_LOCK:
        if server not in _TEMPLATES:
            admin = sa.engine.make_url(made.urls['api']).set(
                database='postgres').render_as_string(hide_password=False)
            template = NovaDatabases(admin, tempfile.mkdtemp(
                prefix='nova-template-'))
            template.migrate()
            _TEMPLATES[server] = template
        return _TEMPLATES[server]


def _copy_database(template_url, url):
    """Recreate the database of ``url`` as a copy of ``template_url``'s
    (same PostgreSQL server; nothing may be connected to the template)."""
    template = sa.engine.make_url(template_url)
    target = sa.engine.make_url(url)
    admin = sa.create_engine(target.set(database='postgres'),
                             isolation_level='AUTOCOMMIT',
                             poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(
                'DROP DATABASE IF EXISTS "%s"' % target.database))
            connection.execute(sa.text(
                'CREATE DATABASE "%s" TEMPLATE "%s"'
                % (target.database, template.database)))
    finally:
        admin.dispose()


def schema_of(url):
    """``(table names, alembic_version rows)`` of a database, to compare
    before and after something that must not touch it."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            tables = sorted(sa.inspect(connection).get_table_names())
            versions = sorted(connection.execute(sa.text(
                'SELECT version_num FROM alembic_version')).scalars())
            columns = {table: sorted(column['name'] for column in
                                     sa.inspect(connection).get_columns(table))
                       for table in ('compute_nodes', 'services',
                                     'instances') if table in tables}
    finally:
        engine.dispose()
    return tables, versions, columns

