"""Compute service liveness, as Nova's database servicegroup driver.

A service is up when it is not ``forced_down`` and its last heartbeat
(``last_seen_up``, or ``created_at`` before the first one) is at most
``[DEFAULT] service_down_time`` seconds old.  Timestamps are naive UTC.

The host view keeps copies of the rows and judges them with these rules
(``scheduler.view.suspects`` names the copies to read again first); the
CLI judges the rows it reads.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from oslo_utils import timeutils

from scheduler.conf import CONF


def service_down_time() -> int:
    """The liveness window in seconds (Nova raises it to 2.5 times
    ``report_interval`` when it is not larger than that interval)."""
    if CONF.service_down_time <= CONF.report_interval:
        return int(CONF.report_interval * 2.5)
    return CONF.service_down_time


def last_heartbeat(service: Mapping[str, Any]
                   ) -> datetime.datetime | None:
    """The naive UTC time of the service's last heartbeat
    (``last_seen_up``, else ``created_at``; ISO text is parsed), or None
    when there is none."""
    last = service.get('last_seen_up') or service.get('created_at')
    if last is None:
        return None
    if isinstance(last, str):
        last = timeutils.parse_isotime(last)
    return timeutils.normalize_time(last)


def service_is_up(service: Mapping[str, Any],
                  now: datetime.datetime | None = None) -> bool:
    """Whether the ``services`` row (a dict) has a recent heartbeat."""
    if service.get('forced_down'):
        return False
    last = last_heartbeat(service)
    if last is None:
        return False
    now = now or timeutils.utcnow()
    elapsed = abs((now - last).total_seconds())
    return elapsed <= service_down_time()
