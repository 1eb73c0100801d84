"""Signatures of host values for the scoped memos of ``HostTable``.

A signature is a hashable stand-in for what a memo scope reads of a
HostState (``scheduler.view.host_table``): hosts with equal signatures
share one result.
"""

from __future__ import annotations

import typing
from collections.abc import Callable

from oslo_versionedobjects import fields as ovo_fields

from scheduler.resources import attributes

if typing.TYPE_CHECKING:
    from scheduler.view.host_state import HostState


class _Unequal:
    """Stands for a value whose equality cannot be trusted to mean equal
    behaviour: equal to nothing but itself."""

    __slots__ = ()


_EXACT_TYPES = (str, int, bool, bytes, type(None))
# Containers compared by content; oslo.versionedobjects' coerced ones
# (an object's dict and list fields) behave as the builtin ones.
_DICTS = (dict, ovo_fields.CoercedDict)
_SEQUENCES = (list, tuple, ovo_fields.CoercedList)
_SETS = (set, frozenset, ovo_fields.CoercedSet)


def _frozen(value: typing.Any) -> object:
    """A hashable stand-in for ``value``, equal for two values only when
    they have the same types and contents throughout (``0``, ``0.0``,
    ``False`` and ``-0.0`` all differ); any other object is equal only to
    itself."""
    kind = type(value)
    if kind in _EXACT_TYPES:
        return kind, value
    if kind is float:
        return kind, repr(value)
    if kind in _DICTS:
        return dict, tuple((_frozen(k), _frozen(v))
                           for k, v in value.items())
    if kind in _SEQUENCES:
        return kind, tuple(_frozen(item) for item in value)
    if kind in _SETS:
        return kind, frozenset(_frozen(item) for item in value)
    return _Unequal()


def aggregate_metadata(state: HostState) -> tuple[object, ...]:
    """The signature of the ``metadata`` of the host's aggregates (in the
    host's order)."""
    return tuple(_frozen(aggregate.obj_get('metadata') or {})
                 for aggregate in state.aggregates)


_MISSING = object()


def attribute(name: str) -> Callable[[HostState], object]:
    """The signature of the public data attribute ``name`` (a missing
    attribute has a marker of its own)."""
    def signature(state: HostState) -> object:
        value = attributes.public_attribute(state, name, _MISSING)
        return ('missing',) if value is _MISSING else _frozen(value)
    return signature
