"""The soak's report: the plot of the samples, the summary file and the
console lines (progress and verdict)."""

from __future__ import annotations

import json
import math
import os

from scheduler_tools.bench import soak_settings
from scheduler_tools.bench import soak_verdict


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
    points = soak_verdict.after_warmup(samples, 'rss_mb', warmup_s)
    if len(points) >= 2:
        xs = [x for x, _ in points]
        slope, intercept = soak_verdict.linear_fit(
            xs, [y for _, y in points])
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


def write_summary(settings, summary):
    path = os.path.join(settings.output_dir,
                        soak_settings.SUMMARY_FILE)
    with open(path, 'w', encoding='utf-8') as stream:
        json.dump(summary, stream, indent=2, sort_keys=True, default=str)
        stream.write('\n')


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
    print('hosts up in the views: fewest %s of the %s not forced down; '
          'heartbeats stamped %s s before their commit, each UPDATE up to '
          '%s s' % (summary.get('hosts_up_fewest'),
                    summary.get('hosts_up_expected'),
                    summary.get('heartbeat_lag_s'),
                    summary.get('heartbeat_max_s')))
    for name in summary['checks']:
        check = summary['checks'][name]
        print('  %-20s %-4s %s%s (%s)' % (
            name, 'PASS' if check['passed'] else 'FAIL', check['value'],
            ' [target]' if check['target'] else '', check['limit']))
    print('verdict: %s; samples %s, plot %s' % (
        summary['verdict'], summary['samples_file'], summary['plot']))
    if summary.get('log_dirs'):
        print('service logs kept in %s' % ', '.join(summary['log_dirs']))
