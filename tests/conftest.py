"""Top-level pytest configuration for the scheduler test suite.

What lives here:

* oslo.service is switched to its THREADING backend before anything can
  import oslo_messaging / oslo_service (otherwise the eventlet backend gets
  selected implicitly and eventlet deprecation warnings are raised).
* Hypothesis profiles: ``ci`` (derandomized, no deadline) is loaded by
  default; ``dev`` (random examples, no deadline) or Hypothesis's own
  ``default`` by SCHEDULER_HYPOTHESIS_PROFILE or ``--hypothesis-profile``.
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
* ``private_server(kind, **options)``: function-scoped factory of servers a
  test owns and may stop and start again (same port and data), for fault
  tests; ``options`` go to the server class (e.g. ``tls_only=True``).
  ``module_server(kind, **options)``: the same, shared by one module's
  tests.

The servers themselves are started by ``tests/fixtures/servers.py``
(imported as ``servers``: ``tests/fixtures`` is on pytest's
``pythonpath``) and the databases made by ``scheduler_tools.databases``;
the fixtures only add the policy below.

Server binaries come from Debian packages installed by
``tools/test-setup.sh``.  If they are missing the fixtures FAIL (they do
not skip) -- unless ``SCHEDULER_TEST_SKIP_SERVERS=1`` is set, in which case
every test needing a server is skipped.  ``SCHEDULER_TEST_SERVER_TIMEOUT``
(seconds, default 60) bounds each server's start-up.
"""

import os
import warnings

import pytest
import servers

from scheduler_tools import databases

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
    # The suite chooses its profile itself: ``ci`` unless
    # SCHEDULER_HYPOTHESIS_PROFILE (or ``--hypothesis-profile``) names
    # another, so that a plain ``python -m pytest`` passes as CI does.
    hypothesis.settings.load_profile(
        os.environ.get("SCHEDULER_HYPOTHESIS_PROFILE") or "ci")

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
# Server fixtures: thin wrappers around tests/fixtures/servers.py
# ---------------------------------------------------------------------------

SETUP_HINT = ("run tools/test-setup.sh (as root) to install the test "
              "servers from Debian packages, or set "
              "SCHEDULER_TEST_SKIP_SERVERS=1 to skip tests that need them")

# The servers' directories: scheduler-test-<kind>-XXXX in the temp dir.
TEMPDIR_PREFIX = "scheduler-test-"

# The helpers behind ``fresh_database``.
make_database = databases.create_database
drop_database = databases.drop_database


def _skip_servers():
    return os.environ.get("SCHEDULER_TEST_SKIP_SERVERS", "") in (
        "1", "true", "yes")


def _start_timeout():
    return float(os.environ.get("SCHEDULER_TEST_SERVER_TIMEOUT", "60"))


def _start_server(kind, **options):
    """A started server of ``kind`` (``rabbitmq``, ``postgresql`` or
    ``mariadb``), made with the server class's keyword ``options`` (such
    as ``tls=True``): skipped under SCHEDULER_TEST_SKIP_SERVERS, a
    failure with a set-up hint when it cannot start.  Close it when
    done."""
    if _skip_servers():
        pytest.skip("SCHEDULER_TEST_SKIP_SERVERS is set")
    server = servers.SERVERS[kind](_start_timeout(), prefix=TEMPDIR_PREFIX,
                                   **options)
    try:
        server.start()
    except servers.ServerNotFound as e:
        server.close()
        pytest.fail("%s not found: %s" % (e, SETUP_HINT), pytrace=False)
    except servers.ServerError as e:
        # The directory stays, with the server's logs.
        pytest.fail("could not start %s: %s\n(%s)" % (kind, e, SETUP_HINT),
                    pytrace=False)
    except BaseException:
        server.close()
        raise
    return server


def _server_fixture(kind, **options):
    server = _start_server(kind, **options)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def rabbitmq_server():
    """The RabbitMQServer object (has .url, .amqp_port, .tempdir)."""
    yield from _server_fixture("rabbitmq")


@pytest.fixture(scope="session")
def postgresql_server():
    """The PostgreSQLServer object (has .url, .port, .tempdir)."""
    yield from _server_fixture("postgresql")


@pytest.fixture(scope="session")
def mysql_server():
    """The MariaDBServer object (has .url, .port, .socket, .tempdir)."""
    yield from _server_fixture("mariadb")


def _private_servers():
    """The factory behind ``private_server`` and ``module_server``."""
    started = []

    def factory(kind, **options):
        server = _start_server(kind, **options)
        started.append(server)
        return server

    yield factory
    for server in reversed(started):
        server.close()


