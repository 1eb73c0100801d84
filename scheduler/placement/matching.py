"""Which providers can serve each group of one request, over a forest.

The part of a ``scheduler.placement.trees.Plan`` that does not enumerate:
per group (or, for the spread unsuffixed group, per resource class) a
``Unit`` with the providers able to serve it in their own tree and the
sharing providers able to serve it elsewhere; over the root rows, which
trees every unit can reach, which surely host the request and which
cannot have room for it (``enough``).  For the search itself, what
bounds it: ``Remaining`` proves that the groups a partial pick leaves
cannot all be served (``distinct_providers``: Hall's condition for the
groups ``isolate`` puts on providers of their own), and ``Steps``
counts the combinations a search examines, up to its limit (``Cut``).
The rules are the module docstring's of ``scheduler.placement.trees``.
Masks are NumPy booleans over the forest (``Forest.size``) or over its
root rows.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from scheduler.placement.candidates import MAX_INT as MAX_AMOUNT
from scheduler.placement.candidates import RequestGroup
from scheduler.placement.provider_trees import Forest
from scheduler.placement.query import Request


@dataclasses.dataclass(frozen=True)
class Unit:
    """What one choice serves: a numbered (or unspread) group whole, or
    one resource class of the spread unsuffixed group.  ``own``: the
    providers that can serve it anchored to their own tree (over the
    forest); ``shared``: sharing providers and the other root rows they
    can serve it anchored to."""

    suffix: str
    resources: Mapping[str, int]
    own: np.ndarray
    shared: tuple[tuple[int, frozenset[int]], ...]


class Matching:
    """The groups of ``request`` over ``forest``.  Traits, aggregates,
    trees and anchors are read once, at construction; capacity at each
    ``units`` call, so the matching follows the forest's consumption
    (``Forest.consume``).  It must not outlive a ``Forest.replace``."""

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

    def units(self) -> list[Unit]:
        """The units of the request at the forest's current use."""
        units = []
        for suffix, group in self.request.groups.items():
            if suffix == '' and self.spread:
                units.extend(self._spread_units(group))
                continue
            own = self.static[suffix].copy()
            for rc, amount in group.resources.items():
                own &= self.forest.fits_amount(rc, amount)
            units.append(Unit(suffix, group.resources, own,
                               self._shared(own, np.ones_like(own))))
        return units

    def _spread_units(self, group: RequestGroup) -> list[Unit]:
        """One unit per resource class of the spread group (by name)."""
        units = []
        for rc in sorted(group.resources):
            fits = self.forest.fits_amount(rc, group.resources[rc])
            units.append(Unit('', {rc: group.resources[rc]},
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

    def reach(self, units: Sequence[Unit]) -> tuple[np.ndarray, np.ndarray]:
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

    def surely(self, units: Sequence[Unit], hosting: np.ndarray
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
        counts = [self.count(unit) for unit in units]
        for members in coupled_sets(units, self.request.group_policy):
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

    def enough(self, units: Sequence[Unit]) -> np.ndarray:
        """Over the root rows: the trees whose providers (with the
        sharing ones anchored there) have room for what the units asking
        one resource class ask of it together, and for as many of them
        as ask it (each taking the least amount asked) -- for each class
        two units or more ask.  A tree without is no host (the amounts
        ``Remaining`` checks in a search, over every tree at once)."""
        forest = self.forest
        ok = np.ones(len(forest.roots.providers), dtype=bool)
        counts = collections.Counter(rc for unit in units
                                     for rc in unit.resources)
        for rc in sorted(rc for rc, count in counts.items() if count > 1):
            asking = [unit for unit in units if rc in unit.resources]
            room = np.maximum(forest.room(rc), 0.0)
            givers = np.logical_or.reduce([unit.own for unit in asking])
            givers &= forest.present
            total = np.bincount(forest.tree_of[givers], weights=room[givers],
                                minlength=len(ok))
            anchored: dict[int, set[int]] = {}
            for unit in asking:
                for index, anchors in unit.shared:
                    anchored.setdefault(index, set()).update(anchors)
            least = min(unit.resources[rc] for unit in asking)
            fit = np.floor(room / least)
            fits = np.bincount(forest.tree_of[givers], weights=fit[givers],
                               minlength=len(ok))
            for index, trees in anchored.items():
                total[list(trees)] += room[index]
                fits[list(trees)] += fit[index]
            ok &= (total >= sum(unit.resources[rc] for unit in asking)) & (
                fits >= len(asking))
        return ok

    def count(self, unit: Unit) -> np.ndarray:
        """Over the root rows: how many providers can serve ``unit``
        anchored there."""
        forest = self.forest
        count = np.bincount(forest.tree_of[unit.own & forest.present],
                            minlength=len(forest.roots.providers))
        for _index, anchors in unit.shared:
            count[list(anchors)] += 1
        return count


def coupled_sets(units: Sequence[Unit], group_policy: str | None
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



class Remaining:
    """Whether the groups a search has not picked yet can still all be
    served at one anchor: necessary conditions, so that a search gives
    up a partial pick (or the whole anchor) that cannot end in a
    candidate instead of trying every completion of it.  ``groups``: per
    group in the search's order, the providers a numbered group may use
    when ``isolate`` puts it on a provider of its own (else None) and
    the ``parts`` (provider, resource class, amount) of each of its
    choices.

    * Isolation: the isolated groups left can be given distinct
      providers not taken yet (``distinct_providers``).
    * Amounts: for each resource class two groups or more ask, the
      providers that can give it them have room left (``room`` less the
      amounts already picked there) for what the groups left ask of it
      together, and for as many of them as ask it, each taking the
      least amount asked.
    """

    def __init__(self, forest: Forest,
                 groups: Sequence[tuple[frozenset[int] | None,
                                        Sequence[Sequence[tuple[
                                            int, str, int]]]]]) -> None:
        self.forest = forest
        self.isolated = [isolated for isolated, _ in groups]
        asked = [{rc: amount for _, rc, amount in options[0]}
                 if options else {} for _, options in groups]
        counts = collections.Counter(rc for amounts in asked
                                     for rc in amounts)
        # Per shared class, from each depth on: the amount the groups
        # ask in all, how many ask it, the least one, and the providers
        # they may take it from.
        self.needs: dict[str, list[tuple[int, int, int, frozenset[int]]]] = {}
        for rc in sorted(rc for rc, count in counts.items() if count > 1):
            need = (0, 0, MAX_AMOUNT, frozenset[int]())
            self.needs[rc] = [need] * (len(groups) + 1)
            for depth in range(len(groups) - 1, -1, -1):
                total, count, least, givers = need
                amount = asked[depth].get(rc)
                if amount is not None:
                    need = (total + amount, count + 1, min(least, amount),
                            givers | {index for parts in groups[depth][1]
                                      for index, part_rc, _ in parts
                                      if part_rc == rc})
                self.needs[rc][depth] = need
        self._room: dict[tuple[int, str], int] = {}

    def possible(self, depth: int, taken: Collection[int],
                 amounts: Mapping[tuple[int, str], int]) -> bool:
        """Whether the groups from ``depth`` on may still be served,
        given the providers ``taken`` by isolated groups and the
        ``amounts`` picked so far ((provider, class) -> amount).  False
        is a proof that they cannot; True is not a proof that they can.
        """
        left = [isolated.difference(taken)
                for isolated in self.isolated[depth:] if isolated is not None]
        if any(len(found) < len(left) for found in left) and (
                not distinct_providers(left)):
            return False
        for rc, needs in self.needs.items():
            total, count, least, givers = needs[depth]
            if not count:
                continue
            room = [max(0, self.room(index, rc) - amounts.get((index, rc), 0))
                    for index in givers]
            if total > sum(room) or count > sum(r // least for r in room):
                return False
        return True

    def room(self, index: int, rc: str) -> int:
        """The most of ``rc`` provider ``index`` can give all groups
        together: ``min(int(capacity) - used, max_unit)``."""
        found = self._room.get((index, rc))
        if found is None:
            provider = self.forest.provider(index)
            inventory = provider.inventories[rc]
            found = self._room[index, rc] = min(
                int(inventory.capacity) - provider.usages.get(rc, 0),
                inventory.effective_max_unit)
        return found


def distinct_providers(options: Sequence[Collection[int]]) -> bool:
    """Whether each of the groups whose providers are ``options`` (one
    collection of forest indices per group) can have one of them, all
    different: what ``group_policy=isolate`` asks of numbered groups.
    Hall's condition, decided by a maximum bipartite matching (augmenting
    paths; groups are few), so that a request asking ``k`` isolated
    groups of ``k - 1`` providers is refused at once instead of after
    every permutation of them."""
    owner: dict[int, int] = {}

    def augment(group: int, seen: set[int]) -> bool:
        for index in options[group]:
            if index in seen:
                continue
            seen.add(index)
            if index not in owner or augment(owner[index], seen):
                owner[index] = group
                return True
        return False

    return all(augment(group, set()) for group in range(len(options)))


class Cut(Exception):
    """A search of allocation candidates used up its ``Steps``."""


class Steps:
    """A count of the combinations one search may examine (``limit``;
    None: no limit): ``take`` raises Cut beyond it."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0

    def take(self, count: int = 1) -> None:
        """Count ``count`` more combinations examined; Cut when that
        passes the limit."""
        self.used += count
        if self.limit is not None and self.used > self.limit:
            raise Cut()
