"""Why a ``GET /allocation_candidates`` query has no candidate: the
requirements that eliminate compute nodes, and the nearest misses.

Neither Placement (an empty ``allocation_requests``) nor Nova ("Got no
allocation candidates from the Placement API") says why a request gets
no allocation candidate.  ``explain(forest, request)`` says it over the
resource providers the Placement view holds (``scheduler.placement.
provider_trees.Forest``, for one ``scheduler.placement.query.Request``):
each requirement of the query is a ``Check``, a boolean mask over the
root providers (the compute nodes) of the ones it eliminates, and

* ``alone``: how many root providers each requirement eliminates by
  itself;
* the funnel: in query order, how many each removes of those the
  requirements before it left;
* the nearest misses: the root providers that fail the fewest
  requirements (the first ``top`` in provider order), each with what it
  lacks (``compute-7: resources=VCPU:8: needs 8, 6 free``).

The requirements are named as the query names them: ``resources=VCPU:8``
(capacity ``(total - reserved) * allocation_ratio`` less the use,
``min_unit``, ``max_unit``, ``step_size``), ``required=T``,
``required=!T``, ``required=in:A,B``, ``member_of=in:A,B``,
``member_of=!in:A,B``, ``in_tree=U``, ``root_required=T``, with the group
suffix after the parameter's name (``resources1=VGPU:1``).

When the roots alone answer the query (``provider_trees.root_group``,
the fast path) each requirement is one vectorised mask over the root
providers' columns, and the checks together are exactly Placement's
answer.  Over provider trees (numbered groups, child or sharing
providers) a requirement eliminates a tree when no provider of the tree
(nor, for an amount, a sharing provider anchored to it) meets it; a
forbidden trait or aggregate, when every provider of the tree able to
give the group's resources has it.  Then a check per group eliminates
the trees where no provider meets the group whole (for the unsuffixed
group spread over a tree: one resource class at a time), and a last one
the trees that meet every group apart but not together
(``group_policy=isolate``, ``same_subtree``, amounts several groups
take from one provider), from the ``trees.Plan``'s hosts.  Sharing
providers (``MISC_SHARES_VIA_AGGREGATE``) are not counted as compute
nodes.  The masks
are over every provider at once (NumPy); only the nearest misses' reasons
are computed per provider, so the cost is a few passes over the columns:
see docs/placement.rst for the figures on 100,000 compute nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

import numpy as np

from scheduler.placement.candidates import ProviderTable
from scheduler.placement.candidates import RequestGroup
from scheduler.placement.matching import Matching
from scheduler.placement.matching import Unit
from scheduler.placement.provider_trees import SHARING_TRAIT
from scheduler.placement.provider_trees import Forest
from scheduler.placement.provider_trees import root_group
from scheduler.placement.query import Request

# The nearest misses listed by default, and the requirements a summary
# line names at most.
TOP = 5
LISTED = 8


@dataclasses.dataclass(frozen=True)
class Check:
    """One requirement over the root rows: ``fails`` (bool) the compute
    nodes it eliminates; ``why(row)`` what the root provider of ``row``
    lacks."""

    label: str
    fails: np.ndarray
    why: Callable[[int], str]


@dataclasses.dataclass(frozen=True)
class Eliminated:
    """A requirement's count: ``alone`` the root providers it eliminates
    by itself; ``removed`` those it removes in query order, of the
    ones the requirements before it left; ``left`` after it."""

    requirement: str
    alone: int
    removed: int
    left: int


@dataclasses.dataclass(frozen=True)
class NearMiss:
    """A root provider failing the fewest requirements, and each reason:
    ``(requirement, what it lacks)``."""

    name: str
    uuid: str
    lacks: tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Misses:
    """The explanation of one query (see the module): ``roots`` root
    providers, ``candidates`` of them meeting every requirement."""

    roots: int
    candidates: int
    requirements: tuple[Eliminated, ...]
    nearest: tuple[NearMiss, ...]

    def summary(self, listed: int = LISTED, nearest: int = 3) -> str:
        """One line, bounded: ``0/4 compute nodes are allocation
        candidates; eliminated (alone): 2 by resources=VCPU:8, ...;
        nearest misses: compute-7 (resources=VCPU:8: needs 8, 6
        free)``; at most ``listed`` requirements (most eliminating
        first) and ``nearest`` misses."""
        text = '%d/%d compute nodes are allocation candidates' % (
            self.candidates, self.roots)
        ranked = sorted((item for item in self.requirements if item.alone),
                        key=lambda item: -item.alone)
        if ranked:
            text += '; eliminated (alone): ' + ', '.join(
                '%d by %s' % (item.alone, _short(item.requirement))
                for item in ranked[:listed])
            if len(ranked) > listed:
                text += ' and %d more requirement(s)' % (len(ranked) - listed)
        if self.nearest[:nearest]:
            text += '; nearest misses: ' + '; '.join(
                '%s (%s)' % (_short(miss.name), ', '.join(
                    '%s: %s' % (_short(requirement), reason)
                    for requirement, reason in miss.lacks[:listed]))
                for miss in self.nearest[:nearest])
        return text

    def lines(self) -> list[str]:
        """The explanation as text lines (``scheduler-manage explain``)."""
        lines = ['Placement (allocation candidates, root providers in -> '
                 'out):']
        for item in self.requirements:
            lines.append('  %-40s %d eliminated alone, %d -> %d' % (
                item.requirement, item.alone, item.left + item.removed,
                item.left))
        lines.append('  %d/%d compute nodes are allocation candidates' % (
            self.candidates, self.roots))
        if self.nearest:
            lines.append('  Nearest misses (fewest requirements failed '
                         'first):')
            for miss in self.nearest:
                for requirement, reason in miss.lacks:
                    lines.append('    %s: %s: %s' % (miss.name, requirement,
                                                     reason))
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON-ready data."""
        data = dataclasses.asdict(self)
        for miss in data['nearest']:
            miss['lacks'] = [{'requirement': requirement, 'reason': reason}
                             for requirement, reason in miss['lacks']]
        return data


