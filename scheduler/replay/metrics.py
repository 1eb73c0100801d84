"""What a replay measures, and how it is shown: table, JSON, plot.

Decisions
    Every ``select_destinations`` call is timed at the caller (wall
    seconds, RPC round trip included) and counted: requests, instances
    asked for, instances placed, NoValidHost answers, other errors.
    ``decisions_per_second`` is calls divided by the time spent in them.

Fleet state (``FleetGauge``)
    Over the hosts in use (nodes running at least one instance): how many
    there are, their physical vCPUs and RAM, what their instances use,
    and the stranded capacity: on a used node that can no longer take the
    reference flavor (the trace's most common size), because its free
    vCPUs or its free RAM are below the flavor's, all its free vCPUs and
    free RAM count as stranded.  Free means what the scheduler still
    allows: capacity times allocation ratio, minus what is used (so RAM
    is overcommitted 1.5 times under Nova's defaults, and utilisation,
    used over *physical* capacity, can exceed 100%).  The gauge is kept
    incrementally: each changed node updates the totals.

Time series (``TimeSeries``)
    A sample of the gauge after every event, at its trace time.  A
    sample holds until the next one, so means are weighted by trace time
    over ``[first event, last event]``.  The *peak* is the sample with the
    most hosts in use, and among those the most RAM used (the fleet at
    its fullest); utilisation "at peak" is read there.

``summarize`` gathers the figures in a JSON-ready dict; ``render_table``
shows it with rich, ``write_json`` saves it, ``plot`` draws the hosts in
use, the utilisation and the stranded capacity over trace time (hours)
with matplotlib's Agg backend.
"""

import json

import numpy as np

MIB_PER_GIB = 1024.0

# Columns of a TimeSeries sample.
SAMPLE_FIELDS = ('time_s', 'hosts_in_use', 'vcpus', 'memory_mb',
                 'vcpus_used', 'memory_mb_used', 'stranded_vcpus',
                 'stranded_memory_mb')
_GAUGE_FIELDS = SAMPLE_FIELDS[1:]


