"""Statement, lock and connect time-outs on every server connection.

``install(engine)`` bounds, by ``[scheduler] decision_timeout`` (read
when each connection opens), what one database call of a PostgreSQL or
MySQL/MariaDB engine may wait for, so that a stalled query or a row
locked by another session ends in an error the request can report
(DatabaseUnavailable) instead of holding it:

* PostgreSQL: ``statement_timeout`` and ``lock_timeout`` of the session,
  libpq's ``connect_timeout``;
* MariaDB: ``max_statement_time``; MySQL: ``max_execution_time`` (read
  statements only, MySQL's rule); both: ``innodb_lock_wait_timeout``
  (whole seconds) and PyMySQL's ``connect_timeout``.

A frozen server cannot time out its own statements: the decision's
deadline (``scheduler.engine.deadline``) bounds those here.  SQLite
keeps its own busy timeout.
"""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa

from scheduler.conf import CONF


def _seconds() -> float:
    return CONF.scheduler.decision_timeout


def install(engine: sa.engine.Engine) -> None:
    """Bound the connections ``engine`` opens from now on; the ones it
    holds are closed (opened again with the bounds when needed)."""
    if engine.dialect.name not in ('postgresql', 'mysql'):
        return
    sa.event.listen(engine, 'do_connect', _connect_timeout)
    sa.event.listen(engine, 'connect', _session_timeouts)
    engine.dispose()


def _connect_timeout(dialect: Any, record: Any, cargs: Any,
                     cparams: dict) -> None:
    seconds = _seconds()
    if seconds and 'connect_timeout' not in cparams:
        # libpq takes whole seconds, 2 at least.
        cparams['connect_timeout'] = max(2, math.ceil(seconds))


def _session_timeouts(dbapi_connection: Any, record: Any) -> None:
    seconds = _seconds()
    if seconds:
        set_on_session(dbapi_connection,
                       _statements(dbapi_connection, seconds))


def set_on_session(dbapi_connection: Any, statements: list[str]) -> None:
    """Run the ``SET`` ``statements`` on a DB-API connection as it opens
    (a ``connect`` listener's), and commit them."""
    cursor = dbapi_connection.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
    finally:
        cursor.close()
    # A SET rolled back with its transaction would be undone.
    dbapi_connection.commit()


def _statements(dbapi_connection: Any, seconds: float) -> list[str]:
    milliseconds = max(1, int(seconds * 1000))
    if type(dbapi_connection).__module__.startswith('psycopg'):
        return ['SET statement_timeout = %d' % milliseconds,
                'SET lock_timeout = %d' % milliseconds]
    # PyMySQL: the server's version string, read at connect.
    mariadb = 'mariadb' in dbapi_connection.get_server_info().lower()
    return ['SET SESSION innodb_lock_wait_timeout = %d'
            % max(1, math.ceil(seconds)),
            'SET SESSION max_statement_time = %.3f' % seconds if mariadb
            else 'SET SESSION max_execution_time = %d' % milliseconds]
