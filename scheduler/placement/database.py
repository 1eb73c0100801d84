"""Placement's resource providers, read from Placement's own database.

Read-only, as the Nova database mode reads Nova's: five queries whatever
the number of providers (the providers, their inventories, their usages
summed from ``allocations``, their traits, their aggregates; a sixth for
the uuids of the parents and roots of a few child providers read), where
Placement's REST API takes four requests per provider.  The tables and
columns are those of openstack-placement's schema (16.0.0; unchanged
since Stein for these): ``resource_providers``, ``inventories``,
``allocations``, ``resource_classes`` (standard classes included),
``traits``, ``resource_provider_traits``, ``placement_aggregates`` and
``resource_provider_aggregates``.

``read_trees`` reads root providers (``parent_provider_id IS NULL``)
and child providers (with their parent's and root's uuids) alike:
``scheduler.placement.candidates`` computes the candidates of the
requests the root providers alone answer, ``scheduler.placement.trees``
the others, over both.  Sharing providers are providers like the others
(their trait and aggregates say they share).
"""

from __future__ import annotations

import collections
import datetime
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa

from scheduler.placement.candidates import Inventory
from scheduler.placement.candidates import Provider

_PROVIDERS = sa.table('resource_providers', sa.column('id'),
                      sa.column('uuid'), sa.column('name'),
                      sa.column('generation'),
                      sa.column('parent_provider_id'),
                      sa.column('root_provider_id'),
                      sa.column('created_at'), sa.column('updated_at'))
_CLASSES = sa.table('resource_classes', sa.column('id'), sa.column('name'))
_INVENTORIES = sa.table(
    'inventories', sa.column('resource_provider_id'),
    sa.column('resource_class_id'), sa.column('total'),
    sa.column('reserved'), sa.column('min_unit'), sa.column('max_unit'),
    sa.column('step_size'), sa.column('allocation_ratio'))
