"""One INFO line per ``select_destinations`` call, as operators grep for.

Nova's filter scheduler logs the host it selected for each instance
(``Selected host: ...``, DEBUG, per instance) and, when filtering leaves
no host, which filter removed them.  This service writes one line per
request instead, at INFO, naming the request id (Nova's conductor passes
its request context, so it is the id nova-api answered in
``x-openstack-request-id``), each instance with the host and node chosen
for it and the number of alternates returned with it, and the time the
call took (from its arrival at the manager to its answer, waiting for
the view's lock included):

``Selected destinations for request req-1 in 4.2 ms: <uuid> on
host1:node1 (2 alternates), <uuid> on host2:node2 (2 alternates)``

A request that gets NoValidHost is logged, also at INFO, with its reason:

``No valid host for request req-1 in 3.0 ms, instances <uuid>, <uuid>:
There are not enough hosts available.``

An instance whose uuid the caller did not send (a Nova before Queens
sends none for a multi-create) is named ``-``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from oslo_log import log as oslo_logging

LOG = oslo_logging.getLogger(__name__)

SELECTED = 'Selected destinations for request %s in %.1f ms: %s'
NO_VALID_HOST = 'No valid host for request %s in %.1f ms, instances %s: %s'


def request_id(context: Any) -> str:
    """The request id of ``context`` (``req-...``), or ``-``."""
    return getattr(context, 'request_id', None) or '-'


def _uuids(spec_obj: Any, instance_uuids: Sequence[str] | None,
           count: int) -> list[str]:
    """``count`` instance uuids: the caller's, else the request's
    ``instance_uuid`` for the first; ``-`` for any not known."""
    known = list(instance_uuids or [])
    if not known and spec_obj.obj_get('instance_uuid'):
        known = [spec_obj.obj_get('instance_uuid')]
    return (known + ['-'] * count)[:max(count, len(known))]


def selected(context: Any, spec_obj: Any,
             instance_uuids: Sequence[str] | None,
             selections: Sequence[Sequence[Any]], seconds: float) -> None:
    """Log the answer of a call: ``selections`` holds one list of
    Selection per instance, the chosen host first, then its alternates;
    ``seconds`` the time the call took.  Nothing is formatted when INFO
    is off (a 1,000-instance answer's line is long)."""
    if not LOG.isEnabledFor(logging.INFO):
        return
    uuids = _uuids(spec_obj, instance_uuids, len(selections))
    items = ', '.join(
        '%s on %s:%s (%d alternates)' % (
            uuid, picks[0].service_host, picks[0].nodename, len(picks) - 1)
        for uuid, picks in zip(uuids, selections, strict=True))
    LOG.info(SELECTED, request_id(context), seconds * 1000.0, items)


def refused(context: Any, spec_obj: Any,
            instance_uuids: Sequence[str] | None, reason: Any,
            seconds: float) -> None:
    """Log a call answered NoValidHost (``reason``: the exception or its
    text) after ``seconds``."""
    if not LOG.isEnabledFor(logging.INFO):
        return
    count = len(instance_uuids or ()) or spec_obj.obj_get('num_instances') \
        or 1
    uuids = _uuids(spec_obj, instance_uuids, count)
    LOG.info(NO_VALID_HOST, request_id(context), seconds * 1000.0,
             ', '.join(uuids), reason)
