"""What ``scheduler-service`` checks before it forks its workers.

A configuration that cannot work stops the service at once, with one
line in its log and a non-zero exit status, instead of workers that fail
and are forked again and again:

* that ``[database] connection`` is set (the embedded SQLite default
  is the replay's and the benchmark's, not a service's);
* the databases (``service.check_databases``: another application's
  schema, Nova database mode's API and cell databases), and that the
  database answers at all;
* on the standalone schema, that it is at the revision this release
  needs (else: run ``scheduler-manage db sync``);
* the names of the driver, the enabled filters and the weighers, and
  the filters' and weighers' own checks when they are made;
* the value of every option registered once they are loaded, the
  plug-ins' own included (oslo.config checks a value only when it is
  read: a bad one would otherwise fail the first request that reads
  it);
* in Placement mode (``[scheduler] use_placement``): the filter
  scheduler, Placement's database readable through
  ``[placement_database] connection``, and the Placement API answering
  through the ``[placement]`` options;
* with ``[prometheus] bind`` set: that it is HOST:PORT and can be
  listened on.
"""

from __future__ import annotations

import re
from typing import Any

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from scheduler import drivers
from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.conf import CONF
from scheduler.conf import database
from scheduler.db import api as db_api
from scheduler.db import migration
from scheduler.db import source as db_source
from scheduler.db.nova import cells
from scheduler.engine import pipeline
from scheduler.observability import server as metrics_server
from scheduler.placement import client as placement_client
from scheduler.placement import database as placement_database
from scheduler.server import service


def problem() -> str | None:
    """The one-line reason the service cannot start, or None."""
    return (connection_problem() or plugin_problem() or options_problem()
            or database_problem() or placement_problem()
            or prometheus_problem())


def connection_problem() -> str | None:
    """A service needs a database of its own, named: the embedded
    SQLite default belongs to the replay and the benchmark
    (``scheduler.conf.database.connection_problem``, which
    ``scheduler-manage`` shares)."""
    return database.connection_problem(CONF)


def database_problem() -> str | None:
    try:
        return service.check_databases() or _schema()
    except (db_exc.DBError, sa_exc.DBAPIError) as exc:
        return ('the database of [database] connection (%s) cannot be '
                'used: %s' % (cells.safe_url(CONF.database.connection),
                              cells.first_line(exc)))
    finally:
        if db_api.context_manager.is_started:
            db_api.get_engine().dispose()


def _schema() -> str | None:
    if db_source.nova_mode():
        return None
    return migration.schema_problem()


def plugin_problem() -> str | None:
    if CONF.scheduler.driver not in drivers.names():
        return ('[scheduler] driver: no driver named %r (there are: %s)'
                % (CONF.scheduler.driver, ', '.join(drivers.names())))
    try:
        filters.load_filters(CONF.filter_scheduler.available_filters,
                             pipeline.enabled_filter_names())
        weights.load_weighers(CONF.filter_scheduler.weight_classes)
    except exception.SchedulerException as exc:
        return '[filter_scheduler]: %s' % exc
    return None


def options_problem() -> str | None:
    """The first option whose configured value does not parse (wrong
    type, out of range, not a choice, a bad ``$name`` substitution), as
    ``[group] name: reason``; None when every option registered on CONF
    reads.  Run after the plug-ins are loaded, so that the options they
    register at import are checked too."""
    for name in sorted(CONF):
        problem = _value_problem('DEFAULT', CONF, name)
        if problem:
            return problem
        group = CONF[name]
        if isinstance(group, cfg.ConfigOpts.GroupAttr):
            for opt in sorted(group):
                problem = _value_problem(name, group, opt)
                if problem:
                    return problem
    return None


def _value_problem(label: str, options: Any, name: str) -> str | None:
    """``options[name]`` (CONF or a group of it) read, or why not."""
    try:
        options[name]
    except (cfg.Error, ValueError) as exc:
        # oslo.config says "Value for option N from LocationInfo(...,
        # detail='FILE') is not valid: REASON".
        text = cells.first_line(exc)
        reason = text.partition(' is not valid: ')[2] or text
        found = re.search(r"detail='([^']+)'", text)
        where = ' (in %s)' % found.group(1) if found else ''
        return '[%s] %s%s: invalid value: %s' % (label, name, where, reason)
    return None


def placement_problem() -> str | None:
    if not CONF.scheduler.use_placement:
        return None
    if CONF.scheduler.driver != 'filter_scheduler':
        return ('[scheduler] use_placement needs the filter_scheduler '
                'driver, not %r' % CONF.scheduler.driver)
    url = CONF.placement_database.connection
    if not url:
        return ('[scheduler] use_placement needs [placement_database] '
                'connection: Placement\'s database, which the scheduler '
                'reads (never writes)')
    return _placement_database_problem(url) or _placement_api_problem()


def prometheus_problem() -> str | None:
    """``[prometheus] bind``, when set: HOST:PORT, and free to listen on
    (``scheduler.observability.server.bind_problem``)."""
    bind = CONF.prometheus.bind
    reason = bind and metrics_server.bind_problem(bind)
    return '[prometheus] bind: %s' % reason if reason else None


def _placement_database_problem(url: str) -> str | None:
    try:
        engine = cells.create_engine(url, CONF)
    except cells.CellsError as exc:
        return '[placement_database] connection: %s' % exc
    try:
        with engine.connect() as connection:
            placement_database.read_generations(connection)
    except (db_exc.DBError, sa_exc.DBAPIError) as exc:
        return ('[placement_database] connection (%s) cannot be read as '
                'Placement\'s database: %s'
                % (cells.safe_url(url), cells.first_line(exc)))
    finally:
        engine.dispose()
    return None


def _placement_api_problem() -> str | None:
    try:
        reply = placement_client.PlacementClient(conf=CONF).adapter.get(
            '/', raise_exc=False)
    except (ks_exc.ClientException, cfg.Error) as exc:
        return 'the Placement API ([placement]) cannot be reached: %s' % (
            cells.first_line(exc))
    if reply.status_code != 200:
        return ('the Placement API ([placement]) answered %d to GET /'
                % reply.status_code)
    return None
