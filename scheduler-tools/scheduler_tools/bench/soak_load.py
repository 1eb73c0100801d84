"""The soak's load: the callers, casts and probe on the services
started, the samples every interval, then the drain, the checks, the
summary and the plot (``run``)."""

from __future__ import annotations

import os
import threading
import time
import uuid

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import exception
from scheduler.db import claims
from scheduler.db import hosts as db_hosts
from scheduler_tools.bench import load_callers
from scheduler_tools.bench import load_fleet
from scheduler_tools.bench import load_services
from scheduler_tools.bench import report
from scheduler_tools.bench import soak_audit
from scheduler_tools.bench import soak_casts
from scheduler_tools.bench import soak_heartbeats
from scheduler_tools.bench import soak_measure
from scheduler_tools.bench import soak_probe
from scheduler_tools.bench import soak_report
from scheduler_tools.bench import soak_sampler
from scheduler_tools.bench import soak_settings
from scheduler_tools.bench import soak_verdict
from scheduler_tools.bench import soak_world
from scheduler_tools.bench import workload

LOG = logging.getLogger(__name__)

# Lists in the summary are cut to this many entries.
LISTED = 20


def run(ctx, api, hosts, services, settings, count_db, db_url):
    """Keep up the load on the started ``services`` for the run, then
    drain, check and plot (see ``scheduler_tools.bench.soak``); returns
    ``(summary, casts)``."""
    window = soak_sampler.LatencyWindow()
    world = soak_world.World(api, settings.live_target,
                             settings.delete_share, settings.seed)
    feed = load_callers.RequestFeed(workload.Workload(hosts, settings.seed),
                            settings.instances, 10 ** 12)

    def decide(request):
        doomed = world.pick_delete()
        if doomed is not None:
            world.delete(doomed)
        begin = time.perf_counter()
        try:
            selections = api.select_destinations(
                soak_world.thread_context(), request.spec,
                request.instance_uuids,
                return_objects=True, return_alternates=True)
        except exception.NoValidHost:
            window.record((time.perf_counter() - begin) * 1000.0,
                          'no_valid_host')
            raise
        except exception.DatabaseUnavailable:
            # Refused: the service keeps no claim of it (load_callers.drive
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
        spec = soak_probe.probe_spec(host)
        spec.instance_uuid = instance_uuid
        try:
            api.select_destinations(soak_world.thread_context(), spec,
                                    [instance_uuid], return_objects=True,
                                    return_alternates=True)
        except exception.NoValidHost:
            return False
        except Exception as exc:
            LOG.warning('staleness probe call failed: %s', exc)
            world.abandon([instance_uuid])
            return None
        try:
            claims.release(soak_world.thread_context(), instance_uuid)
        except Exception:
            world.abandon([instance_uuid])
            raise
        world.count('probe_claims')
        return True

    def set_disabled(host, disabled):
        db_hosts.set_compute_service_disabled(
            soak_world.thread_context(), host, disabled,
            'scheduler-soak staleness probe' if disabled else None)

    probe = soak_probe.StalenessProbe(
        ask, set_disabled, soak_probe.probe_hosts(hosts, settings.seed),
        2 * settings.processes + 1, settings.probe_interval_s)
    casts = soak_casts.CastLoop(api, world, [host.host for host in hosts],
                                settings.seed)
    ports = {'db': soak_measure.port_of(db_url, 5432),
             'broker': soak_measure.broker_port(settings.transport_url)}
    warmup_s = settings.warmup
    samples_path = os.path.join(settings.output_dir,
                                soak_settings.SAMPLES_FILE)
    stop = threading.Event()
    result = {}
    died = 0
    with report.JsonLines(samples_path) as out, \
            soak_heartbeats.heartbeats(settings.heartbeat_lag_s) as beats:
        started = time.monotonic()
        progress = ((lambda row: soak_report.print_sample(
            row, settings.duration_s)) if settings.progress else None)
        sampler = soak_sampler.Sampler(services, window, world, probe,
                                       count_db, ports, out, started,
                                       progress)
        sampler.sample(ctx)
        deadline = started + settings.duration_s

        def callers():
            result['calls'] = load_callers.drive(
                decide, feed, settings.callers, deadline, stop)

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
                                           load_services.POLL_S)))
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
    calls = result.get('calls') or load_callers.CallerResult()
    audit, drained_s = soak_audit.drain(ctx, world, services,
                                        settings.drain_timeout_s)
    died = sum(not service.alive for service in services)
    rss_peak = sum(service.rss_mb('VmHWM') or 0 for service in services)
    for service in services:
        service.stop()
    if audit['abandoned']:
        claims.release_many(ctx, audit['abandoned'])
    found = load_fleet.verify(ctx, audit['live'])
    probe_summary = probe.summary()
    totals = {'errors': calls.timings.errors,
              'timeouts': calls.timeouts,
              'refused': getattr(calls, 'refused', 0)}
    expected_up = sum(not host.forced_down for host in hosts)
    checks, growth, trends = soak_verdict.verdict(
        sampler.samples, audit, found, totals, probe_summary, died,
        warmup_s, settings.rss_growth_limit_pct,
        expected_up if settings.metrics else None)
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
        'heartbeat_lag_s': settings.heartbeat_lag_s,
        'heartbeat_max_s': round(max(beats), 2),
        'hosts_up_expected': expected_up,
        'hosts_up_fewest': soak_verdict.fewest_up(sampler.samples),
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
        'lost_races': sum(service.count(load_services.LOST_RACE_MARKER)
                          for service in services),
        'service_errors': sum(service.count(load_services.ERROR_MARKER)
                              for service in services),
        'checks': checks, 'verified': verified,
        'verdict': 'PASS' if verified else 'FAIL',
        'samples_file': samples_path,
        'plot': os.path.join(settings.output_dir, soak_settings.PLOT_FILE),
    }
    summary.update({key: value for key, value in found.items()
                    if key.startswith('fleet_')})
    soak_report.plot(sampler.samples, summary['plot'], warmup_s, growth,
         title='scheduler-soak: %s hosts, %s, %s' % (
             '{:,}'.format(len(hosts)), _duration(settings.duration_s),
             summary['verdict']))
    return summary, casts


def _duration(seconds):
    if seconds < 120:
        return '%.0f s' % seconds
    return '%.0f min' % (seconds / 60.0)
