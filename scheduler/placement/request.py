"""A RequestSpec as Placement's allocation-candidates query, as Nova 34
builds it.

``from_request_spec`` is the translation of the request itself (Nova's
``ResourceRequest.from_request_spec``); ``for_scheduling`` adds what the
scheduler knows of the destination (Nova's
``resources_from_request_spec``).  The rules, in the order Nova applies
them:

1. ``request_level_params``: ``root_required``, ``root_forbidden`` and
   ``same_subtree`` are taken as they are.
2. Flavor extra specs: ``resources[S]:RC = N`` and ``trait[S]:T =
   required|forbidden`` go to the group of suffix ``S`` (the unsuffixed
   group without one); ``group_policy`` is kept when it is ``none`` or
   ``isolate``.  A resource class that is neither standard nor
   ``CUSTOM_*``, an amount that is not a non-negative integer and a trait
   value other than ``required``/``forbidden`` are ignored (Nova logs a
   warning).
3. The image's ``traits_required`` go to the unsuffixed group.
4. The CPU pinning policies (``hw:cpu_policy`` and its image property):
   ``dedicated`` asks PCPU instead of VCPU, ``mixed`` both, an isolated
   emulator thread one more PCPU; ``hw:cpu_thread_policy`` requires or
   forbids ``HW_CPU_HYPERTHREADING`` (``scheduler.placement.cpu_pinning``).
5. ``requested_resources`` (port and accelerator groups) join as they
   are, suffixed by their ``requester_id``, which must be set and new,
   and each must ask for something.
6. The flavor's sizes fill in what no group asked for: VCPU (unless VCPU
   or PCPU was asked), MEMORY_MB, and DISK_GB = ephemeral + swap (MiB,
   rounded up to GiB) + root unless the instance boots from volume
   (``is_bfv``); a disk of 0 is not asked.
7. Memory encryption, persistent memory, vTPM, PCI NUMA ``socket``
   affinity, secure boot, ``maxphysaddr`` and stateless firmware add
   their resources and traits to the unsuffixed group.
8. Zero amounts are dropped, and the groups left empty.

``for_scheduling`` then puts the destination's ``aggregates`` (each
entry ``"a,b"`` one ``member_of=in:a,b``) and ``forbidden_aggregates``
in the unsuffixed group; a requested (or forced) host or node narrows
the query to its provider tree (``in_tree``) when it names one compute
node, lifts the ``limit`` when it names several and raises NoValidHost
when it names none; the ``group``, ``same_host`` and
``different_host`` hints lift the limit too; and two suffixed groups or
more without a ``group_policy`` get ``none`` when at most one of them
came from the flavor (Nova logs a warning either way; with two from the
flavor the query goes without one and Placement refuses it).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from urllib import parse

import os_resource_classes as orc
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement import cpu_pinning
from scheduler.placement import hardware
from scheduler.placement import hardware_features

LOG = logging.getLogger(__name__)

# Flavor extra spec keys read as Placement requests: ``resources`` or
# ``trait``, an optional group suffix, ``:``, the class or trait name.
EXTRA_SPEC_KEY = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$')
GROUP_POLICIES = ('none', 'isolate')
TRAIT_KINDS = ('required', 'forbidden')
# Scheduler hints that make Nova ask Placement for every candidate.
UNLIMITED_HINTS = ('group', 'same_host', 'different_host')
MIB_PER_GIB = 1024


@dataclasses.dataclass
class Group:
    """One request group: ``suffix`` None for the unsuffixed group.

    ``resources`` maps resource classes to amounts; ``member_of`` is a
    list of aggregate uuid lists (one ``member_of=in:...`` each);
    ``in_tree`` a provider uuid or None."""

    suffix: str | None = None
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required: set[str] = dataclasses.field(default_factory=set)
    forbidden: set[str] = dataclasses.field(default_factory=set)
    member_of: list[list[str]] = dataclasses.field(default_factory=list)
    forbidden_aggregates: set[str] = dataclasses.field(default_factory=set)
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        """A suffixed group is satisfied by one provider."""
        return bool(self.suffix)

    def add_resource(self, resource_class: str, amount: Any) -> None:
        """Ask ``amount`` of ``resource_class`` (replacing an earlier
        amount); an unknown class or an amount that is not a
        non-negative integer is ignored with a warning, as Nova does."""
        if not (resource_class.startswith(orc.CUSTOM_NAMESPACE) or
                resource_class in orc.STANDARDS):
            LOG.warning('Ignoring the unknown resource class %r',
                        resource_class)
            return
        try:
            value = int(amount)
        except (TypeError, ValueError):
            value = -1
        if value < 0:
            LOG.warning('Ignoring resource amount %r of %s: not a '
                        'non-negative integer', amount, resource_class)
            return
        self.resources[resource_class] = value

    def add_trait(self, trait: str, kind: str) -> None:
        """Require or forbid ``trait``; another ``kind`` is ignored with a
        warning, as Nova does."""
        if kind == 'required':
            self.required.add(trait)
        elif kind == 'forbidden':
            self.forbidden.add(trait)
        else:
            LOG.warning('Ignoring trait %s=%r: only %s are supported',
                        trait, kind, ' and '.join(TRAIT_KINDS))

    def is_empty(self) -> bool:
        return not (self.resources or self.required or self.forbidden or
                    self.member_of or self.forbidden_aggregates)

    def strip_zeros(self) -> None:
        self.resources = {rc: amount for rc, amount in self.resources.items()
                          if amount}

    def query_params(self) -> list[tuple[str, str]]:
        """This group's ``(name, value)`` query parameters, values sorted
        as Nova writes them."""
        suffix = self.suffix or ''
        params = [('resources' + suffix, ','.join(sorted(
            '%s:%s' % item for item in self.resources.items())))]
        traits = sorted(self.required) + ['!' + trait for trait
                                          in sorted(self.forbidden)]
        if traits:
            params.append(('required' + suffix, ','.join(traits)))
        params.extend(sorted(('member_of' + suffix, 'in:' + ','.join(
            sorted(aggregates))) for aggregates in self.member_of))
        if self.in_tree:
            params.append(('in_tree' + suffix, self.in_tree))
        if self.forbidden_aggregates:
            params.append(('member_of' + suffix, '!in:' + ','.join(
                sorted(self.forbidden_aggregates))))
        return params


@dataclasses.dataclass
class ResourceRequest:
    """An allocation-candidates query: groups by suffix (None first),
    ``group_policy``, root traits, ``same_subtree`` suffix lists and the
    ``limit`` (None: every candidate)."""

    limit: int | None = None
    groups: dict[str | None, Group] = dataclasses.field(default_factory=dict)
    group_policy: str | None = None
    root_required: set[str] = dataclasses.field(default_factory=set)
    root_forbidden: set[str] = dataclasses.field(default_factory=set)
    same_subtree: list[list[str]] = dataclasses.field(default_factory=list)
    suffixed_groups_from_flavor: int = 0
    cpu_pinning_requested: bool = False

    def group(self, suffix: str | None = None) -> Group:
        """The group of ``suffix`` (None or '' for the unsuffixed one),
        created empty when new."""
        suffix = suffix or None
        if suffix not in self.groups:
            self.groups[suffix] = Group(suffix)
        return self.groups[suffix]

    @property
    def suffixed_groups(self) -> int:
        return sum(1 for suffix in self.groups if suffix is not None)

    def merged_resources(self) -> dict[str, int]:
        """Every group's resources added up by class."""
        merged: dict[str, int] = {}
        for group in self.groups.values():
            for resource_class, amount in group.resources.items():
                merged[resource_class] = (merged.get(resource_class, 0) +
                                          amount)
        return merged

    def add_outside_group(self, requested: Any) -> None:
        """Add a RequestGroup of ``requested_resources`` under its
        ``requester_id``.

        :raises InvalidRequestSpec: it has no ``requester_id`` or asks for
            nothing.
        :raises RequestGroupSuffixConflict: its ``requester_id`` is the
            suffix of a group already there.
        """
        suffix = requested.obj_get('requester_id')
        if not suffix:
            raise exception.InvalidRequestSpec(
                reason='a requested resource group has no requester_id')
        group = Group(
            suffix,
            resources=dict(requested.obj_get('resources') or {}),
            required=set(requested.obj_get('required_traits') or ()),
            forbidden=set(requested.obj_get('forbidden_traits') or ()),
            member_of=[list(aggregates) for aggregates
                       in requested.obj_get('aggregates') or ()],
            forbidden_aggregates=set(
                requested.obj_get('forbidden_aggregates') or ()),
            in_tree=requested.obj_get('in_tree'))
        if group.is_empty():
            raise exception.InvalidRequestSpec(
                reason='the requested resource group %s asks for nothing'
                % suffix)
        if suffix in self.groups:
            raise exception.RequestGroupSuffixConflict(suffix=suffix)
        self.groups[suffix] = group

    def strip_zeros(self) -> None:
        """Drop zero amounts, then the groups left empty."""
        for group in self.groups.values():
            group.strip_zeros()
        self.groups = {suffix: group for suffix, group in self.groups.items()
                       if not group.is_empty()}

    def query_params(self) -> list[tuple[str, str]]:
        """The ``GET /allocation_candidates`` parameters, sorted."""
        params: list[tuple[str, str]] = []
        if self.limit is not None:
            params.append(('limit', str(self.limit)))
        if self.group_policy is not None:
            params.append(('group_policy', self.group_policy))
        if self.root_required or self.root_forbidden:
            params.append(('root_required', ','.join(
                sorted(self.root_required) +
                ['!' + trait for trait in sorted(self.root_forbidden)])))
        params.extend(('same_subtree', ','.join(sorted(suffixes)))
                      for suffixes in self.same_subtree)
        for group in self.groups.values():
            params.extend(group.query_params())
        return sorted(params)

    def querystring(self) -> str:
        """The query string of ``GET /allocation_candidates``, as Nova
        sends it."""
        return parse.urlencode(self.query_params())


