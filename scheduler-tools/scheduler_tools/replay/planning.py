"""Capacity planning: the smallest fleet, and a fleet filled until it fails.

Both modes run each policy side by side: the service with the given
configuration (every run a real replay through an embedded service, on
a temporary database seeded afresh, in a forked process of its own) and
the reference policies first-fit and best-fit (``policies``, in
memory); ``--reference-only`` leaves the service out.  The trace is
read and grouped into requests once (``runner.load_requests``,
``--group-window`` included).  A refused request is one answered with
NoValidHost (or, for the service, one that failed otherwise: counted in
``errors`` too); all its instances count as refused.

``--find-fleet`` (``find_fleet``)
    The fewest generated hosts of ``--host-shape`` on which a policy
    refuses at most ``--max-refused`` (a share of the trace's instances,
    default 0; ``floor(share x instances)`` instances) of the trace.
    The search starts at the capacity lower bound ``L``
    (``options.peak_bound`` of the trace's VMs that fit an empty host:
    at their peak, every one placed, no fleet of that shape holds them
    on fewer hosts).  It then brackets the answer by doubling a step
    above ``L`` (``L + s``, ``L + 2s``, ``L + 4s``, ... with ``s =
    ceil(L / 16)``, at most one host per instance) until a fleet passes,
    and bisects the host count (integers) between the last count that
    failed and the first that passed.  No count runs twice.  Packing
    heuristics are not monotone in the fleet size (on a larger fleet
    the placements differ from the first choice on, and may refuse
    more), so the answer is the smallest passing count the search
    found, not proven the smallest: a count it skipped may pass too.
    It never goes below ``L``, also with ``--max-refused`` > 0, where a
    smaller fleet refusing that share may exist.  Instances larger than
    an empty host (its capacity or its limits) fit no fleet: when they
    are more than allowed, no fleet passes and nothing runs.
``--fill-until-failure`` (``fill_until_failure``)
    On the replay's fleet (``--fleet``, the trace's own, or ``--hosts``
    / ``--hosts-factor`` generated hosts) requests arrive one after the
    other and never leave: the trace's requests in its order (repeated
    when it ends first), or with ``--fill-seed N`` drawn at random from
    them (with replacement, ``numpy.random.default_rng(N)``: the same
    draws every time), as the ATC'23 study of GPU fragmentation replays
    pods until the cluster is full.  The run stops at the first
    NoValidHost (``fill_sequence`` draws enough requests to exceed the
    fleet's limits on some resource, so a fleet enforcing them refuses
    one).  Figures per policy and resource (``capacity.RESOURCES``, in
    its units): the capacity (capacity x allocation ratio, added up),
    what the placed instances use, what is free, and what is
    *stranded*: the free capacity of the nodes (used or not) on which
    no size of the trace's flavor mix (``capacity.FlavorMix``) fits any
    more (``metrics``' "unusable"); ``mix_stranded`` is ``metrics``'
    "stranded", each node's free capacity times the share of the mix's
    instances that do not fit in it.

``planning_report`` prints the tables, writes the JSON and draws the
plots.
"""

import dataclasses
import itertools
import math
import sys
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence

import numpy as np
from oslo_log import log as logging

from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import fleet
from scheduler_tools.replay import options
from scheduler_tools.replay import planning_report
from scheduler_tools.replay import policies
from scheduler_tools.replay import replayer
from scheduler_tools.replay import runner
from scheduler_tools.replay import trace
from scheduler_tools.replay.planning_runs import SERVICE
from scheduler_tools.replay.planning_runs import Run
from scheduler_tools.replay.planning_runs import run_reference
from scheduler_tools.replay.planning_runs import run_service

LOG = logging.getLogger(__name__)

FIND_FLEET = 'find-fleet'
FILL_UNTIL_FAILURE = 'fill-until-failure'
# The first step above the lower bound, as a fraction of it.
INITIAL_STEP = 1.0 / 16
# A fill stops after this many times the trace's requests whatever
# happens (only a trace of empty sizes gets there).
MAX_FILL_PASSES = 100
# Random draws taken from the generator at a time.
DRAW_BLOCK = 1024

