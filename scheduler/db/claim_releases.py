"""Releases of deleted instances' claims, taken together.

A compute host casts ``delete_instance_info`` once per deleted instance,
often many at a time, and the service's workers take them in parallel.
Each asks to release the instance's claim, which is usually gone already
(the node's usage report superseded it).  ``ReleaseQueue.release``
queues the uuid; the caller that finds no release in flight releases
everything queued in one ``claims.release_many`` (one lookup for the
whole batch) and goes on until the queue is empty, while callers arriving
meanwhile only queue.  A release thus waits at most for the batch in
flight, and many concurrent casts cost a few lookups instead of one each.
"""

import threading

from oslo_log import log as logging

from scheduler.db import claims

LOG = logging.getLogger(__name__)


class ReleaseQueue:
    """Group releases of claims by instance uuid (see the module).

    ``release_many(context, uuids)`` does the work (default
    ``claims.release_many``).  Thread-safe.
    """

    def __init__(self, release_many=claims.release_many):
        self._release_many = release_many
        self._lock = threading.Lock()
        self._pending = []
        self._draining = False

    def release(self, context, instance_uuid):
        """Release the claim of ``instance_uuid`` (a str), if it has one:
        at once, or by the caller releasing the batch in flight.  Never
        raises for a database error: it is logged, and the claim then
        ends when it expires (``[scheduler] claim_timeout``)."""
        with self._lock:
            self._pending.append(instance_uuid)
            if self._draining:
                return
            self._draining = True
        try:
            self._drain(context)
        except BaseException:
            with self._lock:
                self._draining = False
            raise

    def _drain(self, context):
        """Release batches until the queue is empty; the check for an
        empty queue and the end of draining are one step, so a uuid
        queued meanwhile is never left behind."""
        while True:
            with self._lock:
                batch, self._pending = self._pending, []
                if not batch:
                    self._draining = False
                    return
            try:
                self._release_many(context, batch)
            except Exception:
                LOG.exception('Could not release the claims of %d deleted '
                              'instances; they end when they expire',
                              len(batch))
