"""Allocation candidates over provider trees and sharing providers, in
memory, as Placement 16.0.0 computes ``GET /allocation_candidates`` at
microversions 1.36 to 1.39 (its rules learnt from its source; this is
our own implementation).

A ``Forest`` holds every resource provider: the root providers' table
(the ``ProviderTable`` of ``scheduler.placement.candidates``, whose
root-only candidates stay the fast path) and the child providers' (NUMA,
PCI, VGPU and bandwidth providers under compute nodes).  A ``Plan`` is
one ``scheduler.placement.query.Request`` over a forest.  The rules:

* **Capacity.**  A provider can give ``N`` of a resource class when it
  has an inventory of it, ``min_unit <= N <= max_unit``, ``N`` is a
  multiple of ``step_size`` and ``used + N <= (total - reserved) *
  allocation_ratio``.
* **The unsuffixed group** (``resources``, ``required``, ``member_of``,
  ``in_tree``) may spread over several providers when any provider in
  Placement has a parent or any has the trait
  ``MISC_SHARES_VIA_AGGREGATE`` (a sharing provider); else it is
  satisfied by one provider, as a numbered group is.  Spread, each of
  its resource classes comes from one provider of the candidate's tree
  (its *anchor*, a root provider) or from a sharing provider anchored to
  it (below).  No provider used may have a forbidden trait; the traits of
  the providers used, together, must hold each required trait (one of
  each ``in:``): a provider that gives nothing to the group (the root,
  often) does not count, which is what ``root_required`` is for.  For
  each ``member_of`` the provider *or its anchor* is in one of the
  aggregates (an aggregate of a root spans its tree); neither may be in
  a forbidden one.  ``in_tree`` keeps the providers of that provider's
  tree (its root's, when it names a child) and no sharing provider.
* **A numbered group** (``resourcesN``...) is satisfied by one provider,
  which has all its resources, its required traits, none of its
  forbidden ones, is itself in its ``member_of`` aggregates and in none
  of its forbidden ones (the anchor's aggregates do not count), and
  with ``in_treeN`` lies in that tree (a sharing provider there still
  serves the trees it shares with).  A group without resources (it
  must be in a ``same_subtree``) matches the providers with its traits
  and aggregates, whatever ``in_tree`` says, and none at all when it
  names neither required traits nor ``member_of``.
* **Sharing providers.**  A provider with ``MISC_SHARES_VIA_AGGREGATE``
  can serve a group anchored to its own tree and to the tree of every
  provider that shares an aggregate with it (children included).  For
  the spread unsuffixed group the sharing provider itself must be in the
  ``member_of`` aggregates; there is no anchoring with ``in_tree``.
* **Anchors.**  Every group of a candidate is anchored to the same root
  provider, which must have ``root_required``'s traits and none of its
  forbidden ones.  ``group_policy=isolate`` puts the numbered groups on
  distinct providers (the unsuffixed group may share theirs); ``none``
  (or none given, with one numbered group at most) does not.  For each
  ``same_subtree``, one of the providers of those groups is an ancestor
  (or itself) of all the others.
* **Merging.**  The amounts of one resource class that several groups
  take from one provider are added up in ``allocations`` and the sum
  checked again: ``used + sum <= int((total - reserved) *
  allocation_ratio)`` and ``sum <= max_unit`` (not ``min_unit`` or
  ``step_size``).  ``mappings`` maps each group's suffix to its
  providers' uuids (sorted here).
* **The answer** has each distinct allocation request once (same
  allocations and mappings: once, whichever anchor), and the provider
  summaries of every provider of every tree an allocation request takes
  from (``provider_summary``).  Placement lists them in the iteration
  order of a Python set, which is not specified; ours are by anchor in
  root-table order, then own-tree providers before sharing ones, then
  by provider order.  ``limit`` is not applied.

Where Placement 16.0.0 errs, the rule above is kept (the differential
test, ``tests/functional/test_placement_nested.py``, skips these):

* a forbidden trait in the spread unsuffixed group when no sharing
  provider is in play: Placement looks the trait up by name where it
  needs its id, a 500 on PostgreSQL;
* with ``group_policy`` not ``none``, when two groups take one resource
  class from one provider, Placement adds the second amount into the
  first group's own record, which later candidates reuse: their amounts
  grow (and some are dropped as over capacity);
* when the spread unsuffixed group takes everything from sharing
  providers, Placement keeps that part once for one anchor only (its
  records compare equal across anchors), so with numbered groups the
  candidates of the other anchors are lost;
* a sharing provider that is itself a child provider, anchored to
  another tree: Placement fails looking up its summary.

For the view, a compute node (a root provider) can host the request
when an allocation request anchored to it takes something from its own
tree (``Plan.hosts``, ``Plan.first``).

Cost.  Each plan evaluation computes, per resource class (spread group)
or numbered group, a boolean capacity mask over all providers reduced
per tree: O(units x providers) NumPy work.  When no group couples the
choices (no required traits on the spread group, no class in two
groups, no ``isolate`` between numbered groups, no ``same_subtree``)
that is exact.  When they are coupled, a tree surely hosts the request
when each unit of a coupled set of ``k`` units has ``k`` providers and
one provider holds the spread group's required traits
(``Matching.surely``), and surely not when its providers lack room for
what the groups asking one class ask of it together
(``Matching.enough``).  The others are searched depth-first up to the
first candidate, a partial pick dropped once the groups left cannot be
served (``matching.Remaining``: distinct providers for the isolated
groups, by a bipartite matching; room for the amounts): ``k`` isolated
groups over ``k - 1`` providers are refused at once.  A search examines
at most ``[placement] max_candidate_combinations`` combinations
(``Plan.limit``: 100,000, about 0.25 s of one core), shared among the
trees in doubt (``Plan._search``); a tree left undecided hosts nothing
for the rest of the request (``Plan.cut``, logged), and a request left
without any host gets NoValidHost naming the option.  Measured on one
core at 10,000 compute nodes with two VGPU and two bandwidth children
each: ``hosts`` 1 ms for a VGPU in the unsuffixed group, 1.4 ms for two
ports asking bandwidth in numbered groups, 85 ms with a VGPU trait one
tree in seven has (8,571 trees searched), 230 ms for three VGPU groups
(5,000 searched).  The full answer (``allocation_candidates``, not
limited) enumerates every combination, as Placement; the view never
builds it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np
from oslo_log import log as logging

from scheduler import exception
from scheduler.conf import CONF
from scheduler.placement.candidates import RequestGroup
from scheduler.placement.candidates import provider_summary
from scheduler.placement.matching import Cut
from scheduler.placement.matching import Matching
from scheduler.placement.matching import Remaining
from scheduler.placement.matching import Steps
from scheduler.placement.matching import Unit
from scheduler.placement.provider_trees import Forest
from scheduler.placement.query import Request

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class _Choice:
    """One way of serving a group at an anchor: ``parts`` (provider,
    resource class, amount), the group's ``providers``, and the one
    provider of a numbered group (None for the spread group)."""

    parts: tuple[tuple[int, str, int], ...]
    providers: frozenset[int]
    single: int | None


@dataclasses.dataclass(frozen=True)
class AllocationRequest:
    """One allocation candidate: its ``anchor`` (root row),
    ``allocations`` (forest index -> {resource class: amount}) and
    ``mappings`` (suffix -> forest indices)."""

    anchor: int
    allocations: Mapping[int, Mapping[str, int]]
    mappings: Mapping[str, frozenset[int]]

    def key(self) -> tuple[frozenset[Any], frozenset[Any]]:
        """What makes two allocation requests the same in the answer."""
        return (frozenset((index, rc, amount) for index, resources
                          in self.allocations.items()
                          for rc, amount in resources.items()),
                frozenset(self.mappings.items()))

    def body(self, forest: Forest) -> dict[str, Any]:
        """As Placement's JSON (1.34 and later): ``allocations`` by
        provider uuid, ``mappings`` suffix -> sorted uuids."""
        def uuid(index: int) -> str:
            return forest.provider(index).uuid

        return {
            'allocations': {uuid(index): {'resources': dict(resources)}
                            for index, resources in self.allocations.items()},
            'mappings': {suffix: sorted(uuid(index) for index in found)
                         for suffix, found in self.mappings.items()},
        }


class Plan:
    """``request`` over ``forest`` (see the module): its ``Matching``
    (read once) and the search of its allocation requests at the
    forest's current use, ``limit`` combinations at most per search
    (None: ``[placement] max_candidate_combinations``); ``cut``: the root
    rows left undecided, out for the rest of the request.  A plan is
    for one request: it must not outlive a ``Forest.replace``."""

    def __init__(self, forest: Forest, request: Request,
                 limit: int | None = None) -> None:
        self.forest = forest
        self.request = request
        self.matching = Matching(forest, request)
        self.limit = (CONF.placement.max_candidate_combinations
                      if limit is None else limit)
        self.cut: set[int] = set()
        self._hosted = False

    def hosts(self) -> np.ndarray:
        """Over the root rows: which compute nodes can host the request
        now (an allocation request anchored there takes something from
        its own tree), the trees in doubt searched within ``limit``
        (``_search``).  NoValidHost, naming the limit, when that search
        was cut and the request never had a host."""
        units = self.matching.units()
        _, hosting = self.matching.reach(units)
        if not self.matching.coupled:
            return hosting
        doubtful = np.flatnonzero(
            hosting & ~self.matching.surely(units, hosting))
        cut: list[int] = []
        if doubtful.size:
            hosting[doubtful] = False
            doubtful = doubtful[self.matching.enough(units)[doubtful]]
            found, cut = self._search(units, [
                tree for tree in doubtful.tolist() if tree not in self.cut])
            hosting[found] = True
        if cut and not hosting.any() and not self._hosted:
            raise exception.NoValidHost(reason=self.capped(len(cut)))
        self._hosted |= bool(hosting.any())
        return hosting

    def _search(self, units: Sequence[Unit], trees: list[int]
                ) -> tuple[list[int], list[int]]:
        """Search ``trees`` (root rows) for a first allocation request
        within ``limit`` combinations in all: each tree in turn its share
        of what is left, then the trees cut short all of what is left,
        in turn (so one tree that cannot be decided does not hide the
        others).  Returns the trees found hosting and those cut (logged,
        and kept in ``cut``)."""
        serving = self._serving(units, trees)
        left, found, todo = self.limit, [], trees
        for fair in (True, False):
            again = []
            for done, tree in enumerate(todo):
                share = left // (len(todo) - done) if fair else left
                hosts, used = self._try(units, tree, serving, share)
                left -= used
                if hosts is None:
                    again.append(tree)
                elif hosts:
                    found.append(tree)
            todo = again
        if todo:
            self.cut.update(todo)
            LOG.warning('%s', self.capped(len(todo)))
        return found, todo

    def _try(self, units: Sequence[Unit], tree: int,
             serving: Sequence[Mapping[int, list[int]]], limit: int
             ) -> tuple[bool | None, int]:
        """Whether ``tree`` hosts the request within ``limit``
        combinations (None: cut), and how many it examined."""
        steps = Steps(limit)
        try:
            hosts = self._first(units, tree, serving, steps) is not None
        except Cut:
            return None, limit
        return hosts, steps.used

    def capped(self, cut: int) -> str:
        """Why a search of this request stopped: the refusal's reason."""
        return ('The search of allocation candidates stopped at '
                '[placement] max_candidate_combinations = %d combinations '
                'of resource providers: %d compute node(s) left undecided '
                '(%d request groups, group_policy %s).' % (
                    self.limit, cut, len(self.request.groups),
                    self.request.group_policy or 'none'))

    def first(self, tree: int) -> AllocationRequest | None:
        """The first allocation request anchored to root row ``tree``
        that takes something from its own tree, at the current use;
        None when there is none (or the tree's search was cut before).
        Raises NoValidHost, naming the limit, when this search is cut."""
        units = self.matching.units()
        reachable, hosting = self.matching.reach(units)
        if not hosting[tree] or tree in self.cut:
            return None
        try:
            return self._first(units, tree, self._serving(units, [tree]),
                               Steps(self.limit))
        except Cut:
            raise exception.NoValidHost(reason=self.capped(1)) from None

    def _first(self, units: Sequence[Unit], tree: int,
               serving: Sequence[Mapping[int, list[int]]], steps: Steps
               ) -> AllocationRequest | None:
        forest = self.forest
        for found in self._at(units, tree, serving, steps):
            if any(forest.tree_of[index] == tree and forest.present[index]
                   for index in found.allocations):
                return found
        return None

    def allocation_requests(self) -> list[AllocationRequest]:
        """Every distinct allocation request, in our order (module); not
        limited (Placement's whole answer)."""
        units = self.matching.units()
        reachable, _ = self.matching.reach(units)
        trees = np.flatnonzero(reachable)
        serving = self._serving(units, trees)
        steps = Steps(None)
        seen: set[Any] = set()
        found = []
        for tree in trees.tolist():
            for request in self._at(units, tree, serving, steps):
                key = request.key()
                if key not in seen:
                    seen.add(key)
                    found.append(request)
        return found

    # -- one anchor -------------------------------------------------------

    def _serving(self, units: Sequence[Unit], trees: Iterable[int]
                 ) -> list[dict[int, list[int]]]:
        """Per unit, per root row of ``trees``: the providers that can
        serve the unit anchored there, its own tree's first (forest
        order), then sharing ones."""
        forest = self.forest
        wanted = np.zeros(len(forest.roots.providers) + 1, dtype=bool)
        wanted[np.asarray(list(trees), dtype=np.intp)] = True
        found = []
        for unit in units:
            index = np.flatnonzero(unit.own & forest.present)
            index = index[wanted[forest.tree_of[index]]]
            tree_of = forest.tree_of[index]
            order = np.argsort(tree_of, kind='stable')
            index, tree_of = index[order], tree_of[order]
            cuts = np.flatnonzero(np.diff(tree_of)) + 1
            by_tree: dict[int, list[int]] = {}
            if index.size:
                starts = np.concatenate([[0], cuts]).astype(np.intp)
                by_tree = dict(zip(tree_of[starts].tolist(),
                                   (part.tolist()
                                    for part in np.split(index, cuts)),
                                   strict=True))
            for shared, anchors in unit.shared:
                for tree in anchors:
                    if wanted[tree]:
                        by_tree.setdefault(tree, []).append(shared)
            found.append(by_tree)
        return found

    def _at(self, units: Sequence[Unit], tree: int,
            serving: Sequence[Mapping[int, list[int]]], steps: Steps
            ) -> Iterator[AllocationRequest]:
        """The allocation requests anchored to root row ``tree``
        (``serving``: ``_serving``'s, for ``tree`` among others), each
        combination examined taken from ``steps``."""
        by_group: dict[str, list[list[int]]] = {}
        for unit, by_tree in zip(units, serving, strict=True):
            by_group.setdefault(unit.suffix, []).append(by_tree.get(tree, []))
        choices = []
        for suffix, group in self.request.groups.items():
            if suffix == '' and self.matching.spread:
                found = self._spread_choices(group, by_group[suffix], steps)
            else:
                found = [_Choice(tuple((index, rc, amount) for rc, amount
                                       in group.resources.items()),
                                 frozenset([index]), index)
                         for index in by_group[suffix][0]]
            if not found:
                return
            choices.append((suffix, found))
        yield from _Search(self, tree, choices, steps).run()

    def _spread_choices(self, group: RequestGroup,
                        serving: list[list[int]], steps: Steps
                        ) -> list[_Choice]:
        """The spread group's choices: one provider per resource class
        (the units' order), whose traits together hold the required
        ones."""
        classes = sorted(group.resources)
        found = []
        for picked in itertools.product(*serving):
            steps.take()
            providers = frozenset(picked)
            if group.required:
                traits = frozenset().union(*(
                    self.forest.provider(index).traits
                    for index in providers))
                if not all(any_of & traits for any_of in group.required):
                    continue
            found.append(_Choice(tuple(
                (index, rc, group.resources[rc])
                for index, rc in zip(picked, classes, strict=True)),
                providers, None))
        return found