ReplayError = replayer.ReplayError


def say(message: str) -> None:
    """One line of progress on stderr."""
    print('scheduler-replay: %s' % message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- search --

def smallest_passing(passes: Callable[[int], bool], lower: int,
                     upper: int) -> int | None:
    """The smallest host count in ``[lower, upper]`` found to pass.

    ``lower`` first; then ``lower + s``, ``lower + 2s``, ``lower + 4s``,
    ... (``s = ceil(lower x INITIAL_STEP)``, at least 1; the last
    capped at ``upper``) until one passes; then bisection between the
    last count that failed and the first that passed.  Exact when
    ``passes`` is monotone (false up to some count, true from it on).
    None when ``upper`` fails.
    """
    if passes(lower):
        return lower
    failing, step = lower, max(1, math.ceil(lower * INITIAL_STEP))
    while True:
        high = min(lower + step, upper)
        if passes(high):
            break
        if high >= upper:
            return None
        failing, step = high, step * 2
    while high - failing > 1:
        middle = (failing + high) // 2
        if passes(middle):
            high = middle
        else:
            failing = middle
    return high


def allowed_refusals(max_refused: float | None, instances: int) -> int:
    """Instances a passing fleet may refuse: ``floor(share x
    instances)`` (0 without a share)."""
    return math.floor((max_refused or 0.0) * instances + 1e-9)


def placeable(requests: Sequence, capacity) -> list:
    """The ``requests`` whose instances fit an empty node of
    ``capacity`` (within its physical capacity and its limits)."""
    room = np.minimum(capacity.physical, capacity.limits).max(axis=0)
    return [request for request in requests
            if (np.asarray(request.first.resources) <= room).all()]


# ------------------------------------------------------------ find-fleet --

class Planner:
    """What every run of a planning mode shares: ``settings``, the
    trace's ``requests`` (read once) and their ``mix``."""

    def __init__(self, settings, requests: Sequence):
        self.settings = settings
        self.requests = requests
        self.mix = capacity_mod.FlavorMix.from_requests(requests)
        self.policies = tuple(policies.POLICIES)
        if not settings.reference_only:
            self.policies = (SERVICE,) + self.policies

    def run(self, policy: str, specs: Sequence, requests: Sequence,
            stop: bool = False) -> Run:
        """``policy`` on the fleet of HostSpecs ``specs``."""
        if policy == SERVICE:
            return run_service(self.settings, specs, requests, stop)
        return run_reference(policy, requests,
                             capacity_mod.FleetCapacity.from_specs(specs),
                             self.mix, stop)


def find_fleet(planner: Planner) -> dict:
    """``--find-fleet`` (see the module docstring): JSON-ready figures."""
    requests, settings = planner.requests, planner.settings
    shape = options.generated_shape(settings.host_shape, requests)
    fitting = placeable(requests, capacity_mod.FleetCapacity.from_specs(
        fleet.generate_fleet(1, shape)))
    bound = max(1, options.peak_bound(shape, fitting))
    instances = _instances(requests)
    allowed = allowed_refusals(settings.max_refused, instances)
    too_large = instances - _instances(fitting)
    figures = {'mode': FIND_FLEET, 'host_shape': str(shape),
               'max_refused': settings.max_refused or 0.0,
               'instances': instances, 'requests': len(requests),
               'allowed_refused_instances': allowed, 'lower_bound': bound,
               'unplaceable_instances': too_large, 'policies': {}}
    say('find-fleet: %s instances in %s requests, lower bound %s hosts '
        'of %s' % (format(instances, ','), format(len(requests), ','),
                   format(bound, ','), figures['host_shape']))
    upper = max(bound, instances)
    for policy in planner.policies:
        figures['policies'][policy] = _search(
            planner, policy, shape, (bound, upper),
            allowed if too_large <= allowed else None)
    return figures


def _instances(requests: Sequence) -> int:
    return sum(request.num_instances for request in requests)


def _search(planner: Planner, policy: str, shape: tuple, bracket: tuple,
            allowed: int | None) -> dict:
    """One policy's search between ``bracket`` ``(lower, upper)`` host
    counts; ``allowed`` None: no fleet can pass, nothing runs."""
    runs = {}

    def passes(hosts):
        specs = fleet.generate_fleet(hosts, shape)
        run = runs[hosts] = planner.run(policy, specs, planner.requests)
        say('%s on %s hosts: %s of %s instances refused (%.2f%%), %.1f s'
            % (policy, format(hosts, ','), format(run.tally.refused, ','),
               format(run.tally.instances, ','), 100 * run.refused_share(),
               run.wall_s))
        return run.tally.refused <= allowed

    found = None if allowed is None else smallest_passing(passes, *bracket)
    figures = dict.fromkeys(('hosts', 'over_bound', 'refused_instances',
                             'refused_share'))
    if found is not None:
        figures.update(hosts=found, over_bound=found / bracket[0],
                       refused_instances=runs[found].tally.refused,
                       refused_share=runs[found].refused_share())
    figures['runs'] = [_run_figures(run, allowed) for run in runs.values()]
    figures['wall_s'] = sum(run.wall_s for run in runs.values())
    return figures


def _run_figures(run: Run, allowed: int | None) -> dict:
    return {'hosts': run.hosts, 'instances': run.tally.instances,
            'refused_instances': run.tally.refused,
            'refused_share': run.refused_share(),
            'errors': run.tally.errors, 'wall_s': run.wall_s,
            'passed': allowed is not None and run.tally.refused <= allowed}


# ---------------------------------------------------- fill-until-failure --

def draws(count: int, seed: int | None) -> Iterator[int]:
    """Indices into ``count`` requests, endlessly: ``0, 1, ..., count
    - 1`` over and over, or with ``seed`` uniform draws (with
    replacement) from ``numpy.random.default_rng(seed)``."""
    if seed is None:
        yield from itertools.cycle(range(count))
        return
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.integers(count, size=DRAW_BLOCK).tolist()


def fill_sequence(requests: Sequence, totals: np.ndarray,
                  seed: int | None = None) -> list:
    """The requests of a fill: drawn from ``requests`` (see ``draws``),
    their VMs without a lifetime, request ``i`` at ``i`` seconds, until
    they ask for more than ``totals`` ``(R,)`` (the fleet's limits) of
    some resource (the last one included, so that a fleet enforcing its
    limits must refuse one) or ``MAX_FILL_PASSES`` times the trace's
    requests."""
    held = np.zeros(len(capacity_mod.RESOURCES))
    sequence = []
    for number, index in enumerate(draws(len(requests), seed)):
        if (held > totals).any() or (
                number >= MAX_FILL_PASSES * len(requests)):
            break
        vms = [dataclasses.replace(vm, arrival_s=float(number),
                                   lifetime_s=None)
               for vm in requests[index].vms]
        sequence.append(trace.Request(number, float(number), vms))
        held += np.asarray(vms[0].resources, dtype=float) * len(vms)
    return sequence


def fill_fleet(settings, requests: Sequence) -> tuple[list, list]:
    """The fleet's HostSpecs and the fill's requests.  The fleet is the
    replay's (``Settings.fleet_specs``: ``--fleet``, the trace's own, or
    generated, ``--hosts-factor`` sized on the trace); a generated shape
    without a disk gets one holding every VM of the fill, so that disk
    never constrains."""
    given_shape = settings.host_shape
    specs = settings.fleet_specs(requests)
    totals = capacity_mod.FleetCapacity.from_specs(specs).totals()
    generated_disk = (not settings.fleet and settings.trace_fleet is None
                      and given_shape.local_gb is None)
    if generated_disk:   # sized below, from the fill itself
        totals[capacity_mod.RESOURCES.index('disk_gb')] = np.inf
    sequence = fill_sequence(requests, totals, settings.fill_seed)
    if generated_disk:
        settings.host_shape = options.generated_shape(given_shape, sequence)
        specs = fleet.generate_fleet(len(specs), settings.host_shape)
    settings.hosts_factor = None
    return specs, sequence


def stranded_figures(used: np.ndarray, limits: np.ndarray,
                     mix) -> dict:
    """Per resource (RESOURCES names): ``capacity``, ``used``, ``free``,
    ``stranded`` and ``mix_stranded`` (see the module docstring), in the
    resource's units (vCPUs, MiB, GiB, ...)."""
    free = np.maximum(limits - used, 0.0)
    misfits = [mix.misfit(node) for node in free]
    share = np.asarray([misfit[0] for misfit in misfits])
    blocked = np.asarray([misfit[1] for misfit in misfits], dtype=bool)
    figures = {}
    for column, name in enumerate(capacity_mod.RESOURCES):
        figures[name] = {
            'capacity': float(limits[:, column].sum()),
            'used': float(used[:, column].sum()),
            'free': float(free[:, column].sum()),
            'stranded': float(free[blocked, column].sum()),
            'mix_stranded': float((share * free[:, column]).sum())}
    return figures


def asked_resources(mix) -> list:
    """The RESOURCES some size of ``mix`` asks for (more than 0)."""
    asked = mix.sizes.max(axis=0, initial=0.0) > 0
    return [name for name, wanted in zip(capacity_mod.RESOURCES, asked,
                                         strict=True) if wanted]


def fill_until_failure(planner: Planner) -> dict:
    """``--fill-until-failure`` (see the module docstring): JSON-ready
    figures."""
    settings = planner.settings
    specs, sequence = fill_fleet(settings, planner.requests)
    figures = {'mode': FILL_UNTIL_FAILURE, 'fleet_nodes': len(specs),
               'order': 'trace' if settings.fill_seed is None
               else 'random', 'fill_seed': settings.fill_seed,
               'requests_drawn': len(sequence),
               'resources': list(capacity_mod.RESOURCES),
               'asked_resources': asked_resources(planner.mix),
               'policies': {}}
    say('fill-until-failure: %s requests drawn for %s nodes' % (
        format(len(sequence), ','), format(len(specs), ',')))
    for policy in planner.policies:
        run = planner.run(policy, specs, sequence, stop=True)
        say('%s: %s instances placed before the first refusal, %.1f s'
            % (policy, format(run.tally.placed, ','), run.wall_s))
        figures['policies'][policy] = _fill_figures(run, planner.mix)
    return figures


def _fill_figures(run: Run, mix) -> dict:
    tally = run.tally
    demand = tally.used.sum(axis=0)
    return {'instances_placed': tally.placed,
            'requests_placed': tally.requests_placed,
            'errors': tally.errors,
            'refused': tally.refused_request,
            'hosts_in_use': int((tally.running > 0).sum()),
            'lower_bound': int(capacity_mod.lower_bound(demand,
                                                        run.limits)),
            'resources': stranded_figures(tally.used, run.limits, mix),
            'wall_s': run.wall_s}


# ------------------------------------------------------------------- run --

def run(settings) -> dict:
    """The planning mode ``settings.planning`` asks for: read the trace
    once, run every policy, write ``--output`` and ``--plot``; returns
    the figures (``planning_report.print_tables`` prints them)."""
    requests = runner.load_requests(settings)
    planner = Planner(settings, requests)
    if settings.planning == FIND_FLEET:
        figures = find_fleet(planner)
    else:
        figures = fill_until_failure(planner)
    figures['settings'] = settings.describe()
    if settings.find_fleet:
        figures['settings']['fleet'] = {'host_shape': figures['host_shape'],
                                        'generated_hosts': 'searched'}
    settings.outputs()   # their folders
    if settings.output:
        planning_report.write_json(settings.output, figures)
    if settings.plot:
        planning_report.plot(settings.plot, figures)
    return figures
