"""The soak's measures of the services from outside: their processes
(RSS, file descriptors, sockets, TCP connections to the database and
the broker), their Prometheus metrics, and the database's connections.
"""

from __future__ import annotations

import os
import urllib.request

import psutil
import sqlalchemy as sa
from oslo_log import log as logging

from scheduler_tools.bench import report

LOG = logging.getLogger(__name__)

METRICS_TIMEOUT_S = 5.0


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
    ``lost_races``, ``hosts_known`` and ``hosts_up`` (the compute nodes
    the view holds, and those up); None for what it lacks."""
    from prometheus_client.parser import text_string_to_metric_families

    found = dict.fromkeys(('view_age_s', 'decisions', 'decision_seconds',
                           'decision_count', 'lost_races', 'hosts_known',
                           'hosts_up'))
    names = {'scheduler_view_staleness_seconds': 'view_age_s',
             'scheduler_decisions_total': 'decisions',
             'scheduler_decision_duration_seconds_sum': 'decision_seconds',
             'scheduler_decision_duration_seconds_count': 'decision_count',
             'scheduler_claim_races_lost_total': 'lost_races',
             'scheduler_hosts_known': 'hosts_known',
             'scheduler_hosts_up': 'hosts_up'}
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
    largest view age, the fewest hosts up, the sums of the rest."""
    combined = dict.fromkeys(('view_age_s', 'decisions', 'decision_seconds',
                              'decision_count', 'lost_races',
                              'hosts_known', 'hosts_up'))
    for found in scraped:
        if not found:
            continue
        for key, value in found.items():
            if value is None:
                continue
            if key == 'view_age_s':
                combined[key] = max(combined[key] or 0.0, value)
            elif key == 'hosts_up':
                combined[key] = min(value, combined[key] if
                                    combined[key] is not None else value)
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


def port_of(url, default):
    """The port of the database URL ``url``, or ``default``."""
    try:
        return sa.engine.make_url(url).port or default
    except Exception:
        return default


def broker_port(transport_url):
    """The port of the first broker of ``transport_url`` (5672 by
    default)."""
    from urllib.parse import urlsplit
    try:
        return urlsplit(transport_url.split(',')[0]).port or 5672
    except ValueError:
        return 5672
