"""Explain a decision: which filter removed which host and why, and how
the hosts left weigh.

``explain`` dry-runs a RequestSpec against the database with the
configured filters and weighers (``scheduler-manage explain``): it reads
the hosts as the service does, runs the pipeline's filters one by one
over HostState lists (the per-host ``filter_all`` path: correctness
over speed), asks each filter's ``explain`` why a host it removed fails,
and weighs the hosts left through the weighers' own methods.  Nothing
is claimed or consumed in the database; Placement's API is not asked.

With a candidate source (``scheduler.engine.candidates``; in Placement
mode the Placement view's, which ``scheduler-manage explain`` passes),
its check runs first, as in the service, over the request's candidates
(``CandidateSource.select``), and ``section`` adds what the caller
computes from them (Placement's misses, ``scheduler.placement.
refusals.explain_view``) to the explanation, shown before the filters.
"""

from __future__ import annotations

import collections
import dataclasses
import typing
from collections.abc import Callable
from collections.abc import Sequence

from scheduler import filters
from scheduler import weights
from scheduler.engine import pipeline
from scheduler.view import loading
from scheduler.view.host_state import HostState

if typing.TYPE_CHECKING:
    from scheduler.engine.candidates import CandidateSource
    from scheduler.objects.request_spec import RequestSpec

_Filters = Sequence[filters.BaseHostFilter]
_Weighers = Sequence[weights.BaseHostWeigher]

# The hosts whose weights are detailed, and the nearest misses listed.
TOP = 5
CHOICE = 'best by weight'
PREFILTER = '(requested destination, ignore/force hosts)'


class Section(typing.Protocol):
    """A part of the explanation the caller computes (Placement's)."""

    def lines(self) -> list[str]:
        """The part as text lines."""

    def to_dict(self) -> dict[str, typing.Any]:
        """The part as JSON-ready data."""


class Removed(typing.NamedTuple):
    """A host a filter removed: why, and the summary's group."""

    host: str
    node: str
    reason: str
    group: str


@dataclasses.dataclass
class FilterStep:
    """One filter's pass: hosts in and out and the hosts it removed."""

    name: str
    hosts_in: int
    hosts_out: int
    removed: list[Removed]


@dataclasses.dataclass
class WeigherValue:
    """One weigher on one host: ``weighted = multiplier * normalised``."""

    name: str
    raw: float
    normalised: float
    multiplier: float
    weighted: float


@dataclasses.dataclass
class WeighedHostDetail:
    """A host left after filtering, its final weight and its parts."""

    host: str
    node: str
    weight: float
    weighers: list[WeigherValue]


@dataclasses.dataclass
class NearMiss:
    """A host that fails the fewest filters, each with its reason."""

    host: str
    node: str
    failed: list[tuple[str, str]]


@dataclasses.dataclass
class Explanation:
    """Everything ``explain`` found for the first instance of a request
    (``chosen`` lists the host of each instance)."""

    request: dict[str, typing.Any]
    hosts: int
    steps: list[FilterStep]
    available: int
    groups: list[tuple[str, int]]
    weighed: list[WeighedHostDetail]
    chosen: list[tuple[str, str]]
    near_misses: list[NearMiss]
    forced: bool = False
    # Placement's misses (a Section), in Placement mode.
    placement: Section | None = None

    @property
    def summary(self) -> str:
        """``0/4 hosts available: 2 down, 2 insufficient RAM``."""
        text = '%d/%d hosts available' % (self.available, self.hosts)
        if self.groups:
            text += ': ' + ', '.join('%d %s' % (count, label)
                                     for label, count in self.groups)
        return text

    def to_dict(self) -> dict[str, typing.Any]:
        """The explanation as JSON-ready data."""
        data = dataclasses.asdict(dataclasses.replace(self, placement=None))
        data['placement'] = (None if self.placement is None
                             else self.placement.to_dict())
        data['summary'] = self.summary
        data['choice'] = CHOICE if self.chosen else None
        data['groups'] = dict(self.groups)
        for step in data['steps']:
            step['removed'] = [item._asdict() for item in step['removed']]
        data['chosen'] = [{'host': host, 'node': node}
                          for host, node in self.chosen]
        for miss in data['near_misses']:
            miss['failed'] = [{'filter': name, 'reason': reason}
                              for name, reason in miss['failed']]
        return data


