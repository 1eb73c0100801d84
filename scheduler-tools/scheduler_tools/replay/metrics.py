"""What a replay measures: decisions, the fleet over time, flavors.

Decisions (``DecisionStats``)
    Every ``select_destinations`` call is timed at the caller (wall
    seconds, RPC round trip included) and counted: requests, instances
    asked for, instances placed, NoValidHost answers, other errors.
    ``decisions_per_second`` is calls divided by the time spent in them.

Fleet state (``FleetGauge``)
    Per compute node: what its instances use (vCPUs, MiB, GiB) and how
    many run.  Totals over the hosts in use (nodes running at least one
    instance): how many there are, their limits (capacity x allocation
    ratio, see ``capacity``), what their instances use, and the stranded
    capacity.  *Free* is limit minus used (never below 0).  Stranded is
    measured against the trace's flavor mix (``capacity.FlavorMix``):
    on a used node, ``free x (share of the mix's instances that do not
    fit in its free vCPUs, RAM and disk)``, the free capacity a request
    drawn from the trace's sizes could not use; *unusable* is the free
    capacity of used nodes where no size of the trace fits at all.

Time series (``TimeSeries``)
    A sample of the gauge after every event, at its trace time (samples
    at one time keep the last).  A sample holds until the next one, so
    means are weighted by trace time; they are taken over the arrival
    window, ``[first arrival, last arrival]`` (the departures replayed
    after it only empty the fleet, and would weigh a short trace's means
    down with its VMs' long lifetimes), while peaks and "end" figures
    cover every event.
    The *peak* is the sample with the most hosts in use, and among those
    the most RAM used (the fleet at its fullest); "at peak" figures are
    read there.  The capacity lower bound over time is computed from the
    samples' usage (``capacity.lower_bound``); *hosts in use / bound* is
    peak hosts over peak bound, and mean hosts over mean bound.
    Utilisation is used / (capacity x ratio): of the hosts in use, and of
    the whole fleet.

Flavors (``FlavorStats``) and NoValidHost moments
    Per size: requests, instances requested and placed, NoValidHost
    requests and instances rejected.  At each NoValidHost the fleet's
    free capacity is recorded: in all, on the node with the most of each
    resource free, and how many nodes one instance of the size would fit.

GPUs
    ``gpus_used`` and ``gpus_limit`` are gauge totals like the others;
    ``gpus.add_figures`` turns them into a run's GPU figures.

``Ledger`` gathers gauge, series, flavors and moments for one run, the
service's or a reference policy's (``policies``); ``summarize`` turns a
service run into a JSON-ready dict and ``comparison`` picks the figures
runs are compared on.  ``report`` shows them.
"""

import numpy as np

from scheduler_tools.replay import capacity as capacity_mod

# Columns of a TimeSeries sample after ``time_s``: FleetGauge totals.
GAUGE_FIELDS = ('hosts_in_use', 'vcpus_limit', 'memory_mb_limit',
                'vcpus_used', 'memory_mb_used', 'disk_gb_used',
                'stranded_vcpus', 'stranded_memory_mb', 'unusable_vcpus',
                'unusable_memory_mb', 'gpus_limit', 'gpus_used')
SAMPLE_FIELDS = ('time_s',) + GAUGE_FIELDS
USED_FIELDS = ('vcpus_used', 'memory_mb_used', 'disk_gb_used', 'gpus_used')
INITIAL_SAMPLES = 1024


