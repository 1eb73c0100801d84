"""Throwaway databases on an existing server: ``create_database`` makes
one uniquely named empty database and returns its URL,
``drop_database`` drops it again.

The benchmark takes a fresh database per fleet size this way when it is
called with a server's admin URL, and the test suite for each test that
asks (``fresh_database``).  Nothing here starts a server: the tests
start their own (``tests/fixtures/servers.py``).
"""

import contextlib
import os
import tempfile
import uuid

import sqlalchemy as sa


class DatabaseError(RuntimeError):
    """A database cannot be made on this kind of server."""


def _admin_engine(url):
    return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def create_database(admin_url, prefix='test'):
    """Create an empty, uniquely named database; return its URL.

    ``admin_url`` is a URL with the right to CREATE DATABASE on a
    PostgreSQL or MySQL/MariaDB server; the returned URL keeps its
    driver, credentials, host and port.  A ``sqlite`` URL gets a new file
    name in the temporary directory.
    """
    url = sa.engine.make_url(admin_url)
    name = '%s_%s' % (prefix, uuid.uuid4().hex[:12])
    backend = url.get_backend_name()
    if backend == 'sqlite':
        path = os.path.join(tempfile.gettempdir(), name + '.sqlite')
        return url.set(database=path).render_as_string(hide_password=False)
    if backend == 'postgresql':
        statement = ('CREATE DATABASE "%s" ENCODING \'UTF8\' '
                     'TEMPLATE template0' % name)
    elif backend in ('mysql', 'mariadb'):
        statement = ('CREATE DATABASE `%s` CHARACTER SET utf8mb4 '
                     'COLLATE utf8mb4_general_ci' % name)
    else:
        raise DatabaseError('cannot create databases on %s' % backend)
    engine = _admin_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(statement))
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def drop_database(db_url):
    """Drop a database made by ``create_database``, even if in use."""
    url = sa.engine.make_url(db_url)
    backend = url.get_backend_name()
    name = url.database
    if backend == 'sqlite':
        for suffix in ('', '-journal', '-wal', '-shm'):
            with contextlib.suppress(OSError):
                os.unlink((name or '') + suffix)
        return
    if backend == 'postgresql':
        admin = url.set(database='postgres')
        statements = ['DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name]
    else:
        admin = url.set(database=None)
        statements = ['SET SESSION lock_wait_timeout = 10',
                      'DROP DATABASE IF EXISTS `%s`' % name]
    execute_admin(admin, statements)


def execute_admin(admin_url, statements):
    """Run ``statements`` (SQL text) in turn, each committed on its own,
    on a connection of ``admin_url`` (a URL string or object)."""
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
    finally:
        engine.dispose()