_ALLOCATIONS = sa.table('allocations', sa.column('id'),
                        sa.column('resource_provider_id'),
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


def read_generations(connection: Any) -> dict[int, int]:
    """``{resource_providers.id: generation}`` of the root providers: one
    query.  Placement bumps a provider's generation whenever its
    inventories, allocations, traits or aggregates change, so this tells
    which providers a refresh must read again."""
    return dict(connection.execute(
        sa.select(_PROVIDERS.c.id, _PROVIDERS.c.generation)
        .where(_PROVIDERS.c.parent_provider_id.is_(None))).all())


def provider_count(connection: Any) -> int:
    """How many resource providers Placement holds, roots and children:
    one aggregate query (a provider that went changes it)."""
    return connection.execute(
        sa.select(sa.func.count()).select_from(_PROVIDERS)).scalar()


def generations_since(connection: Any, since: datetime.datetime
                      ) -> tuple[dict[int, int], dict[int, int]]:
    """``({root id: generation}, {child id: generation})`` of the
    providers created or updated at or after ``since`` (naive UTC):
    Placement stamps ``updated_at`` with every generation change.  A
    deleted provider is not among them (``provider_count`` tells)."""
    roots: dict[int, int] = {}
    children: dict[int, int] = {}
    for rp_id, generation, parent in connection.execute(
            sa.select(_PROVIDERS.c.id, _PROVIDERS.c.generation,
                      _PROVIDERS.c.parent_provider_id)
            .where(sa.or_(_PROVIDERS.c.updated_at >= since,
                          _PROVIDERS.c.created_at >= since))):
        (roots if parent is None else children)[rp_id] = generation
    return roots, children


def child_generations(connection: Any) -> dict[int, int]:
    """``{resource_providers.id: generation}`` of the child providers
    (those with a parent): one query."""
    return dict(connection.execute(
        sa.select(_PROVIDERS.c.id, _PROVIDERS.c.generation)
        .where(_PROVIDERS.c.parent_provider_id.is_not(None))).all())


def allocations_fingerprint(connection: Any) -> tuple[int, ...]:
    """``(rows, largest id, sum of used, sum of provider ids)`` of the
    ``allocations`` table: one aggregate query.  Placement (16.0.0, and
    since Pike) only inserts allocation rows, with ids larger than any
    before, and deletes them (``DELETE /allocations/{consumer}``, or a
    ``PUT``/``POST`` replacing a consumer's allocations); it never
    updates one.  So any change of any provider's usage changes the
    fingerprint, including the removals that bump no generation."""
    return allocations_fingerprints(connection, None)[0]


def allocations_fingerprints(connection: Any, up_to: int | None
                             ) -> tuple[tuple[int, ...],
                                        tuple[int, ...] | None]:
    """``(whole, older)``: ``allocations_fingerprint`` of the table, and
    the same of its rows with ``id <= up_to`` (None without ``up_to``),
    in one aggregate query.  With ``up_to`` the largest id of an earlier
    fingerprint, ``older`` equals that fingerprint when none of the rows
    it counted was deleted since and no row of an id below it committed
    late (rows are only inserted, with larger ids, or deleted): a
    difference means some usage may have fallen."""
    table = _ALLOCATIONS
    groups: list[tuple[Any, ...]] = [
        (table.c.id, table.c.used, table.c.resource_provider_id)]
    if up_to is not None:
        older = table.c.id <= sa.bindparam('up_to', up_to)
        groups.append(tuple(sa.case((older, column), else_=None)
                            for column in groups[0]))
    columns = []
    for row_id, used, provider in groups:
        columns += [sa.func.count(row_id),
                    sa.func.coalesce(sa.func.max(row_id), 0),
                    sa.func.coalesce(sa.func.sum(used), 0),
                    sa.func.coalesce(sa.func.sum(provider), 0)]
    values = [int(value) for value in
              connection.execute(sa.select(*columns)).one()]
    return (tuple(values[:4]),
            tuple(values[4:]) if up_to is not None else None)


def read_usages(connection: Any) -> dict[int, dict[str, int]]:
    """``{resource_providers.id: {resource class: used}}``, summed over
    ``allocations``, for every provider with an allocation: one grouped
    query (as ``read_trees`` reads the usages of the providers it
    reads)."""
    return dict(_usages(connection, sa.true(), {}))


def usages_of(connection: Any, ids: Collection[int]
              ) -> dict[int, dict[str, int]]:
    """``read_usages`` of the providers ``ids`` (``resource_providers.id``)
    only; those without an allocation are absent."""
    return dict(_usages(
        connection, _ALLOCATIONS.c.resource_provider_id.in_(
            sa.bindparam('ids', expanding=True)), {'ids': sorted(ids)}))


def _usages(connection: Any, where: Any, params: dict[str, Any]
            ) -> dict[int, dict[str, int]]:
    """``{provider id: {resource class: used}}`` of the allocations
    ``where`` selects (a defaultdict)."""
    usages: dict[int, dict[str, int]] = collections.defaultdict(dict)
    for rp_id, rc, used in connection.execute(
            sa.select(_ALLOCATIONS.c.resource_provider_id, _CLASSES.c.name,
                      sa.func.sum(_ALLOCATIONS.c.used))
            .join(_CLASSES,
                  _CLASSES.c.id == _ALLOCATIONS.c.resource_class_id)
            .where(where)
            .group_by(_ALLOCATIONS.c.resource_provider_id,
                      _CLASSES.c.name), params):
        usages[rp_id][rc] = int(used)
    return usages


def known_traits(connection: Any, names: Collection[str]) -> frozenset[str]:
    """Which of the trait ``names`` Placement knows (its ``traits``
    table: the standard traits and the custom ones created): one
    query.  Placement answers 400 to a request naming any other."""
    if not names:
        return frozenset()
    return frozenset(connection.execute(
        sa.select(_TRAITS.c.name)
        .where(_TRAITS.c.name.in_(sa.bindparam('names', expanding=True))),
        {'names': sorted(names)}).scalars().all())


def read_providers(connection: Any) -> list[Provider]:
    """The root providers of the Placement database on ``connection``
    (a SQLAlchemy Connection), in ``resource_providers.id`` order."""
    return list(read_trees(connection)[0].values())


def read_trees(connection: Any, ids: Collection[int] | None = None
               ) -> tuple[dict[int, Provider], dict[int, Provider]]:
    """``(roots, children)``: the providers by ``resource_providers.id``
    in id order, root providers apart from child providers (which carry
    their parent's and their root's uuids); with ``ids``, only those.
    Five queries, and a sixth when a parent or root of a child read is
    not among the providers read."""
    def only(column: sa.ColumnClause[Any]) -> sa.ColumnElement[bool]:
        return (sa.true() if ids is None
                else column.in_(sa.bindparam('ids', expanding=True)))

    params = {} if ids is None else {'ids': sorted(ids)}
    rows = connection.execute(
        sa.select(_PROVIDERS.c.id, _PROVIDERS.c.uuid, _PROVIDERS.c.name,
                  _PROVIDERS.c.parent_provider_id,
                  _PROVIDERS.c.root_provider_id)
        .where(only(_PROVIDERS.c.id))
        .order_by(_PROVIDERS.c.id), params).all()
    uuid_of = _uuids(connection, rows)
    inventories: dict[int, dict[str, Inventory]] = collections.defaultdict(
        dict)
    for row in connection.execute(
            sa.select(_INVENTORIES, _CLASSES.c.name).join(
                _CLASSES,
                _CLASSES.c.id == _INVENTORIES.c.resource_class_id)
            .where(only(_INVENTORIES.c.resource_provider_id)), params):
        inventories[row.resource_provider_id][row.name] = Inventory(
            total=row.total, reserved=row.reserved, min_unit=row.min_unit,
            max_unit=row.max_unit, step_size=row.step_size,
            allocation_ratio=float(row.allocation_ratio))
    usages = _usages(connection, only(_ALLOCATIONS.c.resource_provider_id),
                     params)
    traits = _names(connection, _PROVIDER_TRAITS.c.resource_provider_id,
                    _TRAITS.c.name, _PROVIDER_TRAITS.join(
                        _TRAITS, _TRAITS.c.id == _PROVIDER_TRAITS.c.trait_id),
                    only, params)
    aggregates = _names(
        connection, _PROVIDER_AGGREGATES.c.resource_provider_id,
        _AGGREGATES.c.uuid, _PROVIDER_AGGREGATES.join(
            _AGGREGATES,
            _AGGREGATES.c.id == _PROVIDER_AGGREGATES.c.aggregate_id),
        only, params)
    roots: dict[int, Provider] = {}
    children: dict[int, Provider] = {}
    for rp_id, uuid, name, parent, root in rows:
        provider = Provider(
            uuid=uuid, name=name, inventories=inventories[rp_id],
            usages=usages[rp_id], traits=frozenset(traits[rp_id]),
            aggregates=frozenset(aggregates[rp_id]),
            parent_uuid=uuid_of.get(parent),
            root_uuid=None if parent is None else uuid_of.get(root))
        (roots if parent is None else children)[rp_id] = provider
    return roots, children


def _uuids(connection: Any, rows: Any) -> dict[int, str]:
    """``{id: uuid}`` of the providers ``rows`` and of their parents and
    roots (one query for those not among them)."""
    found = {row.id: row.uuid for row in rows}
    missing = {rp_id for row in rows if row.parent_provider_id is not None
               for rp_id in (row.parent_provider_id, row.root_provider_id)
               if rp_id not in found}
    if missing:
        found.update(connection.execute(
            sa.select(_PROVIDERS.c.id, _PROVIDERS.c.uuid)
            .where(_PROVIDERS.c.id.in_(sa.bindparam('ids', expanding=True))),
            {'ids': sorted(missing)}).all())
    return found


def _names(connection: Any, key: Any, name: Any, joined: Any,
           only: Any, params: dict[str, Any]) -> dict[int, set[str]]:
    found: dict[int, set[str]] = collections.defaultdict(set)
    for rp_id, value in connection.execute(
            sa.select(key, name).select_from(joined).where(only(key)),
            params):
        found[rp_id].add(value)
    return found
