"""How a replay's figures are shown: rich tables, JSON and a plot.

``print_tables`` prints the figures of ``metrics.summarize`` (and, when
the summary has ``compare``, one table with a column per policy: the
service, first-fit, best-fit); ``write_json`` saves the summary;
``plot`` draws over trace time (hours), with matplotlib's Agg backend:
hosts in use against the capacity lower bound and the fleet size (and
the reference policies' hosts in use), the NoValidHost moments as ticks;
utilisation of the hosts in use (of capacity x ratio); stranded capacity
(against the trace's flavor mix); the fleet's free capacity at each
NoValidHost.
"""

import json

import numpy as np

from scheduler_tools.replay import metrics

MIB_PER_GIB = 1024.0
SECONDS_PER_HOUR = 3600.0
# Flavors shown in the table (all are in the JSON), most requested first.
MAX_FLAVOR_ROWS = 20
# How much of the departures after the last arrival the plot shows, as a
# fraction of the arrival window.
DRAIN_SHOWN = 0.25
# Room above the highest point of a scatter plot, and above the fleet
# size for the legend of the hosts in use.
PLOT_HEADROOM = 1.1
LEGEND_HEADROOM = 1.4


def _fmt(value, spec='{:,.1f}'):
    return '-' if value is None else spec.format(value)


def _pct(value):
    return _fmt(None if value is None else 100.0 * value, '{:.1f}%')


def _count(value):
    return _fmt(value, '{:,}')


def _pair(first, second, spec='{:,.1f}'):
    return '%s / %s' % (_fmt(first, spec), _fmt(second, spec))


def _peak_mean(figures):
    """``'peak / mean'`` of a ``{'peak': int, 'mean': float}``."""
    return '%s / %s' % (_count(figures['peak']), _fmt(figures['mean']))


def _hours(seconds):
    return None if seconds is None else seconds / SECONDS_PER_HOUR


def _gib(mib):
    return None if mib is None else mib / MIB_PER_GIB


def _ratios(ratios):
    def one(value):
        if isinstance(value, dict):
            return '%g-%g' % (value['min'], value['max'])
        return '%g' % value
    return ' / '.join(one(ratios[name]) for name in (
        'cpu_allocation_ratio', 'ram_allocation_ratio',
        'disk_allocation_ratio'))


def table_rows(summary):
    """``[(label, value text)]`` of a service summary, in table order."""
    latency = summary['latency_ms']
    rows = [
        ('Requests (select_destinations calls)', _count(summary['requests'])),
        ('Instances requested', _count(summary['instances_requested'])),
        ('Instances placed', _count(summary['instances_placed'])),
        ('NoValidHost: requests / instances',
         '%s / %s' % (_count(summary['no_valid_host']),
                      _count(summary['flavor_totals']
                             ['no_valid_host_instances']))),
        ('NoValidHost rate (of requests)',
         _pct(summary['no_valid_host_rate'])),
        ('Other errors', _count(summary['errors'])),
        ('Decision latency p50 / p95 / p99 (ms)',
         ' / '.join(_fmt(latency[k], '{:.1f}') for k in ('p50', 'p95',
                                                         'p99'))),
        ('Decisions per second', _fmt(summary['decisions_per_second'])),
        ('Wall time (s)', _fmt(summary['wall_time_s'])),
        ('VMs per second (wall clock)', _fmt(summary['vms_per_second'])),
    ]
    settings = summary.get('settings', {})
    if 'allocation_ratios' in settings:
        rows.append(('Allocation ratios cpu / ram / disk (effective)',
                     _ratios(settings['allocation_ratios'])))
    if summary.get('fleet'):
        rows += _fleet_rows(summary['fleet'])
    if summary.get('gpus'):
        rows += _gpu_rows(summary['gpus'])
    rows += _moment_rows(summary.get('no_valid_host_moments') or [])
    return rows


def _gpu_rows(gpus):
    """GPUs asked, placed, refused and in use; what Nova cannot express
    of GPU sharing (``gpu_figures.sharing``, when the summary has it)."""
    in_use = gpus['in_use']
    rows = [
        ('GPUs requested / placed / refused',
         ' / '.join(_count(gpus[key])
                    for key in ('requested', 'placed', 'refused'))),
        ('GPUs in use: peak / mean / end, of total',
         '%s / %s / %s of %s' % (_count(in_use['peak']),
                                 _fmt(in_use['mean']),
                                 _count(in_use['end']),
                                 _count(gpus['total']))),
    ]
    shared = gpus.get('sharing')
    if shared and shared['shared_vms']:
        rows.append((
            'Shared-GPU VMs asking a whole GPU (Nova has no fraction): '
            'VMs / GPU-milli wanted / overstated',
            '%s of %s / %s / %s (%s of GPU-milli asked)' % (
                _count(shared['shared_vms']), _count(shared['gpu_vms']),
                _count(shared['shared_gpu_milli_wanted']),
                _count(shared['gpu_milli_overstated']),
                _pct(shared['overstated_fraction']))))
    return rows