def percentile(values, q):
    """The ``q``-th percentile (0-100, linear interpolation) of
    ``values``, or None when there are none."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def ratio(part, whole):
    """``part / whole``, or 0.0 when ``whole`` is 0."""
    return float(part) / whole if whole else 0.0


def time_weights(times, window=None):
    """How long each sample held within ``window`` ``(start, end)``
    seconds (default: first to last sample): until the next sample, cut
    to the window; the last holds 0.  When that leaves no time, the
    samples in the window (else all) weigh the same."""
    times = np.asarray(times, dtype=float)
    if len(times) == 0:
        return times
    start, end = window if window is not None else (times[0], times[-1])
    until = np.minimum(np.append(times[1:], times[-1]), end)
    weights = np.clip(until - np.maximum(times, start), 0.0, None)
    if weights.sum() <= 0:
        weights = ((times >= start) & (times <= end)).astype(float)
    if weights.sum() <= 0:
        return np.ones_like(times)
    return weights


def arrival_window(requests):
    """``(first, last)`` arrival time (seconds) of ``requests``: the
    window means are taken over (None for no request)."""
    if not requests:
        return None
    return (requests[0].time_s, requests[-1].time_s)


def weighted_mean(values, weights):
    """The mean of ``values`` weighted by ``weights``, or 0.0 when
    there are no samples."""
    if len(values) == 0:
        return 0.0
    return float(np.average(values, weights=weights))


def size_dict(size):
    """``{'vcpus', 'memory_mb', 'disk_gb'}`` of a size, and ``'gpus'``
    when it has some."""
    sizes = {name: int(value) for name, value in
             zip(capacity_mod.RESOURCES, size, strict=False)}
    if not sizes.get('gpus'):
        sizes.pop('gpus', None)
    return sizes


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


class FlavorStats:
    """Per size ``(vcpus, memory_mb, disk_gb)``: requests, instances
    requested and placed, NoValidHost requests and their instances
    (instances neither placed nor refused so met other errors)."""

    COUNTS = ('requests', 'instances_requested', 'instances_placed',
              'no_valid_host', 'no_valid_host_instances')

    def __init__(self):
        self._counts = {}

    def record(self, size, requested, placed, no_valid_host):
        """A request for ``requested`` instances of ``size``, ``placed``
        of them placed; ``no_valid_host`` when it met NoValidHost."""
        counts = self._counts.setdefault(tuple(size), [0] * 5)
        counts[0] += 1
        counts[1] += requested
        counts[2] += placed
        if no_valid_host:
            counts[3] += 1
            counts[4] += requested - placed

    def summary(self):
        """One dict per size, most instances requested first (then by
        size): the size's fields and ``COUNTS``."""
        rows = sorted(self._counts.items(),
                      key=lambda item: (-item[1][1], item[0]))
        return [dict(size_dict(size), **dict(zip(self.COUNTS, counts,
                                                 strict=True)))
                for size, counts in rows]

    def totals(self):
        """``COUNTS`` added up over the sizes."""
        sums = np.sum([counts for counts in self._counts.values()],
                      axis=0, dtype=np.int64) if self._counts else [0] * 5
        return dict(zip(self.COUNTS, (int(value) for value in sums),
                        strict=True))


# ----------------------------------------------------------------- fleet --

class FleetGauge:
    """Per-node usage and the totals of ``GAUGE_FIELDS`` over the hosts
    in use, kept up to date node by node.

    ``capacity`` is a ``capacity.FleetCapacity``, ``mix`` the trace's
    ``capacity.FlavorMix``.  ``used`` is ``(n, 4)`` (vCPUs, MiB, GiB,
    GPUs), ``running`` ``(n,)`` instance counts.
    """

    def __init__(self, capacity, mix):
        self.limits = capacity.limits
        self.mix = mix
        self.used = np.zeros_like(self.limits)
        self.running = np.zeros(capacity.size, dtype=np.int64)
        self._parts = np.zeros((capacity.size, len(GAUGE_FIELDS)))
        self._totals = np.zeros(len(GAUGE_FIELDS))

    def set_node(self, index, used, running):
        """Node ``index`` now has ``used`` ``(4,)`` resources in use by
        ``running`` instances (``(3,)``: no GPU)."""
        self.used[index] = capacity_mod.widen(used)
        self.running[index] = running
        new = self._contribution(index)
        self._totals += new - self._parts[index]
        self._parts[index] = new

    def _contribution(self, index):
        if not self.running[index]:
            return np.zeros(len(GAUGE_FIELDS))
        limit, used = self.limits[index], self.used[index]
        free = np.maximum(limit - used, 0.0)
        share, none = self.mix.misfit(free)
        gpu = capacity_mod.GPU
        return np.array((1.0, limit[0], limit[1], used[0], used[1],
                         used[2], share * free[0], share * free[1],
                         none * free[0], none * free[1], limit[gpu],
                         used[gpu]))

    def totals(self):
        """``(len(GAUGE_FIELDS),)`` array of the current totals."""
        return self._totals.copy()

    def free_capacity(self, size):
        """The fleet's free capacity now, for a request of ``size``
        ``(4,)``: ``{'free', 'largest_free'}`` (each a size dict: in all,
        and on the node with the most of that resource free) and
        ``hosts_fitting_one`` (nodes with room for one instance)."""
        free = np.maximum(self.limits - self.used, 0.0)
        fitting = int((free >= capacity_mod.widen(size)).all(
            axis=1).sum())
        return {'free': size_dict(free.sum(axis=0)),
                'largest_free': size_dict(free.max(axis=0, initial=0.0)),
                'hosts_fitting_one': fitting}


