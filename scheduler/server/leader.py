"""Which scheduler runs the periodic work only one of them may run.

Nova's rule (``nova.scheduler.manager.SchedulerManager.
_discover_hosts_in_cells``, Nova 2025.1 and later): read the enabled
``nova-scheduler`` services (``ServiceList.get_by_binary``: live rows,
``disabled`` false) from the database the schedulers keep their rows
in, keep those the servicegroup says are up, and sort their ``host``;
the first one is the leader.  The others skip the task.  Nothing is
elected or locked: each scheduler decides alone from the same rows, so
when the leader stops heartbeating, the next host in the order takes
over once the leader's heartbeat is ``service_down_time`` old.

This service keeps its own ``nova-scheduler`` row
(``scheduler.db.service_row``) in the database Nova's schedulers keep
theirs in (``[scheduler] service_cell``), and judges up-ness as
``scheduler.view.servicegroup`` does (Nova's database servicegroup
driver), so it and Nova's own schedulers agree on one leader when they
run side by side.  When no scheduler is up (this one's own heartbeat is
late), there is no leader and the task is skipped.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging

from scheduler.db import service_row
from scheduler.view import servicegroup

LOG = logging.getLogger(__name__)


def choose(services: Iterable[Mapping[str, Any]],
           now: datetime.datetime | None = None) -> str | None:
    """The leader's host among ``services`` (``services`` rows as dicts,
    all of binary ``nova-scheduler``): the first, in sorted order, of
    the hosts of the enabled rows that are up at ``now`` (naive UTC,
    default: now); None when none is up."""
    up = sorted(service['host'] for service in services
                if not service.get('disabled') and
                servicegroup.service_is_up(service, now))
    return up[0] if up else None


def read_schedulers(engine: sa.engine.Engine,
                    table: sa.Table) -> list[dict[str, Any]]:
    """The live ``nova-scheduler`` rows of ``table`` (a ``services``
    table) on ``engine``, as dicts.

    :raises oslo_db.exception.DBError: the database cannot be read.
    """
    statement = sa.select(table).where(
        table.c.binary == service_row.BINARY, table.c.deleted == 0)
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(statement).mappings()]


def is_leader(row: service_row.ServiceRow) -> bool:
    """Whether the scheduler of ``row`` (its own service row) leads now.

    :raises oslo_db.exception.DBError: the services cannot be read.
    """
    leader = choose(read_schedulers(row.engine, row.table))
    if leader != row.host:
        LOG.debug('Current leader is %s, skipping discover hosts on %s',
                  leader, row.host)
        return False
    return True