def _fleet_rows(fleet):
    hosts, bound = fleet['hosts_in_use'], fleet['lower_bound']
    over = fleet['hosts_over_bound']
    cpu, ram = fleet['cpu_utilisation'], fleet['ram_utilisation']
    stranded = fleet['stranded']
    return [
        ('Trace time replayed / arrival window (h)',
         _pair(fleet['trace_time_s'] / SECONDS_PER_HOUR,
               _hours(fleet['arrival_window_s']), '{:.2f}')),
        ('Fleet size (nodes)', _count(fleet['fleet_size'])),
        ('Hosts in use: peak / mean', _peak_mean(hosts)),
        ('Lower bound: peak / mean', _peak_mean(bound)),
        ('Hosts in use / bound: peak / mean',
         _pair(over['peak'], over['mean'], '{:.3f}')),
        ('CPU utilisation, used hosts: mean / at peak',
         '%s / %s' % (_pct(cpu['mean']), _pct(cpu['at_peak']))),
        ('RAM utilisation, used hosts: mean / at peak',
         '%s / %s' % (_pct(ram['mean']), _pct(ram['at_peak']))),
        ('CPU / RAM utilisation, whole fleet: mean',
         '%s / %s' % (_pct(cpu['fleet_mean']), _pct(ram['fleet_mean']))),
        ('Stranded vCPUs (flavor mix): mean / at peak',
         _pair(stranded['stranded_vcpus']['mean'],
               stranded['stranded_vcpus']['at_peak'])),
        ('Stranded RAM GiB (flavor mix): mean / at peak',
         _pair(_gib(stranded['stranded_memory_mb']['mean']),
               _gib(stranded['stranded_memory_mb']['at_peak']))),
        ('Free where no size fits: vCPUs / RAM GiB, mean',
         _pair(stranded['unusable_vcpus']['mean'],
               _gib(stranded['unusable_memory_mb']['mean']))),
    ]


def _moment_rows(moments):
    if not moments:
        return []
    free_vcpus = [moment['free']['vcpus'] for moment in moments]
    free_ram = [_gib(moment['free']['memory_mb']) for moment in moments]
    fitting = [moment['hosts_fitting_one'] for moment in moments]
    return [
        ('Fleet free at NoValidHost (median): vCPUs / RAM GiB',
         _pair(metrics.percentile(free_vcpus, 50),
               metrics.percentile(free_ram, 50))),
        ('Nodes one instance fits at NoValidHost (median)',
         _fmt(metrics.percentile(fitting, 50))),
    ]


def _has_gpus(flavors):
    return any(flavor.get('gpus') for flavor in flavors)


def _size_header(flavors):
    return 'vCPU / MiB / GiB' + (' / GPU' if _has_gpus(flavors) else '')


def _size_label(flavor, gpus=False):
    """``vCPU / MiB / GiB`` of a flavor row, ``/ GPUs`` with ``gpus``."""
    label = '%d / %d / %d' % (flavor['vcpus'], flavor['memory_mb'],
                              flavor['disk_gb'])
    return label + (' / %d' % flavor.get('gpus', 0) if gpus else '')


def flavor_rows(flavors, limit=MAX_FLAVOR_ROWS):
    """Table rows (tuples of text) of ``metrics.FlavorStats.summary``:
    the ``limit`` most requested sizes, then the others added up."""
    def row(label, counts):
        return (label,) + tuple(_count(counts[name])
                                for name in metrics.FlavorStats.COUNTS)

    gpus = _has_gpus(flavors)
    rows = [row(_size_label(flavor, gpus), flavor)
            for flavor in flavors[:limit]]
    others = flavors[limit:]
    if others:
        rows.append(row('%d other sizes' % len(others), {
            name: sum(flavor[name] for flavor in others)
            for name in metrics.FlavorStats.COUNTS}))
    return rows