class TimeSeries:
    """Gauge samples over trace time (seconds), in a growing array."""

    def __init__(self):
        self._rows = np.zeros((INITIAL_SAMPLES, len(SAMPLE_FIELDS)))
        self._count = 0

    def sample(self, time_s, totals):
        """Record ``totals`` (``FleetGauge.totals``) at ``time_s``; a
        sample at the same time as the last one replaces it."""
        if self._count and self._rows[self._count - 1, 0] == time_s:
            self._count -= 1
        elif self._count == len(self._rows):
            self._rows = np.concatenate([self._rows,
                                         np.zeros_like(self._rows)])
        self._rows[self._count, 0] = time_s
        self._rows[self._count, 1:] = totals
        self._count += 1

    def __len__(self):
        return self._count

    def arrays(self):
        """``{field: numpy array}`` of every sample, in time order."""
        table = self._rows[:self._count]
        return {name: table[:, column].copy()
                for column, name in enumerate(SAMPLE_FIELDS)}


def peak_index(series):
    """Index of the peak sample: the most hosts in use, then the most RAM
    used, then the earliest."""
    order = np.lexsort((-series['memory_mb_used'], -series['hosts_in_use']))
    return int(order[0])


def _utilisation(used, limit):
    """Element-wise used/limit, 0 where the limit is 0."""
    used = np.asarray(used, dtype=float)
    limit = np.asarray(limit, dtype=float)
    return np.divide(used, limit, out=np.zeros_like(used), where=limit > 0)


def demand(series):
    """``(T, 4)`` resources used over time (vCPUs, MiB, GiB, GPUs) of a
    TimeSeries' ``arrays()``."""
    return np.column_stack([series[name] for name in USED_FIELDS])


def bound_series(series, capacity):
    """``(T,)`` capacity lower bound of each sample (``capacity``: a
    FleetCapacity)."""
    return capacity_mod.lower_bound(demand(series), capacity.limits)


def bound_figures(times, held, capacity, window=None):
    """``{'peak', 'mean', 'end'}`` of the capacity lower bound of
    ``held`` ``(T, 4)`` resources at ``times`` ``(T,)`` seconds on
    ``capacity``, the mean weighted by trace time in ``window`` (see
    ``time_weights``; zeros for no sample)."""
    if len(times) == 0:
        return {'peak': 0, 'mean': 0.0, 'end': 0}
    bound = capacity_mod.lower_bound(held, capacity.limits)
    return {'peak': int(bound.max()),
            'mean': weighted_mean(bound, time_weights(times, window)),
            'end': int(bound[-1])}


def _peak_and_mean(values, weights):
    return {'peak': float(values.max()),
            'mean': weighted_mean(values, weights)}


def fleet_summary(series, capacity, window=None):
    """Hosts in use, lower bound, utilisation and stranded capacity of a
    TimeSeries' ``arrays()`` on ``capacity``, means over ``window``
    (see the module doc); None without samples."""
    if len(series['time_s']) == 0:
        return None
    weights = time_weights(series['time_s'], window)
    peak = peak_index(series)
    hosts = series['hosts_in_use']
    totals = capacity.totals()
    summary = {
        'trace_time_s': float(series['time_s'][-1] - series['time_s'][0]),
        'arrival_window_s': float(window[1] - window[0]) if window else None,
        'fleet_size': capacity.size,
        'hosts_in_use': {'peak': int(hosts.max()),
                         'mean': weighted_mean(hosts, weights),
                         'end': int(hosts[-1]),
                         'peak_time_s': float(series['time_s'][peak])},
        'lower_bound': bound_figures(series['time_s'], demand(series),
                                     capacity, window),
    }
    summary['hosts_over_bound'] = {
        key: ratio(summary['hosts_in_use'][key], summary['lower_bound'][key])
        for key in ('peak', 'mean')}
    for name, used, limit, total in (
            ('cpu', 'vcpus_used', 'vcpus_limit', totals[0]),
            ('ram', 'memory_mb_used', 'memory_mb_limit', totals[1])):
        of_used = _utilisation(series[used], series[limit])
        of_fleet = series[used] / total if total else 0.0 * series[used]
        summary[name + '_utilisation'] = {
            'mean': weighted_mean(of_used, weights),
            'at_peak': float(of_used[peak]),
            'fleet_mean': weighted_mean(of_fleet, weights),
            'fleet_peak': float(of_fleet.max())}
    summary['stranded'] = {
        name: dict(_peak_and_mean(series[name], weights),
                   at_peak=float(series[name][peak]))
        for name in ('stranded_vcpus', 'stranded_memory_mb',
                     'unusable_vcpus', 'unusable_memory_mb')}
    return summary