def explain(context: typing.Any, spec_obj: typing.Any,
            top: int = TOP, source: CandidateSource | None = None,
            section: Callable[[], Section | None] | None = None
            ) -> Explanation:
    """Explain ``spec_obj`` (a checked RequestSpec) over the hosts of the
    database, with the filters (the claims' check first, with
    ``[scheduler] claim_resources``; ``source``'s check instead, when
    given) and weighers the service loads.  With ``source``, the
    request's candidates are taken first and ``section()`` (when given)
    is the explanation's ``placement``."""
    view = loading.load_host_manager(context)
    pipe = (pipeline.Pipeline(view) if source is None
            else pipeline.Pipeline(view, check=source.check()))
    hosts = view.get_all_host_states(context)
    found = None
    if source is not None:
        source.select(spec_obj, hosts, view.aggs_by_id.values())
        found = section() if section is not None else None
    result = explain_hosts(pipe.filters, pipe.weighers, hosts, spec_obj, top)
    result.placement = found
    return result


def explain_hosts(host_filters: Sequence[filters.BaseHostFilter],
                  weighers: Sequence[weights.BaseHostWeigher],
                  hosts: list[HostState], spec_obj: typing.Any,
                  top: int = TOP) -> Explanation:
    """Explain ``spec_obj`` over ``hosts`` (their consumption is changed
    in memory when several instances are asked)."""
    candidates, forced = pipeline.prefilter(hosts, spec_obj)
    steps = []
    if len(candidates) < len(hosts):
        kept = {id(state) for state in candidates}
        steps.append(FilterStep(PREFILTER, len(hosts), len(candidates), [
            Removed(state.host, state.nodename, 'not the requested '
                    'destination, ignored, or not forced', 'not requested')
            for state in hosts if id(state) not in kept]))
    passed = candidates
    if not forced:
        filter_steps, passed = _filter(host_filters, candidates, spec_obj,
                                       0, explained=True)
        steps += filter_steps
    groups = collections.Counter(item.group for step in steps
                                 for item in step.removed)
    ranked = _weigh(weighers, passed, spec_obj)
    detailed = _details(weighers, passed, ranked[:top], spec_obj)
    chosen = _choose(host_filters, weighers, ranked, spec_obj, forced)
    near = [] if passed else _near_misses(host_filters, candidates,
                                          spec_obj, top)
    return Explanation(
        request=_request(spec_obj), hosts=len(hosts), steps=steps,
        available=len(passed),
        groups=sorted(groups.items(), key=lambda item: (-item[1], item[0])),
        weighed=detailed, chosen=chosen, near_misses=near, forced=forced)


def _filter(host_filters: _Filters, hosts: list[HostState],
            spec_obj: RequestSpec, index: int, explained: bool
            ) -> tuple[list[FilterStep], list[HostState]]:
    """Run the filters in order (as ``HostFilterHandler`` does, stopping
    at an empty list); returns ``(steps, passed)``."""
    steps = []
    for host_filter in host_filters:
        if not host_filter.run_filter_for_index(index):
            continue
        passed = list(host_filter.filter_all(hosts, spec_obj) or [])
        removed = []
        if explained:
            kept = {id(state) for state in passed}
            removed = [Removed(state.host, state.nodename,
                               host_filter.explain(state, spec_obj),
                               host_filter.explain_group(state, spec_obj))
                       for state in hosts if id(state) not in kept]
        steps.append(FilterStep(type(host_filter).__name__, len(hosts),
                                len(passed), removed))
        hosts = passed
        if not hosts:
            break
    return steps, hosts


def _weigh(weighers: _Weighers, hosts: list[HostState],
           spec_obj: RequestSpec) -> list[weights.WeighedHost]:
    """The handler's WeighedHosts, best first."""
    return weights.HostWeightHandler().get_weighed_objects(
        weighers, hosts, spec_obj)