# Rows of the comparison: label, figure (and key) of
# ``metrics.comparison``, format, scale.
COMPARED = (
    ('Hosts in use: peak', ('hosts_in_use', 'peak'), '{:,.0f}', 1),
    ('Hosts in use: mean', ('hosts_in_use', 'mean'), '{:,.1f}', 1),
    ('Lower bound: peak', ('lower_bound', 'peak'), '{:,.0f}', 1),
    ('Lower bound: mean', ('lower_bound', 'mean'), '{:,.1f}', 1),
    ('Hosts in use / bound: peak', ('hosts_over_bound', 'peak'), '{:.3f}',
     1),
    ('Hosts in use / bound: mean', ('hosts_over_bound', 'mean'), '{:.3f}',
     1),
    ('NoValidHost: requests', ('no_valid_host', 'requests'), '{:,}', 1),
    ('NoValidHost: instances', ('no_valid_host', 'instances'), '{:,}', 1),
    ('CPU utilisation of used hosts (mean)', ('cpu_utilisation',),
     '{:.1f}%', 100),
    ('RAM utilisation of used hosts (mean)', ('ram_utilisation',),
     '{:.1f}%', 100),
    ('GPUs placed', ('gpus_placed',), '{:,}', 1),
    ('GPUs in use: peak', ('gpus_in_use', 'peak'), '{:,}', 1),
    ('GPUs in use: mean', ('gpus_in_use', 'mean'), '{:,.1f}', 1),
)


def comparison_rows(compare):
    """``[(label, (text per policy, ...))]`` of ``{policy:
    metrics.comparison(...)}``, in ``COMPARED`` order."""
    def value(figures, path, scale):
        for key in path:
            figures = figures[key]
        return None if figures is None else figures * scale

    return [(label, tuple(_fmt(value(figures, path, scale), spec)
                          for figures in compare.values()))
            for label, path, spec, scale in COMPARED
            if all(path[0] in figures for figures in compare.values())]


# Under the comparison table: what its columns are.
COMPARISON_CAPTION = (
    'service: the scheduler with the given configuration (Nova\'s default '
    'weighers spread; etc/scheduler/packing.conf packs); first-fit, '
    'best-fit: reference policies simulated in memory on the same '
    'requests, departures and nodes (--nocompare leaves them out)')


def _table(title, columns, rows, caption=None):
    from rich.table import Table

    table = Table(title=title, caption=caption)
    for index, column in enumerate(columns):
        table.add_column(column, justify='left' if index == 0 else 'right')
    for row in rows:
        table.add_row(*row)
    return table


def render_tables(summary, title='Scheduler trace replay'):
    """The rich Tables of a summary: figures, flavors, comparison."""
    tables = [_table(title, ('Metric', 'Value'), table_rows(summary))]
    if summary.get('flavors'):
        tables.append(_table(
            'Per flavor', (_size_header(summary['flavors']), 'Requests',
                           'Instances', 'Placed', 'NoValidHost',
                           'NVH instances'),
            flavor_rows(summary['flavors'])))
    if summary.get('compare'):
        tables.append(_table(
            'Service against reference policies',
            ('Figure',) + tuple(summary['compare']),
            [(label,) + values for label, values in
             comparison_rows(summary['compare'])],
            caption=COMPARISON_CAPTION))
    return tables


def print_tables(summary, console=None):
    """Print the figures as tables (to stdout by default)."""
    from rich.console import Console

    console = console or Console()
    for table in render_tables(summary):
        console.print(table)


def write_json(path, summary):
    """Write the summary as indented JSON to ``path``."""
    with open(path, 'w', encoding='utf-8') as out:
        json.dump(summary, out, indent=2, sort_keys=True)
        out.write('\n')


# ------------------------------------------------------------------ plot --

def plot(path, series, capacity, moments=(), others=None, window=None,
         title='Scheduler trace replay'):
    """Draw the replay into the PNG ``path`` (see the module docstring).

    :param series: the service run's ``TimeSeries.arrays()``.
    :param capacity: the fleet's ``capacity.FleetCapacity``.
    :param moments: the NoValidHost moments (``Ledger.moments``).
    :param others: ``{policy: {'time_s', 'hosts_in_use'}}`` arrays of
        reference policies, or None.
    :param window: the arrival window ``(start, end)`` in seconds: the
        departures after it are drawn for at most a quarter of its
        length (the rest of a short trace's long lifetimes would squeeze
        it), the axis label says from when they are not.
    """
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(4, 1, sharex=True, figsize=(10, 11))
    try:
        hours = series['time_s'] / SECONDS_PER_HOUR
        moment_hours = np.asarray([m['time_s'] for m in moments],
                                  dtype=float) / SECONDS_PER_HOUR
        _draw_hosts(axes[0], hours, series, capacity, moment_hours,
                    others or {})
        _draw_utilisation(axes[1], hours, series)
        _draw_stranded(axes[2], hours, series)
        _draw_free_at_moments(axes[3], moment_hours, moments)
        axes[0].set_title(title)
        axes[-1].set_xlabel(_time_axis(axes[-1], hours, window))
        for axis in axes:
            axis.grid(True, alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)


