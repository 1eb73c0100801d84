"""One planning run: a policy's run on one fleet, counted by a ``Tally``.

A reference policy (``policies``) runs in memory (``run_reference``);
the service (``run_service``) runs in a forked process of its own
(``in_child``), on a temporary database seeded afresh and an embedded
service, because a process configures its database engine once.  With
``stop`` a run ends at the first request refused with NoValidHost
(``--fill-until-failure``).  ``planning`` searches and fills with them.
"""

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from collections.abc import Sequence

import numpy as np
from oslo_log import log as logging

from scheduler.db import api as db
from scheduler.db import migration
from scheduler_tools import seed
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import metrics
from scheduler_tools.replay import policies
from scheduler_tools.replay import replayer
from scheduler_tools.replay import runner
from scheduler_tools.replay import trace
from scheduler_tools.replay.deployment import Deployment

LOG = logging.getLogger(__name__)

SERVICE = 'service'

ReplayError = replayer.ReplayError


class Tally:
    """Stands in for ``metrics.Ledger`` in a planning run: counts the
    instances asked for and placed, the requests that failed otherwise
    than with NoValidHost (``errors``: the service's timeouts, server
    errors), remembers the first request refused with NoValidHost and
    keeps each node's final usage (``(n, R)`` in RESOURCES units) and
    instance count; samples nothing over time."""

    def __init__(self, nodes: int):
        self.instances = 0
        self.placed = 0
        self.requests_placed = 0
        self.errors = 0
        self.refused_request = None
        self.used = np.zeros((nodes, len(capacity_mod.RESOURCES)))
        self.running = np.zeros(nodes, dtype=np.int64)

    @property
    def refused(self) -> int:
        """Instances not placed (NoValidHost or another error)."""
        return self.instances - self.placed

    def requested(self, request, placed, time_s, no_valid_host):
        self.instances += request.num_instances
        self.placed += placed
        self.requests_placed += placed == request.num_instances
        self.errors += not no_valid_host and placed < request.num_instances
        if no_valid_host and self.refused_request is None:
            self.refused_request = {
                'index': request.index, 'instances': request.num_instances,
                'flavor': metrics.size_dict(request.first.resources)}

    def node_changed(self, index, used, running):
        self.used[index] = capacity_mod.widen(used)
        self.running[index] = running

    def sample(self, time_s):
        """Nothing is sampled over time."""


class _StopsAtRefusal:
    """Mixin of an ``loop.EventLoop``: the run ends with the first
    request refused with NoValidHost (its queue emptied)."""

    def place(self, request):
        records = super().place(request)
        if records is None:
            self.queue = trace.EventQueue()
        return records


class FillSimulation(_StopsAtRefusal, policies.Simulation):
    """A reference policy's run that stops at the first refusal."""


class FillReplay(_StopsAtRefusal, replayer.Replay):
    """The service's run that stops at the first NoValidHost."""


@dataclasses.dataclass
class Run:
    """One policy's run on one fleet: its ``tally``, the fleet's
    ``limits`` ``(n, R)`` and the wall seconds it took."""

    policy: str
    tally: Tally
    limits: np.ndarray
    wall_s: float

    @property
    def hosts(self) -> int:
        return len(self.limits)

    def refused_share(self) -> float:
        """Refused instances over instances asked for."""
        return metrics.ratio(self.tally.refused, self.tally.instances)


def run_reference(policy: str, requests: Sequence, capacity, mix,
                  stop: bool) -> Run:
    """``policy`` (a ``policies.POLICIES`` name) on ``capacity`` in
    memory; with ``stop`` until the first refusal."""
    started = time.monotonic()
    kind = FillSimulation if stop else policies.Simulation
    simulation = kind(requests, capacity, mix, policy)
    simulation.ledger = Tally(capacity.size)
    simulation.run()
    return Run(policy, simulation.ledger, capacity.limits,
               time.monotonic() - started)


def _service_run(settings, specs: Sequence, requests: Sequence,
                 stop: bool):
    """In a forked process: seed the HostSpecs ``specs`` into a fresh
    temporary database, start the embedded service and replay
    ``requests`` (with ``stop`` until the first NoValidHost).  Returns
    ``(tally, limits)``."""
    with Deployment(settings) as deployment:
        ctx = deployment.ctx
        migration.db_sync(db.get_engine())
        seed.seed_fleet(ctx, specs)
        agents, capacity = runner.fleet_agents(ctx)
        tally = Tally(capacity.size)
        agents.api = deployment.start()
        kind = FillReplay if stop else replayer.Replay
        replay = kind(ctx, agents.api, agents, requests, tally)
        with runner.Heartbeat(ctx):
            replay.run()
    return tally, capacity.limits


def run_service(settings, specs: Sequence, requests: Sequence,
                stop: bool) -> Run:
    """The service configured as ``settings`` say on the HostSpecs
    ``specs``, in a process of its own (see ``in_child``)."""
    started = time.monotonic()
    tally, limits = in_child(_service_run, settings, specs, requests, stop)
    return Run(SERVICE, tally, limits, time.monotonic() - started)


def in_child(function: Callable, *args):
    """``function(*args)`` in a forked process (so that every run gets
    a database engine and a service of its own); returns its result.

    :raises ReplayError: the function raised (its message), or the
        process died.
    """
    context = multiprocessing.get_context('fork')
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, name='replay-planning',
                              args=(sender, function, args))
    process.start()
    sender.close()
    try:
        status, value = receiver.recv()
    except EOFError:
        status, value = 'error', 'the run died'
    finally:
        receiver.close()
        process.join()
    if status != 'ok':
        raise ReplayError(value)
    return value


def _child(sender, function, args):
    try:
        answer = ('ok', function(*args))
    except Exception as exc:   # reported to the parent, which raises
        LOG.exception('planning run failed')
        answer = ('error', '%s: %s' % (type(exc).__name__, exc))
    sender.send(answer)
    sender.close()
