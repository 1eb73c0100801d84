"""Signatures of host values for the scoped memos of ``HostTable``.

A signature is a hashable stand-in for what a memo scope reads of a
HostState (``scheduler.view.host_table``): hosts with equal signatures
share one result.  The memo keeps the signatures it has seen for a
while (up to twice the rows), so the signature of aggregate metadata,
which a cast can make as large as it likes, is a digest of it: a memo
keeps no metadata of aggregates deleted since.
"""

from __future__ import annotations

import array
import hashlib
import itertools
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
_STRINGS = frozenset([str])
# Bytes of a signature digest (``aggregate_metadata``): 160 bits, no
# collision to fear among the values a view meets.
DIGEST_SIZE = 20
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


def aggregate_metadata(state: HostState) -> object:
    """The signature of the ``metadata`` of the host's aggregates (in the
    host's order): a digest of their contents, as ``_frozen`` tells them
    apart, which keeps none of them.  Aggregate metadata is as large as
    an ``update_aggregates`` cast makes it (any number of keys), and a
    memo keeps signatures after their aggregates are gone (up to twice
    the rows, ``host_table._Grouping``): holding the contents would keep
    the memory of deleted aggregates.  A value ``_frozen`` cannot trust
    makes the signature equal to nothing but itself."""
    digest = _Digest()
    digest.count(b'aggregates', len(state.aggregates))
    for aggregate in state.aggregates:
        if not digest.feed(aggregate.obj_get('metadata') or {}):
            return _Unequal()
    return digest.hasher.digest()


class _Digest:
    """A BLAKE2b digest of values, fed so that two values give one digest
    only when ``_frozen`` would make them equal: each value is typed and
    sized before its contents (a set by its items' sorted digests)."""

    def __init__(self) -> None:
        self.hasher = hashlib.blake2b(digest_size=DIGEST_SIZE)

    def count(self, tag: bytes, size: int) -> None:
        self.hasher.update(b'%s:%d;' % (tag, size))

    def feed(self, value: typing.Any) -> bool:
        """Add ``value``; False when it holds a value ``_frozen`` makes
        equal only to itself (the digest is then of no use)."""
        kind = type(value)
        tag = kind.__name__.encode()
        if kind is str or kind is bytes:
            data = (value.encode('utf-8', 'surrogatepass') if kind is str
                    else value)
            self.count(tag, len(data))
            self.hasher.update(data)
        elif kind in _EXACT_TYPES or kind is float:
            text = repr(value).encode()
            self.count(tag, len(text))
            self.hasher.update(text)
        elif kind in _DICTS and _STRINGS.issuperset(
                map(type, value.keys())) and _STRINGS.issuperset(
                map(type, value.values())):
            # Strings only (aggregate metadata), in C: each string's
            # length, then all of them together.
            strings = list(itertools.chain.from_iterable(value.items()))
            self.count(b'strings', len(strings))
            self.hasher.update(array.array('Q', map(len, strings)))
            self.hasher.update(''.join(strings).encode('utf-8',
                                                       'surrogatepass'))
        elif kind in _DICTS:
            self.count(b'dict', len(value))
            return all(self.feed(key) and self.feed(item)
                       for key, item in value.items())
        elif kind in _SEQUENCES:
            self.count(tag, len(value))
            return all(self.feed(item) for item in value)
        elif kind in _SETS:
            return self._feed_set(tag, value)
        else:
            return False
        return True

    def _feed_set(self, tag: bytes, value: typing.Any) -> bool:
        items = set()
        for item in value:
            one = _Digest()
            if not one.feed(item):
                return False
            items.add(one.hasher.digest())
        self.count(tag, len(items))
        for item in sorted(items):
            self.hasher.update(item)
        return True


_MISSING = object()


def attribute(name: str) -> Callable[[HostState], object]:
    """The signature of the public data attribute ``name`` (a missing
    attribute has a marker of its own)."""
    def signature(state: HostState) -> object:
        value = attributes.public_attribute(state, name, _MISSING)
        return ('missing',) if value is _MISSING else _frozen(value)
    return signature