def explain(forest: Forest, request: Request, top: int = TOP,
            hosting: np.ndarray | None = None) -> Misses:
    """The Misses of ``request`` over ``forest`` at its current use (see
    the module).  ``hosting``: over the root rows, the compute nodes
    that can host the request together (``trees.Plan.hosts``), for the
    last check over trees; None: every one meeting the groups apart."""
    group = root_group(request, forest)
    if group is not None:
        checks = root_checks(forest.roots, group)
    else:
        checks = tree_checks(forest, request, hosting)
    # A sharing provider (a root of its own) is no compute node.
    nodes = ~forest.roots.with_any_trait([SHARING_TRAIT])
    return tally(forest.roots, checks, top, nodes)


def tally(roots: ProviderTable, checks: Iterable[Check], top: int = TOP,
          nodes: np.ndarray | None = None) -> Misses:
    """Count ``checks`` over the root providers ``roots`` (those of
    ``nodes`` only, when given): alone, as a funnel in order, and the
    ``top`` nearest misses."""
    checks = list(checks)
    if nodes is None:
        nodes = np.ones(len(roots.providers), dtype=bool)
    left = nodes.copy()
    failures = np.zeros(len(roots.providers), dtype=np.int32)
    counted = []
    for check in checks:
        failures += check.fails
        removed = int(np.count_nonzero(left & check.fails))
        left &= ~check.fails
        counted.append(Eliminated(check.label,
                                  int(np.count_nonzero(check.fails & nodes)),
                                  removed, int(np.count_nonzero(left))))
    nearest: list[NearMiss] = []
    if nodes.any() and not left.any():
        rows = np.flatnonzero(nodes)
        order = rows[np.argsort(failures[rows], kind='stable')[:top]]
        for row in order.tolist():
            provider = roots.providers[row]
            nearest.append(NearMiss(provider.name, provider.uuid, tuple(
                (check.label, check.why(row))
                for check in checks if check.fails[row])))
    return Misses(int(np.count_nonzero(nodes)), int(np.count_nonzero(left)),
                  tuple(counted), tuple(nearest))


def _short(text: str, most: int = 120) -> str:
    """``text`` cut to ``most`` characters (a summary stays bounded)."""
    return text if len(text) <= most else text[:most - 3] + '...'


def _number(value: float) -> str:
    text = ('%.2f' % value).rstrip('0').rstrip('.')
    return '0' if text in ('', '-0') else text


def _fixed(reason: str) -> Callable[[int], str]:
    """A ``Check.why`` giving ``reason`` for every row."""
    return lambda row: reason


def _param(kind: str, suffix: str, value: str) -> str:
    return '%s%s=%s' % (kind, suffix, value)


