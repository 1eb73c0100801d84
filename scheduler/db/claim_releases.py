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

With a delay (``[scheduler] claim_release_delay``, our own option), the
first release queued while none is pending starts a timer instead, and
the timer's thread releases, after the delay, everything queued by then:
a host deleting instances one after another (one cast each, to every
worker, since the casts are fanout) then costs each worker one lookup
per delay rather than one per instance.  A claim still counts against
its node for up to the delay after the cast; one queued when the process
exits is released by another worker's cast, the node's next usage
report, or its expiry (``[scheduler] claim_timeout``).
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

    def __init__(self, release_many=claims.release_many, delay_s=0.0):
        """``delay_s``: seconds a release may wait for others to join it
        (0: the caller releases at once)."""
        self._release_many = release_many
        self._delay_s = delay_s
        self._lock = threading.Lock()
        self._pending = []
        self._draining = False

    def release(self, context, instance_uuid):
        """Release the claim of ``instance_uuid`` (a str), if it has one:
        at once, by the caller releasing the batch in flight, or (with a
        delay) by the timer's thread.  Never raises for a database error:
        it is logged, and the claim then ends when it expires
        (``[scheduler] claim_timeout``)."""
        with self._lock:
            self._pending.append(instance_uuid)
            if self._draining:
                return
            self._draining = True
        if self._delay_s > 0:
            timer = threading.Timer(self._delay_s, self._drain_all,
                                    args=(context,))
            timer.daemon = True
            timer.name = 'scheduler-claim-releases'
            timer.start()
        else:
            self._drain_all(context)

    def _drain_all(self, context):
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
