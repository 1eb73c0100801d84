"""The soak's samples: the calls at the callers over each interval
(``LatencyWindow``) and the sampler that writes one line of figures per
interval (``Sampler``)."""

from __future__ import annotations

import collections
import threading
import time

from oslo_log import log as logging

from scheduler.db import claims
from scheduler_tools.bench import report
from scheduler_tools.bench import soak_measure

LOG = logging.getLogger(__name__)


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


# ------------------------------------------------------------ the sampler --

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
        figures = soak_measure.process_figures(pids, self.ports)
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
        scraped = [soak_measure.scrape(service.metrics_url)
                   for service in self.services if service.metrics_url]
        if scraped:
            current = soak_measure.combine_metrics(scraped)
            row.update(soak_measure.metric_deltas(self._last_metrics, current,
                                                   seconds))
            # The fewest compute nodes up in a service's view.
            row['hosts_up'] = current.get('hosts_up')
            self._last_metrics = current
        row['t_min'] = round(row['t_s'] / 60.0, 3)
        self.samples.append(row)
        self.out.write(row)
        if self.progress is not None:
            self.progress(row)
        return row
