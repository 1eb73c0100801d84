"""The versus-nova mode's figures: rows, checks, ratios, table and plot.

Pure functions of what a phase measured (no server):

``phase_row``      one JSON row per (contestant, hosts, callers,
                   instances): calls, decisions (answered calls,
                   Selections or NoValidHost) and instances placed per
                   second, p50/p99 latency at Nova's client (ms),
                   NoValidHost, errors, calls still unanswered when the
                   phase ended, and the capacity checks;
``overcommitted``  the (provider, resource class) pairs whose usage
                   exceeds ``(total - reserved) * allocation_ratio``,
                   Placement's own capacity rule;
``agreement_row``  how often Nova and this service chose the same hosts
                   for the same request on the same state;
``ratio_rows``     ours against Nova (decisions/s, p99) per (hosts,
                   callers, instances), and Placement mode against SQL
                   mode (decisions/s);
``print_table`` and ``plot`` (decisions/s and p99 against callers, a
panel per fleet size and instance count).
"""

import sys

from scheduler_tools.bench import report

MODE = 'versus-nova'
AGREEMENT = 'versus-nova-agreement'
RATIO = 'versus-nova-ratio'
TABLE_WIDTH = 140


def overcommitted(usage_rows):
    """``[(provider uuid, resource class, used, capacity)]`` of the
    ``(uuid, rc, used, total, reserved, ratio)`` rows whose ``used`` is
    above ``(total - reserved) * ratio``."""
    found = []
    for provider, rc, used, total, reserved, ratio in usage_rows:
        capacity = (total - reserved) * ratio
        if used > capacity + 1e-9:
            found.append((provider, rc, used, capacity))
    return found


def node_usage_rows(nodes, picks):
    """Usage rows (as ``overcommitted`` takes them) of ``nodes``
    (``versus_nova_fleet.Node``) after their seeded usage plus the
    instances ``picks`` placed (``[node uuid, instance, vcpus, MiB,
    GiB]``): the capacity check of a contestant that claims nothing in
    Placement (the SQL mode), on what the callers were answered."""
    used = {node.uuid: [node.vcpus_used, node.memory_mb_used,
                        node.local_gb_used] for node in nodes}
    for node, _instance, vcpus, memory_mb, root_gb in picks:
        if node in used:
            for index, amount in enumerate((vcpus, memory_mb, root_gb)):
                used[node][index] += amount
    rows = []
    for node in nodes:
        vcpus, memory_mb, local_gb = used[node.uuid]
        rows += [(node.uuid, 'VCPU', vcpus, node.vcpus, 0, node.cpu_ratio),
                 (node.uuid, 'MEMORY_MB', memory_mb, node.memory_mb,
                  node.reserved_mb, node.ram_ratio),
                 (node.uuid, 'DISK_GB', local_gb, node.local_gb, 0,
                  node.disk_ratio)]
    return rows


def phase_row(contestant, hosts, callers, instances, tally, checks):
    """The row of one phase from the caller's ``tally`` (``run``'s
    answer) and ``checks`` (``overcommitted``: pairs over capacity;
    ``allocations_held`` / ``allocations_expected``: consumers holding
    Placement allocations after the phase and instances placed, None
    for a contestant that does not claim in Placement;
    ``allocations_missing``: instances placed without an allocation;
    ``allocations_unexplained``: allocations of neither an instance
    placed nor a call that failed at the client: a time-out's claim may
    land after the client gave up, as in Nova).  Verified: no
    overcommit, nothing missing or unexplained."""
    elapsed = tally['elapsed_s'] or float('nan')
    latencies = tally['latencies_ms']
    percentiles = (report.percentiles_ms(latencies) if latencies
                   else {'p50_ms': None, 'p95_ms': None, 'p99_ms': None})
    row = {
        'mode': MODE, 'contestant': contestant, 'hosts': hosts,
        'callers': callers, 'instances': instances,
        'calls': tally['calls'], 'decisions': tally['answered'],
        'decisions_per_s': tally['answered'] / elapsed,
        'placed': tally['placed'], 'instances_per_s':
        tally['placed'] / elapsed, 'no_valid_host': tally['novalidhost'],
        'errors': tally['errors'], 'first_error': tally['first_error'],
        'unanswered': tally['calls'] - tally['answered'] - tally['errors'],
        'elapsed_s': tally['elapsed_s'],
        'p50_ms': percentiles['p50_ms'], 'p99_ms': percentiles['p99_ms'],
        'no_decision': tally['answered'] == 0,
    }
    row.update(checks)
    row['verified'] = (not row['overcommitted'] and (
        row.get('allocations_held') is None or
        not (row['allocations_missing'] or
             row['allocations_unexplained'])))
    return row


