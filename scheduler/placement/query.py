"""A whole ``GET /allocation_candidates`` query: its request groups and
its request-wide parameters, read as Placement 16.0.0 reads them at
microversions 1.36 to 1.39.

``Request.from_query`` reads the query parameters (a mapping of names
to a value or a list of values, or a sequence of ``(name, value)``
pairs in query-string order) and raises ValueError where Placement
answers 400:

* ``resources{S}``, ``required{S}``, ``member_of{S}`` and
  ``in_tree{S}`` make the request group of suffix ``S`` (``''``: the
  unsuffixed group; ``S`` is 1 to 64 of ``[a-zA-Z0-9_-]``).  Groups
  keep the order in which their suffix first appears.  Of several
  ``resources{S}`` or ``in_tree{S}`` the last counts; every
  ``required{S}`` and ``member_of{S}`` counts.
* ``resources``: ``RC:N`` items, comma-separated, each amount an
  integer of at least 1.
* ``required``: either ``in:A,B`` (one of them), or a list of names
  where ``!T`` forbids ``T`` (leading ``!`` are all stripped, as
  Placement does) and any other name is required.  An empty name, or a
  ``!`` inside ``in:``, is refused.  A group whose required traits (all
  of an ``in:``) are also forbidden is refused.
* ``member_of``: one aggregate uuid, ``in:A,B``, ``!A`` or ``!in:A,B``
  (forbidden); a comma without ``in:`` and anything not uuid-like is
  refused.  ``in_tree``: a uuid-like value.
* ``group_policy``: ``none`` or ``isolate``, required when there are
  two numbered groups or more (the first value counts).
* ``root_required``: given once at most, names and ``!`` names, no
  ``in:``; a trait both required and forbidden there is refused.
* ``same_subtree``: comma-separated suffixes of existing groups, never
  the unsuffixed one.  A group without resources must be named in a
  ``same_subtree``, and some group must ask for resources.
* ``limit``: a positive integer; the view applies it only with
  ``[placement] apply_max_placement_results`` (``scheduler.placement.
  limits``), else every candidate is kept.

Any other parameter is refused, as Placement's schema refuses it.
Whether a trait or resource class exists (Placement's 400 for an
unknown one) is not checked here: the view checks traits against
Placement's database.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from oslo_utils import uuidutils

from scheduler.placement.candidates import RequestGroup

# A group's parameter: its kind and its suffix.
_GROUP_KEY = re.compile(
    r'^(resources|required|member_of|in_tree)([a-zA-Z0-9_-]{1,64})?$')
GROUP_POLICIES = ('none', 'isolate')
_WIDE = ('group_policy', 'root_required', 'same_subtree', 'limit')

Params = Mapping[str, str | Sequence[str]] | Sequence[tuple[str, str]]


@dataclasses.dataclass(frozen=True)
class Request:
    """A query: ``groups`` by suffix (``''`` the unsuffixed group, whose
    resources may come from several providers of one tree and sharing
    providers; every other group is satisfied by one provider), in query
    order; ``group_policy`` (None, ``none`` or ``isolate``); the traits
    the root provider of each candidate must have (``root_required``)
    and must not have (``root_forbidden``); ``same_subtree``, sets of
    suffixes whose providers must all lie under one of them."""

    groups: Mapping[str, RequestGroup]
    group_policy: str | None = None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    same_subtree: tuple[frozenset[str], ...] = ()

    @property
    def numbered(self) -> list[str]:
        """The suffixes of the numbered (granular) groups, in order."""
        return [suffix for suffix in self.groups if suffix]

    def trait_names(self) -> frozenset[str]:
        """Every trait the query names (required, any-of, forbidden,
        root)."""
        names: set[str] = set(self.root_required | self.root_forbidden)
        for group in self.groups.values():
            names.update(group.forbidden, *group.required)
        return frozenset(names)

    @classmethod
    def from_query(cls, params: Params) -> Request:
        """Read the query parameters ``params`` (see the module).

        :raises ValueError: what Placement answers 400 to.
        """
        pairs = _pairs(params)
        groups: dict[str, dict[str, list[str]]] = {}
        wide: dict[str, list[str]] = {}
        for name, value in pairs:
            match = _GROUP_KEY.match(name)
            if match:
                kind, suffix = match.group(1), match.group(2) or ''
                groups.setdefault(suffix, {}).setdefault(kind, []).append(
                    value)
            elif name in _WIDE:
                wide.setdefault(name, []).append(value)
            else:
                raise ValueError('unknown query parameter %r' % name)
        request = cls(
            groups={suffix: _group(values)
                    for suffix, values in groups.items()},
            group_policy=_group_policy(wide.get('group_policy', [])),
            same_subtree=_same_subtree(wide.get('same_subtree', [])),
            **_root_traits(wide.get('root_required', [])))
        _check_groups(request)
        if 'limit' in wide and not all(v.isdigit() and int(v) >= 1
                                       for v in wide['limit']):
            raise ValueError('limit must be a positive integer')
        return request


def _pairs(params: Params) -> list[tuple[str, str]]:
    if isinstance(params, Mapping):
        return [(name, value) for name, values in params.items()
                for value in ([values] if isinstance(values, str)
                              else values)]
    return [(name, value) for name, value in params]


def _group(values: Mapping[str, list[str]]) -> RequestGroup:
    """One group's parameters (each kind's values in order) as a
    RequestGroup (resources possibly empty)."""
    resources = (_resources(values['resources'][-1])
                 if 'resources' in values else {})
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values.get('required', []):
        any_of, not_any = _traits(value)
        required.extend(any_of)
        forbidden |= not_any
    member_of: list[frozenset[str]] = []
    not_in: set[str] = set()
    for value in values.get('member_of', []):
        wanted, unwanted = _aggregates(value)
        if wanted:
            member_of.append(wanted)
        not_in |= unwanted
    in_tree = None
    if 'in_tree' in values:
        in_tree = values['in_tree'][-1].strip()
        if not uuidutils.is_uuid_like(in_tree):
            raise ValueError('in_tree is no uuid: %r' % in_tree)
    if any(any_of <= forbidden for any_of in required):
        raise ValueError('required traits all forbidden')
    return RequestGroup(resources, tuple(required), frozenset(forbidden),
                        tuple(member_of), frozenset(not_in), in_tree)


def _resources(value: str) -> dict[str, int]:
    """``RC:N,RC:N``; each N an integer of at least 1."""
    if not value.strip():
        raise ValueError('empty resources')
    resources: dict[str, int] = {}
    for item in value.split(','):
        name, sep, amount = item.partition(':')
        if not sep or ':' in amount:
            raise ValueError('bad resources item %r' % item)
        try:
            number = int(amount)
        except ValueError:
            raise ValueError('bad amount %r' % item) from None
        if number < 1:
            raise ValueError('amount below 1: %r' % item)
        resources[name] = number
    return resources


def _traits(value: str, any_of: bool = True
            ) -> tuple[list[frozenset[str]], set[str]]:
    """One ``required`` value: ``([any-of sets], forbidden names)``."""
    if value.startswith('in:'):
        names = {name.strip() for name in value[3:].split(',')}
        if not any_of or not all(names) or any(
                name.startswith('!') for name in names):
            raise ValueError('bad any-of traits %r' % value)
        return [frozenset(names)], set()
    names_list = [name.strip() for name in value.split(',')]
    forbidden = {name.lstrip('!') for name in names_list
                 if name.startswith('!')}
    if not all(names_list) or not all(forbidden):
        raise ValueError('empty trait in %r' % value)
    return ([frozenset([name]) for name in names_list
             if not name.startswith('!')], forbidden)


def _aggregates(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """One ``member_of`` value: ``(any-of aggregates, forbidden
    ones)``, one of them empty."""
    if ',' in value and not value.startswith(('in:', '!in:')):
        raise ValueError('several aggregates without in: %r' % value)
    forbidden = value.startswith('!')
    body = value[1:] if forbidden else value
    names = frozenset(body[3:].split(',') if body.startswith('in:')
                      else [body])
    if not all(uuidutils.is_uuid_like(name) for name in names):
        raise ValueError('member_of names no uuid: %r' % value)
    return (frozenset(), names) if forbidden else (names, frozenset())


def _group_policy(values: list[str]) -> str | None:
    if values and values[0] not in GROUP_POLICIES:
        raise ValueError('group_policy must be none or isolate')
    return values[0] if values else None


def _same_subtree(values: Iterable[str]) -> tuple[frozenset[str], ...]:
    found = []
    for value in values:
        suffixes = frozenset(part.strip() for part in value.split(','))
        if '' in suffixes:
            raise ValueError('same_subtree names the unsuffixed group')
        found.append(suffixes)
    return tuple(found)


def _root_traits(values: list[str]) -> dict[str, frozenset[str]]:
    """``root_required``: at most once; plain and ``!`` names only."""
    if len(values) > 1:
        raise ValueError('root_required given more than once')
    if not values:
        return {}
    any_of, forbidden = _traits(values[0], any_of=False)
    required = frozenset().union(*any_of)
    if required & forbidden:
        raise ValueError('root_required both requires and forbids')
    return {'root_required': required, 'root_forbidden': frozenset(forbidden)}


def _check_groups(request: Request) -> None:
    """The checks across groups (see the module)."""
    in_subtrees = frozenset().union(*request.same_subtree)
    resourceless = {suffix for suffix, group in request.groups.items()
                    if not group.resources}
    if not request.groups or resourceless == set(request.groups):
        raise ValueError('no group asks for resources')
    if resourceless - in_subtrees:
        raise ValueError('a group without resources is in no '
                         'same_subtree')
    if in_subtrees - set(request.groups):
        raise ValueError('same_subtree names no group')
    if len(request.numbered) > 1 and request.group_policy is None:
        raise ValueError('group_policy is required with several numbered '
                         'groups')
