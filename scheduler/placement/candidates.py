"""Allocation candidates in memory, as Placement's
``GET /allocation_candidates`` computes them, for root providers.

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
  in none of a forbidden one's (``!in:A,B`` or ``!A``).

Nested providers, sharing providers and granular groups are not
handled here yet.  ``allocation_candidates`` shapes the answer as
Placement's JSON body.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np


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


@dataclasses.dataclass(frozen=True)
class Provider:
    """A root resource provider: ``inventories`` and ``usages`` by
    resource class, its traits and aggregate uuids."""

    uuid: str
    name: str
    inventories: Mapping[str, Inventory]
    usages: Mapping[str, int] = dataclasses.field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class RequestGroup:
    """The unsuffixed request group of ``GET /allocation_candidates``.

    ``required`` holds one set per condition, any of whose traits will
    do (a plain required trait is a set of one); ``member_of`` likewise
    holds sets of aggregate uuids.
    """

    resources: Mapping[str, int]
    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()

    @classmethod
    def from_query(cls, params: Mapping[str, str | Sequence[str]]
                   ) -> RequestGroup:
        """Read Placement's query parameters (``resources``,
        ``required``, ``member_of``; a value or a list of values).

        Raises ValueError for what Placement answers 400 to: no
        resources, a malformed amount, a required trait (or every trait
        of an ``in:``) also forbidden.
        """
        resources: dict[str, int] = {}
        for item in _values(params, 'resources'):
            for part in item.split(','):
                name, _, amount = part.partition(':')
                if not name or not amount.isdigit():
                    raise ValueError('bad resources: %r' % item)
                resources[name] = int(amount)
        if not resources or not all(resources.values()):
            raise ValueError('resources must ask for something')
        required: list[frozenset[str]] = []
        forbidden: set[str] = set()
        for item in _values(params, 'required'):
            if item.startswith('in:'):
                required.append(frozenset(item[3:].split(',')))
                continue
            for trait in item.split(','):
                if trait.startswith('!'):
                    forbidden.add(trait[1:])
                else:
                    required.append(frozenset([trait]))
        if any(group <= forbidden for group in required):
            raise ValueError('required traits all forbidden')
        member_of: list[frozenset[str]] = []
        not_in: set[str] = set()
        for item in _values(params, 'member_of'):
            if item.startswith('!'):
                item = item[1:]
                not_in.update(item[3:].split(',') if item.startswith('in:')
                              else [item])
            else:
                member_of.append(frozenset(
                    item[3:].split(',') if item.startswith('in:')
                    else [item]))
        return cls(resources, tuple(required), frozenset(forbidden),
                   tuple(member_of), frozenset(not_in))


def _values(params: Mapping[str, str | Sequence[str]], name: str
            ) -> list[str]:
    value = params.get(name, ())
    return [value] if isinstance(value, str) else list(value)


class _Column:
    """One resource class over the table, one array per field; ``has``
    says which providers have an inventory of it."""

    def __init__(self, providers: Sequence[Provider], rc: str) -> None:
        empty = Inventory(total=0)
        self.has = np.array([rc in p.inventories for p in providers])
        inventories = [p.inventories.get(rc, empty) for p in providers]
        self.min_unit = np.array([i.min_unit for i in inventories])
        self.max_unit = np.array([i.total if i.max_unit is None
                                  else i.max_unit for i in inventories])
        self.step_size = np.array([max(1, i.step_size)
                                   for i in inventories])
        self.capacity = np.array([i.capacity for i in inventories],
                                 dtype=np.float64)
        self.used = np.array([p.usages.get(rc, 0) for p in providers],
                             dtype=np.float64)

    def fits(self, amount: int) -> np.ndarray:
        return (self.has & (self.min_unit <= amount) &
                (self.max_unit >= amount) &
                (amount % self.step_size == 0) &
                (self.used + amount <= self.capacity))


class ProviderTable:
    """Root providers and their resource columns (see the module)."""

    def __init__(self, providers: Iterable[Provider]) -> None:
        self.providers = list(providers)
        self._columns: dict[str, _Column] = {}

    def _column(self, rc: str) -> _Column:
        column = self._columns.get(rc)
        if column is None:
            column = self._columns[rc] = _Column(self.providers, rc)
        return column

    def candidates(self, group: RequestGroup) -> list[Provider]:
        """The providers that can hold ``group``, in table order."""
        mask = np.ones(len(self.providers), dtype=bool)
        for rc, amount in group.resources.items():
            mask &= self._column(rc).fits(amount)
        return [provider for provider, fits
                in zip(self.providers, mask.tolist(), strict=True)
                if fits and _traits_match(provider, group)
                and _aggregates_match(provider, group)]


def _traits_match(provider: Provider, group: RequestGroup) -> bool:
    return (all(provider.traits & wanted for wanted in group.required)
            and not provider.traits & group.forbidden)


def _aggregates_match(provider: Provider, group: RequestGroup) -> bool:
    return (all(provider.aggregates & wanted for wanted in group.member_of)
            and not provider.aggregates & group.forbidden_aggregates)


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
        'provider_summaries': {p.uuid: _summary(p) for p in found},
    }


def _summary(provider: Provider) -> dict[str, Any]:
    return {
        'resources': {rc: {'capacity': int(inventory.capacity),
                           'used': provider.usages.get(rc, 0)}
                      for rc, inventory in provider.inventories.items()},
        'traits': sorted(provider.traits),
        'parent_provider_uuid': None,
        'root_provider_uuid': provider.uuid,
    }
