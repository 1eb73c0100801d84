"""The cells of a Nova deployment, found through its API database.

The cells are the rows of the API database's ``cell_mappings``, each
with one engine on its database (``database_connection``), with the
pool, retry and timeout options of ``[api_database]``.  As Nova's
HostManager does since Pike, cell0 (uuid
``00000000-0000-0000-0000-000000000000``, the database of instances that
were never scheduled) is not scheduled to, nor is a cell mapping marked
``disabled`` (Nova Queens and later); cell0's engine is still opened
when it holds the service's ``nova-scheduler`` row
(``[scheduler] service_cell``).

A ``database_connection`` may be a template (Nova Stein and later),
filled as Nova fills it (``scheduler.db.nova.url_templates``) from
``[scheduler] cell_template_connection``, else from ``[api_database]
connection``: Nova fills it from the ``[database] connection`` of the
reading process, which here is the scheduler's own database, not a Nova
one (``database_url``).

``read_mappings``, ``scheduled`` and ``open_cell`` find the cells and
open their engines; ``check`` reads, without changing anything, the
columns the scheduler needs from a cell database, so that a bad URL,
an unreachable server or a database that Nova's migrations did not
create stops the service at start with ``CellsError``, one line naming
the cell.  A cell that fails
later is the caller's to skip (``scheduler.db.nova.source``).
"""

import dataclasses

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
from oslo_log import log as logging

from scheduler.conf import api_database
from scheduler.conf import cells as cells_conf
from scheduler.db import timeouts
from scheduler.db.nova import schema
from scheduler.db.nova import url_templates

LOG = logging.getLogger(__name__)

CELL0_UUID = cells_conf.CELL0_UUID

# Errors of a database that cannot be reached or read.
DATABASE_ERRORS = (db_exc.DBError, sa.exc.SQLAlchemyError)


class CellsError(Exception):
    """Nova's databases cannot be used as configured (str: one line saying
    which database and why, without passwords)."""


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell mapping: ``id`` (``cell_mappings.id``), ``uuid``,
    ``name`` (may be None), ``disabled`` and the ``engine`` of its
    database."""

    id: int
    uuid: str
    name: str | None
    disabled: bool
    engine: sa.engine.Engine

    @property
    def label(self):
        """``name (uuid)``, for messages."""
        return '%s (%s)' % (self.name or 'unnamed', self.uuid)

    @property
    def is_cell0(self):
        return self.uuid == CELL0_UUID


def safe_url(url):
    """``url`` (str or URL) with its password masked."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return '<unparsable URL>'


def create_engine(url, conf):
    """An oslo.db engine on ``url`` with the ``[api_database]`` engine
    options of ``conf`` (no green-thread yield on check-in: the service
    runs on native threads).

    :raises CellsError: the URL is malformed or the database cannot be
        reached (after ``[api_database] max_retries`` attempts).
    """
    group = conf.api_database
    options = {name: getattr(group, name)
               for name in api_database.ENGINE_OPTIONS
               if name != 'slave_connection'}
    try:
        engine = engines.create_engine(url, thread_checkin=False, **options)
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise CellsError('bad database URL %s: %s'
                         % (safe_url(url), exc)) from exc
    except DATABASE_ERRORS as exc:
        raise CellsError('cannot connect to %s: %s'
                         % (safe_url(url), first_line(exc))) from exc
    if engine.dialect.name == 'postgresql':
        sa.event.listen(engine, 'connect', _serial_plans)
    timeouts.install(engine)   # closes the connections opened so far
    return engine


def _serial_plans(dbapi_connection, record):
    """No parallel workers for this PostgreSQL session's queries.

    Nova's tables have no index on their timestamps, so each change read
    is a sequential scan of a cell table.  PostgreSQL plans it from its
    statistics: until autovacuum analyses a table after a bulk write
    (a fleet's usage reset, a full report), it guesses that a third of
    the rows match and starts a parallel scan, launching worker
    processes for every read of a few rows (8.5-13 ms for 10,000
    compute nodes, against 2.4-3.7 ms serial, on 2 cores).  The
    scheduler's reads are small and frequent: serial plans always.
    """
    timeouts.set_on_session(dbapi_connection,
                            ['SET max_parallel_workers_per_gather = 0'])