def agreement_row(hosts, instances, pairs):
    """How often both chose the same hosts: ``pairs`` of ``{"nova":
    [node uuid per instance] or [] (NoValidHost) or None (error),
    "ours": ...}``."""
    compared = [pair for pair in pairs
                if pair['nova'] is not None and pair['ours'] is not None]
    same = sum(pair['nova'] == pair['ours'] for pair in compared)
    return {'mode': AGREEMENT, 'hosts': hosts, 'instances': instances,
            'requests': len(pairs), 'compared': len(compared),
            'same_hosts': same,
            'both_no_valid_host': sum(not pair['nova'] and not pair['ours']
                                      for pair in compared),
            'agreement': same / len(compared) if compared else None}


def _ratio(top, bottom):
    if top is None or not bottom:
        return None
    return top / bottom


def _nova_bounds(nova, call_timeout_s):
    """Nova's decisions/s and p99 (ms) for the ratios, and whether they
    are bounds: a phase without any decision is taken as less than one
    decision over the phase, and its p99 as more than the call time-out
    (the ratios are then lower bounds)."""
    if nova is None:
        return None, None, False
    if not nova['no_decision']:
        return nova['decisions_per_s'], nova['p99_ms'], False
    timeout = nova.get('call_timeout_s') or call_timeout_s
    return (1.0 / nova['elapsed_s'] if nova['elapsed_s'] else None,
            timeout * 1000.0 if timeout else None, True)


def ratio_rows(rows, call_timeout_s=None):
    """Per (hosts, callers, instances) with a nova row: ours against
    Nova (decisions/s, and Nova's p99 over ours: how many times lower
    ours is), for both of our modes; and Placement mode's decisions/s
    over SQL mode's.  When Nova made no decision in the phase, the
    ratios against it are lower bounds (``nova_bound``: see
    ``_nova_bounds``; ``call_timeout_s`` when the rows do not say)."""
    found = {}
    for row in rows:
        if row['mode'] == MODE:
            found[(row['hosts'], row['callers'], row['instances'],
                   row['contestant'])] = row
    ratios = []
    keys = sorted({key[:3] for key in found})
    for hosts, callers, instances in keys:
        nova = found.get((hosts, callers, instances, 'nova'))
        placement = found.get((hosts, callers, instances, 'ours-placement'))
        sql = found.get((hosts, callers, instances, 'ours-sql'))
        rate, p99, bound = _nova_bounds(nova, call_timeout_s)
        ratio = {'mode': RATIO, 'hosts': hosts, 'callers': callers,
                 'instances': instances, 'nova_bound': bound}
        for name, ours in (('placement', placement), ('sql', sql)):
            ratio['%s_vs_nova_decisions' % name] = _ratio(
                ours and ours['decisions_per_s'], rate)
            ratio['nova_p99_over_%s_p99' % name] = _ratio(
                p99, ours and ours['p99_ms'])
        ratio['placement_vs_sql_decisions'] = _ratio(
            placement and placement['decisions_per_s'],
            sql and sql['decisions_per_s'])
        ratios.append(ratio)
    return ratios


def _x(value, bound=False):
    if value is None:
        return '-'
    text = ('%.1fx' % value if value < 100 else '{:,.0f}x'.format(value))
    return '>' + text if bound else text


