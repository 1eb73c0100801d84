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
or numbered group, a boolean capacity mask over all providers and
reduces it per tree (a scatter or a count over ``tree_of``): O(units x
providers) NumPy work.  When no group couples the choices (no required
traits on the spread group, no class in two groups, no ``isolate``
between numbered groups, no ``same_subtree``) that is exact and
``hosts`` stops there.  When they are coupled, a tree surely hosts the
request when each unit of a coupled set of ``k`` units has ``k``
providers (distinct ones can be given: nothing merges, ``isolate``
holds) and one provider holds the spread group's required traits
(``_surely``); the others are enumerated in Python, stopping at the
first candidate: O(doubtful trees x combinations).  Measured on one
core at 10,000 compute nodes with two VGPU and two bandwidth children
each: ``hosts`` 1.1 ms for the VGPU in the unsuffixed group, 1.7 ms for
two ports asking bandwidth in numbered groups, 17 ms with a required
VGPU trait (1,500 trees enumerated); 0.2 to 1.7 ms at 1,000.  The full
answer (``allocation_candidates``: 15,000 to 36,000 allocation requests
there) enumerates every combination of the surviving trees, as
Placement does: 1 to 3 s, one Python object per candidate and provider
summary; the view never builds it.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.placement.candidates import Provider
from scheduler.placement.candidates import ProviderTable
from scheduler.placement.candidates import RequestGroup
from scheduler.placement.candidates import provider_summary
from scheduler.placement.query import Request

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


@dataclasses.dataclass
class Features:
    """What the child providers hold, all trees together (how many of
    them hold each resource class and trait, and how many are in an
    aggregate), and the resource classes sharing providers offer: a
    request touching none is answered by the root providers alone."""

    child_classes: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter)
    child_traits: collections.Counter[str] = dataclasses.field(
        default_factory=collections.Counter)
    children_in_aggregates: int = 0
    sharing_classes: frozenset[str] = frozenset()

    def count(self, provider: Provider, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) a child provider's share."""
        for rc in provider.inventories:
            self.child_classes[rc] += sign
        for trait in provider.traits:
            self.child_traits[trait] += sign
        self.children_in_aggregates += sign * bool(provider.aggregates)

    def covers(self, group: RequestGroup) -> bool:
        """Whether every candidate of ``group`` (an unsuffixed group
        alone) allocates from a root provider alone: none of its
        resource classes, traits or (with ``member_of``) aggregates is
        a child provider's, and no sharing provider offers its
        classes."""
        classes = {rc for rc, n in self.child_classes.items() if n > 0}
        traits = frozenset().union(*group.required) | group.forbidden
        return not (
            group.resources.keys() & (classes | self.sharing_classes) or
            any(self.child_traits[trait] > 0 for trait in traits) or
            ((group.member_of or group.forbidden_aggregates) and
             self.children_in_aggregates > 0))