def _any(names: Iterable[str]) -> str:
    names = sorted(names)
    return names[0] if len(names) == 1 else 'in:' + ','.join(names)


# -- the roots alone (the fast path) ------------------------------------------


def root_checks(roots: ProviderTable, group: RequestGroup) -> list[Check]:
    """The checks of ``group`` (the request as one group over the root
    providers, root traits included) over ``roots``' columns."""
    checks = [Check(_param('resources', '', '%s:%d' % (rc, amount)),
                    ~roots.fits_amount(rc, amount),
                    _amount_why(roots, rc, amount))
              for rc, amount in group.resources.items()]
    checks += _trait_checks(roots, group)
    checks += _aggregate_checks(roots, group)
    if group.in_tree is not None:
        fails = np.ones(len(roots.providers), dtype=bool)
        row = roots.row_of.get(group.in_tree)
        if row is not None:
            fails[row] = False
        checks.append(Check(_param('in_tree', '', group.in_tree), fails,
                            _fixed('not that provider\'s tree')))
    return checks


def _amount_why(roots: ProviderTable, rc: str, amount: int
                ) -> Callable[[int], str]:
    def why(row: int) -> str:
        provider = roots.providers[row]
        inventory = provider.inventories.get(rc)
        if inventory is None:
            return 'no %s inventory' % rc
        if amount < inventory.min_unit:
            return 'below min_unit %d' % inventory.min_unit
        if amount % max(1, inventory.step_size):
            return 'not a multiple of step_size %d' % inventory.step_size
        free = inventory.capacity - provider.usages.get(rc, 0)
        if amount <= free:
            return 'above max_unit %d' % inventory.effective_max_unit
        return 'needs %d, %s free' % (amount, _number(free))
    return why


def _trait_checks(roots: ProviderTable, group: RequestGroup) -> list[Check]:
    checks = []
    for wanted in group.required:
        label = _any(wanted)
        checks.append(Check(
            _param('required', '', label), ~roots.with_any_trait(wanted),
            _fixed('lacks trait %s' % label)))
    for trait in sorted(group.forbidden):
        checks.append(Check(
            _param('required', '', '!' + trait),
            roots.with_any_trait([trait]),
            _fixed('has trait %s' % trait)))
    return checks


def _aggregate_checks(roots: ProviderTable, group: RequestGroup
                      ) -> list[Check]:
    checks = []
    for wanted in group.member_of:
        label = _any(wanted)
        checks.append(Check(
            _param('member_of', '', label), ~roots.in_any_aggregate(wanted),
            _fixed('not in aggregate %s' % label)))
    if group.forbidden_aggregates:
        label = '!' + _any(group.forbidden_aggregates)
        checks.append(Check(
            _param('member_of', '', label),
            roots.in_any_aggregate(group.forbidden_aggregates),
            _fixed('in a forbidden aggregate')))
    return checks


# -- provider trees -----------------------------------------------------------


def tree_checks(forest: Forest, request: Request,
                hosting: np.ndarray | None = None) -> list[Check]:
    """The checks of ``request`` over provider trees (see the module):
    the root traits, each group's requirements one by one, each group
    whole, then the groups together (``hosting``: the compute nodes the
    request's ``trees.Plan`` hosts; None: that check is left out)."""
    roots = forest.roots
    checks = []
    for trait in sorted(request.root_required):
        checks.append(Check(_param('root_required', '', trait),
                            ~roots.with_any_trait([trait]),
                            _fixed('the root lacks the trait')))
    for trait in sorted(request.root_forbidden):
        checks.append(Check(_param('root_required', '', '!' + trait),
                            roots.with_any_trait([trait]),
                            _fixed('the root has the trait')))
    matching = Matching(forest, request)
    units = matching.units()
    for suffix, group in request.groups.items():
        spread = suffix == '' and matching.spread
        found = _group_checks(forest, suffix, group, spread)
        checks += found
        if len(found) > len(group.resources) if spread else len(found) > 1:
            checks.append(_whole_check(forest, suffix, [
                unit for unit in units if unit.suffix == suffix], spread))
    if hosting is not None and (len(request.groups) > 1 or len(checks) > 1):
        checks.append(_together_check(request, checks, hosting))
    return checks