def percentile(values, q):
    """The ``q``-th percentile (0-100, linear interpolation) of
    ``values``, or None when there are none."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def ratio(part, whole):
    """``part / whole``, or 0.0 when ``whole`` is 0."""
    return float(part) / whole if whole else 0.0


# ------------------------------------------------------------- decisions --

class DecisionStats:
    """Counts and caller-side latencies (seconds) of the decisions."""

    def __init__(self):
        self.latencies_s = []
        self.requests = 0
        self.instances_requested = 0
        self.instances_placed = 0
        self.no_valid_host = 0
        self.instances_rejected = 0
        self.errors = 0

    def record(self, latency_s, requested, placed):
        """A call that asked for ``requested`` instances and got hosts for
        ``placed`` of them (0: NoValidHost), in ``latency_s`` seconds."""
        self.latencies_s.append(latency_s)
        self.requests += 1
        self.instances_requested += requested
        self.instances_placed += placed
        if placed < requested:
            self.no_valid_host += 1
            self.instances_rejected += requested - placed

    def record_error(self, latency_s, requested):
        """A call that failed otherwise (timeout, server error)."""
        self.latencies_s.append(latency_s)
        self.requests += 1
        self.instances_requested += requested
        self.instances_rejected += requested
        self.errors += 1

    def summary(self):
        """Counts, NoValidHost rate (of requests) and latency (ms)."""
        ms = [value * 1000.0 for value in self.latencies_s]
        busy_s = sum(self.latencies_s)
        return {
            'requests': self.requests,
            'instances_requested': self.instances_requested,
            'instances_placed': self.instances_placed,
            'instances_rejected': self.instances_rejected,
            'no_valid_host': self.no_valid_host,
            'no_valid_host_rate': ratio(self.no_valid_host, self.requests),
            'errors': self.errors,
            'latency_ms': {'p50': percentile(ms, 50),
                           'p95': percentile(ms, 95),
                           'p99': percentile(ms, 99),
                           'mean': float(np.mean(ms)) if ms else None,
                           'max': max(ms) if ms else None},
            'decisions_per_second': ratio(self.requests, busy_s),
        }


# ----------------------------------------------------------------- fleet --

def node_contribution(node, flavor_vcpus, flavor_memory_mb):
    """One node's share of the gauge totals (``_GAUGE_FIELDS`` order):
    all zeros for an unused node.  ``node`` is an agent NodeUsage (or
    anything with its fields); the flavor size is in vCPUs and MiB."""
    if not node.in_use:
        return (0, 0, 0, 0, 0, 0.0, 0.0)
    free_vcpus = node.vcpu_limit - node.vcpus_used
    free_ram_mb = node.ram_limit_mb - node.memory_mb_used
    stranded_vcpus = stranded_ram_mb = 0.0
    if free_vcpus < flavor_vcpus or free_ram_mb < flavor_memory_mb:
        stranded_vcpus = max(free_vcpus, 0.0)
        stranded_ram_mb = max(free_ram_mb, 0.0)
    return (1, node.vcpus, node.memory_mb, node.vcpus_used,
            node.memory_mb_used, stranded_vcpus, stranded_ram_mb)


class FleetGauge:
    """Totals over the hosts in use, kept up to date node by node.

    ``flavor`` is the reference ``(vcpus, memory_mb, ...)`` size for the
    stranded capacity.
    """

    def __init__(self, flavor, nodes=()):
        self.flavor_vcpus = flavor[0]
        self.flavor_memory_mb = flavor[1]
        self._parts = {}
        self._totals = np.zeros(len(_GAUGE_FIELDS))
        for node in nodes:
            self.update(node)

    def update(self, node):
        """Take the node's current usage into the totals."""
        new = np.asarray(node_contribution(node, self.flavor_vcpus,
                                           self.flavor_memory_mb),
                         dtype=float)
        old = self._parts.get(node.key)
        if old is not None:
            self._totals -= old
        self._totals += new
        self._parts[node.key] = new

    def totals(self):
        """``{field: value}`` for the hosts in use (see SAMPLE_FIELDS)."""
        values = dict(zip(_GAUGE_FIELDS, self._totals.tolist(), strict=True))
        values['hosts_in_use'] = int(round(values['hosts_in_use']))
        return values


# ------------------------------------------------------------ time series --

class TimeSeries:
    """Gauge samples over trace time (seconds)."""

    def __init__(self):
        self._rows = []

    def sample(self, time_s, totals):
        """Record ``totals`` (a FleetGauge.totals dict) at ``time_s``."""
        self._rows.append((time_s,) + tuple(totals[name]
                                            for name in _GAUGE_FIELDS))

    def __len__(self):
        return len(self._rows)

    def arrays(self):
        """``{field: numpy array}`` of every sample, in time order."""
        table = np.asarray(self._rows, dtype=float).reshape(
            -1, len(SAMPLE_FIELDS))
        return {name: table[:, column]
                for column, name in enumerate(SAMPLE_FIELDS)}


def time_weights(times):
    """How long each sample held: until the next one; the last holds 0.
    When all samples share one time, each weighs the same."""
    times = np.asarray(times, dtype=float)
    if len(times) == 0:
        return times
    weights = np.append(np.diff(times), 0.0)
    if weights.sum() <= 0:
        return np.ones_like(times)
    return weights


def weighted_mean(values, weights):
    """The mean of ``values`` weighted by ``weights``, or 0.0 when
    there are no samples."""
    if len(values) == 0:
        return 0.0
    return float(np.average(values, weights=weights))