def from_request_spec(spec: Any, max_results: int | None,
                      translate_pinning: bool = True) -> ResourceRequest:
    """The ResourceRequest of a RequestSpec (rules 1-8 of the module),
    with ``limit`` ``max_results`` (``[scheduler]
    max_placement_results``).

    :raises InvalidRequestSpec: a requested resource group without
        ``requester_id`` or asking for nothing; conflicting or invalid
        ``hw:`` settings (``hardware.HardwareRequestError``, an
        InvalidRequestSpec).
    :raises RequestGroupSuffixConflict: two groups with one suffix.
    """
    request = ResourceRequest(limit=max_results)
    params = spec.obj_get('request_level_params')
    if params is not None:
        request.root_required = set(params.obj_get('root_required') or ())
        request.root_forbidden = set(params.obj_get('root_forbidden') or ())
        request.same_subtree = [list(suffixes) for suffixes
                                in params.obj_get('same_subtree') or ()]
    flavor = spec.flavor
    extra_specs = flavor.obj_get('extra_specs') or {}
    image_props = _image_properties(spec)
    _add_extra_specs(request, extra_specs)
    request.suffixed_groups_from_flavor = request.suffixed_groups
    for trait in image_props.get('traits_required') or ():
        request.group().add_trait(trait, 'required')
    if translate_pinning:
        _add_hardware(request, cpu_pinning.pinning_request(
            flavor.vcpus, extra_specs, image_props))
    for requested in spec.obj_get('requested_resources') or ():
        request.add_outside_group(requested)
    _add_flavor_sizes(request, spec)
    _add_hardware(request, hardware_features.feature_request(extra_specs,
                                                    image_props))
    request.strip_zeros()
    return request