def _details(weighers: _Weighers, hosts: list[HostState],
             best: Sequence[weights.WeighedHost],
             spec_obj: RequestSpec) -> list[WeighedHostDetail]:
    """Each weigher's raw, normalised (over every host left, with the
    weigher's bounds) and weighted value on the ``best`` WeighedHosts;
    no weigher runs for a single host (Nova)."""
    parts: dict[int, list[WeigherValue]] = {id(item.obj): [] for item in best}
    if len(hosts) > 1:
        for weigher in weighers:
            raw = weigher.weigh_objects(
                [weights.WeighedHost(state, 0.0) for state in hosts],
                spec_obj)
            normalised = weights.normalize(raw, weigher.minval,
                                           weigher.maxval)
            for state, value, norm in zip(hosts, raw, normalised,
                                          strict=True):
                if id(state) not in parts:
                    continue
                multiplier = weigher.weight_multiplier(state)
                parts[id(state)].append(WeigherValue(
                    type(weigher).__name__, float(value), float(norm),
                    float(multiplier), float(multiplier * norm)))
    return [WeighedHostDetail(item.obj.host, item.obj.nodename,
                              float(item.weight), parts[id(item.obj)])
            for item in best]


def _choose(host_filters: _Filters, weighers: _Weighers,
            ranked: Sequence[weights.WeighedHost], spec_obj: RequestSpec,
            forced: bool) -> list[tuple[str, str]]:
    """The host of each instance, best by weight (no random pick): the
    first instance's is the best of ``ranked``; each next instance is
    filtered and weighed again after the previous one's consumption
    (in memory), as the scheduler's loop does."""
    chosen: list[tuple[str, str]] = []
    wanted = spec_obj.get('num_instances', 1)
    hosts = [item.obj for item in ranked]
    for index in range(wanted):
        if index:
            if not forced:
                _, hosts = _filter(host_filters, hosts, spec_obj, index,
                                   explained=False)
            hosts = [item.obj for item in _weigh(weighers, hosts,
                                                 spec_obj)]
        if not hosts:
            break
        hosts[0].consume_from_request(spec_obj)
        chosen.append((hosts[0].host, hosts[0].nodename))
    return chosen


def _near_misses(host_filters: _Filters, hosts: list[HostState],
                 spec_obj: RequestSpec, top: int) -> list[NearMiss]:
    """The hosts failing the fewest filters (each filter run alone on
    each host), with what they lack."""
    failures = []
    for state in hosts:
        failed = [(type(host_filter).__name__,
                   host_filter.explain(state, spec_obj))
                  for host_filter in host_filters
                  if host_filter.run_filter_for_index(0) and
                  not list(host_filter.filter_all([state], spec_obj) or [])]
        failures.append(NearMiss(state.host, state.nodename, failed))
    if not failures:
        return []
    fewest = min(len(miss.failed) for miss in failures)
    return [miss for miss in failures if len(miss.failed) == fewest][:top]


def _request(spec_obj: RequestSpec) -> dict[str, typing.Any]:
    """What the request asks, as ``explain`` prints it."""
    flavor = spec_obj.flavor
    image = spec_obj.get('image')
    props = image.obj_get('properties') if image is not None else None
    return {
        'vcpus': flavor.vcpus, 'memory_mb': flavor.memory_mb,
        'root_gb': spec_obj.local_root_gb,
        'ephemeral_gb': flavor.ephemeral_gb, 'swap_mb': flavor.swap,
        'extra_specs': dict(flavor.obj_get('extra_specs') or {}),
        'image_properties': ({} if props is None else
                             {key: str(value) for key, value in
                              props.set_properties().items()}),
        'availability_zone': spec_obj.get('availability_zone'),
        'scheduler_hints': dict(spec_obj.get('scheduler_hints', {})),
        'num_instances': spec_obj.get('num_instances', 1),
        'project_id': spec_obj.get('project_id'),
        'instance_uuid': spec_obj.obj_get('instance_uuid'),
    }