def _utilisation(used, capacity):
    """Element-wise used/capacity, 0 where capacity is 0."""
    used = np.asarray(used, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    return np.divide(used, capacity, out=np.zeros_like(used),
                     where=capacity > 0)


def peak_index(series):
    """Index of the peak sample: the most hosts in use, then the most RAM
    used, then the earliest."""
    order = np.lexsort((-series['memory_mb_used'], -series['hosts_in_use']))
    return int(order[0])


def fleet_summary(series, flavor):
    """Hosts in use, utilisation and stranded capacity of a TimeSeries'
    ``arrays()`` (see the module doc)."""
    if len(series['time_s']) == 0:
        return None
    weights = time_weights(series['time_s'])
    cpu = _utilisation(series['vcpus_used'], series['vcpus'])
    ram = _utilisation(series['memory_mb_used'], series['memory_mb'])
    peak = peak_index(series)
    return {
        'trace_time_s': float(series['time_s'][-1] - series['time_s'][0]),
        'hosts_in_use': {
            'peak': int(series['hosts_in_use'][peak]),
            'mean': weighted_mean(series['hosts_in_use'], weights),
            'end': int(series['hosts_in_use'][-1]),
            'peak_time_s': float(series['time_s'][peak])},
        'cpu_utilisation': {'mean': weighted_mean(cpu, weights),
                            'at_peak': float(cpu[peak]),
                            'end': float(cpu[-1])},
        'ram_utilisation': {'mean': weighted_mean(ram, weights),
                            'at_peak': float(ram[peak]),
                            'end': float(ram[-1])},
        'stranded': {
            'flavor': {'vcpus': int(flavor[0]), 'memory_mb': int(flavor[1]),
                       'disk_gb': int(flavor[2]) if len(flavor) > 2 else 0},
            'vcpus_end': float(series['stranded_vcpus'][-1]),
            'memory_mb_end': float(series['stranded_memory_mb'][-1]),
            'vcpus_mean': weighted_mean(series['stranded_vcpus'], weights),
            'memory_mb_mean': weighted_mean(series['stranded_memory_mb'],
                                            weights),
            'vcpus_end_fraction': ratio(series['stranded_vcpus'][-1],
                                        series['vcpus'][-1]),
            'memory_end_fraction': ratio(series['stranded_memory_mb'][-1],
                                         series['memory_mb'][-1])},
    }


def summarize(decisions, series, flavor, settings, wall_time_s):
    """Every figure of a replay as one JSON-ready dict.

    :param decisions: a DecisionStats.
    :param series: a TimeSeries.
    :param flavor: the reference size ``(vcpus, memory_mb, disk_gb)``.
    :param settings: dict of what was replayed and how.
    :param wall_time_s: wall seconds the replay took.
    """
    summary = {'settings': settings, 'wall_time_s': float(wall_time_s)}
    summary.update(decisions.summary())
    summary['fleet'] = fleet_summary(series.arrays(), flavor)
    return summary


# ---------------------------------------------------------------- output --

def _fmt(value, spec='{:,.1f}'):
    return '-' if value is None else spec.format(value)


def _pct(value):
    return _fmt(None if value is None else 100.0 * value, '{:.1f}%')


def table_rows(summary):
    """``[(label, value text)]`` of the figures, in table order."""
    latency = summary['latency_ms']
    rows = [
        ('Requests (select_destinations calls)',
         _fmt(summary['requests'], '{:,}')),
        ('Instances requested', _fmt(summary['instances_requested'], '{:,}')),
        ('Instances placed', _fmt(summary['instances_placed'], '{:,}')),
        ('NoValidHost (requests)', _fmt(summary['no_valid_host'], '{:,}')),
        ('NoValidHost rate (of requests)',
         _pct(summary['no_valid_host_rate'])),
        ('Other errors', _fmt(summary['errors'], '{:,}')),
        ('Decision latency p50 / p95 / p99 (ms)',
         ' / '.join(_fmt(latency[k], '{:.1f}') for k in ('p50', 'p95',
                                                         'p99'))),
        ('Decisions per second', _fmt(summary['decisions_per_second'])),
        ('Wall time (s)', _fmt(summary['wall_time_s'])),
    ]
    fleet = summary.get('fleet')
    if fleet:
        rows += _fleet_rows(fleet)
    return rows


def _fleet_rows(fleet):
    hosts = fleet['hosts_in_use']
    cpu, ram = fleet['cpu_utilisation'], fleet['ram_utilisation']
    stranded = fleet['stranded']
    flavor = stranded['flavor']
    return [
        ('Trace time replayed (h)', _fmt(fleet['trace_time_s'] / 3600.0,
                                         '{:.2f}')),
        ('Hosts in use: peak / mean',
         '%s / %s' % (_fmt(hosts['peak'], '{:,}'), _fmt(hosts['mean']))),
        ('CPU utilisation of used hosts: mean / at peak',
         '%s / %s' % (_pct(cpu['mean']), _pct(cpu['at_peak']))),
        ('RAM utilisation of used hosts: mean / at peak',
         '%s / %s' % (_pct(ram['mean']), _pct(ram['at_peak']))),
        ('Reference flavor (most common)',
         '%d vCPU, %d MiB' % (flavor['vcpus'], flavor['memory_mb'])),
        ('Stranded vCPUs: end / mean',
         '%s / %s' % (_fmt(stranded['vcpus_end']),
                      _fmt(stranded['vcpus_mean']))),
        ('Stranded RAM (GiB): end / mean',
         '%s / %s' % (_fmt(stranded['memory_mb_end'] / MIB_PER_GIB),
                      _fmt(stranded['memory_mb_mean'] / MIB_PER_GIB))),
    ]


def render_table(summary, title='Scheduler trace replay'):
    """A rich Table of the summary's figures."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column('Metric')
    table.add_column('Value', justify='right')
    for label, value in table_rows(summary):
        table.add_row(label, value)
    return table


def print_table(summary, console=None):
    """Print the figures as a table (to stdout by default)."""
    from rich.console import Console

    (console or Console()).print(render_table(summary))


def write_json(path, summary):
    """Write the summary as indented JSON to ``path``."""
    with open(path, 'w', encoding='utf-8') as out:
        json.dump(summary, out, indent=2, sort_keys=True)
        out.write('\n')


def plot(path, series, title='Scheduler trace replay'):
    """Draw hosts in use, CPU and RAM utilisation of the used hosts (%)
    and stranded RAM (GiB) over trace time (hours) into the PNG ``path``.
    ``series`` is a TimeSeries."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot

    data = series.arrays()
    hours = data['time_s'] / 3600.0
    figure, axes = pyplot.subplots(3, 1, sharex=True, figsize=(9, 8))
    try:
        _draw(axes, hours, data)
        axes[0].set_title(title)
        axes[-1].set_xlabel('trace time (h)')
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)


