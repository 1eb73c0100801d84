"""Figures of the benchmark: targets, rows, the table and the JSON lines.

A row is one (mode, hosts, instances) measurement (and callers value in
the end-to-end and load modes, topology in the load mode), a dict with
at least ``mode``, ``hosts``, ``instances``, ``p50_ms``, ``p95_ms``,
``p99_ms`` (decision latency in milliseconds), ``decisions_per_s``,
``placed`` and ``instances_per_s`` (instances placed, and per second),
``rss_mb`` (resident memory in MiB: this process in-process, the
service end-to-end), ``target_p50_ms``, ``target_p99_ms`` and
``meets_target`` (None when ``TARGETS`` sets none for that row).
``JsonLines`` writes one row per line as soon as it is measured, so runs
can be compared with ``jq`` or a few lines of Python.

The end-to-end row of one caller and single-instance requests also has
the parts of one decision, measured alone in the same run (``PARTS``,
p50s in ms: the in-process decision, the no-op call, one claim
transaction), their sum ``budget_p50_ms`` and ``within_budget`` (the
end-to-end p50 at most the budget): issue 33's "one decision end to end
costs little more than its parts"; with the CPU time per decision of
the service (``service_cpu_ms``, every end-to-end row) and of the
in-process decision (``inprocess_cpu_ms``), which a busy machine's
noise moves less than latencies.

The targets (``TARGETS``: p50/p99 in ms, decisions per second of one
service with sequential callers, service memory in MiB) are set for
1,000, 10,000 and 100,000 hosts.  Another fleet size is held to the targets of
the smallest of those sizes at least as large (``target_hosts``); above
100,000 hosts there is none.
"""

import dataclasses
import json
import os
import sys

import numpy as np

from scheduler_tools.bench import ENDTOEND
from scheduler_tools.bench import INPROCESS

TARGET_SIZES = (1000, 10000, 100000)
# The parts of one end-to-end decision, p50s in ms (``budget_p50_ms`` is
# their sum).
PARTS = ('inprocess_p50_ms', 'noop_p50_ms', 'commit_p50_ms')


@dataclasses.dataclass(frozen=True)
class Target:
    """Ceilings (ms, MiB) and floor (decisions per second); None: none."""

    p50_ms: float | None = None
    p99_ms: float | None = None
    decisions_per_s: float | None = None
    rss_mb: float | None = None


TARGETS = {
    (INPROCESS, 1): {1000: Target(1, 3), 10000: Target(5, 15),
                     100000: Target(50, 120)},
    (INPROCESS, 10): {1000: Target(5), 10000: Target(20),
                      100000: Target(200)},
    (ENDTOEND, 1): {1000: Target(6, 20, 150),
                    10000: Target(10, 30, 80, 300),
                    100000: Target(60, 150, 15, 1024)},
}


def target_for(mode, hosts, instances):
    """``(target_hosts, Target)`` for a row, or ``(None, None)``."""
    table = TARGETS.get((mode, instances))
    if not table:
        return None, None
    for size in TARGET_SIZES:
        if hosts <= size:
            return size, table[size]
    return None, None


# ---------------------------------------------------------------- memory --

def _status_kb(pid, field):
    try:
        with open('/proc/%s/status' % pid) as stream:
            for line in stream:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def children(pid):
    found = []
    for task in listdir('/proc/%s/task' % pid):
        try:
            with open('/proc/%s/task/%s/children' % (pid, task)) as stream:
                found.extend(int(child) for child in stream.read().split())
        except (OSError, ValueError):
            continue
    return found


def listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def rss_mb(pid='self', field='VmRSS'):
    """Resident memory in MiB of process ``pid`` and its descendants
    (``/proc/<pid>/status`` ``VmRSS``; ``field='VmHWM'`` for the peak),
    or None when it cannot be read."""
    pids = [pid]
    total_kb = None
    while pids:
        current = pids.pop()
        kb = _status_kb(current, field)
        if kb is not None:
            total_kb = (total_kb or 0) + kb
        if current != 'self':
            pids.extend(children(current))
    return None if total_kb is None else round(total_kb / 1024.0, 1)