NodeFinder = Callable[[str | None, str | None, Any], Sequence[Any]]


def for_scheduling(spec: Any, max_results: int | None,
                   find_nodes: NodeFinder,
                   translate_pinning: bool = True) -> ResourceRequest:
    """``from_request_spec`` plus the destination, the hints and the
    group policy default (the module's last paragraph).

    ``find_nodes(host, node, cell)`` returns the compute nodes (with
    ``uuid``, ``host`` and ``hypervisor_hostname``) a requested host
    and/or node names.  When it names exactly one and the spec has a
    ``requested_destination``, that destination gets its host and node,
    as Nova sets them.

    :raises NoValidHost: a requested or forced host or node names no
        compute node.
    """
    request = from_request_spec(spec, max_results, translate_pinning)
    destination = spec.obj_get('requested_destination')
    if destination is not None:
        _add_destination_aggregates(request, destination)
    host, node, cell = _target(spec, destination)
    if host or node:
        _narrow_to_target(request, destination, host, node,
                          find_nodes(host, node, cell))
    hints = spec.obj_get('scheduler_hints') or {}
    if any(hint in hints for hint in UNLIMITED_HINTS):
        request.limit = None
    _default_group_policy(request)
    return request


# -- the steps ----------------------------------------------------------------

def _image_properties(spec: Any) -> dict[str, Any]:
    image = spec.obj_get('image')
    properties = image.obj_get('properties') if image is not None else None
    if properties is None:
        return {}
    return {name: getattr(properties, name)
            for name in properties.fields
            if properties.obj_attr_is_set(name)}


