"""The soak's compute service heartbeats, from clocks that may lag.

Every ``interval_s`` seconds one UPDATE beats every live
``nova-compute`` service row (``hosts.heartbeat_compute_services``:
``report_count + 1``, ``last_seen_up`` = ``updated_at`` = the stamp), as
the services themselves would, stamped ``lag_s`` seconds before now: the
hosts' clocks are that much behind the scheduler's, or their heartbeats
commit that long after their stamp (to a reader of the rows the two are
one: a row stamped ``lag_s`` before its commit).  At 100,000 hosts the
UPDATE itself takes seconds, so its rows commit that long after their
stamp even with no lag.  The services' views must keep every host not
forced down up all along (docs/refresh.rst; the soak's ``hosts_up``
check).
"""

from __future__ import annotations

import contextlib
import datetime
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import context as scheduler_context
from scheduler.db import hosts as db_hosts

LOG = logging.getLogger(__name__)

INTERVAL_S = 10.0


def beat(ctx, lag_s=0.0):
    """One heartbeat of every live compute service, stamped ``lag_s``
    seconds before now; returns the seconds it took."""
    started = time.monotonic()
    stamp = timeutils.utcnow() - datetime.timedelta(seconds=lag_s)
    db_hosts.heartbeat_compute_services(ctx, at=stamp)
    return time.monotonic() - started


@contextlib.contextmanager
def heartbeats(lag_s=0.0, interval_s=INTERVAL_S):
    """Beat once, then every ``interval_s`` seconds in a thread of its
    own while in the block (a beat that fails is logged, the next one
    comes on time); yields the list of the beats' durations (s)."""
    ctx = scheduler_context.get_admin_context()
    done = threading.Event()
    took = [beat(ctx, lag_s)]

    def run():
        while not done.wait(max(0.0, interval_s - took[-1])):
            try:
                took.append(beat(ctx, lag_s))
            except Exception as exc:
                LOG.warning('heartbeat failed: %s', exc)
                took.append(0.0)

    thread = threading.Thread(target=run, name='soak-heartbeat',
                              daemon=True)
    thread.start()
    try:
        yield took
    finally:
        done.set()
        thread.join()