# ---------------------------------------------------------------- ledger --

class Ledger:
    """What one run (the service's or a reference policy's) measures.

    ``capacity``: the fleet's FleetCapacity; ``mix``: the trace's
    FlavorMix; ``window``: ``(start, end)`` seconds the means are taken
    over (``arrival_window``), None for the whole run.
    """

    def __init__(self, capacity, mix, window=None):
        self.capacity = capacity
        self.window = window
        self.gauge = FleetGauge(capacity, mix)
        self.series = TimeSeries()
        self.flavors = FlavorStats()
        self.moments = []

    def node_changed(self, index, used, running):
        """Node ``index`` now uses ``used`` ``(4,)`` with ``running``
        instances."""
        self.gauge.set_node(index, used, running)

    def sample(self, time_s):
        """Sample the gauge at trace time ``time_s`` (seconds)."""
        self.series.sample(time_s, self.gauge.totals())

    def requested(self, request, placed, time_s, no_valid_host):
        """Count ``request`` (a trace Request) with ``placed`` instances
        placed; at a NoValidHost, record the moment and the fleet's free
        capacity."""
        size = request.first.resources
        self.flavors.record(size, request.num_instances, placed,
                            no_valid_host)
        if no_valid_host:
            moment = {'time_s': float(time_s), 'flavor': size_dict(size),
                      'instances': request.num_instances}
            moment.update(self.gauge.free_capacity(size))
            self.moments.append(moment)

    def summary(self):
        """``{'fleet', 'flavors', 'flavor_totals',
        'no_valid_host_moments'}`` (JSON-ready; ``gpus.add_figures``
        adds the GPUs)."""
        return {'fleet': fleet_summary(self.series.arrays(), self.capacity,
                                       self.window),
                'flavors': self.flavors.summary(),
                'flavor_totals': self.flavors.totals(),
                'no_valid_host_moments': list(self.moments)}


def summarize(decisions, ledger, settings, wall_time_s):
    """Every figure of a service replay as one JSON-ready dict.

    :param decisions: a DecisionStats.
    :param ledger: the run's Ledger.
    :param settings: dict of what was replayed and how.
    :param wall_time_s: wall seconds the replay took.
    """
    summary = {'settings': settings, 'wall_time_s': float(wall_time_s)}
    summary.update(decisions.summary())
    summary['vms_per_second'] = ratio(summary['instances_requested'],
                                      wall_time_s)
    summary.update(ledger.summary())
    return summary


def comparison(summary):
    """The figures runs are compared on, from a ``summarize`` or
    ``Ledger.summary`` dict: hosts in use, lower bound and their ratio
    (peak and mean), NoValidHost requests and instances, mean
    utilisation of the hosts in use (CPU and RAM, of capacity x
    ratio)."""
    fleet = summary['fleet'] or {}
    totals = summary['flavor_totals']

    def pair(name):
        values = fleet.get(name) or {}
        return {key: values.get(key) for key in ('peak', 'mean')}

    return {
        'hosts_in_use': pair('hosts_in_use'),
        'lower_bound': pair('lower_bound'),
        'hosts_over_bound': pair('hosts_over_bound'),
        'no_valid_host': {'requests': totals['no_valid_host'],
                          'instances': totals['no_valid_host_instances']},
        'cpu_utilisation': (fleet.get('cpu_utilisation') or {}).get('mean'),
        'ram_utilisation': (fleet.get('ram_utilisation') or {}).get('mean'),
        **_gpu_comparison(summary.get('gpus')),
    }


def _gpu_comparison(gpus):
    """The GPU figures runs are compared on (none without GPUs)."""
    if not gpus:
        return {}
    return {'gpus_placed': gpus['placed'],
            'gpus_in_use': {key: gpus['in_use'][key]
                            for key in ('peak', 'mean')}}