def _group_checks(forest: Forest, suffix: str, group: RequestGroup,
                  spread: bool) -> list[Check]:
    """One group's requirements, each met when some provider of the tree
    meets it (see the module)."""
    capable = np.zeros(forest.size, dtype=bool)
    checks = []
    for rc, amount in group.resources.items():
        fits = forest.fits_amount(rc, amount) & forest.present
        capable |= fits
        ok = forest.per_tree(fits)
        for index in forest.sharing[fits[forest.sharing]].tolist():
            ok[list(forest.anchors(index))] = True
        checks.append(Check(_param('resources', suffix, '%s:%d' % (
            rc, amount)), ~ok, _tree_amount_why(forest, rc, amount)))
    if not group.resources:
        capable = forest.present.copy()
    for wanted in group.required:
        checks.append(Check(
            _param('required', suffix, _any(wanted)),
            ~forest.per_tree(forest.with_any_trait(wanted)),
            _fixed('no provider of the tree has the trait')))
    some = forest.per_tree(capable)
    for trait in sorted(group.forbidden):
        has = forest.with_any_trait([trait])
        checks.append(Check(
            _param('required', suffix, '!' + trait),
            some & ~forest.per_tree(capable & ~has),
            _fixed('every provider able to give the group\'s '
                   'resources has the trait')))
    for wanted in group.member_of:
        checks.append(Check(
            _param('member_of', suffix, _any(wanted)),
            ~forest.per_tree(forest.in_any_aggregate(wanted)),
            _fixed('no provider of the tree is in the aggregate')))
    if group.forbidden_aggregates:
        bad = forest.in_any_aggregate(group.forbidden_aggregates)
        if spread:
            bad = bad | bad[forest.tree_of]
        checks.append(Check(
            _param('member_of', suffix,
                   '!' + _any(group.forbidden_aggregates)),
            some & ~forest.per_tree(capable & ~bad),
            _fixed('every provider able to give the group\'s '
                   'resources is in a forbidden aggregate')))
    if group.in_tree is not None:
        checks.append(_in_tree_check(forest, suffix, group.in_tree))
    return checks


def _in_tree_check(forest: Forest, suffix: str, uuid: str) -> Check:
    fails = np.ones(len(forest.roots.providers), dtype=bool)
    index = forest.index_of(uuid)
    if index >= 0 and forest.present[index]:
        fails[int(forest.tree_of[index])] = False
    return Check(_param('in_tree', suffix, uuid), fails,
                 _fixed('not that provider\'s tree'))


def _tree_amount_why(forest: Forest, rc: str, amount: int
                     ) -> Callable[[int], str]:
    def why(row: int) -> str:
        free = [inventory.capacity - provider.usages.get(rc, 0)
                for provider in map(forest.provider,
                                    forest.members(row).tolist())
                for inventory in [provider.inventories.get(rc)]
                if inventory is not None]
        if not free:
            return 'no provider of the tree has %s' % rc
        if max(free) >= amount:
            return ('needs %d: min_unit, max_unit or step_size refuse it'
                    % amount)
        return 'needs %d, at most %s free on one provider of the tree' % (
            amount, _number(max(free)))
    return why


def _whole_check(forest: Forest, suffix: str, units: list[Unit],
                 spread: bool) -> Check:
    """The trees where no provider meets the group whole (a spread
    unsuffixed group: some resource class with the group's traits and
    aggregates)."""
    ok = np.ones(len(forest.roots.providers), dtype=bool)
    for unit in units:
        reach = forest.per_tree(unit.own)
        for _index, anchors in unit.shared:
            reach[list(anchors)] = True
        ok &= reach
    name = 'group %s' % (suffix or '(unsuffixed)')
    label = ('%s whole, each class on a provider with its traits and '
             'aggregates' % name) if spread else '%s whole on one provider' % (
                 name)
    return Check(label, ~ok, _fixed('no provider of the tree meets '
                 'all of it'))


def _together_check(request: Request, checks: list[Check],
                    hosting: np.ndarray) -> Check:
    """The trees meeting every check before but not hosting the request
    (``hosting``): the groups do not fit together."""
    met = np.ones(hosting.shape, dtype=bool)
    for check in checks:
        met &= ~check.fails
    why = ['amounts summed per provider']
    if request.group_policy == 'isolate' and len(request.numbered) > 1:
        why.insert(0, 'group_policy=isolate')
    if request.same_subtree:
        why.insert(0, 'same_subtree')
    return Check('groups together (%s)' % ', '.join(why), met & ~hosting,
                 _fixed('the groups do not fit together'))