def _cpu_ticks(pid):
    try:
        with open('/proc/%s/stat' % pid) as stream:
            fields = stream.read().rsplit(')', 1)[1].split()
        # utime and stime, the 14th and 15th fields of the line.
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


def cpu_s(pid):
    """CPU time in s (user plus system) of process ``pid`` and its live
    descendants (``/proc/<pid>/stat``), or None when it cannot be
    read."""
    pids = [pid]
    total = None
    while pids:
        current = pids.pop()
        ticks = _cpu_ticks(current)
        if ticks is not None:
            total = (total or 0) + ticks
        pids.extend(children(current))
    return None if total is None else total / os.sysconf('SC_CLK_TCK')


# ------------------------------------------------------------------ rows --

def percentiles_ms(latencies_ms):
    """``{'p50_ms', 'p95_ms', 'p99_ms', 'mean_ms', 'max_ms'}`` (None each
    without samples)."""
    if not latencies_ms:
        return dict.fromkeys(('p50_ms', 'p95_ms', 'p99_ms', 'mean_ms',
                              'max_ms'))
    values = np.asarray(latencies_ms, dtype=float)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {'p50_ms': _round(p50), 'p95_ms': _round(p95),
            'p99_ms': _round(p99), 'mean_ms': _round(values.mean()),
            'max_ms': _round(values.max())}


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def make_row(mode, hosts, instances, timings, rss, peak_rss=None,
             placed=None, **extra):
    """The row of one measurement (``timings`` an ``inprocess.Timings``;
    ``rss``/``peak_rss`` in MiB), with its target and verdict.

    ``placed`` is the instances placed (default: ``instances`` per
    decision that was not NoValidHost); ``instances_per_s`` is that over
    the phase's ``busy_s``, as ``decisions_per_s`` is the decisions."""
    answered = len(timings.latencies_ms)
    if placed is None:
        placed = (answered - timings.no_valid_host) * instances
    row = {'mode': mode, 'hosts': hosts, 'instances': instances,
           'requests': answered}
    row.update(percentiles_ms(timings.latencies_ms))
    row.update(
        decisions_per_s=_round(timings.decisions_per_s(), 2),
        placed=placed,
        instances_per_s=(_round(placed / timings.busy_s, 2)
                         if timings.busy_s > 0 and answered else None),
        rss_mb=rss, peak_rss_mb=peak_rss,
        no_valid_host=timings.no_valid_host, errors=timings.errors,
        truncated=timings.truncated, measure_s=_round(timings.busy_s, 2))
    row.update(extra)
    target_hosts, target = target_for(mode, hosts, instances)
    row['target_hosts'] = target_hosts
    for name in ('p50_ms', 'p99_ms', 'decisions_per_s', 'rss_mb'):
        row['target_' + name] = (getattr(target, name)
                                 if target is not None else None)
    row['meets_target'] = meets_target(row) if target is not None else None
    return row


def meets_target(row):
    """Whether every figure with a target is within it (False when a
    figure is missing)."""
    checks = []
    for name in ('p50_ms', 'p99_ms', 'rss_mb'):
        limit = row.get('target_' + name)
        if limit is not None:
            checks.append(row.get(name) is not None and row[name] <= limit)
    floor = row.get('target_decisions_per_s')
    if floor is not None:
        checks.append(row.get('decisions_per_s') is not None and
                      row['decisions_per_s'] >= floor)
    return all(checks)


class JsonLines:
    """One JSON object per line in ``path`` (truncated on open), flushed
    row by row; a None path writes nothing."""

    def __init__(self, path):
        self.path = path
        self._stream = None

    def __enter__(self):
        if self.path:
            self._stream = open(self.path, 'w', encoding='utf-8')
        return self

    def write(self, row):
        if self._stream is not None:
            self._stream.write(json.dumps(row, sort_keys=True) + '\n')
            self._stream.flush()

    def __exit__(self, *exc_info):
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def read_json_lines(path):
    """The rows of a file written by ``JsonLines``."""
    with open(path, encoding='utf-8') as stream:
        return [json.loads(line) for line in stream if line.strip()]


# ----------------------------------------------------------------- table --

def _fmt(value, digits=1):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.*f' % (digits, value)
    return str(value)