class Forest:
    """Every resource provider (see the module): ``roots`` and
    ``children``, two ProviderTables.  Provider ``i`` of the forest is
    root row ``i`` below ``len(roots.providers)`` and child row ``i -
    len(roots.providers)`` above; ``tree_of[i]`` is the root row of its
    tree.  A child whose root is not among the roots (read in between)
    belongs to no tree until the next read."""

    def __init__(self, roots: ProviderTable, children: ProviderTable
                 ) -> None:
        self.roots = roots
        self.children = children
        self._index()
        self.features = Features()
        for provider in children.providers:
            self.features.count(provider, 1)
        self._refresh_sharing()

    def _index(self) -> None:
        size = len(self.roots.providers)
        children = self.children.providers
        trees = np.fromiter((self.roots.row_of.get(child.root, -1)
                             for child in children), dtype=np.intp,
                            count=len(children))
        self.present = np.concatenate([np.ones(size, dtype=bool),
                                       trees >= 0])
        self.tree_of = np.concatenate([np.arange(size, dtype=np.intp),
                                       np.maximum(trees, 0)])
        self._order = np.argsort(trees, kind='stable') + size
        self._starts = np.searchsorted(trees[self._order - size],
                                       np.arange(size + 1))
        self.parent_of = [-1] * size + [
            self.index_of(child.parent_uuid) if child.parent_uuid else -1
            for child in children]
        self._anchors: dict[int, frozenset[int]] = {}

    def _refresh_sharing(self) -> None:
        self.sharing = np.flatnonzero(self.with_any_trait([SHARING_TRAIT]))
        self.features.sharing_classes = frozenset().union(*(
            self.provider(index).inventories
            for index in self.sharing.tolist()))
        self._anchors = {}

    # -- the providers ------------------------------------------------------

    @property
    def size(self) -> int:
        """How many providers (roots and children)."""
        return self.present.size

    @property
    def has_trees(self) -> bool:
        """Whether any provider has a parent."""
        return bool(self.children.providers)

    def provider(self, index: int) -> Provider:
        """The provider of forest index ``index``."""
        roots = len(self.roots.providers)
        return (self.roots.providers[index] if index < roots
                else self.children.providers[index - roots])

    def index_of(self, uuid: str | None) -> int:
        """The forest index of provider ``uuid``, -1 when unknown."""
        row = self.roots.row_of.get(uuid or '')
        if row is not None:
            return row
        row = self.children.row_of.get(uuid or '')
        return -1 if row is None else len(self.roots.providers) + row

    def members(self, tree: int) -> np.ndarray:
        """The forest indices of the providers of the tree of root row
        ``tree``: the root, then its descendants in child-table order."""
        below = self._order[self._starts[tree]:self._starts[tree + 1]]
        return np.concatenate([[tree], below]).astype(np.intp)

    def ancestors(self, index: int) -> set[int]:
        """Provider ``index`` and every provider above it."""
        found = set()
        while index >= 0:
            found.add(index)
            index = self.parent_of[index]
        return found

    def anchors(self, index: int) -> frozenset[int]:
        """The root rows a sharing provider (forest ``index``) can be
        anchored to: the trees of every provider in one of its
        aggregates, its own tree included when it is in any."""
        found = self._anchors.get(index)
        if found is None:
            aggregates = self.provider(index).aggregates
            members = self.in_any_aggregate(aggregates) & self.present
            found = self._anchors[index] = frozenset(
                np.unique(self.tree_of[members]).tolist())
        return found

    # -- masks over every provider ----------------------------------------

    def fits_amount(self, rc: str, amount: int) -> np.ndarray:
        """Which providers can give ``amount`` of ``rc`` (capacity)."""
        return np.concatenate([self.roots.fits_amount(rc, amount),
                               self.children.fits_amount(rc, amount)])

    def with_any_trait(self, names: Iterable[str]) -> np.ndarray:
        """Which providers have one of the traits ``names``."""
        names = list(names)
        return np.concatenate([self.roots.with_any_trait(names),
                               self.children.with_any_trait(names)])

    def in_any_aggregate(self, names: Iterable[str]) -> np.ndarray:
        """Which providers are in one of the aggregates ``names``."""
        names = list(names)
        return np.concatenate([self.roots.in_any_aggregate(names),
                               self.children.in_any_aggregate(names)])

    def per_tree(self, mask: np.ndarray) -> np.ndarray:
        """Over the root rows: whether some provider of the tree is in
        ``mask`` (over every provider)."""
        found = np.zeros(len(self.roots.providers), dtype=bool)
        found[self.tree_of[mask & self.present]] = True
        return found

    # -- changes ----------------------------------------------------------

    def replace(self, providers: Iterable[Provider]) -> None:
        """Put new versions of known providers in place (by uuid, roots
        or children; KeyError for an unknown one)."""
        reindex = False
        for provider in providers:
            if provider.uuid in self.roots.row_of:
                self.roots.replace([provider])
                continue
            old = self.children.providers[self.children.row_of[
                provider.uuid]]
            self.features.count(old, -1)
            self.features.count(provider, 1)
            reindex |= (old.parent_uuid, old.root_uuid) != (
                provider.parent_uuid, provider.root_uuid)
            self.children.replace([provider])
        if reindex:
            self._index()
        self._refresh_sharing()

    def consume(self, uuid: str, resources: Mapping[str, int]) -> None:
        """Add ``resources`` to the use of provider ``uuid``."""
        table = self.roots if uuid in self.roots.row_of else self.children
        table.consume(uuid, resources)


