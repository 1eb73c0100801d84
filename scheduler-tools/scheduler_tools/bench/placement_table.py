"""The placement mode's rows as rich tables: the queries the root
providers answer, those over provider trees, the freed capacity and one
request for many instances."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from scheduler_tools.bench import report
from scheduler_tools.bench.placement_fleet import SEED_THREADS
from scheduler_tools.bench.placement_freed import FREED_POLL_S
from scheduler_tools.bench.placement_freed import FREED_ROUNDS
from scheduler_tools.bench.placement_rest import NOVA_MICROVERSION


def print_table(rows: Sequence[Mapping[str, Any]], console: Any = None
                ) -> None:
    """Print the placement rows as a rich table."""
    import sys

    from rich.console import Console
    from rich.table import Table

    fmt = report._fmt
    if console is None:
        console = Console(width=None if sys.stdout.isatty() else 150)
    table = Table(
        title='scheduler-bench placement: GET /allocation_candidates '
              '(microversion %s, no limit), Placement against ours'
              % NOVA_MICROVERSION,
        caption='seeding: s to write the providers added for this size '
                'through the REST API (%d threads); load: read_providers '
                "from Placement's database, ms; latencies in ms over the "
                'same requests (Placement: at the client); speed-up: '
                'Placement p50 / decision p50, times (/ target); '
                'mismatches: requests whose candidate providers differ; '
                'ours: our candidates shaped as Placement\'s body; '
                'unshaped: without the shaping; decision: refresh, '
                'candidates, filters and weighers in Placement mode; '
                '+claim: the decision with its PUT /allocations'
                % SEED_THREADS)
    for name in ('hosts', 'providers', 'req', 'seeding s', 'load ms',
                 'Placement p50', 'Placement p99', 'ours p50',
                 'unshaped p50', 'decision p50', 'decision p99',
                 '+claim p50', 'speed-up', 'mismatches', 'meets'):
        table.add_column(name, justify='right')
    for row in rows:
        requests = str(row['requests']) + ('*' if row['truncated'] else '')
        speedup = report._pair(row['speedup'], row['target_speedup'], 0)
        table.add_row(
            '{:,}'.format(row['hosts']), '{:,}'.format(row['providers']),
            requests, fmt(row['seed_s']),
            fmt(row['load_ms']), fmt(row['placement_p50_ms'], 2),
            fmt(row['placement_p99_ms'], 2), fmt(row['ours_p50_ms'], 2),
            fmt(row['ours_unshaped_p50_ms'], 2),
            fmt(row['decision_p50_ms'], 2), fmt(row['decision_p99_ms'], 2),
            fmt(row['decision_claim_p50_ms'], 2), speedup,
            ('[red]%d[/]' if row['mismatches'] else '%d')
            % row['mismatches'], report._verdict(row))
    console.print(table)
    _print_trees(rows, console)
    _print_freed(rows, console)
    _print_multi(rows, console)
    if any(row['truncated'] for row in rows):
        console.print('* stopped by the time budget (--time-budget)')


def _print_trees(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """The tree queries' part of the rows, as a second table."""
    fmt = report._fmt
    _print(console, 'provider trees: a vGPU flavor and a port with a '
                    'minimum bandwidth policy',
           'whole allocation requests compared (mismatches); decision: the '
           'vGPU flavor in Placement mode, no claim; speed-up: Placement '
           'p50 / decision p50',
           ('hosts', 'providers', 'req', 'Placement p50', 'Placement p99',
            'ours p50', 'ours p99', 'decision p50', 'decision p99',
            'speed-up', 'mismatches'),
           [('{:,}'.format(row['hosts']), '{:,}'.format(row['providers']),
             str(row['trees_requests']),
             fmt(row['trees_placement_p50_ms'], 2),
             fmt(row['trees_placement_p99_ms'], 2),
             fmt(row['trees_ours_p50_ms'], 2),
             fmt(row['trees_ours_p99_ms'], 2),
             fmt(row['trees_decision_p50_ms'], 2),
             fmt(row['trees_decision_p99_ms'], 2),
             fmt(row['trees_speedup'], 1),
             ('[red]%d[/]' if row['trees_mismatches'] else '%d')
             % row['trees_mismatches']) for row in rows])


def _print_freed(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """Freed capacity and the usage watch's cost, as a third table."""
    fmt = report._fmt
    _print(console, 'capacity freed in Placement without a generation bump '
                    '(DELETE /allocations/{consumer})',
           'freed: ms from the DELETE until the view holds the freed usage, '
           'refreshed every %d ms as decisions would (%d frees); usage '
           'read: one read of every usage by the usage watch and its '
           'comparison with the view, ms; decision: as in the first table, '
           'with the usage watch running and stopped'
           % (FREED_POLL_S * 1000, FREED_ROUNDS),
           ('hosts', 'freed p50', 'freed p99', 'freed max', 'bound',
            'usage read p50', 'decision p50 watched', 'decision p50 stopped',
            'meets'),
           [('{:,}'.format(row['hosts']), fmt(row['freed_p50_ms'], 1),
             fmt(row['freed_p99_ms'], 1), fmt(row['freed_max_ms'], 1),
             fmt(row['freed_bound_ms'], 0), fmt(row['usage_read_p50_ms'], 1),
             fmt(row['decision_p50_ms'], 2),
             fmt(row['decision_unwatched_p50_ms'], 2),
             'yes' if row['freed_meets_bound'] else '[red]no[/]')
            for row in rows])


def _print_multi(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """One request for many instances, as a fourth table."""
    fmt = report._fmt
    _print(console, 'one request for many new instances, claims included',
           'ours: select_destinations in Placement mode, its claims in '
           'parallel chunks of POST /allocations, s; one POST: Placement '
           'writing the same allocations in one POST /allocations, s',
           ('hosts', 'instances', 'ours s', 'one POST s', 'target s',
            'meets'),
           [('{:,}'.format(row['hosts']), '{:,}'.format(row['multi_create']),
             fmt(row['multi_create_s'], 2),
             fmt(row['multi_create_one_post_s'], 2),
             fmt(row['multi_create_target_s'], 1),
             'yes' if row['multi_create_meets_target'] else '[red]no[/]')
            for row in rows])


def _print(console: Any, title: str, caption: str, columns: Sequence[str],
           cells: Iterable[Sequence[str]]) -> None:
    """A rich table of right-justified ``columns`` and rows ``cells``."""
    from rich.table import Table

    table = Table(title=title, caption=caption)
    for name in columns:
        table.add_column(name, justify='right')
    for row in cells:
        table.add_row(*row)
    console.print(table)
