"""The soak's verdict: RSS growth after the warm-up, the trends of the
connections and file descriptors, and the checks that add up to PASS or
FAIL."""

from __future__ import annotations

import statistics

from scheduler_tools.bench import soak_probe

# The first and last samples after the warm-up that RSS growth compares:
# a third of them, at most this many.
ENDPOINT_SAMPLES = 3
# Connections and file descriptors: the median of the last third of the
# samples after the warm-up may exceed the largest of the first third by
# this many, or this share of it, whichever is more.
CONNECTION_SLACK = 5
CONNECTION_SLACK_SHARE = 0.1

CHECKS = ('rss_growth', 'overcommit', 'lost_claims', 'claims_balanced',
          'calls_answered', 'services_alive', 'connections_stable',
          'staleness_probes')
# Added when the services' metrics are read: every sample's views held
# every compute node up but those forced down.
HOSTS_UP = 'hosts_up'
TARGETS = ('rss_growth', 'overcommit')


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


def after_warmup(samples, key, warmup_s):
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
    points = after_warmup(samples, key, warmup_s)
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
    values = [y for _, y in after_warmup(samples, key, warmup_s)]
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
            rss_limit_pct, expected_up=None):
    """The checks (``CHECKS``, each ``{'value', 'limit', 'passed',
    'target'}``, ``target`` True for the issue's targets ``TARGETS``)
    from the ``samples``, the claims ``audit`` (``audit_claims``), what
    ``load_fleet.verify`` ``found`` in the database, the ``calls`` at the
    callers (``errors``), the ``probe`` summary and how many services
    ``died``, and, with ``expected_up`` (the compute nodes not forced
    down), ``HOSTS_UP``; returns ``(checks, growth, trends)``."""
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
          'every change seen within %.0f s' % soak_probe.PROBE_TIMEOUT_S)
    if expected_up is not None:
        fewest = fewest_up(samples)
        check(HOSTS_UP, fewest, fewest is not None and fewest >= expected_up,
              'the %d compute nodes not forced down, in every sample'
              % expected_up)
    return checks, growth, trends


def fewest_up(samples):
    """The fewest compute nodes up that a service's view held, over the
    samples taken under load (the first is taken before it), or None
    when none says."""
    values = [s['hosts_up'] for s in samples[1:]
              if s.get('hosts_up') is not None]
    return int(min(values)) if values else None
