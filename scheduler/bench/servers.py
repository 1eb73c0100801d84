"""Private RabbitMQ and PostgreSQL servers for the end-to-end benchmark.

When it is not given ``--transport-url`` / ``--database-connection``,
the benchmark starts its own servers on 127.0.0.1, in a temporary
directory, without touching any system service:

* RabbitMQ: its own epmd and node name, free ports for AMQP, Erlang
  distribution and epmd, its own cookie (``HOME`` is the temporary
  directory) and a configuration file that creates the user;
* PostgreSQL: ``initdb`` then ``postgres`` in the foreground, as the
  ``postgres`` OS user when run by root (PostgreSQL refuses root), with
  ``fsync`` off (the scheduler only reads; seeding is faster).

Each start is bounded in time (``ServerError`` on failure, with the end
of the server's log).  Servers stop when ``LocalServers`` exits, at
interpreter exit, and when this process dies (``PR_SET_PDEATHSIG``).
``create_database`` / ``drop_database`` make one database per fleet on
a PostgreSQL server the benchmark owns.
"""

import atexit
import contextlib
import ctypes
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import sqlalchemy as sa

RABBIT_USER = 'bench'
RABBIT_PASSWORD = 'bench'
POSTGRES_USER = 'postgres'
STOP_TIMEOUT_S = 30
POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


class ServerError(RuntimeError):
    """A server could not be started (missing binaries, time-out...)."""


# ------------------------------------------------------------ binaries --

def find_rabbitmq():
    """``(rabbitmq-server, epmd)`` paths, or None when either is missing."""
    servers = ['/usr/lib/rabbitmq/bin/rabbitmq-server'] + sorted(
        glob.glob('/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/'
                  'rabbitmq-server'), reverse=True)
    server = next((path for path in servers if os.access(path, os.X_OK)),
                  None)
    epmd = shutil.which('epmd') or next(
        iter(sorted(glob.glob('/usr/lib/erlang/erts-*/bin/epmd'),
                    reverse=True)), None)
    return (server, epmd) if server and epmd else None


def find_postgresql():
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb
    and postgres, or None."""
    def version(path):
        try:
            return int(path.rstrip('/').split('/')[-2])
        except ValueError:
            return 0

    for bindir in sorted(glob.glob('/usr/lib/postgresql/*/bin'),
                         key=version, reverse=True):
        if all(os.access(os.path.join(bindir, name), os.X_OK)
               for name in ('initdb', 'postgres')):
            return bindir
    return None


def rabbitmq_available():
    return find_rabbitmq() is not None


def postgresql_available():
    if find_postgresql() is None:
        return False
    if os.geteuid() != 0:
        return True
    try:
        pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        return False
    return True


# ------------------------------------------------------------- helpers --

def free_ports(count):
    """``count`` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(('127.0.0.1', 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_open(port):
    with contextlib.closing(socket.socket(socket.AF_INET,
                                          socket.SOCK_STREAM)) as sock:
        sock.settimeout(1)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _die_with_us():
    """preexec_fn: the child gets SIGTERM when this process dies."""
    def preexec():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except Exception:  # not Linux: the atexit hook still stops it
            pass
    return preexec


def _user_kwargs(user):
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {'user': entry.pw_uid, 'group': entry.pw_gid, 'extra_groups': []}


def _tail(path, lines=30):
    try:
        with open(path, 'rb') as stream:
            data = stream.read()[-16000:]
    except OSError as exc:
        return '<no log: %s>' % exc
    return '\n'.join(data.decode('utf-8', 'replace').splitlines()[-lines:])


class _Server:
    """A server process tree the benchmark owns, with its directory."""

    name = 'server'
    stop_signal = signal.SIGTERM

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        base = tempfile.gettempdir()
        self.tempdir = tempfile.mkdtemp(prefix='scheduler-bench-%s-'
                                        % self.name, dir=base)
        os.chmod(self.tempdir, 0o755)
        self.log_path = os.path.join(self.tempdir, 'server.log')
        self.procs = []
        self.url = None
        self.startup_s = None

    def spawn(self, cmd, env, user=None):
        with open(self.log_path, 'ab') as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=self.tempdir,
                start_new_session=True, preexec_fn=_die_with_us(),
                **_user_kwargs(user))
        self.procs.append(proc)
        return proc

    def run(self, cmd, env, user=None):
        """Run a set-up command to completion (bounded)."""
        with open(self.log_path, 'ab') as log:
            log.write(('$ %s\n' % ' '.join(cmd)).encode())
            log.flush()
            try:
                status = subprocess.call(
                    cmd, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, env=env, cwd='/',
                    timeout=self.timeout_s, **_user_kwargs(user))
            except subprocess.TimeoutExpired:
                raise ServerError('%s timed out\n%s' % (
                    cmd[0], _tail(self.log_path))) from None
        if status:
            raise ServerError('%s failed with status %d\n%s' % (
                ' '.join(cmd), status, _tail(self.log_path)))

    def wait_until(self, ready, proc, what):
        """Poll ``ready()`` until it is true, within the time-out."""
        deadline = time.monotonic() + self.timeout_s
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError('%s exited with status %s while starting'
                                  '\n%s' % (what, proc.returncode,
                                            _tail(self.log_path)))
            try:
                if ready():
                    return
            except Exception as exc:  # not ready yet
                last = exc
            time.sleep(POLL_S)
        raise ServerError('%s was not ready within %.0f s (last error: %r)'
                          '\n%s' % (what, self.timeout_s, last,
                                    _tail(self.log_path)))

    def start(self):
        """Start the server; return its URL.  On failure everything
        started is stopped and ServerError raised."""
        started = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self.url

    def _start(self):
        raise NotImplementedError

    def stop(self):
        """Stop the processes (newest first) and remove the directory."""
        while self.procs:
            proc = self.procs.pop()
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, self.stop_signal)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STOP_TIMEOUT_S)
            # What is left of its session (the server's children) goes.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        shutil.rmtree(self.tempdir, ignore_errors=True)


