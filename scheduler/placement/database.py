"""Placement's resource providers, read from Placement's own database.

Read-only, as the Nova database mode reads Nova's: five queries whatever
the number of providers (the providers, their inventories, their usages
summed from ``allocations``, their traits, their aggregates), where
Placement's REST API takes four requests per provider.  The tables and
columns are those of openstack-placement's schema (16.0.0; unchanged
since Stein for these): ``resource_providers``, ``inventories``,
``allocations``, ``resource_classes`` (standard classes included),
``traits``, ``resource_provider_traits``, ``placement_aggregates`` and
``resource_provider_aggregates``.

Only root providers are read for now (``parent_provider_id IS NULL``):
``scheduler.placement.candidates`` does not handle nested providers yet.
"""

from __future__ import annotations

import collections
from typing import Any

import sqlalchemy as sa

from scheduler.placement.candidates import Inventory
from scheduler.placement.candidates import Provider

_PROVIDERS = sa.table('resource_providers', sa.column('id'),
                      sa.column('uuid'), sa.column('name'),
                      sa.column('parent_provider_id'))
_CLASSES = sa.table('resource_classes', sa.column('id'), sa.column('name'))
_INVENTORIES = sa.table(
    'inventories', sa.column('resource_provider_id'),
    sa.column('resource_class_id'), sa.column('total'),
    sa.column('reserved'), sa.column('min_unit'), sa.column('max_unit'),
    sa.column('step_size'), sa.column('allocation_ratio'))
_ALLOCATIONS = sa.table('allocations', sa.column('resource_provider_id'),
                        sa.column('resource_class_id'), sa.column('used'))
_TRAITS = sa.table('traits', sa.column('id'), sa.column('name'))
_PROVIDER_TRAITS = sa.table('resource_provider_traits',
                            sa.column('resource_provider_id'),
                            sa.column('trait_id'))
_AGGREGATES = sa.table('placement_aggregates', sa.column('id'),
                       sa.column('uuid'))
_PROVIDER_AGGREGATES = sa.table('resource_provider_aggregates',
                                sa.column('resource_provider_id'),
                                sa.column('aggregate_id'))


def read_providers(connection: Any) -> list[Provider]:
    """The root providers of the Placement database on ``connection``
    (a SQLAlchemy Connection), in ``resource_providers.id`` order."""
    roots = connection.execute(
        sa.select(_PROVIDERS.c.id, _PROVIDERS.c.uuid, _PROVIDERS.c.name)
        .where(_PROVIDERS.c.parent_provider_id.is_(None))
        .order_by(_PROVIDERS.c.id)).all()
    inventories: dict[int, dict[str, Inventory]] = collections.defaultdict(
        dict)
    for row in connection.execute(
            sa.select(_INVENTORIES, _CLASSES.c.name).join(
                _CLASSES,
                _CLASSES.c.id == _INVENTORIES.c.resource_class_id)):
        inventories[row.resource_provider_id][row.name] = Inventory(
            total=row.total, reserved=row.reserved, min_unit=row.min_unit,
            max_unit=row.max_unit, step_size=row.step_size,
            allocation_ratio=float(row.allocation_ratio))
    usages: dict[int, dict[str, int]] = collections.defaultdict(dict)
    for rp_id, rc, used in connection.execute(
            sa.select(_ALLOCATIONS.c.resource_provider_id, _CLASSES.c.name,
                      sa.func.sum(_ALLOCATIONS.c.used))
            .join(_CLASSES,
                  _CLASSES.c.id == _ALLOCATIONS.c.resource_class_id)
            .group_by(_ALLOCATIONS.c.resource_provider_id,
                      _CLASSES.c.name)):
        usages[rp_id][rc] = int(used)
    traits = _names(connection, _PROVIDER_TRAITS.c.resource_provider_id,
                    _TRAITS.c.name, _PROVIDER_TRAITS.join(
                        _TRAITS, _TRAITS.c.id == _PROVIDER_TRAITS.c.trait_id))
    aggregates = _names(
        connection, _PROVIDER_AGGREGATES.c.resource_provider_id,
        _AGGREGATES.c.uuid, _PROVIDER_AGGREGATES.join(
            _AGGREGATES,
            _AGGREGATES.c.id == _PROVIDER_AGGREGATES.c.aggregate_id))
    return [Provider(uuid=uuid, name=name, inventories=inventories[rp_id],
                     usages=usages[rp_id],
                     traits=frozenset(traits[rp_id]),
                     aggregates=frozenset(aggregates[rp_id]))
            for rp_id, uuid, name in roots]


def _names(connection: Any, key: Any, name: Any, joined: Any
           ) -> dict[int, set[str]]:
    found: dict[int, set[str]] = collections.defaultdict(set)
    for rp_id, value in connection.execute(
            sa.select(key, name).select_from(joined)):
        found[rp_id].add(value)
    return found