def print_table(rows, console=None):
    """The phases, the ratios and the agreement, as rich tables."""
    from rich.console import Console

    from scheduler_tools.bench import load_table

    if console is None:
        console = Console(width=None if sys.stdout.isatty() else TABLE_WIDTH)
    table = load_table._table(
        'scheduler-bench versus-nova: Nova 34 nova-scheduler and this '
        'service, Nova\'s SchedulerQueryClient, the same Nova databases, '
        'Placement and RabbitMQ',
        'dec/s = calls answered (Selections or NoValidHost) per second; '
        'latency in ms at Nova\'s client; unans. = calls still unanswered '
        'at the end of the phase; over = allocations over Placement\'s '
        'capacity; held = consumers holding allocations / instances '
        'placed (Placement contestants)',
        ('contestant', 'hosts', 'callers', 'inst', 'calls', 'dec/s',
         'inst/s', 'p50', 'p99', 'NoValid\nHost', 'errors', 'unans.',
         'over', 'held', 'verified'))
    for row in rows:
        if row['mode'] != MODE:
            continue
        held = ('-' if row.get('allocations_held') is None else '%d/%d' % (
            row['allocations_held'], row['allocations_expected']))
        table.add_row(
            row['contestant'], '{:,}'.format(row['hosts']),
            str(row['callers']), str(row['instances']),
            '{:,}'.format(row['calls']) + (' (0 decisions)'
                                           if row['no_decision'] else ''),
            load_table._rate(row['decisions_per_s']),
            load_table._rate(row['instances_per_s']),
            load_table._ms(row['p50_ms']), load_table._ms(row['p99_ms']),
            str(row['no_valid_host']), str(row['errors']),
            str(row['unanswered']), str(len(row['overcommitted'])), held,
            '[green]yes[/]' if row['verified'] else '[red]no[/]')
    console.print(table)
    ratios = [row for row in rows if row['mode'] == RATIO]
    if ratios:
        table = load_table._table(
            'ratios', 'ours/nova dec/s: decisions per second of this '
            'service over nova-scheduler\'s; nova/ours p99: how many times '
            'lower our p99 is (>: nova made no decision in the phase, '
            'taken as under one per phase and p99 over the call time-out);'
            ' placement/sql: Placement mode over SQL mode',
            ('hosts', 'callers', 'inst', 'placement/nova\ndec/s',
             'nova/placement\np99', 'sql/nova\ndec/s', 'nova/sql\np99',
             'placement/sql\ndec/s'))
        for row in ratios:
            table.add_row(
                '{:,}'.format(row['hosts']), str(row['callers']),
                str(row['instances']),
                _x(row['placement_vs_nova_decisions'], row['nova_bound']),
                _x(row['nova_p99_over_placement_p99'], row['nova_bound']),
                _x(row['sql_vs_nova_decisions'], row['nova_bound']),
                _x(row['nova_p99_over_sql_p99'], row['nova_bound']),
                _x(row['placement_vs_sql_decisions']))
        console.print(table)
    for row in rows:
        if row['mode'] == AGREEMENT:
            console.print(
                'agreement at %s hosts, %d-instance requests: the same hosts '
                'for %d of %d requests compared (%d NoValidHost on both)' % (
                    '{:,}'.format(row['hosts']), row['instances'],
                    row['same_hosts'], row['compared'],
                    row['both_no_valid_host']))
        elif row['mode'] == MODE and row['first_error']:
            console.print('%s, %d callers x%d: first error: %s' % (
                row['contestant'], row['callers'], row['instances'],
                row['first_error'][:200]))


def plot(rows, path):
    """decisions/s and p99 against callers, a line per contestant, a
    column per (hosts, instances), written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot

    phases = [row for row in rows if row['mode'] == MODE]
    panels = sorted({(row['hosts'], row['instances']) for row in phases})
    if not panels:
        return
    figure, axes = pyplot.subplots(2, len(panels), squeeze=False,
                                   figsize=(4.5 * len(panels), 7))
    for column, (hosts, instances) in enumerate(panels):
        for contestant in sorted({row['contestant'] for row in phases}):
            mine = sorted((row for row in phases
                           if (row['hosts'], row['instances'],
                               row['contestant']) == (hosts, instances,
                                                      contestant)),
                          key=lambda row: row['callers'])
            callers = [row['callers'] for row in mine]
            axes[0][column].plot(callers, [row['decisions_per_s']
                                           for row in mine], 'o-',
                                 label=contestant)
            axes[1][column].plot(callers, [row['p99_ms'] or float('nan')
                                           for row in mine], 'o-',
                                 label=contestant)
        axes[0][column].set_title('%s hosts, %d instance(s)/request' % (
            '{:,}'.format(hosts), instances))
        for row_index, label in ((0, 'decisions/s'), (1, 'p99 (ms)')):
            axis = axes[row_index][column]
            axis.set_xscale('log', base=2)
            axis.set_yscale('log')
            axis.set_xlabel('callers')
            axis.set_ylabel(label)
            axis.legend(fontsize='small')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
