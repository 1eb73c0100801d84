"""Every resource provider of Placement in memory, as trees: the root
providers (compute nodes) and their child providers (NUMA, PCI, VGPU and
bandwidth providers), with the sharing providers
(``MISC_SHARES_VIA_AGGREGATE``) and what their aggregates let them serve.

``Forest`` holds them, as two ``ProviderTable`` (``scheduler.placement.
candidates``) and the tree each provider belongs to; ``Features`` says
what the child and sharing providers hold, so that a request they cannot
change is answered over the roots alone (``root_group``, the fast path).
The rules that use them are in ``scheduler.placement.trees``.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping

import numpy as np

from scheduler.placement.candidates import Provider
from scheduler.placement.candidates import ProviderTable
from scheduler.placement.candidates import RequestGroup
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

    def room(self, rc: str) -> np.ndarray:
        """How much of ``rc`` each provider can give a request's groups
        together (``ProviderTable.room``)."""
        return np.concatenate([self.roots.room(rc), self.children.room(rc)])

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