def _add_extra_specs(request: ResourceRequest,
                     extra_specs: dict[str, str]) -> None:
    for key, value in extra_specs.items():
        if key == 'group_policy':
            _set_group_policy(request, value)
            continue
        match = EXTRA_SPEC_KEY.match(key)
        if match is None:
            continue
        prefix, suffix, name = match.groups()
        group = request.group(suffix)
        if prefix == 'resources':
            group.add_resource(name, value)
        else:
            group.add_trait(name, value)


def _set_group_policy(request: ResourceRequest, value: str) -> None:
    if value not in GROUP_POLICIES:
        LOG.warning('Ignoring group_policy %r: it is one of %s', value,
                    ', '.join(GROUP_POLICIES))
        return
    request.group_policy = value


def _add_hardware(request: ResourceRequest,
                  asked: hardware.HardwareRequest) -> None:
    group = request.group()
    if asked.cpu_pinning_requested:
        request.cpu_pinning_requested = True
    if asked.vcpus is not None:
        group.add_resource(orc.VCPU, asked.vcpus)
    if asked.pcpus is not None:
        group.add_resource(orc.PCPU, asked.pcpus)
    for resource_class, amount in asked.resources.items():
        group.add_resource(resource_class, amount)
    for trait in asked.required_traits:
        group.add_trait(trait, 'required')
    for trait in asked.forbidden_traits:
        group.add_trait(trait, 'forbidden')


def _add_flavor_sizes(request: ResourceRequest, spec: Any) -> None:
    asked = request.merged_resources()
    flavor = spec.flavor
    group = request.group()
    if orc.VCPU not in asked and orc.PCPU not in asked:
        group.add_resource(orc.VCPU, flavor.vcpus)
    if orc.MEMORY_MB not in asked:
        group.add_resource(orc.MEMORY_MB, flavor.memory_mb)
    if orc.DISK_GB not in asked:
        disk = ((flavor.obj_get('ephemeral_gb') or 0) +
                math.ceil((flavor.obj_get('swap') or 0) / MIB_PER_GIB))
        if not spec.obj_get('is_bfv'):
            disk += flavor.obj_get('root_gb') or 0
        if disk:
            group.add_resource(orc.DISK_GB, disk)


def _add_destination_aggregates(request: ResourceRequest,
                                destination: Any) -> None:
    aggregates = destination.obj_get('aggregates')
    if aggregates:
        request.group().member_of = [entry.split(',')
                                     for entry in aggregates]
    forbidden = destination.obj_get('forbidden_aggregates')
    if forbidden:
        request.group().forbidden_aggregates |= set(forbidden)


def _target(spec: Any, destination: Any
            ) -> tuple[str | None, str | None, Any]:
    """The requested host, node and cell: the destination's, else the
    first forced host and node."""
    host = node = cell = None
    if destination is not None:
        host = destination.obj_get('host')
        node = destination.obj_get('node')
        cell = destination.obj_get('cell')
    host = host or _first(spec.obj_get('force_hosts'))
    node = node or _first(spec.obj_get('force_nodes'))
    return host, node, cell


def _first(values: Iterable[str] | None) -> str | None:
    return next(iter(values or ()), None)


def _narrow_to_target(request: ResourceRequest, destination: Any,
                      host: str | None, node: str | None,
                      nodes: Sequence[Any]) -> None:
    if not nodes:
        raise exception.NoValidHost(
            reason='No such host - host: %s node: %s ' % (host, node))
    if len(nodes) > 1:
        request.limit = None
        return
    found = nodes[0]
    if destination is not None:
        destination.host = found.host
        destination.node = found.hypervisor_hostname
    request.group().in_tree = found.uuid


def _default_group_policy(request: ResourceRequest) -> None:
    if request.suffixed_groups < 2 or request.group_policy:
        return
    LOG.warning('The allocation candidates query has %d numbered request '
                'groups and no group_policy; a flavor with several numbered '
                'groups must set group_policy to none or isolate',
                request.suffixed_groups)
    if request.suffixed_groups_from_flavor <= 1:
        LOG.info('Numbered request groups come from outside the flavor '
                 '(ports, accelerators) and the flavor sets no '
                 'group_policy: using group_policy=none')
        request.group_policy = 'none'
