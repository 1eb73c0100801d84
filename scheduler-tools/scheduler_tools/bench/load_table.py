"""The load rows as two rich tables of at most ``TABLE_WIDTH``
columns: the load at the callers beside the floor, then the calls and
what the database holds after each phase."""

import sys

from scheduler_tools.bench import report

TABLE_WIDTH = 120


def _ms(value):
    """A latency in ms: 2 decimals below 10, 1 below 1,000, else none."""
    if value is None:
        return '-'
    if value < 10:
        return '%.2f' % value
    if value < 1000:
        return '%.1f' % value
    return '{:,.0f}'.format(value)


def _rate(value):
    """A rate per second: 2 decimals below 1, 1 below 100, else none."""
    if value is None:
        return '-'
    if value < 1:
        return '%.2f' % value
    if value < 100:
        return '%.1f' % value
    return '{:,.0f}'.format(value)


def _share_of(row, name):
    """Reported usage plus claims of resource ``name`` as a percentage of
    the fleet's capacity."""
    prefix = 'fleet_%s_' % name
    capacity = row.get(prefix + 'capacity')
    if not capacity:
        return '-'
    return '%.0f%%' % (100.0 * (row[prefix + 'used'] +
                                row[prefix + 'claimed']) / capacity)


def _table(title, caption, columns):
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for name in columns:
        table.add_column(name, justify='left' if name in ('mode', 'topology')
                         else 'right', no_wrap=True)
    return table


def print_table(rows, console=None):
    """Print the load rows as two rich tables of at most ``TABLE_WIDTH``
    columns, a line per phase: the load at the callers beside the floor,
    then the calls and what the database holds after the phase."""
    from rich.console import Console

    if console is None:
        console = Console(width=None if sys.stdout.isatty() else TABLE_WIDTH)
    table = _table(
        'scheduler-bench load: select_destinations under concurrent callers',
        'topology: workers = 1 service x 2 workers, services = 2 services '
        'x 1 worker; inst = instances per request; dec/s = calls answered '
        '(Selection or NoValidHost) per second, inst/s = instances placed '
        'per second; latency in ms at the caller; no-op = a call that does '
        'nothing on the same broker, as many callers, same run (the '
        'floor); % no-op = dec/s over no-op/s; lost = races lost to '
        'another scheduler; refused = calls the service refused past its '
        'decision_timeout',
        ('mode', 'hosts', 'topology', 'callers', 'inst', 'dec/s', 'inst/s',
         'p50', 'p99', 'no-op/s', 'no-op\np50', '%\nno-op', 'lost\nraces',
         'refused', 'verified'))
    for row in rows:
        table.add_row(
            row['mode'], '{:,}'.format(row['hosts']), row['topology'],
            str(row['callers']), '{:,}'.format(row['instances']),
            _rate(row['decisions_per_s']), _rate(row['instances_per_s']),
            _ms(row['p50_ms']), _ms(row['p99_ms']),
            _rate(row.get('noop_calls_per_s')), _ms(row.get('noop_p50_ms')),
            report._fmt(row.get('share_of_noop')), str(row['lost_races']),
            str(row.get('refused', 0)),
            '[green]yes[/]' if row['verified'] else '[red]no[/]')
    console.print(table)
    table = _table(
        'per phase: the calls, and the claims in the database after them',
        'calls answered (* stopped by --time-budget); last placed: s into '
        'the phase when the last instance was placed; RAM: the fleet\'s '
        'reported usage + claims over its capacity (total x allocation '
        'ratio); nodes overcommitted, nodes with unbalanced claims',
        ('hosts', 'topology', 'callers', 'inst', 'calls', 'placed',
         'NoValid\nHost', 'errors', 'p95', 'last\nplaced', 'claims', 'RAM',
         'over-\ncommit', 'unbal-\nanced'))
    for row in rows:
        calls = '{:,}'.format(row['requests'])
        if row.get('truncated'):
            calls += '*'
        table.add_row(
            '{:,}'.format(row['hosts']), row['topology'],
            str(row['callers']), '{:,}'.format(row['instances']), calls,
            '{:,}'.format(row['placed']),
            '{:,}'.format(row['no_valid_host']),
            '%d (%d t/o)' % (row['errors'], row['timeouts'])
            if row['errors'] else '0',
            _ms(row['p95_ms']), report._fmt(row['last_placement_s']),
            '{:,}'.format(row['claims']), _share_of(row, 'memory_mb'),
            str(len(row['overcommitted'])), str(len(row['unbalanced'])))
    console.print(table)
    for row in rows:
        if row.get('first_error'):
            console.print('%s, %d callers x%d: first error: %s' % (
                row['topology'], row['callers'], row['instances'],
                row['first_error'][:200]))
    dirs = []
    for row in rows:
        for path in row.get('log_dirs') or ():
            if path not in dirs:
                dirs.append(path)
    if dirs:
        console.print('service logs kept in %s' % ', '.join(dirs))
