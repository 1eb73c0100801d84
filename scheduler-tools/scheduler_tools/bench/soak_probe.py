"""The soak's staleness probe: how long a change of the database takes
to reach the decisions, measured from outside (``StalenessProbe``)."""

from __future__ import annotations

import dataclasses
import math
import random
import threading
import time

from oslo_log import log as logging

from scheduler.objects import request_spec
from scheduler_tools import seed

LOG = logging.getLogger(__name__)

# The staleness probe: a tiny flavor, the calls' own time-out, and how
# long one change may take to show before the probe gives up.
PROBE_FLAVOR = {'memory_mb': 512, 'vcpus': 1, 'root_gb': 1,
                'name': 'm1.tiny', 'flavor_id': 1}
PROBE_TIMEOUT_S = 60.0
PROBE_CANDIDATES = 8
PROBE_PAUSE_S = 0.02


@dataclasses.dataclass
class Staleness:
    """One change's way to the decisions (s after its commit): ``upper``
    (the first call of the final run of agreeing answers had come back),
    ``floor`` (the last call that saw the old state began; 0 without
    one), ``change`` ('disable' or 'enable'), ``calls`` made, and ``at``
    (``time.monotonic()`` of the commit)."""

    change: str
    upper: float
    floor: float
    calls: int
    at: float


def wait_reflected(ask, want, committed_at, confirm, timeout_s, stop=None,
                   clock=time.monotonic, pause_s=PROBE_PAUSE_S):
    """Call ``ask()`` (True: a Selection, False: NoValidHost, None: no
    answer) until ``confirm`` answers in a row are ``want``; returns
    ``(upper, floor, calls)`` in seconds after ``committed_at``, or None
    when ``timeout_s`` passed or ``stop`` was set first."""
    first_end = None
    last_stale_start = None
    agreeing = calls = 0
    while True:
        if stop is not None and stop.is_set():
            return None
        started = clock()
        if started - committed_at > timeout_s:
            return None
        answer = ask()
        ended = clock()
        calls += 1
        if answer is want:
            if agreeing == 0:
                first_end = ended
            agreeing += 1
            if agreeing >= confirm:
                floor = (0.0 if last_stale_start is None
                         else max(0.0, last_stale_start - committed_at))
                return (max(0.0, first_end - committed_at), floor, calls)
        else:
            agreeing = 0
            if answer is not None:
                last_stale_start = started
            if pause_s:
                time.sleep(pause_s)


class StalenessProbe:
    """Measures how long a change of the database takes to reach the
    decisions (see the module).  ``ask(host)`` asks for ``host`` alone
    (True, False or None as ``wait_reflected`` wants) and
    ``set_disabled(host, disabled)`` writes the change; ``hosts`` are the
    candidate hosts (enabled, up), tried in turn when one has no room."""

    def __init__(self, ask, set_disabled, hosts, confirm, interval_s,
                 timeout_s=PROBE_TIMEOUT_S):
        self.ask = ask
        self.set_disabled = set_disabled
        self.hosts = list(hosts)
        self.confirm = confirm
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._pending = []
        self.measured = []
        self.timeouts = 0
        self.skipped = 0
        self.errors = 0
        self._turn = 0

    def take(self):
        """The measurements since the last ``take``."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def _record(self, measurement):
        with self._lock:
            self._pending.append(measurement)
            self.measured.append(measurement)

    def run(self, stop):
        """Probe every ``interval_s`` until ``stop`` is set."""
        while not stop.wait(self.interval_s):
            try:
                self.cycle(stop)
            except Exception as exc:
                self.errors += 1
                LOG.warning('staleness probe failed: %s', exc)

    def cycle(self, stop=None):
        """Disable then enable one host; record both changes."""
        host = self.hosts[self._turn % len(self.hosts)]
        if self.ask(host) is not True:
            # Full, or already disabled by someone: the next one.
            self._turn += 1
            self.skipped += 1
            return
        try:
            self.set_disabled(host, True)
            self._measure('disable', host, False, time.monotonic(), stop)
        finally:
            # Never leave the host disabled, whatever happened.
            self.set_disabled(host, False)
        self._measure('enable', host, True, time.monotonic(), stop)

    def _measure(self, change, host, want, committed, stop):
        found = wait_reflected(lambda: self.ask(host), want, committed,
                               self.confirm, self.timeout_s, stop)
        if found is None:
            if stop is None or not stop.is_set():
                self.timeouts += 1
                LOG.warning('staleness probe: %s of %s not seen within '
                            '%.0f s', change, host, self.timeout_s)
            return
        upper, floor, calls = found
        self._record(Staleness(change, round(upper, 4), round(floor, 4),
                               calls, committed))

    def summary(self):
        uppers = sorted(m.upper for m in self.measured)
        return {'measured': len(uppers), 'timeouts': self.timeouts,
                'skipped': self.skipped, 'errors': self.errors,
                'confirm': self.confirm,
                'p50_s': _quantile(uppers, 0.5),
                'p99_s': _quantile(uppers, 0.99),
                'max_s': uppers[-1] if uppers else None,
                'floor_max_s': max((m.floor for m in self.measured),
                                   default=None)}


def _quantile(ordered, share):
    if not ordered:
        return None
    index = min(len(ordered) - 1, int(math.ceil(share * len(ordered))) - 1)
    return round(ordered[max(0, index)], 4)


def probe_spec(host):
    """A one-instance boot request of the probe's tiny flavor for
    ``host`` alone (``requested_destination``: the filters still run)."""
    flavor = dict(PROBE_FLAVOR)
    spec = seed.make_spec(
        memory_mb=flavor['memory_mb'], vcpus=flavor['vcpus'],
        root_gb=flavor['root_gb'], project_id='soak-probe',
        requested_destination=request_spec.Destination(host=host,
                                                       node=host))
    return spec


def probe_hosts(hosts, seed_value):
    """Up to ``PROBE_CANDIDATES`` hosts the staleness probe may use: up
    (enabled, not forced down), spread over the fleet."""
    up = [host.host for host in hosts if host.up]
    rng = random.Random('soak-probe:%s' % seed_value)
    return rng.sample(up, min(PROBE_CANDIDATES, len(up)))
