"""The event loop every run shares: the service replay and the reference
policies walk the same events in the same order.

``EventLoop.run`` pops the events of a ``trace.EventQueue`` in time order
(deletions before arrivals at equal times, then first pushed first).  An
arrival asks the subclass to ``place`` its request; each instance placed
that has a lifetime is queued for deletion at the request's time plus its
lifetime, so that every departure is replayed, also after the last
arrival: a run ends with the fleet empty but for the VMs the trace never
deletes.  The deletions due before the next arrival are taken together:
each is ``remove``d and sampled at its own time, then the subclass
``commit``s them at once (the service's agents write them in one
transaction).  With ``speed`` (times real time) the loop sleeps until
each event is due, and a batch only holds deletions of one time.

After every event the ledger (``metrics.Ledger``) is told which nodes
changed (``node_state`` gives their usage) and samples the fleet.
"""

import time

from scheduler_tools.replay import trace


class EventLoop:
    """Walks ``requests`` (trace Requests, in arrival order) into
    ``ledger``; subclasses implement ``place``, ``remove``,
    ``node_state`` and optionally ``commit``."""

    def __init__(self, requests, ledger, speed=None):
        self.queue = trace.EventQueue(requests)
        self.ledger = ledger
        self.speed = speed

    # -- what a subclass provides ------------------------------------------

    def place(self, request):
        """Place ``request``: a list of ``agent.Placed`` records (one per
        instance, in ``request.vms`` order), None for NoValidHost, or an
        empty list when it failed otherwise."""
        raise NotImplementedError

    def remove(self, record):
        """Stop counting the instance of a Placed ``record``."""
        raise NotImplementedError

    def commit(self, records):
        """The ``remove``\\ d records of one batch are done (optional)."""

    def node_state(self, index):
        """``(used, running)`` of node ``index``: what its instances use,
        one value per ``capacity.RESOURCES`` (vCPUs, MiB, GiB, GPUs), and
        their count."""
        raise NotImplementedError

    # -- the loop ----------------------------------------------------------

    def run(self, progress=None):
        """Process every event; ``progress`` (None or a callable) is
        called with each request once it is placed or refused."""
        start_wall = time.monotonic()
        start_s = self.queue.peek_time()
        while self.queue:
            event = self.queue.pop()
            self._pace(start_wall, start_s, event.time_s)
            if event.kind == trace.ARRIVAL:
                self._arrive(event)
                if progress is not None:
                    progress(event.payload)
            else:
                self._depart(event)

    def _pace(self, start_wall, start_s, time_s):
        if not self.speed:
            return
        delay = (start_wall + (time_s - start_s) / self.speed
                 - time.monotonic())
        if delay > 0:
            time.sleep(delay)

    def _arrive(self, event):
        request = event.payload
        records = self.place(request)
        self.ledger.requested(request, len(records or ()), event.time_s,
                              no_valid_host=records is None)
        for record in records or ():
            if record.vm.lifetime_s is not None:
                self.queue.push_deletion(
                    request.time_s + record.vm.lifetime_s, record)
        self._changed(records or ())
        self.ledger.sample(event.time_s)

    def _depart(self, first):
        batch = [first]
        while True:
            following = self.queue.peek()
            if (following is None or following.kind != trace.DELETION or
                    (self.speed and following.time_s != first.time_s)):
                break
            batch.append(self.queue.pop())
        for event in batch:
            self.remove(event.payload)
            self._changed((event.payload,))
            self.ledger.sample(event.time_s)
        self.commit([event.payload for event in batch])

    def _changed(self, records):
        for index in dict.fromkeys(record.index for record in records):
            self.ledger.node_changed(index, *self.node_state(index))
