"""Soak: an hour of mixed load on one fleet, sampled every minute.

``run`` seeds a fleet (``load.load_hosts``: 10,000 hosts by default),
starts ``--services`` ``scheduler-service`` processes of ``--workers``
workers each (``load.LoadService``, with ``[prometheus] bind`` on a free
loopback port each), then for ``--duration`` seconds keeps up a mixed
load on them, and checks the database at the end:

boots
    ``--callers`` threads (``load.drive`` over a ``load.RequestFeed`` of
    the ``workload.Workload`` request mix) call ``select_destinations(...,
    return_objects=True, return_alternates=True)``.  Each instance placed
    is then recorded as its compute service records it: its
    ``instances`` row (host, node, flavor sizes) is written and
    ``update_instance_info`` is cast to its host.  No usage report is
    written and no periodic task runs (``[scheduler]
    periodic_task_interval = -1``, as in every benchmark): as in the load
    mode, the claim alone counts the instance against its node for its
    whole life, so every live instance must keep exactly its claim.
deletes
    Before each boot a caller deletes a random live instance, always
    once the live instances reach ``--live-instances`` (default: one per
    host) and otherwise with probability ``--delete-share``, so that
    deletes balance boots and the fleet never fills up.  A delete is what
    a compute service does: the ``instances`` row is soft-deleted, then
    ``delete_instance_info`` is cast, whose handler releases the claim
    (``Reservation.release_deleted``).
casts
    A thread casts, every second, ``sync_instance_info`` (the full list
    of a random host's live instances) and ``update_instance_info`` (a
    random host's instances again), and every ``AGGREGATE_EVERY`` seconds
    changes an aggregate of its own as the API does: creates one (with
    metadata and a few hosts), adds a host to one, or deletes the oldest,
    in the database (``scheduler.db.host_aggregates``) and then by
    ``update_aggregates`` / ``delete_aggregate`` with real ``Aggregate``
    objects read back from the database.
heartbeats
    ``load.heartbeats`` keeps every compute service up.
the staleness probe
    A thread measures, from outside, how long a change in the database
    takes to reach the decisions (``StalenessProbe``): it disables the
    compute service of one host (``hosts.set_compute_service_disabled``,
    what ``openstack compute service set --disable`` writes), then asks
    ``select_destinations`` for that host (``requested_destination``, so
    the filters run on it alone) back to back until ``confirm`` answers
    in a row (twice the workers, plus one: enough for every worker to
    have answered) are NoValidHost; it then enables the service again and
    waits for as many Selections (whose claims it releases at once, as a
    caller that gives up does).  The staleness of one change is the time
    from its commit to the end of the first call of that final run of
    agreeing answers: an upper bound of how long a decision may still
    use the old state, which includes one call's latency (queueing behind
    the callers' requests included).  ``staleness_floor_s`` is the lower
    bound: when the last call that still saw the old state began.

Every ``--sample-interval`` seconds (and once before the load starts)
the sampler writes one JSON line (``Sample`` fields, see ``sample``):
the summed RSS of every service process and its forked workers (walking
``/proc/<pid>/task/*/children``), their open file descriptors and
sockets and their TCP connections to the database and to the broker,
the ``pg_stat_activity`` rows of the database (every client: the
services and this process), the decisions at the caller over the
interval (p50, p99, max, decisions per second, NoValidHost, errors),
boots, deletes, casts, live instances and claims, the probe's staleness
(the largest of the interval) and the service's own view age (its
Prometheus gauge ``scheduler_view_staleness_seconds``: seconds since the
view was last read when a decision used it, the largest over the
services), with the service's decision count and mean duration.

At the end the callers, casts and probe stop; the services then get
``--drain-timeout`` seconds to handle the casts still queued, until the
claims are exactly the live instances' (``audit_claims``): no live
instance without its claim (*lost*), no claim without a live instance
(*leaked*), but for the instances of calls the soak gave up on
(*abandoned*: a time-out, a failed write; their claims are released
then), no claim on another host than its instance's (*misplaced*).  The
services are stopped and the database checked (``load.verify``):
``claims.overcommitted_nodes`` and ``claims.unbalanced_nodes`` must be
empty.  ``verdict`` adds the checks up (``CHECKS``): the issue's two
targets, RSS growth under ``--rss-growth-limit`` percent after the
warm-up (``warmup_for``: 600 s, or a third of a shorter run;
``rss_growth``) and zero overcommit, plus no lost claim, balanced
claims, every call answered, no service died, no growth of the
connections and file descriptors, and every staleness probe answered.
``plot`` draws the samples (RSS, connections, p99, staleness) into one
PNG.  The output directory gets ``samples.jsonl``, ``soak.png`` and
``summary.json``.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import math
import os
import random
import shutil
import socket
import statistics
import tempfile
import threading
import time
import urllib.request
import uuid

import oslo_messaging as messaging
import psutil
import sqlalchemy as sa
from oslo_log import log as logging

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.db import host_aggregates
from scheduler.db import hosts as db_hosts
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec
from scheduler.server import rpcapi
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import load
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

LOG = logging.getLogger(__name__)

SAMPLES_FILE = 'samples.jsonl'
PLOT_FILE = 'soak.png'
SUMMARY_FILE = 'summary.json'

# The warm-up: at most this long, at most a third of the run.
WARMUP_S = 600.0
WARMUP_SHARE = 1.0 / 3
# The first and last samples after the warm-up that RSS growth compares:
# a third of them, at most this many.
ENDPOINT_SAMPLES = 3
# Connections and file descriptors: the median of the last third of the
# samples after the warm-up may exceed the largest of the first third by
# this many, or this share of it, whichever is more.
CONNECTION_SLACK = 5
CONNECTION_SLACK_SHARE = 0.1

# The casts' thread ticks every CAST_PERIOD_S; an aggregate changes every
# AGGREGATE_EVERY ticks, and at most MAX_AGGREGATES of its own live.
CAST_PERIOD_S = 1.0
AGGREGATE_EVERY = 5
MAX_AGGREGATES = 3
AGGREGATE_PREFIX = 'soak-'
# The instances' owner (``instances.user_id``): what the soak wrote.
SOAK_USER = 'soak'
ACTIVE = 'active'
RUNNING = 1     # Nova's power_state.RUNNING

# The staleness probe: a tiny flavor, the calls' own time-out, and how
# long one change may take to show before the probe gives up.
PROBE_FLAVOR = {'memory_mb': 512, 'vcpus': 1, 'root_gb': 1,
                'name': 'm1.tiny', 'flavor_id': 1}
PROBE_TIMEOUT_S = 60.0
PROBE_MIN_INTERVAL_S = 2.0
PROBE_CANDIDATES = 8
PROBE_PAUSE_S = 0.02

METRICS_TIMEOUT_S = 5.0
DRAIN_POLL_S = 1.0
# Lists in the summary are cut to this many entries.
LISTED = 20

CHECKS = ('rss_growth', 'overcommit', 'lost_claims', 'claims_balanced',
          'calls_answered', 'services_alive', 'connections_stable',
          'staleness_probes')
TARGETS = ('rss_growth', 'overcommit')


@dataclasses.dataclass
class SoakSettings:
    """What to run (times in seconds)."""

    hosts: int = 10000
    duration_s: float = 3600.0
    sample_interval_s: float = 60.0
    warmup_s: float | None = None
    callers: int = 8
    services: int = 1
    workers: int = 2
    instances: int = 1
    live_instances: int | None = None
    delete_share: float = 0.1
    transport_url: str | None = None
    database_connection: str | None = None
    admin_connection: str | None = None
    output_dir: str = 'soak-output'
    seed: int = 0
    call_timeout: int = 60
    server_timeout: float = 300.0
    drain_timeout_s: float = 60.0
    rss_growth_limit_pct: float = 5.0
    metrics: bool = True
    progress: bool = True

    @property
    def warmup(self):
        return warmup_for(self.duration_s, self.warmup_s)

    @property
    def live_target(self):
        return self.live_instances or self.hosts

    @property
    def probe_interval_s(self):
        return max(PROBE_MIN_INTERVAL_S, self.sample_interval_s / 3.0)

    @property
    def processes(self):
        return self.services * self.workers


def warmup_for(duration_s, warmup_s=None):
    """The warm-up of a run of ``duration_s``: ``warmup_s`` when given,
    else ``WARMUP_S`` (10 minutes) or a third of a shorter run."""
    if warmup_s is not None:
        return max(0.0, min(float(warmup_s), float(duration_s)))
    return min(WARMUP_S, duration_s * WARMUP_SHARE)


# ---------------------------------------------------- latency at callers --

class LatencyWindow:
    """The calls at the callers since the last ``take``: latencies (ms) of
    the answered ones (a Selection or NoValidHost), NoValidHost, errors,
    time-outs and refusals; thread-safe.  ``all_ms`` keeps every latency of the
    run for the summary."""

    def __init__(self):
        self._lock = threading.Lock()
        self._latencies = []
        self._counts = collections.Counter()
        self.all_ms = []

    def record(self, ms, outcome='ok'):
        """One answered call (``outcome`` 'ok' or 'no_valid_host')."""
        with self._lock:
            self._latencies.append(ms)
            self.all_ms.append(ms)
            self._counts[outcome] += 1

    def error(self, timeout=False):
        with self._lock:
            self._counts['errors'] += 1
            if timeout:
                self._counts['timeouts'] += 1

    def refused(self):
        """A call the service refused (DatabaseUnavailable: its decision
        waited past ``decision_timeout``; nothing was claimed)."""
        with self._lock:
            self._counts['refused'] += 1

    def take(self, seconds):
        """The figures of the calls since the last ``take``, over an
        interval of ``seconds``, and start a new interval."""
        with self._lock:
            latencies, self._latencies = self._latencies, []
            counts, self._counts = self._counts, collections.Counter()
        found = report.percentiles_ms(latencies)
        return {'calls': len(latencies),
                'decisions_per_s': (round(len(latencies) / seconds, 2)
                                    if seconds > 0 else None),
                'p50_ms': found['p50_ms'], 'p99_ms': found['p99_ms'],
                'max_ms': found['max_ms'],
                'no_valid_host': counts['no_valid_host'],
                'errors': counts['errors'], 'timeouts': counts['timeouts'],
                'refused': counts['refused']}


# ------------------------------------------------------------ processes --

def process_tree(pid):
    """``pid`` and its descendants that are alive, by walking
    ``/proc/<pid>/task/*/children``."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        if not os.path.isdir('/proc/%d' % current):
            continue
        found.append(current)
        todo.extend(report.children(current))
    return found


def _rss_mb(pid):
    try:
        with open('/proc/%d/status' % pid) as stream:
            for line in stream:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_figures(pids, ports=None):
    """What ``pids`` hold together: ``rss_mb`` (summed VmRSS, MiB),
    ``processes``, ``fds`` (open file descriptors), ``sockets`` (those
    that are sockets) and, for each ``name: port`` of ``ports``,
    ``<name>_connections``: their established TCP connections to that
    remote port."""
    figures = {'rss_mb': 0.0, 'processes': 0, 'fds': 0, 'sockets': 0}
    ports = ports or {}
    for name in ports:
        figures['%s_connections' % name] = 0
    for pid in pids:
        rss = _rss_mb(pid)
        if rss is None:
            continue
        figures['processes'] += 1
        figures['rss_mb'] += rss
        fd_dir = '/proc/%d/fd' % pid
        for fd in report.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            figures['fds'] += 1
            if target.startswith('socket:'):
                figures['sockets'] += 1
        if not ports:
            continue
        try:
            connections = psutil.Process(pid).net_connections(kind='tcp')
        except psutil.Error:
            continue
        for connection in connections:
            if (connection.status != psutil.CONN_ESTABLISHED or
                    not connection.raddr):
                continue
            for name, port in ports.items():
                if connection.raddr.port == port:
                    figures['%s_connections' % name] += 1
    figures['rss_mb'] = round(figures['rss_mb'], 1)
    return figures


# --------------------------------------------------------------- metrics --

def parse_metrics(text):
    """The figures the soak reads from a service's ``/metrics`` text:
    ``view_age_s`` (``scheduler_view_staleness_seconds``),
    ``decisions`` (``scheduler_decisions_total``, every outcome),
    ``decision_seconds`` (the histogram's sum), ``decision_count``,
    ``lost_races`` and ``hosts_known``; None for what it lacks."""
    from prometheus_client.parser import text_string_to_metric_families

    found = dict.fromkeys(('view_age_s', 'decisions', 'decision_seconds',
                           'decision_count', 'lost_races', 'hosts_known'))
    names = {'scheduler_view_staleness_seconds': 'view_age_s',
             'scheduler_decisions_total': 'decisions',
             'scheduler_decision_duration_seconds_sum': 'decision_seconds',
             'scheduler_decision_duration_seconds_count': 'decision_count',
             'scheduler_claim_races_lost_total': 'lost_races',
             'scheduler_hosts_known': 'hosts_known'}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = names.get(sample.name)
            if key is None:
                continue
            found[key] = (found[key] or 0.0) + sample.value
    return found


def scrape(url, timeout_s=METRICS_TIMEOUT_S):
    """``parse_metrics`` of ``url``, or None when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return parse_metrics(answer.read().decode('utf-8', 'replace'))
    except (OSError, ValueError) as exc:
        LOG.warning('cannot read %s: %s', url, exc)
        return None


def combine_metrics(scraped):
    """One figure per key over the services' ``parse_metrics``: the
    largest view age, the sums of the rest."""
    combined = dict.fromkeys(('view_age_s', 'decisions', 'decision_seconds',
                              'decision_count', 'lost_races',
                              'hosts_known'))
    for found in scraped:
        if not found:
            continue
        for key, value in found.items():
            if value is None:
                continue
            if key == 'view_age_s':
                combined[key] = max(combined[key] or 0.0, value)
            else:
                combined[key] = (combined[key] or 0.0) + value
    return combined


def metric_deltas(previous, current, seconds):
    """The service's figures over one interval from two
    ``combine_metrics``: ``view_age_s``, ``server_decisions``,
    ``server_mean_ms`` and ``server_lost_races``."""
    figures = {'view_age_s': current.get('view_age_s'),
               'server_decisions': None, 'server_mean_ms': None,
               'server_lost_races': None}

    def delta(key):
        if current.get(key) is None:
            return None
        return current[key] - ((previous or {}).get(key) or 0.0)

    decisions = delta('decisions')
    count, total = delta('decision_count'), delta('decision_seconds')
    lost = delta('lost_races')
    if decisions is not None:
        figures['server_decisions'] = int(decisions)
    if count and total is not None:
        figures['server_mean_ms'] = round(1000.0 * total / count, 3)
    if lost is not None:
        figures['server_lost_races'] = int(lost)
    if figures['view_age_s'] is not None:
        figures['view_age_s'] = round(figures['view_age_s'], 4)
    return figures


# ---------------------------------------------------------------- verdict --

def linear_fit(xs, ys):
    """``(slope, intercept)`` of the least-squares line through the
    points; slope 0 with fewer than two distinct ``xs``."""
    n = len(xs)
    if n == 0:
        return 0.0, 0.0
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0, mean_y
    slope = sum((x - mean_x) * (y - mean_y)
                for x, y in zip(xs, ys, strict=True)) / spread
    return slope, mean_y - slope * mean_x


def _after_warmup(samples, key, warmup_s):
    return [(s['t_s'], s[key]) for s in samples
            if s.get(key) is not None and s['t_s'] >= warmup_s - 1e-6]


def rss_growth(samples, warmup_s, key='rss_mb'):
    """RSS growth after the warm-up: ``baseline_mb`` and ``end_mb`` (the
    means of the first and last post-warm-up samples, a third of them,
    at most ``ENDPOINT_SAMPLES``), ``endpoint_pct`` (end over baseline),
    ``slope_mb_per_min`` (least squares over every post-warm-up sample),
    ``fitted_pct`` (the fitted line's rise over the window, as a share of
    its start) and ``growth_pct``, the larger of the two; None each
    (with ``samples`` below 2) when there are too few samples."""
    points = _after_warmup(samples, key, warmup_s)
    result = {'samples': len(points), 'baseline_mb': None, 'end_mb': None,
              'endpoint_pct': None, 'slope_mb_per_min': None,
              'fitted_pct': None, 'growth_pct': None}
    if len(points) < 2:
        return result
    edge = max(1, min(ENDPOINT_SAMPLES, len(points) // 3))
    baseline = statistics.fmean(y for _, y in points[:edge])
    end = statistics.fmean(y for _, y in points[-edge:])
    xs = [x for x, _ in points]
    slope, intercept = linear_fit(xs, [y for _, y in points])
    start_fit = slope * xs[0] + intercept
    rise = slope * (xs[-1] - xs[0])
    result.update(
        baseline_mb=round(baseline, 1), end_mb=round(end, 1),
        endpoint_pct=_pct(end - baseline, baseline),
        slope_mb_per_min=round(slope * 60.0, 3),
        fitted_pct=_pct(rise, start_fit))
    if None not in (result['endpoint_pct'], result['fitted_pct']):
        result['growth_pct'] = max(result['endpoint_pct'],
                                   result['fitted_pct'])
    return result


def _pct(part, whole):
    if not whole or whole <= 0:
        return None
    return round(100.0 * part / whole, 2)


def steady(samples, key, warmup_s, slack=CONNECTION_SLACK,
           share=CONNECTION_SLACK_SHARE):
    """Whether the post-warm-up values of ``key`` show no growth: the
    median of the last third is at most the largest of the first third
    plus ``slack`` or ``share`` of it.  ``{'first_max', 'last_median',
    'steady'}``; steady None with fewer than 3 samples."""
    values = [y for _, y in _after_warmup(samples, key, warmup_s)]
    if len(values) < 3:
        return {'first_max': None, 'last_median': None, 'steady': None}
    third = max(1, len(values) // 3)
    first_max = max(values[:third])
    last_median = statistics.median(values[-third:])
    allowed = first_max + max(slack, share * first_max)
    return {'first_max': first_max, 'last_median': last_median,
            'steady': last_median <= allowed}


CONNECTION_KEYS = ('db_connections', 'service_db_connections',
                   'service_broker_connections', 'fds')


def verdict(samples, audit, found, calls, probe, died, warmup_s,
            rss_limit_pct):
    """The checks (``CHECKS``, each ``{'value', 'limit', 'passed',
    'target'}``, ``target`` True for the issue's targets ``TARGETS``)
    from the ``samples``, the claims ``audit`` (``audit_claims``), what
    ``load.verify`` ``found`` in the database, the ``calls`` at the
    callers (``errors``), the ``probe`` summary and how many services
    ``died``; returns ``(checks, growth, trends)``."""
    growth = rss_growth(samples, warmup_s)
    trends = {key: steady(samples, key, warmup_s)
              for key in CONNECTION_KEYS}
    checks = {}

    def check(name, value, passed, limit):
        checks[name] = {'value': value, 'limit': limit,
                        'passed': bool(passed), 'target': name in TARGETS}

    pct = growth['growth_pct']
    check('rss_growth', pct, pct is not None and pct < rss_limit_pct,
          '< %g %% after %.0f s of warm-up' % (rss_limit_pct, warmup_s))
    check('overcommit', len(found['overcommitted']),
          not found['overcommitted'], 'no node')
    wrong = (len(audit['lost']) + len(audit['leaked']) +
             len(audit['misplaced']))
    check('lost_claims', wrong, wrong == 0 and audit['instances_match'],
          'every live instance has its claim on its host, no other claim')
    check('claims_balanced', len(found['unbalanced']),
          not found['unbalanced'], 'claimed sums = claim rows')
    check('calls_answered', calls['errors'], calls['errors'] == 0,
          'no error or time-out (%d refused)' % calls.get('refused', 0))
    check('services_alive', died, not died, 'none died')
    unsteady = sorted(key for key, trend in trends.items()
                      if trend['steady'] is False)
    check('connections_stable', unsteady, not unsteady,
          'no growth after the warm-up')
    check('staleness_probes',
          {'measured': probe['measured'], 'timeouts': probe['timeouts']},
          probe['measured'] > 0 and probe['timeouts'] == 0,
          'every change seen within %.0f s' % PROBE_TIMEOUT_S)
    return checks, growth, trends


# ------------------------------------------------------------------- plot --

def _series(samples, key):
    return [math.nan if s.get(key) is None else s[key] for s in samples]


def plot(samples, path, warmup_s=0.0, growth=None, title=None):
    """Write the samples into a PNG of four panels over minutes: RSS
    (MiB), connections, p99 at the caller (ms) and staleness (s), the
    warm-up shaded (Agg backend, no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 12), layout='constrained')
    FigureCanvasAgg(fig)
    axes = fig.subplots(4, 1, sharex=True)
    minutes = [s['t_s'] / 60.0 for s in samples]
    rss, conns, latency, stale = axes
    rss.plot(minutes, _series(samples, 'rss_mb'), marker='.',
             label='services (all processes)')
    points = _after_warmup(samples, 'rss_mb', warmup_s)
    if len(points) >= 2:
        xs = [x for x, _ in points]
        slope, intercept = linear_fit(xs, [y for _, y in points])
        label = 'least squares after the warm-up'
        if growth and growth.get('growth_pct') is not None:
            label += ' (growth %+.2f %%)' % growth['growth_pct']
        rss.plot([xs[0] / 60.0, xs[-1] / 60.0],
                 [slope * xs[0] + intercept, slope * xs[-1] + intercept],
                 linestyle='--', label=label)
    rss.set_ylabel('RSS (MiB)')
    for key, label in (('db_connections', 'pg_stat_activity rows'),
                       ('service_db_connections', 'service -> database'),
                       ('service_broker_connections', 'service -> broker'),
                       ('sockets', 'service sockets')):
        conns.plot(minutes, _series(samples, key), marker='.', label=label)
    conns.set_ylabel('connections')
    latency.plot(minutes, _series(samples, 'p99_ms'), marker='.',
                 label='p99 at the caller')
    latency.plot(minutes, _series(samples, 'p50_ms'), marker='.',
                 linestyle=':', label='p50 at the caller')
    latency.set_ylabel('decision (ms)')
    stale.plot(minutes, _series(samples, 'staleness_s'), marker='.',
               label='probe: DB change -> decisions (max)')
    stale.plot(minutes, _series(samples, 'view_age_s'), marker='.',
               linestyle=':', label='service gauge: view age')
    stale.set_ylabel('staleness (s)')
    stale.set_xlabel('minutes into the load')
    for ax in axes:
        if warmup_s:
            ax.axvspan(0, warmup_s / 60.0, color='0.92', zorder=0)
        ax.grid(True, alpha=0.3)
        ax.legend(loc='best', fontsize='small')
        ax.set_ylim(bottom=0)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=90)
    return path


# -------------------------------------------------------------- the world --

@dataclasses.dataclass(slots=True)
class Instance:
    """A live instance the soak booted."""

    uuid: str
    host: str
    node: str
    flavor_id: int | None
    project_id: str | None

    def cast_object(self):
        """The Instance an instance cast carries."""
        return instance_obj.Instance.from_db({
            'uuid': self.uuid, 'host': self.host, 'node': self.node,
            'instance_type_id': self.flavor_id,
            'project_id': self.project_id})


_local = threading.local()


def thread_context():
    """An admin context of this thread's own (the enginefacade keeps a
    transaction's state on its context)."""
    ctx = getattr(_local, 'ctx', None)
    if ctx is None:
        ctx = _local.ctx = scheduler_context.get_admin_context()
    return ctx


class World:
    """The compute side: the live instances, their boots and deletes.

    ``api`` is a SchedulerAPI (or anything with its casts); with
    ``write`` False nothing is written to the database (unit tests).
    Thread-safe.  ``counts`` has ``boots``, ``deletes`` and each cast by
    name; ``abandoned`` the uuids of instances the soak gave up on (a
    call or a write failed), whose claims are not leaks.
    """

    def __init__(self, api, live_target, delete_share, seed=0, write=True):
        self.api = api
        self.live_target = live_target
        self.delete_share = delete_share
        self.write = write
        self._lock = threading.Lock()
        self._live = []
        self._index = {}
        self._by_host = collections.defaultdict(dict)
        self._rng = random.Random('soak:%s' % seed)
        self.counts = collections.Counter()
        self.abandoned = set()
        # ``time.monotonic()`` when the live instances first reached
        # ``live_target``.
        self.filled_at = None

    def __len__(self):
        return len(self._live)

    def count(self, name, amount=1):
        with self._lock:
            self.counts[name] += amount

    def abandon(self, uuids):
        """The soak gave up on these instances (their claims are not
        leaks)."""
        with self._lock:
            self.abandoned.update(uuids)

    def counters(self):
        with self._lock:
            return dict(self.counts)

    # -- the registry ---------------------------------------------------

    def add(self, instance):
        with self._lock:
            self._index[instance.uuid] = len(self._live)
            self._live.append(instance)
            self._by_host[instance.host][instance.uuid] = instance
            if (self.filled_at is None and
                    len(self._live) >= self.live_target):
                self.filled_at = time.monotonic()

    def _remove_at(self, position):
        instance = self._live[position]
        last = self._live.pop()
        if last is not instance:
            self._live[position] = last
            self._index[last.uuid] = position
        del self._index[instance.uuid]
        on_host = self._by_host[instance.host]
        del on_host[instance.uuid]
        if not on_host:
            del self._by_host[instance.host]
        return instance

    def pick_delete(self):
        """The live instance to delete before the next boot, taken out of
        the registry, or None: one always once there are ``live_target``
        live instances, else with probability ``delete_share``."""
        with self._lock:
            if not self._live:
                return None
            if (len(self._live) < self.live_target and
                    self._rng.random() >= self.delete_share):
                return None
            return self._remove_at(self._rng.randrange(len(self._live)))

    def remove(self, instance_uuid):
        """Take the live instance ``instance_uuid`` out of the registry
        (to delete it); returns it."""
        with self._lock:
            return self._remove_at(self._index[instance_uuid])

    def live(self):
        """``{uuid: Instance}`` of the live instances."""
        with self._lock:
            return {instance.uuid: instance for instance in self._live}

    def host_instances(self, rng=None):
        """``(host, [Instance])`` of a random host with live instances,
        or ``(None, [])``."""
        with self._lock:
            if not self._live:
                return None, []
            pick = (rng or self._rng).choice(self._live)
            return pick.host, list(self._by_host[pick.host].values())

    # -- what a compute service does ------------------------------------

    def boot(self, request, selections):
        """Record the instances of ``request`` placed by ``selections``
        (lists of Selection, chosen host first): their ``instances``
        rows in one transaction, then one ``update_instance_info`` cast
        per host.  Returns the number recorded."""
        spec = request.spec
        flavor = spec.flavor
        placed = [Instance(instance_uuid, picks[0].service_host,
                           picks[0].nodename, flavor.obj_get('id'),
                           spec.obj_get('project_id'))
                  for instance_uuid, picks in zip(
                      request.instance_uuids, selections, strict=True)]
        if self.write:
            ctx = thread_context()
            now = db._utcnow()
            try:
                with db.context_manager.writer.using(ctx):
                    for instance in placed:
                        writers.instance_create(ctx, {
                            'uuid': instance.uuid, 'host': instance.host,
                            'node': instance.node,
                            'launched_on': instance.host,
                            'instance_type_id': instance.flavor_id,
                            'project_id': instance.project_id,
                            'user_id': SOAK_USER,
                            'vcpus': flavor.vcpus,
                            'memory_mb': flavor.memory_mb,
                            'root_gb': flavor.root_gb,
                            'ephemeral_gb': flavor.ephemeral_gb,
                            'vm_state': ACTIVE, 'power_state': RUNNING,
                            'created_at': now})
            except Exception:
                self.abandon(request.instance_uuids)
                raise
        by_host = collections.defaultdict(list)
        for instance in placed:
            self.add(instance)
            by_host[instance.host].append(instance)
        self.count('boots', len(placed))
        for host, instances in by_host.items():
            self.api.update_instance_info(
                thread_context(), host, instance_obj.InstanceList(
                    objects=[i.cast_object() for i in instances]))
            self.count('update_instance_info')
        return len(placed)

    def delete(self, instance):
        """Delete ``instance`` (already out of the registry): soft-delete
        its row, then cast ``delete_instance_info``."""
        ctx = thread_context()
        if self.write:
            try:
                writers.instance_destroy(ctx, instance.uuid)
            except Exception:
                self.abandon([instance.uuid])
                raise
        self.count('deletes')
        self.api.delete_instance_info(ctx, instance.host, instance.uuid)
        self.count('delete_instance_info')


# -------------------------------------------------------- staleness probe --

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


# ------------------------------------------------------------------ casts --

class CastLoop:
    """The instance and aggregate casts (see the module), every
    ``period_s`` until ``stop`` is set."""

    def __init__(self, api, world, host_names, seed=0,
                 period_s=CAST_PERIOD_S):
        self.api = api
        self.world = world
        self.host_names = list(host_names)
        self.period_s = period_s
        self.rng = random.Random('soak-casts:%s' % seed)
        self.aggregates = collections.deque()   # (id, Aggregate)
        self.errors = 0
        self._made = 0

    def run(self, stop):
        tick = 0
        while not stop.wait(self.period_s):
            tick += 1
            try:
                self.tick(tick)
            except Exception as exc:
                self.errors += 1
                LOG.warning('soak cast failed: %s', exc)

    def tick(self, tick):
        ctx = thread_context()
        host, instances = self.world.host_instances(self.rng)
        if host is not None:
            self.api.sync_instance_info(ctx, host,
                                        [i.uuid for i in instances])
            self.world.count('sync_instance_info')
        host, instances = self.world.host_instances(self.rng)
        if host is not None:
            self.api.update_instance_info(
                ctx, host, instance_obj.InstanceList(
                    objects=[i.cast_object() for i in instances]))
            self.world.count('update_instance_info')
        if tick % AGGREGATE_EVERY == 0:
            self.aggregate_step(ctx)

    def aggregate_step(self, ctx):
        """Create, grow or delete one aggregate of the soak's, in the
        database, then cast it."""
        if len(self.aggregates) >= MAX_AGGREGATES:
            aggregate_id, obj = self.aggregates.popleft()
            host_aggregates.aggregate_delete(ctx, aggregate_id)
            self.api.delete_aggregate(ctx, obj)
            self.world.count('delete_aggregate')
            return
        if self.aggregates and self.rng.random() < 0.5:
            position = self.rng.randrange(len(self.aggregates))
            aggregate_id, obj = self.aggregates[position]
            new = self.rng.choice(self.host_names)
            if new in (obj.hosts or []):
                return
            row = host_aggregates.aggregate_add_host(ctx, aggregate_id, new)
        else:
            self._made += 1
            row = host_aggregates.aggregate_create(
                ctx, '%s%s-%d' % (AGGREGATE_PREFIX, uuid.uuid4().hex[:8],
                                  self._made),
                metadata={'soak': str(self._made)})
            for host in self.rng.sample(self.host_names,
                                        min(len(self.host_names),
                                            self.rng.randint(1, 4))):
                row = host_aggregates.aggregate_add_host(ctx, row['id'],
                                                         host)
            position = None
        obj = aggregate_obj.Aggregate.from_db(row)
        if position is None:
            self.aggregates.append((row['id'], obj))
        else:
            self.aggregates[position] = (row['id'], obj)
        self.api.update_aggregates(ctx, [obj])
        self.world.count('update_aggregates')

    def remove_all(self, ctx):
        """Delete the soak's aggregates still in the database."""
        while self.aggregates:
            aggregate_id, _ = self.aggregates.popleft()
            with contextlib.suppress(exception.NotFound):
                host_aggregates.aggregate_delete(ctx, aggregate_id)


# ------------------------------------------------------------ the checks --

def audit_claims(ctx, world):
    """The claims against the live instances: ``lost`` (live instances
    without a claim), ``leaked`` (claims of no live instance, abandoned
    ones aside), ``abandoned`` (claims of instances the soak gave up on),
    ``misplaced`` (a claim on another host than its instance's), and
    ``instances_match`` (the live ``instances`` rows the soak wrote are
    exactly the live instances).  Lists of uuids, sorted."""
    rows = {row['instance_uuid']: row for row in claims.get_claims(ctx)}
    live = world.live()
    extra = set(rows) - set(live)
    abandoned = extra & world.abandoned
    instances = db.INSTANCES.c
    with db.context_manager.reader.using(ctx) as session:
        recorded = set(session.execute(sa.select(instances.uuid).where(
            instances.deleted == 0, instances.user_id == SOAK_USER))
            .scalars())
    return {'live': len(live), 'claims': len(rows),
            'lost': sorted(set(live) - set(rows)),
            'leaked': sorted(extra - abandoned),
            'abandoned': sorted(abandoned),
            'misplaced': sorted(u for u, instance in live.items()
                                if u in rows and
                                rows[u]['host'] != instance.host),
            'instances_match': recorded == set(live)}


def drain(ctx, world, services, timeout_s):
    """Wait up to ``timeout_s`` until the services handled the casts
    still queued: the claims are exactly the live instances' (abandoned
    ones aside).  Returns the last ``audit_claims`` and the seconds
    waited."""
    started = time.monotonic()
    while True:
        audit = audit_claims(ctx, world)
        settled = not (audit['lost'] or audit['leaked'] or
                       audit['misplaced'])
        waited = time.monotonic() - started
        if settled or waited >= timeout_s or not all(
                service.alive for service in services):
            return audit, round(waited, 2)
        time.sleep(DRAIN_POLL_S)


# ------------------------------------------------------------- databases --

def db_connections(url):
    """A function returning the ``pg_stat_activity`` rows of the database
    of ``url`` (the asking connection left out), or None off
    PostgreSQL; and the engine it uses (dispose it)."""
    if sa.engine.make_url(url).get_backend_name() != 'postgresql':
        return (lambda: None), None
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    statement = sa.text('SELECT count(*) FROM pg_stat_activity '
                        'WHERE datname = current_database() '
                        'AND pid <> pg_backend_pid()')

    def count():
        try:
            with engine.connect() as connection:
                return connection.execute(statement).scalar()
        except sa.exc.SQLAlchemyError as exc:
            LOG.warning('cannot count connections: %s', exc)
            return None
    return count, engine


def remove_soak_rows(ctx):
    """Delete the instance rows the soak wrote."""
    with db.context_manager.writer.using(ctx) as session:
        session.execute(sa.delete(db.INSTANCES).where(
            db.INSTANCES.c.user_id == SOAK_USER))


def _port_of(url, default):
    try:
        return sa.engine.make_url(url).port or default
    except Exception:
        return default


def _broker_port(transport_url):
    from urllib.parse import urlsplit
    try:
        return urlsplit(transport_url.split(',')[0]).port or 5672
    except ValueError:
        return 5672


def free_port():
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------- services --

class SoakService(load.LoadService):
    """``load.LoadService`` serving its Prometheus metrics on
    ``127.0.0.1:metrics_port`` when it is given."""

    def __init__(self, workdir, transport_url, db_url, host, exchange,
                 workers, metrics_port=None):
        super().__init__(workdir, transport_url, db_url, host, exchange,
                         workers)
        self.metrics_url = None
        if metrics_port:
            with open(self.config_path, 'a') as stream:
                stream.write('[prometheus]\nbind = 127.0.0.1:%d\n'
                             % metrics_port)
            self.metrics_url = 'http://127.0.0.1:%d/metrics' % metrics_port

    def pids(self):
        if not self.alive:
            return []
        return process_tree(self.process.pid)


# ---------------------------------------------------------------- the run --

class Sampler:
    """Takes the samples (see the module) and writes them."""

    def __init__(self, services, window, world, probe, count_db,
                 ports, out, started, progress=None):
        self.services = services
        self.window = window
        self.world = world
        self.probe = probe
        self.count_db = count_db
        self.ports = ports
        self.out = out
        self.started = started
        self.progress = progress
        self.samples = []
        self._last_at = started
        self._last_counts = {}
        self._last_metrics = None

    def sample(self, ctx):
        now = time.monotonic()
        seconds = now - self._last_at
        self._last_at = now
        pids = [pid for service in self.services for pid in service.pids()]
        row = {'t_s': round(now - self.started, 2)}
        figures = process_figures(pids, self.ports)
        row.update(rss_mb=figures['rss_mb'] or None,
                   rss_report_mb=sum(service.rss_mb() or 0
                                     for service in self.services) or None,
                   service_processes=figures['processes'],
                   fds=figures['fds'], sockets=figures['sockets'],
                   service_db_connections=figures['db_connections'],
                   service_broker_connections=figures[
                       'broker_connections'],
                   db_connections=self.count_db())
        row.update(self.window.take(seconds))
        counts = self.world.counters()
        for name in ('boots', 'deletes'):
            row[name] = counts.get(name, 0) - self._last_counts.get(name, 0)
        row['casts'] = sum(
            counts.get(name, 0) - self._last_counts.get(name, 0)
            for name in ('update_instance_info', 'delete_instance_info',
                         'sync_instance_info', 'update_aggregates',
                         'delete_aggregate'))
        self._last_counts = counts
        row['live_instances'] = len(self.world)
        try:
            row['claims'] = claims.claims_count(ctx)
        except Exception as exc:
            LOG.warning('cannot count claims: %s', exc)
            row['claims'] = None
        measured = self.probe.take() if self.probe is not None else []
        row['probes'] = len(measured)
        row['staleness_s'] = max((m.upper for m in measured), default=None)
        row['staleness_floor_s'] = max((m.floor for m in measured),
                                       default=None)
        scraped = [scrape(service.metrics_url)
                   for service in self.services if service.metrics_url]
        if scraped:
            current = combine_metrics(scraped)
            row.update(metric_deltas(self._last_metrics, current, seconds))
            self._last_metrics = current
        row['t_min'] = round(row['t_s'] / 60.0, 3)
        self.samples.append(row)
        self.out.write(row)
        if self.progress is not None:
            self.progress(row)
        return row


def print_sample(row, total_s):
    def fmt(value, digits=1):
        return '-' if value is None else '%.*f' % (digits, value)

    print('[%6.1f/%.1f min] RSS %s MiB  conns db %s svc %s/%s fds %s  '
          'p99 %s ms  %s dec/s  staleness %s s  live %s claims %s' % (
              row['t_s'] / 60.0, total_s / 60.0, fmt(row['rss_mb']),
              row['db_connections'], row['service_db_connections'],
              row['service_broker_connections'], row['fds'],
              fmt(row['p99_ms']), fmt(row['decisions_per_s']),
              fmt(row['staleness_s'], 3), row['live_instances'],
              row['claims']), flush=True)


def run(settings):
    """Run the soak; return the summary (also written to
    ``summary.json`` with the samples and the plot in
    ``settings.output_dir``).

    :raises BenchError: the servers are missing or the services did not
        start.
    """
    if not settings.transport_url:
        raise BenchError('the soak needs a RabbitMQ: --transport-url')
    if not (settings.database_connection or settings.admin_connection):
        raise BenchError('the soak needs a PostgreSQL: '
                         '--database-connection (an empty database) or '
                         '--admin-connection (a superuser URL)')
    os.makedirs(settings.output_dir, exist_ok=True)
    with endtoend.database_for(settings.admin_connection,
                               settings.database_connection) as (
            db_url, given):
        ctx = seed.use_database(db_url)
        started = time.monotonic()
        hosts = load.load_hosts(settings.hosts, settings.seed)
        seeded = workload.seed_hosts(ctx, hosts)
        casts = None
        try:
            endtoend.analyze(db_url)
            seed_s = time.monotonic() - started
            summary, casts = _soak(ctx, hosts, seed_s, settings, db_url)
            return summary
        finally:
            if given:
                if casts is not None:
                    casts.remove_all(ctx)
                remove_soak_rows(ctx)
                load.remove_load(ctx, seeded)
            db.context_manager.dispose_pool()


def _soak(ctx, hosts, seed_s, settings, db_url):
    tag = uuid.uuid4().hex[:8]
    exchange = 'soak-%s' % tag
    endtoend._register_transport_opts()
    CONF.set_override('control_exchange', exchange)
    services, transport, keep = [], None, False
    count_db, engine = db_connections(db_url)
    casts = None
    try:
        transport = rpc.get_transport(CONF, url=settings.transport_url)
        for index in range(settings.services):
            workdir = tempfile.mkdtemp(prefix='scheduler-soak-')
            services.append(SoakService(
                workdir, settings.transport_url, db_url,
                'soak-%s-%d' % (tag, index), exchange, settings.workers,
                free_port() if settings.metrics else None))
        start_s = endtoend.start_all(services, transport, ctx,
                                     settings.server_timeout)
        api = rpcapi.SchedulerAPI(transport, timeout=settings.call_timeout)
        summary, casts = _load(ctx, api, hosts, services, settings,
                               count_db, db_url)
        summary.update(seed_s=round(seed_s, 2), start_s=round(start_s, 2))
        keep = not summary['verified']
        if keep:
            summary['log_dirs'] = [service.workdir for service in services]
        _write_summary(settings, summary)
        return summary, casts
    finally:
        for service in services:
            service.stop()
            if not keep:
                shutil.rmtree(service.workdir, ignore_errors=True)
        if transport is not None:
            transport.cleanup()
        if engine is not None:
            engine.dispose()
        CONF.clear_override('control_exchange')


def _write_summary(settings, summary):
    path = os.path.join(settings.output_dir, SUMMARY_FILE)
    with open(path, 'w', encoding='utf-8') as stream:
        json.dump(summary, stream, indent=2, sort_keys=True, default=str)
        stream.write('\n')


def _probe_hosts(hosts, seed_value):
    """Up to ``PROBE_CANDIDATES`` hosts the staleness probe may use: up
    (enabled, not forced down), spread over the fleet."""
    up = [host.host for host in hosts if host.up]
    rng = random.Random('soak-probe:%s' % seed_value)
    return rng.sample(up, min(PROBE_CANDIDATES, len(up)))


def _load(ctx, api, hosts, services, settings, count_db, db_url):
    window = LatencyWindow()
    world = World(api, settings.live_target, settings.delete_share,
                  settings.seed)
    feed = load.RequestFeed(workload.Workload(hosts, settings.seed),
                            settings.instances, 10 ** 12)

    def decide(request):
        doomed = world.pick_delete()
        if doomed is not None:
            world.delete(doomed)
        begin = time.perf_counter()
        try:
            selections = api.select_destinations(
                thread_context(), request.spec, request.instance_uuids,
                return_objects=True, return_alternates=True)
        except exception.NoValidHost:
            window.record((time.perf_counter() - begin) * 1000.0,
                          'no_valid_host')
            raise
        except exception.DatabaseUnavailable:
            # Refused: the service keeps no claim of it (load.drive
            # counts it apart from the errors).
            window.refused()
            raise
        except Exception as exc:
            window.error(isinstance(exc, messaging.MessagingTimeout))
            world.abandon(request.instance_uuids)
            raise
        window.record((time.perf_counter() - begin) * 1000.0)
        return world.boot(request, selections)

    def ask(host):
        instance_uuid = str(uuid.uuid4())
        spec = probe_spec(host)
        spec.instance_uuid = instance_uuid
        try:
            api.select_destinations(thread_context(), spec, [instance_uuid],
                                    return_objects=True,
                                    return_alternates=True)
        except exception.NoValidHost:
            return False
        except Exception as exc:
            LOG.warning('staleness probe call failed: %s', exc)
            world.abandon([instance_uuid])
            return None
        try:
            claims.release(thread_context(), instance_uuid)
        except Exception:
            world.abandon([instance_uuid])
            raise
        world.count('probe_claims')
        return True

    def set_disabled(host, disabled):
        db_hosts.set_compute_service_disabled(
            thread_context(), host, disabled,
            'scheduler-soak staleness probe' if disabled else None)

    probe = StalenessProbe(ask, set_disabled,
                           _probe_hosts(hosts, settings.seed),
                           2 * settings.processes + 1,
                           settings.probe_interval_s)
    casts = CastLoop(api, world, [host.host for host in hosts],
                     settings.seed)
    ports = {'db': _port_of(db_url, 5432),
             'broker': _broker_port(settings.transport_url)}
    warmup_s = settings.warmup
    samples_path = os.path.join(settings.output_dir, SAMPLES_FILE)
    stop = threading.Event()
    result = {}
    died = 0
    with report.JsonLines(samples_path) as out, load.heartbeats():
        started = time.monotonic()
        progress = ((lambda row: print_sample(row, settings.duration_s))
                    if settings.progress else None)
        sampler = Sampler(services, window, world, probe, count_db, ports,
                          out, started, progress)
        sampler.sample(ctx)
        deadline = started + settings.duration_s

        def callers():
            result['calls'] = load.drive(decide, feed, settings.callers,
                                         deadline, stop)

        threads = [threading.Thread(target=target, args=args, name=name,
                                    daemon=True)
                   for target, args, name in (
                       (callers, (), 'soak-callers'),
                       (casts.run, (stop,), 'soak-casts'),
                       (probe.run, (stop,), 'soak-probe'))]
        for thread in threads:
            thread.start()
        tick = 1
        try:
            while not stop.is_set():
                due = min(started + tick * settings.sample_interval_s,
                          deadline)
                while not stop.is_set() and time.monotonic() < due:
                    stop.wait(max(0.0, min(due - time.monotonic(),
                                           load.POLL_S)))
                    if not all(service.alive for service in services):
                        LOG.warning('a scheduler-service exited during '
                                    'the soak')
                        stop.set()
                if stop.is_set() or due >= deadline:
                    break
                sampler.sample(ctx)
                tick += 1
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        sampler.sample(ctx)
        load_s = time.monotonic() - started
    calls = result.get('calls') or load.CallerResult()
    audit, drained_s = drain(ctx, world, services, settings.drain_timeout_s)
    died = sum(not service.alive for service in services)
    rss_peak = sum(service.rss_mb('VmHWM') or 0 for service in services)
    for service in services:
        service.stop()
    if audit['abandoned']:
        claims.release_many(ctx, audit['abandoned'])
    found = load.verify(ctx, audit['live'])
    probe_summary = probe.summary()
    totals = {'errors': calls.timings.errors,
              'timeouts': calls.timeouts,
              'refused': getattr(calls, 'refused', 0)}
    checks, growth, trends = verdict(
        sampler.samples, audit, found, totals, probe_summary, died,
        warmup_s, settings.rss_growth_limit_pct)
    verified = all(check['passed'] for check in checks.values())
    latencies = report.percentiles_ms(window.all_ms)
    counts = world.counters()
    summary = {
        'hosts': len(hosts), 'duration_s': settings.duration_s,
        'load_s': round(load_s, 2), 'warmup_s': warmup_s,
        'sample_interval_s': settings.sample_interval_s,
        'samples': len(sampler.samples), 'callers': settings.callers,
        'services': settings.services, 'workers': settings.workers,
        'instances_per_request': settings.instances,
        'live_target': settings.live_target,
        'filled_at_s': (None if world.filled_at is None
                        else round(world.filled_at - started, 1)),
        'delete_share': settings.delete_share, 'seed': settings.seed,
        'requests': len(window.all_ms) + calls.timings.errors,
        'answered': len(window.all_ms),
        'no_valid_host': calls.timings.no_valid_host,
        'errors': calls.timings.errors,
        'timeouts': calls.timeouts, 'refused': totals['refused'],
        'first_error': calls.first_error,
        'p50_ms': latencies['p50_ms'], 'p99_ms': latencies['p99_ms'],
        'max_ms': latencies['max_ms'],
        'decisions_per_s': (round(len(window.all_ms) / load_s, 2)
                            if load_s else None),
        'boots': counts.get('boots', 0), 'deletes': counts.get('deletes', 0),
        'probe_claims': counts.get('probe_claims', 0),
        'casts': {name: counts.get(name, 0) for name in (
            'update_instance_info', 'delete_instance_info',
            'sync_instance_info', 'update_aggregates', 'delete_aggregate')},
        'cast_errors': casts.errors,
        'staleness': probe_summary,
        'view_age_max_s': max((s['view_age_s'] for s in sampler.samples
                               if s.get('view_age_s') is not None),
                              default=None),
        'rss': growth, 'rss_peak_mb': round(rss_peak, 1) or None,
        'trends': trends,
        'drained_s': drained_s,
        'live_instances': audit['live'], 'claims': found['claims'],
        'claims_match': found['claims_match'],
        'lost_claims': audit['lost'][:LISTED],
        'lost_claims_count': len(audit['lost']),
        'leaked_claims': audit['leaked'][:LISTED],
        'leaked_claims_count': len(audit['leaked']),
        'misplaced_claims': audit['misplaced'][:LISTED],
        'abandoned_claims_count': len(audit['abandoned']),
        'instances_match': audit['instances_match'],
        'overcommitted': found['overcommitted'][:LISTED],
        'unbalanced': found['unbalanced'][:LISTED],
        'services_died': died,
        'lost_races': sum(service.count(load.LOST_RACE_MARKER)
                          for service in services),
        'service_errors': sum(service.count(load.ERROR_MARKER)
                              for service in services),
        'checks': checks, 'verified': verified,
        'verdict': 'PASS' if verified else 'FAIL',
        'samples_file': samples_path,
        'plot': os.path.join(settings.output_dir, PLOT_FILE),
    }
    summary.update({key: value for key, value in found.items()
                    if key.startswith('fleet_')})
    plot(sampler.samples, summary['plot'], warmup_s, growth,
         title='scheduler-soak: %s hosts, %s, %s' % (
             '{:,}'.format(len(hosts)), _duration(settings.duration_s),
             summary['verdict']))
    return summary, casts


def _duration(seconds):
    if seconds < 120:
        return '%.0f s' % seconds
    return '%.0f min' % (seconds / 60.0)


def print_summary(summary):
    """The verdict, one line per check, for the console."""
    print('scheduler-soak: %s hosts for %.0f s (%d samples): %d boots, %d '
          'deletes, %d NoValidHost, %d errors; p50 %s ms, p99 %s ms, %s '
          'decisions/s' % (
              '{:,}'.format(summary['hosts']), summary['load_s'],
              summary['samples'], summary['boots'], summary['deletes'],
              summary['no_valid_host'], summary['errors'],
              summary['p50_ms'], summary['p99_ms'],
              summary['decisions_per_s']))
    filled = summary['filled_at_s']
    if filled is None or filled > summary['warmup_s']:
        print('note: the live instances reached %d %s, after the warm-up: '
              'the RSS growth counts the fleet filling' % (
                  summary['live_target'],
                  'only at %.0f s' % filled if filled is not None
                  else 'not at all'))
    rss = summary['rss']
    print('RSS after the %.0f s warm-up: %s -> %s MiB (%s %% between the '
          'ends, %s %% fitted, %s MiB/min)' % (
              summary['warmup_s'], rss['baseline_mb'], rss['end_mb'],
              rss['endpoint_pct'], rss['fitted_pct'],
              rss['slope_mb_per_min']))
    stale = summary['staleness']
    print('staleness (DB change -> decisions, %d changes): p50 %s s, p99 '
          '%s s, max %s s; service view age up to %s s' % (
              stale['measured'], stale['p50_s'], stale['p99_s'],
              stale['max_s'], summary['view_age_max_s']))
    print('claims: %d live instances, %d claims, %d lost, %d leaked, %d '
          'abandoned (released); %d nodes overcommitted, %d unbalanced' % (
              summary['live_instances'], summary['claims'],
              summary['lost_claims_count'], summary['leaked_claims_count'],
              summary['abandoned_claims_count'],
              len(summary['overcommitted']), len(summary['unbalanced'])))
    for name in CHECKS:
        check = summary['checks'][name]
        print('  %-20s %-4s %s%s (%s)' % (
            name, 'PASS' if check['passed'] else 'FAIL', check['value'],
            ' [target]' if check['target'] else '', check['limit']))
    print('verdict: %s; samples %s, plot %s' % (
        summary['verdict'], summary['samples_file'], summary['plot']))
    if summary.get('log_dirs'):
        print('service logs kept in %s' % ', '.join(summary['log_dirs']))