class _Search:
    """The allocation requests of ``plan`` anchored to root row
    ``tree``: depth-first over the groups' ``choices`` (per group, in
    the request's order, its suffix and its ways of being served there),
    pruning a partial pick that ``isolate`` or a merged amount rules
    out, or after which the groups left cannot all be served
    (``matching.Remaining``).  Each choice tried is taken from
    ``steps``."""

    def __init__(self, plan: Plan, tree: int,
                 choices: list[tuple[str, list[_Choice]]],
                 steps: Steps) -> None:
        self.forest = plan.forest
        self.request = plan.request
        self.tree = tree
        self.choices = choices
        self.steps = steps
        self.isolate = plan.request.group_policy == 'isolate'
        self.remaining = Remaining(self.forest, [
            (frozenset(choice.single for choice in options
                       if choice.single is not None)
             if self.isolate and suffix else None,
             [choice.parts for choice in options])
            for suffix, options in choices])

    def run(self) -> Iterator[AllocationRequest]:
        """The allocation requests, in the choices' order."""
        yield from self._combine(0, [], {})

    def _combine(self, depth: int, picked: list[tuple[str, _Choice]],
                 amounts: dict[tuple[int, str], int]
                 ) -> Iterator[AllocationRequest]:
        if depth == len(self.choices):
            if self._same_subtree(picked):
                yield self._request(picked, amounts)
            return
        taken = {choice.single for sfx, choice in picked
                 if sfx and choice.single is not None}
        self.steps.take()
        if not self.remaining.possible(depth, taken, amounts):
            return
        suffix, options = self.choices[depth]
        for choice in options:
            self.steps.take()
            if self.isolate and suffix and choice.single in taken:
                continue
            added = dict(amounts)
            for index, rc, amount in choice.parts:
                added[index, rc] = added.get((index, rc), 0) + amount
            # A merged amount is checked again: ``used + amount <=
            # int(capacity)`` and ``amount <= max_unit``.
            if not all(added[index, rc] <= self.remaining.room(index, rc)
                       for index, rc, _ in choice.parts
                       if (index, rc) in amounts):
                continue
            picked.append((suffix, choice))
            yield from self._combine(depth + 1, picked, added)
            picked.pop()

    def _same_subtree(self, picked: list[tuple[str, _Choice]]) -> bool:
        """For each ``same_subtree``: one of its groups' providers is an
        ancestor-or-self of all of them."""
        for suffixes in self.request.same_subtree:
            providers = frozenset().union(*(
                choice.providers for suffix, choice in picked
                if suffix in suffixes))
            if len(providers) < 2:
                continue
            common = set.intersection(*(self.forest.ancestors(index)
                                        for index in providers))
            if not common & providers:
                return False
        return True

    def _request(self, picked: list[tuple[str, _Choice]],
                 amounts: Mapping[tuple[int, str], int]
                 ) -> AllocationRequest:
        allocations: dict[int, dict[str, int]] = {}
        for (index, rc), amount in amounts.items():
            allocations.setdefault(index, {})[rc] = amount
        mappings: dict[str, frozenset[int]] = {}
        for suffix, choice in picked:
            mappings[suffix] = mappings.get(suffix, frozenset()) | \
                choice.providers
        return AllocationRequest(self.tree, allocations, mappings)


def allocation_candidates(forest: Forest, request: Request
                          ) -> dict[str, Any]:
    """The answer to ``request`` as Placement's ``GET
    /allocation_candidates`` body at microversions 1.36 to 1.39:
    ``allocation_requests`` (with ``mappings``) and
    ``provider_summaries`` of every provider of the trees they take
    from."""
    found = Plan(forest, request).allocation_requests()
    trees = sorted({int(forest.tree_of[index]) for request_ in found
                    for index in request_.allocations})
    return {
        'allocation_requests': [request_.body(forest) for request_ in found],
        'provider_summaries': {
            forest.provider(index).uuid: provider_summary(
                forest.provider(index))
            for tree in trees for index in forest.members(tree).tolist()},
    }
