"""Allocation candidates in memory, as Placement's
``GET /allocation_candidates`` computes them, for root providers: the
fast path.

``ProviderTable`` holds resource providers (``Provider``: inventories,
usages, traits, aggregates) with one NumPy column per resource class and
field, and ``candidates(group)`` answers one ``RequestGroup`` (the
unsuffixed group of a request: ``resources``, ``required``,
``member_of``) with the providers that can hold it, in table order.  The
rules are Placement's (openstack-placement 16.0.0, microversions 1.36
to 1.39):

* for each requested resource class the provider has an inventory, the
  amount is within ``min_unit`` and ``max_unit`` and a multiple of
  ``step_size``, and ``used + amount <= (total - reserved) *
  allocation_ratio``;
* every ``required`` trait is the provider's, none of the forbidden
  ones (``!T``) is, and for each ``in:A,B`` at least one is;
* for each ``member_of`` the provider is in one of its aggregates, and
  in none of a forbidden one's (``!in:A,B`` or ``!A``);
* with ``in_tree``, the provider is that one (a root is its own tree).

This is Placement's answer whenever no candidate can take anything from
a child provider or a sharing provider (``scheduler.placement.trees``,
``root_group``, says when); ``scheduler.placement.trees`` answers every
other request (provider trees, sharing providers, numbered groups) over
the root providers' table and the child providers' one.
``allocation_candidates`` shapes the answer as Placement's JSON body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np

# Placement's largest inventory field (``db_const.MAX_INT``: 32-bit
# columns); a query may ask more, which no provider can give.
MAX_INT = 2 ** 31 - 1


@dataclasses.dataclass(frozen=True)
class Inventory:
    """One resource class of a provider, in Placement's fields."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int | None = None      # None: the total
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> float:
        """``(total - reserved) * allocation_ratio``, as Placement."""
        return (self.total - self.reserved) * self.allocation_ratio

    @property
    def effective_max_unit(self) -> int:
        """The largest amount one allocation may take: ``max_unit``, or
        the total when none is set."""
        return self.total if self.max_unit is None else self.max_unit


@dataclasses.dataclass(frozen=True)
class Provider:
    """A resource provider: ``inventories`` and ``usages`` by resource
    class, its traits and aggregate uuids; for a child provider (one
    with a parent), the uuids of its parent and of its tree's root
    (both None for a root provider)."""

    uuid: str
    name: str
    inventories: Mapping[str, Inventory]
    usages: Mapping[str, int] = dataclasses.field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    parent_uuid: str | None = None
    root_uuid: str | None = None

    @property
    def root(self) -> str:
        """The uuid of the root provider of this provider's tree."""
        return self.root_uuid or self.uuid


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """One request group of ``GET /allocation_candidates`` (the
    unsuffixed one or a numbered one; ``scheduler.placement.query``
    reads them from a query).

    ``required`` holds one set per condition, any of whose traits will
    do (a plain required trait is a set of one); ``member_of`` likewise
    holds sets of aggregate uuids.
    """

    resources: Mapping[str, int]
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()
    in_tree: str | None = None


class _Column:
    """One resource class over the table, one array per field; ``has``
    says which providers have an inventory of it."""

    def __init__(self, providers: Sequence[Provider], rc: str) -> None:
        size = len(providers)
        self.rc = rc
        self.has = np.zeros(size, dtype=bool)
        self.min_unit = np.zeros(size, dtype=np.int64)
        self.max_unit = np.zeros(size, dtype=np.int64)
        self.step_size = np.ones(size, dtype=np.int64)
        self.capacity = np.zeros(size, dtype=np.float64)
        self.used = np.zeros(size, dtype=np.float64)
        for row, provider in enumerate(providers):
            self.set(row, provider)

    def set(self, row: int, provider: Provider) -> None:
        """Copy ``provider``'s inventory and usage of this class into
        ``row``."""
        inventory = provider.inventories.get(self.rc)
        self.has[row] = inventory is not None
        if inventory is None:
            inventory = Inventory(total=0)
        self.min_unit[row] = inventory.min_unit
        self.max_unit[row] = inventory.effective_max_unit
        self.step_size[row] = max(1, inventory.step_size)
        self.capacity[row] = inventory.capacity
        self.used[row] = provider.usages.get(self.rc, 0)

    def room(self) -> np.ndarray:
        """How much more each provider can give in all (float64):
        ``min(int(capacity) - used, max_unit)``, 0 without an
        inventory."""
        return np.where(self.has, np.minimum(
            np.floor(self.capacity) - self.used, self.max_unit), 0.0)

    def fits(self, amount: int) -> np.ndarray:
        if amount > MAX_INT:
            # No inventory holds it (and NumPy's int64 may not either).
            return np.zeros_like(self.has)
        return (self.has & (self.min_unit <= amount) &
                (self.max_unit >= amount) &
                (amount % self.step_size == 0) &
                (self.used + amount <= self.capacity))