@pytest.fixture
def private_server():
    """Factory: ``server = private_server(kind)`` starts a server of the
    test's own (``rabbitmq``, ``postgresql`` or ``mariadb``), which the
    test may ``stop()`` and ``start()`` again (same port, same data); it
    is closed at teardown.  For tests that break their servers, or that
    need one set up differently: ``private_server(kind, **options)``
    passes ``options`` to the server class (``tls=True``,
    ``tls_only=True``: see ``tests/fixtures/servers.py``)."""
    yield from _private_servers()


@pytest.fixture(scope="module")
def module_server():
    """``private_server`` for the tests of one module: its servers are
    closed after the module's last test.  Do not stop them."""
    yield from _private_servers()


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
def placement_server(postgresql_server):
    """A real Placement (``openstack-placement`` under gunicorn, two
    workers, ``noauth2``) on a database of its own in the session's
    PostgreSQL; ``.url`` is its endpoint.  Shared by the session: use
    provider names and uuids of your own."""
    db_url = make_database(postgresql_server.url, prefix="placement")
    try:
        yield from _server_fixture("placement", database_url=db_url)
    finally:
        drop_database(db_url)


@pytest.fixture(scope="module")
def module_placement(postgresql_server):
    """``placement_server`` for the tests of one module only, on a
    database of its own: for tests that need to know every provider
    Placement holds (whether any is nested changes Placement's code
    path)."""
    db_url = make_database(postgresql_server.url, prefix="placement")
    try:
        yield from _server_fixture("placement", database_url=db_url)
    finally:
        drop_database(db_url)


@pytest.fixture(scope="session")
def mysql_url(mysql_server):
    """Admin URL ``mysql+pymysql://root@127.0.0.1:PORT/`` (no database).

    Use ``fresh_database(mysql_url)`` for a database to work in.
    """
    return mysql_server.url


# ---------------------------------------------------------------------------
# Per-test databases
# ---------------------------------------------------------------------------


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


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def any_db_url(request, tmp_path):
    """Fresh, empty database URL; the test runs on a SQLite file and once
    per server backend."""
    if request.param == "sqlite":
        return "sqlite:///%s" % (tmp_path / "test.sqlite")
    return request.getfixturevalue(request.param + "_db_url")


@pytest.fixture
def ram_scheduler_ctx(any_db_url, conf):
    """An admin context on a fresh database of each backend
    (``any_db_url``), synced to head, with a filter scheduler that only
    filters and weighs by RAM (RamFilter, ComputeFilter, RAMWeigher)."""
    # Imported here: they bring oslo.messaging, which the threading
    # backend below must precede.
    from scheduler_tools import seed
    from scheduler_tools import writers
    conf.set_override("enabled_filters", ["RamFilter", "ComputeFilter"],
                      group="filter_scheduler")
    conf.set_override("weight_classes", ["RAMWeigher"],
                      group="filter_scheduler")
    yield seed.use_database(any_db_url)
    writers.reset_engine()


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

    def __getitem__(self, group):
        # keystoneauth1 reads ``conf[group]``.
        return self._conf[group]


@pytest.fixture
def parsed_conf_restored():
    """For a test whose ``scheduler-manage`` call (``manage.main``)
    parses a config file into the global CONF and sets up logging:
    afterwards the suite's configuration (parsed without a file) and the
    root logger's handlers and level are restored, so that nothing the
    file set (``[scheduler] use_placement``...) reaches later tests."""
    import contextlib
    import logging

    from oslo_config import cfg

    from scheduler.conf import CONF
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    # Registered by the commands that parsed a configuration only.
    with contextlib.suppress(cfg.NoSuchOptError):
        CONF.clear_default('use_stderr')
    CONF([], project='scheduler', default_config_files=[],
         default_config_dirs=[])
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture
def conf():
    """``conf.set_override(name, value, group)`` for one test."""
    overrides = ConfOverrides()
    yield overrides
    overrides.clear()


@pytest.fixture
def placement_conf(placement_server, conf):
    """``[scheduler] use_placement`` on the session's Placement (noauth2
    through ``auth_type = admin_token``), one host per choice; ``conf``
    to add to."""
    from keystoneauth1 import loading as ks_loading

    from scheduler.conf import CONF
    from scheduler.conf import placement

    placement.register_client_opts(CONF)
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='placement')
    conf.set_override('use_placement', True, 'scheduler')
    conf.set_override('auth_type', 'admin_token', 'placement')
    conf.set_override('endpoint', placement_server.url, 'placement')
    conf.set_override('token', 'admin', 'placement')
    conf.set_override('connection', placement_server.database_url,
                      'placement_database')
    conf.set_override('host_subset_size', 1, 'filter_scheduler')
    return conf