def _pair(value, target, digits=1):
    if target is None:
        return _fmt(value, digits)
    return '%s / %s' % (_fmt(value, digits), _fmt(target, 0))


def _verdict(row):
    if row.get('meets_target') is None:
        return '-'
    return '[green]yes[/]' if row['meets_target'] else '[red]no[/]'


def print_table(rows, console=None):
    """Print the rows (and the node update costs, when measured) as rich
    tables: measured / target."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        # Piped output: wide enough for every column.
        console = Console(width=None if sys.stdout.isatty() else 150)
    table = Table(title='scheduler-bench: select_destinations',
                  caption='measured / target; latency in ms, memory in '
                          'MiB, dec/s = decisions per second')
    for name, justify in (('mode', 'left'), ('hosts', 'right'),
                          ('inst', 'right'), ('callers', 'right'),
                          ('req', 'right'),
                          ('p50', 'right'), ('p95', 'right'),
                          ('p99', 'right'), ('dec/s', 'right'),
                          ('RSS', 'right'), ('NoValidHost', 'right'),
                          ('meets', 'center')):
        table.add_column(name, justify=justify)
    for row in rows:
        requests = str(row['requests'])
        if row.get('truncated'):
            requests += '*'
        table.add_row(
            row['mode'], '{:,}'.format(row['hosts']), str(row['instances']),
            _fmt(row.get('callers')), requests,
            _pair(row['p50_ms'], row['target_p50_ms'], 2),
            _fmt(row['p95_ms'], 2),
            _pair(row['p99_ms'], row['target_p99_ms'], 2),
            _pair(row['decisions_per_s'], row['target_decisions_per_s']),
            _pair(row['rss_mb'], row['target_rss_mb'], 0),
            str(row['no_valid_host']), _verdict(row))
    console.print(table)
    if any(row.get('truncated') for row in rows):
        console.print('* stopped by the time budget (--time-budget)')
    updates = [row for row in rows if row.get('node_update_rounds')]
    if updates:
        _print_updates(console, updates, Table)
    budgets = [row for row in rows if 'budget_p50_ms' in row]
    if budgets:
        _print_parts(console, budgets, Table)


def _print_parts(console, rows, table_cls):
    table = table_cls(title='one end-to-end decision against its parts, '
                            'each measured alone (ms)',
                      caption='budget = in-process decision p50 + no-op '
                              'call p50 + one commit p50')
    for name in ('mode', 'hosts', 'p50', 'p99', 'in-process p50',
                 'no-op p50', 'commit p50', 'budget', 'p50 / budget',
                 'within', 'CPU/dec service', 'CPU/dec in-process'):
        table.add_column(name, justify='left' if name == 'mode'
                         else 'right')
    for row in rows:
        budget = row['budget_p50_ms']
        ratio = (row['p50_ms'] / budget if budget and row['p50_ms']
                 else None)
        within = row['within_budget']
        table.add_row(row['mode'], '{:,}'.format(row['hosts']),
                      _fmt(row['p50_ms'], 2), _fmt(row['p99_ms'], 2),
                      *(_fmt(row[name], 2) for name in PARTS),
                      _fmt(budget, 2), _fmt(ratio, 2),
                      '-' if within is None else
                      '[green]yes[/]' if within else '[red]no[/]',
                      _fmt(row.get('service_cpu_ms'), 2),
                      _fmt(row.get('inprocess_cpu_ms'), 2))
    console.print(table)


def _print_updates(console, rows, table_cls):
    table = table_cls(title='cost of one compute node update reaching the '
                            "scheduler's view (medians, ms)")
    for name in ('mode', 'hosts', 'rounds', 'row write',
                 'decision, no change', 'decision after 1 update',
                 'update cost'):
        table.add_column(name, justify='left' if name == 'mode'
                         else 'right')
    for row in rows:
        table.add_row(row['mode'], '{:,}'.format(row['hosts']),
                      str(row['node_update_rounds']),
                      _fmt(row['node_write_ms'], 2),
                      _fmt(row['decision_no_change_ms'], 2),
                      _fmt(row['decision_after_update_ms'], 2),
                      _fmt(row['node_update_cost_ms'], 2))
    console.print(table)