class ProviderTable:
    """Providers and their resource columns (see the module): the root
    providers, or (``scheduler.placement.trees``) the child providers.

    ``replace`` puts new versions of known providers in place, and
    ``consume`` adds an amount to a provider's use, both in O(resource
    classes); a provider that appears or goes needs a new table."""

    def __init__(self, providers: Iterable[Provider]) -> None:
        self.providers = list(providers)
        self.row_of = {p.uuid: row for row, p in enumerate(self.providers)}
        self._columns: dict[str, _Column] = {}
        # One bool array per trait / aggregate asked so far: which
        # providers have it.
        self._traits: dict[str, np.ndarray] = {}
        self._aggregates: dict[str, np.ndarray] = {}

    def _column(self, rc: str) -> _Column:
        column = self._columns.get(rc)
        if column is None:
            column = self._columns[rc] = _Column(self.providers, rc)
        return column

    def replace(self, providers: Iterable[Provider]) -> None:
        """Put each of ``providers`` in place of the table's provider of
        the same uuid (KeyError when there is none)."""
        for provider in providers:
            row = self.row_of[provider.uuid]
            self.providers[row] = provider
            for column in self._columns.values():
                column.set(row, provider)
            for trait, has in self._traits.items():
                has[row] = trait in provider.traits
            for aggregate, has in self._aggregates.items():
                has[row] = aggregate in provider.aggregates

    def consume(self, uuid: str, resources: Mapping[str, int]) -> None:
        """Add ``resources`` to the use of provider ``uuid``, as a claim
        of them will (Placement's usages are sums of allocations)."""
        row = self.row_of[uuid]
        provider = self.providers[row]
        usages = dict(provider.usages)
        for rc, amount in resources.items():
            usages[rc] = usages.get(rc, 0) + amount
        self.replace([dataclasses.replace(provider, usages=usages)])

    def fits_amount(self, rc: str, amount: int) -> np.ndarray:
        """Boolean mask over the providers: which have an inventory of
        ``rc`` that can hold ``amount`` more (units, step, capacity)."""
        return self._column(rc).fits(amount)

    def room(self, rc: str) -> np.ndarray:
        """Over the providers (float64): the most of ``rc`` each can give
        the groups of a request together, ``min(int(capacity) - used,
        max_unit)`` (0 without an inventory of it)."""
        return self._column(rc).room()

    def with_any_trait(self, names: Iterable[str]) -> np.ndarray:
        """Boolean mask over the providers: which have one of the traits
        ``names`` at least."""
        return self._any(self._traits, 'traits', names)

    def in_any_aggregate(self, names: Iterable[str]) -> np.ndarray:
        """Boolean mask over the providers: which are in one of the
        aggregates ``names`` at least."""
        return self._any(self._aggregates, 'aggregates', names)

    def fits_capacity(self, group: RequestGroup) -> np.ndarray:
        """Boolean mask over the providers: which have the inventory and
        room for every resource of ``group``."""
        mask = np.ones(len(self.providers), dtype=bool)
        for rc, amount in group.resources.items():
            mask &= self.fits_amount(rc, amount)
        return mask

    def matches(self, group: RequestGroup) -> np.ndarray:
        """Boolean mask over the providers: which match the traits,
        aggregates and tree of ``group``."""
        mask = np.ones(len(self.providers), dtype=bool)
        if group.in_tree is not None:
            mask[:] = False
            row = self.row_of.get(group.in_tree)
            if row is not None:
                mask[row] = True
        for wanted in group.required:
            mask &= self.with_any_trait(wanted)
        if group.forbidden:
            mask &= ~self.with_any_trait(group.forbidden)
        for wanted in group.member_of:
            mask &= self.in_any_aggregate(wanted)
        if group.forbidden_aggregates:
            mask &= ~self.in_any_aggregate(group.forbidden_aggregates)
        return mask

    def _any(self, cache: dict[str, np.ndarray], field: str,
             names: Iterable[str]) -> np.ndarray:
        """Which providers have at least one of ``names`` in their
        ``field`` (``traits`` or ``aggregates``), from one cached bool
        array per name."""
        found = np.zeros(len(self.providers), dtype=bool)
        for name in names:
            has = cache.get(name)
            if has is None:
                has = cache[name] = np.fromiter(
                    (name in getattr(p, field) for p in self.providers),
                    dtype=bool, count=len(self.providers))
            found |= has
        return found

    def fits(self, group: RequestGroup) -> np.ndarray:
        """Boolean mask over the providers: which can hold ``group``."""
        return self.fits_capacity(group) & self.matches(group)

    def candidates(self, group: RequestGroup) -> list[Provider]:
        """The providers that can hold ``group``, in table order."""
        return [self.providers[row]
                for row in np.flatnonzero(self.fits(group)).tolist()]


def allocation_candidates(table: ProviderTable, group: RequestGroup
                          ) -> dict[str, Any]:
    """``candidates(group)`` as Placement's ``GET
    /allocation_candidates`` body at microversion 1.36:
    ``allocation_requests`` (one per provider, with ``mappings``) and
    ``provider_summaries`` (every resource class of each provider, its
    capacity as an integer and its use; traits; parent and root)."""
    found = table.candidates(group)
    return {
        'allocation_requests': [
            {'allocations': {p.uuid: {'resources': dict(group.resources)}},
             'mappings': {'': [p.uuid]}} for p in found],
        'provider_summaries': {p.uuid: provider_summary(p) for p in found},
    }


def provider_summary(provider: Provider) -> dict[str, Any]:
    """``provider`` as a provider summary of Placement's body (1.29 and
    later): every resource class of its inventory with its capacity,
    ``int((total - reserved) * allocation_ratio)``, and its use; its
    traits (sorted); its parent's and its root's uuid."""
    return {
        'resources': {rc: {'capacity': int(inventory.capacity),
                           'used': provider.usages.get(rc, 0)}
                      for rc, inventory in provider.inventories.items()},
        'traits': sorted(provider.traits),
        'parent_provider_uuid': provider.parent_uuid,
        'root_provider_uuid': provider.root,
    }