def _draw(axes, hours, data):
    axes[0].step(hours, data['hosts_in_use'], where='post', color='C0')
    axes[0].set_ylabel('hosts in use')
    axes[0].set_ylim(bottom=0)
    cpu = 100.0 * _utilisation(data['vcpus_used'], data['vcpus'])
    ram = 100.0 * _utilisation(data['memory_mb_used'], data['memory_mb'])
    axes[1].step(hours, cpu, where='post', label='CPU', color='C1')
    axes[1].step(hours, ram, where='post', label='RAM', color='C2')
    axes[1].axhline(100.0, color='grey', linewidth=0.8, linestyle='--')
    axes[1].set_ylabel('used / physical\nof used hosts (%)')
    axes[1].set_ylim(bottom=0)
    axes[1].legend(loc='upper left')
    axes[2].step(hours, data['stranded_memory_mb'] / MIB_PER_GIB,
                 where='post', color='C3', label='RAM (GiB)')
    axes[2].set_ylabel('stranded RAM (GiB)')
    axes[2].set_ylim(bottom=0)
    vcpus = axes[2].twinx()
    vcpus.step(hours, data['stranded_vcpus'], where='post', color='C4',
               linestyle=':', label='vCPUs')
    vcpus.set_ylabel('stranded vCPUs')
    vcpus.set_ylim(bottom=0)
    axes[2].legend(handles=axes[2].get_lines() + vcpus.get_lines(),
                   loc='upper left')
    for axis in axes:
        axis.grid(True, alpha=0.3)