class RabbitMQServer(_Server):
    """A private RabbitMQ node with its own epmd, on loopback only."""

    name = 'rabbitmq'

    def _start(self):
        found = find_rabbitmq()
        if found is None:
            raise ServerError('RabbitMQ not found (rabbitmq-server, epmd)')
        server, epmd = found
        amqp_port, dist_port, epmd_port = free_ports(3)
        config = os.path.join(self.tempdir, 'rabbitmq.conf')
        with open(config, 'w') as stream:
            stream.write(
                'listeners.tcp.default = 127.0.0.1:%d\n'
                'loopback_users = none\n'
                'default_user = %s\ndefault_pass = %s\n'
                'default_vhost = /\n'
                'default_permissions.configure = .*\n'
                'default_permissions.read = .*\n'
                'default_permissions.write = .*\n'
                'log.console = true\nlog.console.level = warning\n'
                'log.file = false\n'
                % (amqp_port, RABBIT_USER, RABBIT_PASSWORD))
        env = {
            'PATH': os.pathsep.join([os.path.dirname(server),
                                     os.path.dirname(epmd),
                                     os.environ.get('PATH', os.defpath)]),
            'HOME': self.tempdir,
            'LANG': 'C.UTF-8', 'LC_ALL': 'C.UTF-8',
            'ERL_EPMD_PORT': str(epmd_port),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODENAME': 'scheduler-bench-%s@localhost'
                                 % uuid.uuid4().hex[:8],
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(amqp_port),
            'RABBITMQ_DIST_PORT': str(dist_port),
            'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
                '-kernel inet_dist_use_interface {127,0,0,1}',
            'RABBITMQ_CONFIG_FILE': config,
            'RABBITMQ_ADVANCED_CONFIG_FILE':
                os.path.join(self.tempdir, 'advanced.config'),
            'RABBITMQ_CONF_ENV_FILE':
                os.path.join(self.tempdir, 'rabbitmq-env.conf'),
            'RABBITMQ_ENABLED_PLUGINS_FILE':
                os.path.join(self.tempdir, 'enabled_plugins'),
            'RABBITMQ_ENABLED_PLUGINS': '',
            'RABBITMQ_MNESIA_BASE': os.path.join(self.tempdir, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(self.tempdir, 'log'),
            'RABBITMQ_LOGS': '-',
            'RABBITMQ_PID_FILE': os.path.join(self.tempdir, 'rabbit.pid'),
        }
        # Our own epmd in the foreground, so that we own and stop it.
        epmd_proc = self.spawn([epmd, '-port', str(epmd_port), '-address',
                                '127.0.0.1'], env)
        self.wait_until(lambda: port_open(epmd_port), epmd_proc, 'epmd')
        proc = self.spawn([server], env)

        def ready():
            import amqp
            connection = amqp.Connection(
                '127.0.0.1:%d' % amqp_port, userid=RABBIT_USER,
                password=RABBIT_PASSWORD, connect_timeout=2)
            connection.connect()
            connection.close()
            return True

        self.wait_until(ready, proc, 'rabbitmq-server')
        self.url = 'rabbit://%s:%s@127.0.0.1:%d/' % (
            RABBIT_USER, RABBIT_PASSWORD, amqp_port)


class PostgreSQLServer(_Server):
    """``initdb`` + ``postgres``; ``url`` is the superuser's URL on the
    ``postgres`` database."""

    name = 'postgresql'
    stop_signal = signal.SIGINT   # "fast" shutdown

    def _start(self):
        bindir = find_postgresql()
        if bindir is None:
            raise ServerError('PostgreSQL not found '
                              '(/usr/lib/postgresql/*/bin/initdb)')
        user = POSTGRES_USER if os.geteuid() == 0 else None
        if user is not None:
            try:
                entry = pwd.getpwnam(user)
            except KeyError:
                raise ServerError('no OS user %r to run PostgreSQL as'
                                  % user) from None
            # initdb creates the data directory and postgres its socket
            # here; the log is written through the descriptor we open.
            os.chown(self.tempdir, entry.pw_uid, entry.pw_gid)
        datadir = os.path.join(self.tempdir, 'data')
        env = {'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
               'LANG': 'C', 'LC_ALL': 'C', 'TZ': 'UTC'}
        self.run([os.path.join(bindir, 'initdb'), '-D', datadir, '-U',
                  POSTGRES_USER, '-A', 'trust', '-E', 'UTF8', '--locale=C',
                  '--no-sync'], env, user)
        (port,) = free_ports(1)
        options = {'listen_addresses': '127.0.0.1', 'port': str(port),
                   'unix_socket_directories': self.tempdir,
                   'max_connections': '200', 'fsync': 'off',
                   'synchronous_commit': 'off', 'full_page_writes': 'off',
                   'log_min_messages': 'warning', 'timezone': 'UTC',
                   'log_timezone': 'UTC'}
        cmd = [os.path.join(bindir, 'postgres'), '-D', datadir]
        for key, value in options.items():
            cmd += ['-c', '%s=%s' % (key, value)]
        proc = self.spawn(cmd, env, user)

        def ready():
            import psycopg2
            psycopg2.connect(host='127.0.0.1', port=port,
                             user=POSTGRES_USER, dbname='postgres',
                             connect_timeout=2).close()
            return True

        self.wait_until(ready, proc, 'postgres')
        self.url = 'postgresql+psycopg2://%s@127.0.0.1:%d/postgres' % (
            POSTGRES_USER, port)


class LocalServers:
    """Context manager: start RabbitMQ and/or PostgreSQL on entry, stop
    them on exit (and at interpreter exit, whatever happens)."""

    def __init__(self, rabbitmq=True, postgresql=True, timeout_s=120.0):
        self.wanted = {'rabbitmq': rabbitmq, 'postgresql': postgresql}
        self.timeout_s = timeout_s
        self.rabbit_url = None
        self.postgresql_url = None
        self.startup_s = {}
        self._servers = []

    def __enter__(self):
        atexit.register(self.stop)
        try:
            if self.wanted['rabbitmq']:
                self.rabbit_url = self._start(RabbitMQServer)
            if self.wanted['postgresql']:
                self.postgresql_url = self._start(PostgreSQLServer)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, cls):
        server = cls(self.timeout_s)
        self._servers.append(server)
        url = server.start()
        self.startup_s[cls.name] = server.startup_s
        return url

    def stop(self):
        while self._servers:
            self._servers.pop().stop()

    def __exit__(self, *exc_info):
        self.stop()
        atexit.unregister(self.stop)


# ----------------------------------------------------------- databases --

def _admin_engine(url):
    return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def create_database(admin_url, prefix='bench'):
    """Create an empty, uniquely named database on the PostgreSQL server
    of ``admin_url`` (a superuser URL); return its URL."""
    url = sa.engine.make_url(admin_url)
    if url.get_backend_name() != 'postgresql':
        raise ServerError('can only create PostgreSQL databases, not on %s'
                          % url.get_backend_name())
    name = '%s_%s' % (prefix, uuid.uuid4().hex[:12])
    engine = _admin_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(
                'CREATE DATABASE "%s" ENCODING \'UTF8\' TEMPLATE template0'
                % name))
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def drop_database(db_url):
    """Drop a database made by ``create_database``, even if in use."""
    url = sa.engine.make_url(db_url)
    engine = _admin_engine(url.set(database='postgres'))
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(
                'DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % url.database))
    finally:
        engine.dispose()