def _time_axis(axis, hours, window):
    """Cut the shared time axis after ``window`` (see ``plot``); returns
    its label."""
    label = 'trace time (h)'
    if window is None or not len(hours):
        return label
    start, end = (value / SECONDS_PER_HOUR for value in window)
    cut = end + DRAIN_SHOWN * (end - start)
    if end > start and cut < hours[-1]:
        axis.set_xlim(hours[0], cut)
        label += '; departures after %.1f h not shown' % cut
    return label


def _draw_hosts(axis, hours, series, capacity, moment_hours, others):
    axis.step(hours, series['hosts_in_use'], where='post', color='C0',
              label='service')
    for number, (policy, data) in enumerate(others.items(), start=1):
        axis.step(data['time_s'] / SECONDS_PER_HOUR, data['hosts_in_use'],
                  where='post', color='C%d' % (number + 4), linewidth=0.8,
                  label=policy)
    axis.step(hours, metrics.bound_series(series, capacity), where='post',
              color='black', linewidth=0.8, label='lower bound')
    axis.axhline(capacity.size, color='grey', linestyle='--',
                 linewidth=0.8, label='fleet size')
    if len(moment_hours):
        axis.plot(moment_hours, np.zeros_like(moment_hours), '|',
                  color='red', markersize=10, label='NoValidHost')
    axis.set_ylabel('hosts in use')
    axis.set_ylim(0, LEGEND_HEADROOM * max(capacity.size, 1))
    axis.legend(loc='upper center', ncol=3, fontsize='small')


def _draw_utilisation(axis, hours, series):
    for name, used, limit, colour in (
            ('CPU', 'vcpus_used', 'vcpus_limit', 'C1'),
            ('RAM', 'memory_mb_used', 'memory_mb_limit', 'C2')):
        values = 100.0 * np.divide(
            series[used], series[limit], out=np.zeros_like(series[used]),
            where=series[limit] > 0)
        axis.step(hours, values, where='post', label=name, color=colour)
    axis.set_ylabel('used / (capacity x ratio)\nof used hosts (%)')
    axis.set_ylim(0, 105)
    axis.legend(loc='lower right', fontsize='small')


def _draw_stranded(axis, hours, series):
    axis.step(hours, series['stranded_memory_mb'] / MIB_PER_GIB,
              where='post', color='C3', label='RAM (GiB)')
    axis.set_ylabel('stranded RAM (GiB)\nflavor mix')
    axis.set_ylim(bottom=0)
    vcpus = axis.twinx()
    vcpus.step(hours, series['stranded_vcpus'], where='post', color='C4',
               linestyle=':', label='vCPUs')
    vcpus.set_ylabel('stranded vCPUs')
    vcpus.set_ylim(bottom=0)
    axis.legend(handles=axis.get_lines() + vcpus.get_lines(),
                loc='upper left', fontsize='small')


def _draw_free_at_moments(axis, moment_hours, moments):
    axis.set_ylabel('fleet free RAM (GiB)\nat NoValidHost')
    if not moments:
        axis.text(0.5, 0.5, 'no NoValidHost', transform=axis.transAxes,
                  ha='center', va='center', color='grey')
        return
    free = [_gib(m['free']['memory_mb']) for m in moments]
    largest = [_gib(m['largest_free']['memory_mb']) for m in moments]
    free_vcpus = [m['free']['vcpus'] for m in moments]
    axis.plot(moment_hours, free, '.', color='C0', label='in all')
    axis.plot(moment_hours, largest, 'x', color='C3', markersize=4,
              label='on the freest node')
    axis.set_ylim(0, PLOT_HEADROOM * max(free + [1.0]))
    vcpus = axis.twinx()
    vcpus.plot(moment_hours, free_vcpus, '.', color='C2', markersize=3,
               label='vCPUs in all')
    vcpus.set_ylabel('fleet free vCPUs')
    vcpus.set_ylim(0, PLOT_HEADROOM * max(free_vcpus + [1.0]))
    axis.legend(handles=axis.get_lines() + vcpus.get_lines(),
                loc='upper left', fontsize='small')