def first_line(exc):
    """The first line of ``exc``'s message (its class name when it has
    none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_mappings(api_engine):
    """The rows of ``cell_mappings``, by id, as dicts (``id``, ``uuid``,
    ``name``, ``database_connection``, ``disabled``).

    :raises CellsError: the API database cannot be read.
    """
    table = schema.CELL_MAPPINGS
    try:
        with api_engine.connect() as connection:
            rows = connection.execute(
                sa.select(table).order_by(table.c.id)).mappings().all()
    except DATABASE_ERRORS as exc:
        raise CellsError('cannot read cell_mappings of the API database '
                         '%s: %s' % (safe_url(api_engine.url),
                                     first_line(exc))) from exc
    return [dict(row) for row in rows]


def _label(mapping):
    return '%s (%s)' % (mapping['name'] or 'unnamed', mapping['uuid'])


def template_source(conf):
    """The URL whose parts fill a templated ``database_connection``:
    ``[scheduler] cell_template_connection``, else ``[api_database]
    connection``."""
    return (conf.scheduler.cell_template_connection or
            conf.api_database.connection)


def database_url(mapping, conf):
    """``(url, problem)``: the URL of the database of a ``cell_mappings``
    row (a dict), its ``database_connection`` filled as a template from
    ``template_source(conf)``; when that cannot be filled, the stored
    text as it is (as Nova uses it) and the reason, which is logged
    (else None)."""
    stored = mapping['database_connection']
    try:
        return url_templates.fill(stored, template_source(conf)), None
    except url_templates.TemplateError as exc:
        problem = ('its database_connection is no template the URL of '
                   '[scheduler] cell_template_connection (else '
                   '[api_database] connection) fills: %s' % exc)
    LOG.warning('Cell %s: %s; it is used as it is', _label(mapping), problem)
    return stored, problem


def open_cell(mapping, conf):
    """The ``Cell`` of a ``cell_mappings`` row (a dict), its engine open
    on ``database_url``.

    :raises CellsError: its database cannot be reached.
    """
    url, problem = database_url(mapping, conf)
    try:
        engine = create_engine(url, conf)
    except CellsError as exc:
        raise CellsError('cell %s: %s%s' % (
            _label(mapping), exc, '; %s' % problem if problem else '')
        ) from exc
    return Cell(id=mapping['id'], uuid=mapping['uuid'],
                name=mapping['name'], disabled=bool(mapping['disabled']),
                engine=engine)


def scheduled(mappings):
    """The ``cell_mappings`` rows (dicts) to schedule to: all but cell0
    and the disabled ones."""
    return [mapping for mapping in mappings
            if mapping['uuid'] != CELL0_UUID and not mapping['disabled']]


def find(mappings, wanted):
    """The ``cell_mappings`` row (a dict) whose uuid or name is
    ``wanted`` (``cell0`` also names cell0's uuid, whatever its name);
    None when there is none."""
    for mapping in mappings:
        if wanted in (mapping['uuid'], mapping['name']) or (
                wanted == 'cell0' and mapping['uuid'] == CELL0_UUID):
            return mapping
    return None


def _probe(table):
    """SELECT every column of ``table`` we read, matching no row."""
    return sa.select(table).where(sa.false())


def check_tables(engine, metadata, what):
    """Read nothing but the columns of ``metadata``'s tables (``schema.CELL``
    or ``schema.API``) on ``engine``.

    :raises CellsError: the database cannot be read or lacks one of them
        (it is not the Nova database it should be); the message starts
        with ``what``.
    """
    try:
        with engine.connect() as connection:
            for table in metadata.sorted_tables:
                connection.execute(_probe(table)).all()
    except DATABASE_ERRORS as exc:
        raise CellsError('%s: cannot read the Nova tables of %s: %s' % (
            what, safe_url(engine.url), first_line(exc))) from exc


def check(cell):
    """``check_tables`` on a cell's database.

    :raises CellsError: as ``check_tables``.
    """
    check_tables(cell.engine, schema.CELL, 'cell %s' % cell.label)


def dispose(cells):
    """Close the connection pools of ``cells`` (an iterable of Cell)."""
    for cell in cells:
        cell.engine.dispose()