def root_group(request: Request, forest: Forest) -> RequestGroup | None:
    """The request as one group over the root providers alone (its root
    traits joined to the group's: the root is the candidate), when that
    gives Placement's candidates: an unsuffixed group alone that the
    forest's ``Features.covers``, with no ``in_tree`` naming a child
    provider.  None when the request needs trees (``Plan``)."""
    if set(request.groups) != {''}:
        return None
    group = request.groups['']
    in_tree = group.in_tree
    if (in_tree is not None and in_tree not in forest.roots.row_of and
            forest.index_of(in_tree) >= 0):
        return None
    if not forest.features.covers(group):
        return None
    return dataclasses.replace(
        group,
        required=group.required + tuple(
            frozenset([trait]) for trait in sorted(request.root_required)),
        forbidden=group.forbidden | request.root_forbidden)


@dataclasses.dataclass(frozen=True)
class _Unit:
    """What one choice serves: a numbered (or unspread) group whole, or
    one resource class of the spread unsuffixed group.  ``own``: the
    providers that can serve it anchored to their own tree (over the
    forest); ``shared``: sharing providers and the other root rows they
    can serve it anchored to."""

    suffix: str
    resources: Mapping[str, int]
    own: np.ndarray
    shared: tuple[tuple[int, frozenset[int]], ...]


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
    """``request`` over ``forest`` (see the module).  The traits,
    aggregates, trees and anchors of each group are read once, here;
    capacity at each call, so a plan follows the forest's consumption
    (``Forest.consume``) between calls.  A plan is for one request: it
    must not outlive a ``Forest.replace``."""

    def __init__(self, forest: Forest, request: Request) -> None:
        self.forest = forest
        self.request = request
        self.spread = '' in request.groups and (
            forest.has_trees or forest.sharing.size > 0)
        self.anchor_ok = self._anchor_ok()
        # Over the forest, per group: the providers whose traits,
        # aggregates and tree let them serve it (for the spread group,
        # in their own tree; ``_sharer`` and ``_anchorable`` for the
        # sharing providers that may serve it elsewhere).
        self.static: dict[str, np.ndarray] = {}
        self._sharer = self._anchorable = np.zeros(0, dtype=bool)
        for suffix, group in request.groups.items():
            if suffix == '' and self.spread:
                (self.static[suffix], self._sharer,
                 self._anchorable) = self._spread_static(group)
            else:
                self.static[suffix] = self._static(group)
        self.coupled = self._coupled()

    # -- what does not change with capacity ---------------------------------

    def _anchor_ok(self) -> np.ndarray:
        """Over the root rows: which may anchor a candidate (the root
        traits; every ``in_tree`` known)."""
        roots = self.forest.roots
        ok = np.ones(len(roots.providers), dtype=bool)
        for trait in self.request.root_required:
            ok &= roots.with_any_trait([trait])
        if self.request.root_forbidden:
            ok &= ~roots.with_any_trait(self.request.root_forbidden)
        for group in self.request.groups.values():
            if group.in_tree is not None and self._tree(group) < 0:
                ok[:] = False
        return ok

    def _tree(self, group: RequestGroup) -> int:
        """The root row of ``group.in_tree``'s tree, -1 when unknown."""
        index = self.forest.index_of(group.in_tree)
        if index < 0 or not self.forest.present[index]:
            return -1
        return int(self.forest.tree_of[index])

    def _static(self, group: RequestGroup) -> np.ndarray:
        """Over the forest, for a group one provider serves: the
        providers with its traits and aggregates, in its tree."""
        forest = self.forest
        ok = forest.present.copy()
        if group.forbidden:
            ok &= ~forest.with_any_trait(group.forbidden)
        for wanted in group.required:
            ok &= forest.with_any_trait(wanted)
        ok &= self._member(group)
        if group.forbidden_aggregates:
            ok &= ~forest.in_any_aggregate(group.forbidden_aggregates)
        if not group.resources:
            # Placement matches no provider for a group without
            # resources that names no required trait nor member_of.
            return ok if (group.required or group.member_of) else (
                np.zeros_like(ok))
        if group.in_tree is not None:
            ok &= forest.tree_of == self._tree(group)
        return ok

    def _spread_static(self, group: RequestGroup
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Over the forest, for the spread group: ``(own, sharer,
        anchorable)`` -- the providers that may serve it in their own
        tree (no forbidden trait; the provider or its root in each
        ``member_of``, neither in a forbidden aggregate; in ``in_tree``'s
        tree), the sharing providers that may serve it in other trees
        (no forbidden trait, themselves in each ``member_of`` and in no
        forbidden aggregate; none with ``in_tree``), and the roots they
        may be anchored to (in no forbidden aggregate)."""
        forest = self.forest
        allowed = forest.present.copy()
        if group.forbidden:
            allowed &= ~forest.with_any_trait(group.forbidden)
        member = self._member(group)
        own = allowed & (member | member[forest.tree_of])
        sharer = allowed & member
        anchorable = np.ones(forest.size, dtype=bool)
        if group.forbidden_aggregates:
            bad = forest.in_any_aggregate(group.forbidden_aggregates)
            own &= ~(bad | bad[forest.tree_of])
            sharer &= ~bad
            anchorable = ~bad
        if group.in_tree is not None:
            own &= forest.tree_of == self._tree(group)
            sharer[:] = False
        return own, sharer, anchorable

    def _member(self, group: RequestGroup) -> np.ndarray:
        """Over the forest: in one aggregate of each ``member_of``."""
        member = np.ones(self.forest.size, dtype=bool)
        for wanted in group.member_of:
            member &= self.forest.in_any_aggregate(wanted)
        return member

    def _coupled(self) -> bool:
        """Whether one group's choice can rule out another's (see the
        module's cost), so that trees must be enumerated."""
        groups = self.request.groups
        classes = [rc for group in groups.values() for rc in group.resources]
        return bool(
            (self.spread and groups[''].required) or
            len(classes) != len(set(classes)) or
            (self.request.group_policy == 'isolate' and
             len(self.request.numbered) > 1) or
            self.request.same_subtree)

    # -- what does ----------------------------------------------------------

    def _units(self) -> list[_Unit]:
        """The units of the request at the forest's current use."""
        units = []
        for suffix, group in self.request.groups.items():
            if suffix == '' and self.spread:
                units.extend(self._spread_units(group))
                continue
            own = self.static[suffix].copy()
            for rc, amount in group.resources.items():
                own &= self.forest.fits_amount(rc, amount)
            units.append(_Unit(suffix, group.resources, own,
                               self._shared(own, np.ones_like(own))))
        return units

    def _spread_units(self, group: RequestGroup) -> list[_Unit]:
        """One unit per resource class of the spread group (by name)."""
        units = []
        for rc in sorted(group.resources):
            fits = self.forest.fits_amount(rc, group.resources[rc])
            units.append(_Unit('', {rc: group.resources[rc]},
                               self.static[''] & fits,
                               self._shared(self._sharer & fits,
                                            self._anchorable)))
        return units

    def _shared(self, able: np.ndarray, anchorable: np.ndarray
                ) -> tuple[tuple[int, frozenset[int]], ...]:
        """The sharing providers in ``able`` with the root rows (not
        their own, where ``anchorable`` and ``anchor_ok``) they serve."""
        forest = self.forest
        found = []
        for index in forest.sharing[able[forest.sharing]].tolist():
            own = int(forest.tree_of[index])
            anchors = frozenset(
                tree for tree in forest.anchors(index)
                if tree != own and anchorable[tree] and self.anchor_ok[tree])
            if anchors:
                found.append((index, anchors))
        return tuple(found)

    def _reach(self, units: Sequence[_Unit]) -> tuple[np.ndarray, np.ndarray]:
        """Over the root rows: ``(reachable, hosting)`` -- every unit can
        be served at that anchor; and some resourceful unit by a
        provider of the anchor's own tree too."""
        reachable = self.anchor_ok.copy()
        hosting = np.zeros_like(reachable)
        for unit in units:
            own = self.forest.per_tree(unit.own)
            shared = np.zeros_like(own)
            for _index, anchors in unit.shared:
                shared[list(anchors)] = True
            reachable &= own | shared
            if unit.resources:
                hosting |= own
        return reachable, hosting & reachable

    def hosts(self) -> np.ndarray:
        """Over the root rows: which compute nodes can host the request
        now (an allocation request anchored there takes something from
        its own tree)."""
        units = self._units()
        _, hosting = self._reach(units)
        if not self.coupled:
            return hosting
        doubtful = np.flatnonzero(hosting & ~self._surely(units, hosting))
        if doubtful.size:
            serving = self._serving(units, doubtful)
            for tree in doubtful.tolist():
                hosting[tree] = self._first(units, tree, serving) is not None
        return hosting

    def _surely(self, units: Sequence[_Unit], hosting: np.ndarray
                ) -> np.ndarray:
        """Over the root rows, among ``hosting``: the trees that surely
        host the request although groups are coupled.  Units that may
        merge amounts (one class) or must not share a provider
        (``isolate``) are coupled; when each unit of a coupled set of
        ``k`` has ``k`` providers at least, they can all be given
        distinct providers, so nothing merges.  With required traits on
        the spread group, one of its providers of the tree must hold
        them all.  Never with ``same_subtree`` (enumerated)."""
        if self.request.same_subtree:
            return np.zeros_like(hosting)
        sure = hosting.copy()
        counts = [self._count(unit) for unit in units]
        for members in _coupled_sets(units, self.request.group_policy):
            for index in members:
                sure &= counts[index] >= len(members)
        group = self.request.groups.get('')
        if self.spread and group is not None and group.required:
            holds = np.ones(self.forest.size, dtype=bool)
            for any_of in group.required:
                holds &= self.forest.with_any_trait(any_of)
            sure &= np.logical_or.reduce(
                [self.forest.per_tree(unit.own & holds)
                 for unit in units if unit.suffix == ''])
        return sure

    def _count(self, unit: _Unit) -> np.ndarray:
        """Over the root rows: how many providers can serve ``unit``
        anchored there."""
        forest = self.forest
        count = np.bincount(forest.tree_of[unit.own & forest.present],
                            minlength=len(forest.roots.providers))
        for _index, anchors in unit.shared:
            count[list(anchors)] += 1
        return count

    def first(self, tree: int) -> AllocationRequest | None:
        """The first allocation request anchored to root row ``tree``
        that takes something from its own tree, at the current use;
        None when there is none."""
        units = self._units()
        reachable, hosting = self._reach(units)
        if not hosting[tree]:
            return None
        return self._first(units, tree, self._serving(units, [tree]))

    def _first(self, units: Sequence[_Unit], tree: int,
               serving: Sequence[Mapping[int, list[int]]]
               ) -> AllocationRequest | None:
        forest = self.forest
        for found in self._at(units, tree, serving):
            if any(forest.tree_of[index] == tree and forest.present[index]
                   for index in found.allocations):
                return found
        return None

    def allocation_requests(self) -> list[AllocationRequest]:
        """Every distinct allocation request, in our order (module)."""
        units = self._units()
        reachable, _ = self._reach(units)
        trees = np.flatnonzero(reachable)
        serving = self._serving(units, trees)
        seen: set[Any] = set()
        found = []
        for tree in trees.tolist():
            for request in self._at(units, tree, serving):
                key = request.key()
                if key not in seen:
                    seen.add(key)
                    found.append(request)
        return found

    # -- one anchor -------------------------------------------------------

    def _serving(self, units: Sequence[_Unit], trees: Iterable[int]
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

    def _at(self, units: Sequence[_Unit], tree: int,
            serving: Sequence[Mapping[int, list[int]]]
            ) -> Iterator[AllocationRequest]:
        """The allocation requests anchored to root row ``tree``
        (``serving``: ``_serving``'s, for ``tree`` among others)."""
        by_group: dict[str, list[list[int]]] = {}
        for unit, by_tree in zip(units, serving, strict=True):
            by_group.setdefault(unit.suffix, []).append(by_tree.get(tree, []))
        choices = []
        for suffix, group in self.request.groups.items():
            if suffix == '' and self.spread:
                found = self._spread_choices(group, by_group[suffix])
            else:
                found = [_Choice(tuple((index, rc, amount) for rc, amount
                                       in group.resources.items()),
                                 frozenset([index]), index)
                         for index in by_group[suffix][0]]
            if not found:
                return
            choices.append((suffix, found))
        yield from self._combine(tree, choices, 0, [], {})

    def _spread_choices(self, group: RequestGroup,
                        serving: list[list[int]]) -> list[_Choice]:
        """The spread group's choices: one provider per resource class
        (the units' order), whose traits together hold the required
        ones."""
        classes = sorted(group.resources)
        found = []
        for picked in itertools.product(*serving):
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

    def _combine(self, tree: int, choices: list[tuple[str, list[_Choice]]],
                 depth: int, picked: list[tuple[str, _Choice]],
                 amounts: dict[tuple[int, str], int]
                 ) -> Iterator[AllocationRequest]:
        """Depth-first over the groups' choices, pruning a partial pick
        that ``isolate`` or a merged amount rules out."""
        if depth == len(choices):
            if self._same_subtree(picked):
                yield self._request(tree, picked, amounts)
            return
        suffix, options = choices[depth]
        isolate = self.request.group_policy == 'isolate'
        taken = {choice.single for sfx, choice in picked if sfx}
        for choice in options:
            if isolate and suffix and choice.single in taken:
                continue
            added = dict(amounts)
            for index, rc, amount in choice.parts:
                added[index, rc] = added.get((index, rc), 0) + amount
            if not all(self._room(index, rc, added[index, rc])
                       for index, rc, _ in choice.parts
                       if (index, rc) in amounts):
                continue
            picked.append((suffix, choice))
            yield from self._combine(tree, choices, depth + 1, picked, added)
            picked.pop()

    def _room(self, index: int, rc: str, amount: int) -> bool:
        """Whether a merged ``amount`` of ``rc`` fits provider ``index``:
        ``used + amount <= int(capacity)`` and ``amount <= max_unit``."""
        provider = self.forest.provider(index)
        inventory = provider.inventories[rc]
        return (provider.usages.get(rc, 0) + amount <=
                int(inventory.capacity) and
                amount <= inventory.effective_max_unit)

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

    def _request(self, tree: int, picked: list[tuple[str, _Choice]],
                 amounts: Mapping[tuple[int, str], int]
                 ) -> AllocationRequest:
        allocations: dict[int, dict[str, int]] = {}
        for (index, rc), amount in amounts.items():
            allocations.setdefault(index, {})[rc] = amount
        mappings: dict[str, frozenset[int]] = {}
        for suffix, choice in picked:
            mappings[suffix] = mappings.get(suffix, frozenset()) | \
                choice.providers
        return AllocationRequest(tree, allocations, mappings)


def _coupled_sets(units: Sequence[_Unit], group_policy: str | None
                  ) -> list[list[int]]:
    """The sets (of two units or more; indices into ``units``) that are
    coupled: units asking one resource class may merge their amounts on
    one provider, and the numbered groups under ``isolate`` must not
    share one (connected sets, by union-find)."""
    parent = list(range(len(units)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    numbered = [index for index, unit in enumerate(units) if unit.suffix]
    pairs = [(a, b) for a, b in itertools.combinations(range(len(units)), 2)
             if units[a].resources.keys() & units[b].resources.keys()]
    if group_policy == 'isolate':
        pairs += list(itertools.pairwise(numbered))
    for a, b in pairs:
        parent[root(a)] = root(b)
    sets: dict[int, list[int]] = {}
    for index in range(len(units)):
        sets.setdefault(root(index), []).append(index)
    return [members for members in sets.values() if len(members) > 1]


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
