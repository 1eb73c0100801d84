"""Fixtures of the ``scheduler.db`` tests: one database per test, on every
backend.

``db_url`` overrides the top-level fixture of the same name to add SQLite:
it is parametrized over ``sqlite`` (a file in the test's temp dir),
``postgresql`` and ``mysql`` (a fresh database made with the top-level
``fresh_database`` on the ``postgresql_url`` / ``mysql_url`` servers).  A
server backend is skipped only when those fixtures do not exist; when they
exist but cannot start a server, they decide (fail, or skip under
``SCHEDULER_TEST_SKIP_SERVERS=1``).  ``-k sqlite`` selects one backend.
"""

import pytest

from scheduler import context
from scheduler.db import api
from scheduler.db import migration
from scheduler_tools import writers

BACKENDS = ('sqlite', 'postgresql', 'mysql')


def _server_database(request, backend):
    try:
        admin_url = request.getfixturevalue(backend + '_url')
        fresh_database = request.getfixturevalue('fresh_database')
    except pytest.FixtureLookupError:
        pytest.skip('no %s_url / fresh_database fixture' % backend)
    return fresh_database(admin_url, prefix='scheduler_db')


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path):
    """URL of a new, empty database of the parametrized backend."""
    if request.param == 'sqlite':
        return 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    return _server_database(request, request.param)


@pytest.fixture
def db_engine(db_url):
    """``scheduler.db.api`` pointed at ``db_url``, schema not created;
    yields its engine, then puts the module back in its initial state."""
    writers.reset_engine(db_url)
    yield api.get_engine()
    writers.reset_engine()


@pytest.fixture
def ctx(db_engine):
    """An admin ``RequestContext`` on a database synced to head."""
    migration.db_sync()
    return context.get_admin_context()
