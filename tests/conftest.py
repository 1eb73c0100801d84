"""Top-level pytest configuration for the scheduler test suite.

What lives here:

* oslo.service is switched to its THREADING backend before anything can
  import oslo_messaging / oslo_service (otherwise the eventlet backend gets
  selected implicitly and eventlet deprecation warnings are raised).
* Hypothesis profiles: ``ci`` (derandomized, no deadline) is loaded
  automatically when the ``CI`` environment variable is set, or explicitly
  with ``--hypothesis-profile=ci``.
* The ``functional`` marker, applied automatically to tests under
  ``tests/functional``.
* Session-scoped fixtures that start real, throwaway servers on 127.0.0.1
  (free ports, temporary directories), lazily -- only when a test asks:

  ``rabbit_url``      ``rabbit://scheduler:secret@127.0.0.1:PORT/``
  ``postgresql_url``  ``postgresql+psycopg2://postgres@127.0.0.1:PORT/postgres``
                      (superuser / admin URL)
  ``mysql_url``       ``mysql+pymysql://root@127.0.0.1:PORT/``
                      (admin URL, root without password, TCP only)

* ``fresh_database``: function-scoped factory; ``fresh_database(admin_url)``
  creates a uniquely named empty database on that server and returns its
  URL; the database is dropped at test teardown.  ``make_database()`` /
  ``drop_database()`` are the plain helpers behind it.
* ``postgresql_db_url`` / ``mysql_db_url``: a fresh, empty database URL of
  one backend; ``db_url``: the same, parametrized over both backends.

Server binaries come from Debian packages installed by
``tools/test-setup.sh``.  If they are missing the fixtures FAIL (they do
not skip) -- unless ``SCHEDULER_TEST_SKIP_SERVERS=1`` is set, in which case
every test needing a server is skipped.  ``SCHEDULER_TEST_SERVER_TIMEOUT``
(seconds, default 60) bounds each server's start-up.
"""

import contextlib
import ctypes
import glob
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import uuid
import warnings

import pytest

# ---------------------------------------------------------------------------
# oslo.service backend: must happen before oslo_messaging is imported.
# ---------------------------------------------------------------------------


def _init_threading_backend():
    # The threading backend pulls in futurist, which imports eventlet
    # opportunistically and so emits eventlet's deprecation warning once.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        try:
            from oslo_service import backend
        except ImportError:  # pragma: no cover - oslo.service is a hard dep
            return
        try:
            backend.init_backend(backend.BackendType.THREADING)
        except backend.exceptions.BackendAlreadySelected:
            # Somebody selected another backend first; init_backend() can
            # only be called once per process.  Nothing more to do here.
            pass


_init_threading_backend()

# ---------------------------------------------------------------------------
# Hypothesis profiles
# ---------------------------------------------------------------------------

try:
    import hypothesis
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    hypothesis = None
else:
    hypothesis.settings.register_profile(
        "ci",
        derandomize=True,
        deadline=None,
        print_blob=True,
        database=None,
        suppress_health_check=[hypothesis.HealthCheck.too_slow],
    )
    hypothesis.settings.register_profile("dev", deadline=None)
    _profile = os.environ.get("SCHEDULER_HYPOTHESIS_PROFILE")
    if not _profile and os.environ.get("CI", "").lower() in (
            "1", "true", "yes"):
        _profile = "ci"
    if _profile:
        hypothesis.settings.load_profile(_profile)

# ---------------------------------------------------------------------------
# Markers
# ---------------------------------------------------------------------------

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
_FUNCTIONAL_DIR = os.path.join(_TESTS_DIR, "functional")


def pytest_configure(config):
    # futurist imports eventlet opportunistically; its deprecation warning
    # is not a DeprecationWarning subclass.
    config.addinivalue_line(
        "filterwarnings", r"ignore:\s*Eventlet is deprecated")
    config.addinivalue_line(
        "markers",
        "functional: functional test (tests/functional); may start real "
        "RabbitMQ/PostgreSQL/MariaDB servers")
    config.addinivalue_line(
        "markers", "slow: test that takes more than a few seconds")


def pytest_collection_modifyitems(config, items):
    prefix = _FUNCTIONAL_DIR + os.sep
    for item in items:
        if str(item.path).startswith(prefix):
            item.add_marker(pytest.mark.functional)


# ---------------------------------------------------------------------------
# Helpers for the server fixtures
# ---------------------------------------------------------------------------

SETUP_HINT = ("run tools/test-setup.sh (as root) to install the test "
              "servers from Debian packages, or set "
              "SCHEDULER_TEST_SKIP_SERVERS=1 to skip tests that need them")


class ServerStartError(RuntimeError):
    pass


def _skip_servers():
    return os.environ.get("SCHEDULER_TEST_SKIP_SERVERS", "") in (
        "1", "true", "yes")


def _start_timeout():
    return float(os.environ.get("SCHEDULER_TEST_SERVER_TIMEOUT", "60"))


def _missing(what):
    """Fail (or skip, if allowed) because a server binary is missing."""
    msg = "%s not found: %s" % (what, SETUP_HINT)
    if _skip_servers():
        pytest.skip(msg)
    pytest.fail(msg, pytrace=False)


def _free_port():
    with contextlib.closing(socket.socket(socket.AF_INET,
                                          socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _free_ports(n):
    """Return n distinct free loopback ports (held open until all found)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_open(port):
    with contextlib.closing(socket.socket(socket.AF_INET,
                                          socket.SOCK_STREAM)) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


_PR_SET_PDEATHSIG = 1


def _die_with_parent(sig=signal.SIGTERM):
    """preexec_fn: deliver ``sig`` to the child when pytest dies.

    Guards against leaked servers when pytest is killed hard (SIGKILL, CI
    timeout) and fixture teardown never runs.  Runs after any uid switch
    done by subprocess (a uid change clears the setting).
    """
    def _preexec():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except Exception:
            pass
    return _preexec


def _world_traversable(path):
    path = os.path.abspath(path)
    while True:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


_OWNER_FILE = "owner.pid"
_swept = False


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_tempdirs(base):
    """Remove server dirs left behind by test runs that were killed hard.

    Only dirs whose recorded owner (a pytest process) no longer exists;
    their servers died with it (see _die_with_parent).
    """
    for path in glob.glob(os.path.join(base, "scheduler-test-*")):
        try:
            with open(os.path.join(path, _OWNER_FILE)) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            shutil.rmtree(path, ignore_errors=True)


def _make_tempdir(kind):
    """A temp dir that a dropped-privilege server user can reach."""
    global _swept
    base = tempfile.gettempdir()
    if os.geteuid() == 0 and not _world_traversable(base):
        base = "/tmp"
    if not _swept:
        _swept = True
        _sweep_stale_tempdirs(base)
    path = tempfile.mkdtemp(prefix="scheduler-test-%s-" % kind, dir=base)
    os.chmod(path, 0o755)
    with open(os.path.join(path, _OWNER_FILE), "w") as f:
        f.write("%d\n" % os.getpid())
    return path


def _user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _chown_tree(path, user):
    pw = pwd.getpwnam(user)
    for root, _dirs, files in os.walk(path):
        os.chown(root, pw.pw_uid, pw.pw_gid)
        for f in files:
            os.chown(os.path.join(root, f), pw.pw_uid, pw.pw_gid)


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            data = f.read()[-20000:]
    except OSError as e:
        return "<no log: %s>" % e
    return "\n".join(
        data.decode("utf-8", "replace").splitlines()[-lines:])


def _run(cmd, log_path, user=None, timeout=None, env=None):
    """Run a set-up command, raising ServerStartError with its output."""
    kwargs = {}
    if user is not None:
        kwargs.update(user=user, group=pwd.getpwnam(user).pw_gid,
                      extra_groups=[])
    with open(log_path, "ab") as log:
        log.write(("$ %s\n" % " ".join(cmd)).encode())
        log.flush()
        try:
            rc = subprocess.call(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env,
                                 cwd="/", timeout=timeout or _start_timeout(),
                                 **kwargs)
        except subprocess.TimeoutExpired:
            raise ServerStartError("%s timed out\n%s" % (
                cmd[0], _tail(log_path))) from None
    if rc != 0:
        raise ServerStartError("%s failed with exit code %d\n%s" % (
            " ".join(cmd), rc, _tail(log_path)))


class _Server:
    """A server process we own: started detached, stopped at teardown."""

    name = "server"
    stop_signal = signal.SIGTERM

    def __init__(self):
        self.tempdir = _make_tempdir(self.name)
        self.log_path = os.path.join(self.tempdir, "server.log")
        self.procs = []  # (Popen, stop signal), stopped in reverse order
        self.url = None
        self.startup_seconds = None

    def spawn(self, cmd, user=None, env=None, stop_signal=None):
        kwargs = {}
        if user is not None:
            kwargs.update(user=user, group=pwd.getpwnam(user).pw_gid,
                          extra_groups=[])
        log = open(self.log_path, "ab")
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=self.tempdir,
                start_new_session=True,
                preexec_fn=_die_with_parent(stop_signal or self.stop_signal),
                **kwargs)
        finally:
            log.close()
        self.procs.append((proc, stop_signal or self.stop_signal))
        return proc

    def wait_until(self, ready, proc, what):
        """Poll ready() until true; fail early if proc exits."""
        deadline = time.monotonic() + _start_timeout()
        last_exc = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerStartError(
                    "%s exited with code %s during start-up\n%s" % (
                        what, proc.returncode, _tail(self.log_path)))
            try:
                if ready():
                    return
            except Exception as e:  # not ready yet
                last_exc = e
            time.sleep(0.2)
        raise ServerStartError(
            "%s did not become ready within %.0fs (last error: %r); see %s\n"
            "%s" % (what, _start_timeout(), last_exc, self.log_path,
                    _tail(self.log_path)))

    def start(self):
        t0 = time.monotonic()
        try:
            self._start()
        except ServerStartError:
            self.stop(keep_tempdir=True)  # keep the logs for debugging
            raise
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self.url

    def _start(self):
        raise NotImplementedError

    def stop(self, keep_tempdir=False):
        while self.procs:
            proc, sig = self.procs.pop()
            self._stop_proc(proc, sig)
        if not keep_tempdir:
            shutil.rmtree(self.tempdir, ignore_errors=True)

    @staticmethod
    def _stop_proc(proc, sig, timeout=30):
        if proc.poll() is None:
            # Only the main process: it shuts its children down itself.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left in its process group gets killed.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)


# ----------------------------- RabbitMQ ------------------------------------


def _find_rabbitmq():
    candidates = ["/usr/lib/rabbitmq/bin/rabbitmq-server"]
    candidates += sorted(glob.glob(
        "/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server"),
        reverse=True)
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    return None


def _find_epmd():
    found = shutil.which("epmd")
    if found:
        return found
    found = sorted(glob.glob("/usr/lib/erlang/erts-*/bin/epmd"))
    return found[-1] if found else None


class RabbitMQServer(_Server):
    """A private RabbitMQ node with its own epmd, on loopback only.

    Everything that could clash with another run (AMQP port, Erlang
    distribution port, epmd port, node name, Erlang cookie in $HOME,
    mnesia/log dirs) is private to this instance.  The user is created from
    the config file (default_user), so rabbitmqctl is never needed.
    """

    name = "rabbitmq"
    user = "scheduler"
    password = "secret"

    def _start(self):
        server = _find_rabbitmq()
        epmd = _find_epmd()
        if not server or not epmd:
            _missing("RabbitMQ (rabbitmq-server/epmd)")
        amqp_port, dist_port, epmd_port = _free_ports(3)
        nodename = "scheduler-test-%s@localhost" % uuid.uuid4().hex[:8]
        conf = os.path.join(self.tempdir, "rabbitmq.conf")
        with open(conf, "w") as f:
            f.write("listeners.tcp.default = 127.0.0.1:%d\n"
                    "loopback_users = none\n"
                    "default_user = %s\n"
                    "default_pass = %s\n"
                    "default_vhost = /\n"
                    "default_permissions.configure = .*\n"
                    "default_permissions.read = .*\n"
                    "default_permissions.write = .*\n"
                    "log.console = true\n"
                    "log.console.level = info\n"
                    "log.file = false\n" % (
                        amqp_port, self.user, self.password))
        env = {
            "PATH": os.pathsep.join([os.path.dirname(server),
                                     os.path.dirname(epmd),
                                     os.environ.get("PATH", os.defpath)]),
            "HOME": self.tempdir,  # .erlang.cookie goes here
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "ERL_EPMD_PORT": str(epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODENAME": nodename,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(amqp_port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS":
                "-kernel inet_dist_use_interface {127,0,0,1}",
            "RABBITMQ_CONFIG_FILE": conf,
            "RABBITMQ_ADVANCED_CONFIG_FILE":
                os.path.join(self.tempdir, "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE":
                os.path.join(self.tempdir, "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE":
                os.path.join(self.tempdir, "enabled_plugins"),
            "RABBITMQ_ENABLED_PLUGINS": "",
            "RABBITMQ_MNESIA_BASE": os.path.join(self.tempdir, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(self.tempdir, "log"),
            "RABBITMQ_LOGS": "-",
            "RABBITMQ_PID_FILE": os.path.join(self.tempdir, "rabbitmq.pid"),
        }
        # Our own epmd in the foreground, so we own (and stop) it; the
        # node registers with it instead of spawning a global daemon.
        epmd_proc = self.spawn([epmd, "-port", str(epmd_port),
                                "-address", "127.0.0.1"], env=env)
        self.wait_until(lambda: _port_open(epmd_port), epmd_proc, "epmd")
        proc = self.spawn([server], env=env)
        self.url = "rabbit://%s:%s@127.0.0.1:%d/" % (
            self.user, self.password, amqp_port)
        self.amqp_port = amqp_port

        def ready():
            import amqp
            conn = amqp.Connection(
                "127.0.0.1:%d" % amqp_port, userid=self.user,
                password=self.password, connect_timeout=2)
            conn.connect()
            conn.close()
            return True

        self.wait_until(ready, proc, "rabbitmq-server")


# ----------------------------- PostgreSQL ----------------------------------


def _find_pg_bindir():
    override = os.environ.get("SCHEDULER_TEST_PG_BINDIR")
    dirs = [override] if override else glob.glob("/usr/lib/postgresql/*/bin")

    def version(d):
        try:
            return int(d.split("/")[-2])
        except ValueError:
            return 0

    for d in sorted(dirs, key=version, reverse=True):  # newest first
        if (os.access(os.path.join(d, "initdb"), os.X_OK) and
                os.access(os.path.join(d, "postgres"), os.X_OK)):
            return d
    return None


class PostgreSQLServer(_Server):
    """initdb + postgres (foreground) as the ``postgres`` OS user."""

    name = "postgresql"
    # SIGINT = "fast" shutdown: disconnect clients, shut down cleanly.
    stop_signal = signal.SIGINT

    def _start(self):
        bindir = _find_pg_bindir()
        if not bindir:
            _missing("PostgreSQL server (/usr/lib/postgresql/*/bin/initdb)")
        run_as = None
        if os.geteuid() == 0:
            if not _user_exists("postgres"):
                _missing("OS user 'postgres'")
            run_as = "postgres"
        datadir = os.path.join(self.tempdir, "data")
        sockdir = os.path.join(self.tempdir, "sock")
        os.mkdir(sockdir)
        if run_as:
            _chown_tree(self.tempdir, run_as)
        env = {"PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
               "LANG": "C", "LC_ALL": "C", "TZ": "UTC"}
        _run([os.path.join(bindir, "initdb"), "-D", datadir, "-U",
              "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
              "--no-sync", "--no-instructions"],
             self.log_path, user=run_as, env=env)
        port = _free_port()
        options = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": sockdir,
            "max_connections": "200",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "log_timezone": "UTC",
            "timezone": "UTC",
        }
        cmd = [os.path.join(bindir, "postgres"), "-D", datadir]
        for k, v in options.items():
            cmd += ["-c", "%s=%s" % (k, v)]
        proc = self.spawn(cmd, user=run_as, env=env)
        self.port = port

        def ready():
            import psycopg2
            conn = psycopg2.connect(host="127.0.0.1", port=port,
                                    user="postgres", dbname="postgres",
                                    connect_timeout=2)
            conn.close()
            return True

        self.wait_until(ready, proc, "postgres")
        self.url = "postgresql+psycopg2://postgres@127.0.0.1:%d/postgres" % (
            port)


# ----------------------------- MariaDB -------------------------------------


def _find_mariadb():
    server = None
    for name in ("mariadbd", "mysqld"):
        server = shutil.which(name) or (
            "/usr/sbin/" + name if os.access("/usr/sbin/" + name, os.X_OK)
            else None)
        if server:
            break
    install = shutil.which("mariadb-install-db") or shutil.which(
        "mysql_install_db")
    return server, install


class MariaDBServer(_Server):
    """mariadb-install-db + mariadbd as the ``mysql`` OS user."""

    name = "mariadb"

    def _start(self):
        server, install = _find_mariadb()
        if not server or not install:
            _missing("MariaDB server (mariadbd, mariadb-install-db)")
        run_as = None
        if os.geteuid() == 0:
            run_as = "mysql" if _user_exists("mysql") else None
        datadir = os.path.join(self.tempdir, "data")
        tmpdir = os.path.join(self.tempdir, "tmp")
        os.mkdir(datadir)
        os.mkdir(tmpdir)
        self.socket = os.path.join(self.tempdir, "mysqld.sock")
        port = _free_port()
        common = [
            "--datadir=" + datadir,
            "--tmpdir=" + tmpdir,
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--innodb-use-native-aio=0",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
        ]
        if os.geteuid() == 0 and run_as is None:
            common.append("--user=root")
        if run_as:
            _chown_tree(self.tempdir, run_as)
        env = dict(os.environ, LANG="C", LC_ALL="C", TZ="UTC")
        env["PATH"] = "/usr/sbin:/usr/bin:" + env.get("PATH", "")
        _run([install, "--no-defaults",
              "--auth-root-authentication-method=normal",
              "--skip-test-db"] + common,
             self.log_path, user=run_as, env=env)
        cmd = [server, "--no-defaults",
               "--bind-address=127.0.0.1",
               "--port=%d" % port,
               "--socket=" + self.socket,
               "--pid-file=" + os.path.join(self.tempdir, "mysqld.pid"),
               "--log-error=" + self.log_path + ".err",
               "--max-connections=300",
               "--skip-log-bin",
               "--loose-skip-symbolic-links",
               ] + common
        proc = self.spawn(cmd, user=run_as, env=env)
        self.port = port

        def ready():
            import pymysql
            conn = pymysql.connect(unix_socket=self.socket, user="root",
                                   connect_timeout=2)
            try:
                with conn.cursor() as cur:
                    # root without password over TCP from loopback (the
                    # bootstrap only makes root@localhost, i.e. the socket).
                    cur.execute("CREATE USER IF NOT EXISTS "
                                "'root'@'127.0.0.1'")
                    cur.execute("GRANT ALL PRIVILEGES ON *.* TO "
                                "'root'@'127.0.0.1' WITH GRANT OPTION")
            finally:
                conn.close()
            conn = pymysql.connect(host="127.0.0.1", port=port, user="root",
                                   connect_timeout=2)
            conn.close()
            return True

        try:
            self.wait_until(ready, proc, "mariadbd")
        except ServerStartError as e:
            raise ServerStartError("%s\nerror log:\n%s" % (
                e, _tail(self.log_path + ".err"))) from None
        self.url = "mysql+pymysql://root@127.0.0.1:%d/" % port


# ---------------------------------------------------------------------------
# Session fixtures
# ---------------------------------------------------------------------------


def _server_fixture(cls):
    if _skip_servers():
        pytest.skip("SCHEDULER_TEST_SKIP_SERVERS is set")
    server = cls()
    try:
        server.start()
    except ServerStartError as e:
        pytest.fail("could not start %s: %s\n(%s)" % (
            cls.name, e, SETUP_HINT), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def rabbitmq_server():
    """The RabbitMQServer object (has .url, .amqp_port, .tempdir)."""
    yield from _server_fixture(RabbitMQServer)


@pytest.fixture(scope="session")
def postgresql_server():
    """The PostgreSQLServer object (has .url, .port, .tempdir)."""
    yield from _server_fixture(PostgreSQLServer)


@pytest.fixture(scope="session")
def mysql_server():
    """The MariaDBServer object (has .url, .port, .socket, .tempdir)."""
    yield from _server_fixture(MariaDBServer)


@pytest.fixture(scope="session")
def rabbit_url(rabbitmq_server):
    """``rabbit://scheduler:secret@127.0.0.1:PORT/`` of a private broker.

    Shared by the whole session: use unique topics/exchanges per test.
    """
    return rabbitmq_server.url


@pytest.fixture(scope="session")
def postgresql_url(postgresql_server):
    """Admin URL ``postgresql+psycopg2://postgres@127.0.0.1:PORT/postgres``.

    Do not create tables in it: use ``fresh_database(postgresql_url)``.
    """
    return postgresql_server.url


@pytest.fixture(scope="session")
def mysql_url(mysql_server):
    """Admin URL ``mysql+pymysql://root@127.0.0.1:PORT/`` (no database).

    Use ``fresh_database(mysql_url)`` for a database to work in.
    """
    return mysql_server.url


# ---------------------------------------------------------------------------
# Per-test databases
# ---------------------------------------------------------------------------


def make_database(admin_url, prefix="test"):
    """Create a uniquely named, empty database; return its URL (a str).

    ``admin_url`` is an SQLAlchemy URL with rights to CREATE DATABASE
    (``postgresql_url`` or ``mysql_url``); ``sqlite`` URLs get a new file
    in the temp dir.  The returned URL keeps driver, credentials, host and
    port and only changes the database name.
    """
    import sqlalchemy as sa

    url = sa.engine.make_url(admin_url)
    name = "%s_%s" % (prefix, uuid.uuid4().hex[:12])
    backend = url.get_backend_name()
    if backend == "sqlite":
        path = os.path.join(tempfile.gettempdir(), name + ".sqlite")
        return url.set(database=path).render_as_string(hide_password=False)
    if backend == "postgresql":
        stmt = 'CREATE DATABASE "%s" ENCODING \'UTF8\' TEMPLATE template0' % (
            name)
    elif backend in ("mysql", "mariadb"):
        stmt = ("CREATE DATABASE `%s` CHARACTER SET utf8mb4 "
                "COLLATE utf8mb4_general_ci" % name)
    else:
        raise ValueError("unsupported database URL %r" % admin_url)
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT",
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(stmt))
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def drop_database(db_url):
    """Drop a database made by make_database(), even if still in use."""
    import sqlalchemy as sa

    url = sa.engine.make_url(db_url)
    backend = url.get_backend_name()
    name = url.database
    if backend == "sqlite":
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink((name or "") + suffix)
        return
    if backend == "postgresql":
        admin = url.set(database="postgres")
        stmts = ['DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name]
    else:
        admin = url.set(database=None)
        stmts = ["SET SESSION lock_wait_timeout = 10",
                 "DROP DATABASE IF EXISTS `%s`" % name]
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT",
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            for stmt in stmts:
                conn.execute(sa.text(stmt))
    finally:
        engine.dispose()


@pytest.fixture
def fresh_database():
    """Factory: ``url = fresh_database(admin_url)`` -> new empty database.

    Every database created through it is dropped at test teardown (dispose
    your engines first where you can; PostgreSQL drops are forced).
    ``fresh_database.drop(url)`` drops one early.
    """
    created = []

    def factory(admin_url, prefix="test"):
        db_url = make_database(admin_url, prefix=prefix)
        created.append(db_url)
        return db_url

    def drop(db_url):
        """Drop one of the databases now instead of at teardown."""
        created.remove(db_url)
        drop_database(db_url)

    factory.drop = drop
    yield factory
    errors = []
    for db_url in reversed(created):
        try:
            drop_database(db_url)
        except Exception as e:  # keep dropping the others
            errors.append("%s: %s" % (db_url, e))
    if errors:
        warnings.warn("could not drop test databases: %s" % errors,
                      stacklevel=2)


@pytest.fixture
def postgresql_db_url(postgresql_url, fresh_database):
    """URL of a fresh, empty PostgreSQL database (dropped afterwards)."""
    return fresh_database(postgresql_url)


@pytest.fixture
def mysql_db_url(mysql_url, fresh_database):
    """URL of a fresh, empty MariaDB database (dropped afterwards)."""
    return fresh_database(mysql_url)


@pytest.fixture(params=["postgresql", "mysql"])
def db_url(request, fresh_database):
    """Fresh, empty database URL; the test runs once per server backend."""
    admin_url = request.getfixturevalue(request.param + "_url")
    return fresh_database(admin_url)


# ---------------------------------------------------------------------------
# Configuration and objects, for every test
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _objects_and_config():
    """Register every versioned object once, and parse ``CONF`` with no
    arguments and no config file when nothing parsed it yet, so options
    read their defaults."""
    from scheduler import objects
    from scheduler.conf import CONF

    objects.register_all()
    if getattr(CONF, "_namespace", None) is None:
        CONF([], project="scheduler", default_config_files=[],
             default_config_dirs=[])


class ConfOverrides:
    """Overrides of ``CONF`` options that a test sets; all are cleared by
    ``clear()`` (the ``conf`` fixture calls it at teardown).  Reading
    ``conf.<name>`` reads ``CONF``."""

    def __init__(self):
        from scheduler.conf import CONF

        self._conf = CONF
        self._overridden = []

    def set_override(self, name, value, group=None):
        self._conf.set_override(name, value, group)
        self._overridden.append((name, group))

    def clear(self):
        while self._overridden:
            name, group = self._overridden.pop()
            self._conf.clear_override(name, group)

    def __getattr__(self, name):
        return getattr(self._conf, name)


@pytest.fixture
def conf():
    """``conf.set_override(name, value, group)`` for one test."""
    overrides = ConfOverrides()
    yield overrides
    overrides.clear()
