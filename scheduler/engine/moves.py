"""Moves of an existing instance: which request is one, and its source.

Nova's conductor calls ``select_destinations`` for a resize, a cold or
live migration and an evacuation with the RequestSpec of the instance
being moved.  Nova's callers keep the instance off its current host by
putting that host in ``ignore_hosts``; this module gives the scheduler
the same rule for callers that do not, so that the decision does not
depend on every caller getting it right.

What is a move (``check_type``, the one decision on the hint)
    * the scheduler hint ``_nova_check_type`` is one of ``resize``,
      ``migrate``, ``live_migrate`` or ``evacuate`` and the instance has a
      source (below).  Nova itself only ever sends ``rebuild`` in that
      hint; the four move values are this service's documented extension;
    * ``rebuild`` counts only in the shape of Nova's own rebuild, forced
      to the host and node the view finds the instance on
      (``scheduler.view.rebuild.is_rebuild``, OSSA-2026-022);
    * a hint on a request for an instance that is on no host (a boot: an
      unpatched nova-api passes users' ``_nova_*`` hints through), or a
      ``rebuild`` hint in any other shape, is ignored, with one WARNING
      naming the instance and the hint;
    * or, without such a hint, ``spec_obj.instance_uuid`` is already among
      the ``instances`` of some HostState: the instance exists, so the
      request moves it (Nova's conductor sends the spec of the existing
      instance for every move; a new instance is on no host yet).  Such a
      move is treated as a resize, the most common one, whose rule is the
      most permissive (see below).

The source
    The host (and node) whose ``HostState.instances`` holds the instance's
    uuid.  The hint ``_nova_source_host`` (``host`` or ``host:node``)
    overrides the lookup, for callers whose instances the scheduler does
    not see (no instance rows, or instance tracking out of date).

Source exclusion (``exclude_source``, run by
``Pipeline.get_filtered_hosts`` after ``requested_destination`` and
before ``ignore_hosts`` / ``force_*`` and the filters)
    * ``migrate``, ``live_migrate``, ``evacuate``: every node of the source
      host is removed, as Nova's conductor does with ``ignore_hosts``.  Nova
      also lets a cold migration stay when ``allow_resize_to_same_host`` is
      set (only for drivers able to do so); this service does not;
    * ``resize``: removed unless ``[DEFAULT] allow_resize_to_same_host`` is
      True (Nova's option and default, False);
    * ``rebuild`` (confirmed): never removed; Nova keeps a rebuild on its
      host with ``force_hosts`` / ``force_nodes``;
    * a move found only from the instance's host (no hint) follows the
      resize rule, and is left alone when ``force_hosts`` or
      ``force_nodes`` is set (the caller pinned the placement itself, as
      an Ocata rebuild does without a hint);
    * a plain boot (no hint, instance on no host) is unchanged.

Host names are compared case-insensitively, as ``ignore_hosts``.  As in
Queens, a request whose ``_nova_check_type`` hint is honoured
(``check_type``) runs the filters even on forced hosts
(``Pipeline.get_filtered_hosts``), so a forced move with a hint is
filtered (a hint that is ignored leaves a forced request unfiltered, as
a forced boot); Nova never calls the scheduler for a
forced live migration or evacuation.  When the
source host stays allowed, ServerGroupAntiAffinityFilter lets the instance
stay next to itself: as Nova's, it passes a host that already runs the
instance being scheduled (``affinity_filter``).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING

from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.view import rebuild

if TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState

LOG = logging.getLogger(__name__)

CHECK_TYPE_HINT = rebuild.CHECK_TYPE_HINT
SOURCE_HOST_HINT = '_nova_source_host'

RESIZE = 'resize'
MIGRATE = 'migrate'
LIVE_MIGRATE = 'live_migrate'
EVACUATE = 'evacuate'
REBUILD = rebuild.REBUILD

MOVE_TYPES = (RESIZE, MIGRATE, LIVE_MIGRATE, EVACUATE)

# ``exclude_source``'s default: decide the check type over its hosts.
_UNDECIDED = object()


def move_type(spec_obj: RequestSpec) -> str | None:
    """The move named by the ``_nova_check_type`` hint, else None.

    Returns one of ``MOVE_TYPES`` (``resize``, ``migrate``,
    ``live_migrate``, ``evacuate``).  ``rebuild`` (the only value Nova
    sends) and any other value are not moves and give None, as does a
    request without the hint.  A move that is only known from the
    instance's current host is not reported here (see ``exclude_source``).
    """
    value = spec_obj.get_scheduler_hint(CHECK_TYPE_HINT)
    if isinstance(value, str) and value in MOVE_TYPES:
        return value
    return None


def _instance_uuid(spec_obj: RequestSpec) -> str | None:
    return rebuild.instance_uuid(spec_obj)


def check_type(host_states: Iterable[HostState], spec_obj: RequestSpec
               ) -> str | None:
    """The ``_nova_check_type`` honoured for ``spec_obj``, else None.

    ``host_states``: the view's HostStates the request may use.  Returns
    ``rebuild`` for Nova's rebuild confirmed by the view
    (``rebuild.is_rebuild``), one of ``MOVE_TYPES`` when the hint names it
    and the instance has a source (``find_source``), and None for a
    request without the hint.  Any other hinted request gets None and one
    WARNING naming the instance and the hint (see the module).
    """
    hint = spec_obj.get_scheduler_hint(CHECK_TYPE_HINT)
    if hint is None:
        return None
    host_states = list(host_states)
    if hint == REBUILD:
        return REBUILD if rebuild.is_rebuild(spec_obj, host_states) else None
    if not isinstance(hint, str) or hint not in MOVE_TYPES:
        rebuild.warn_ignored(spec_obj, hint, 'not a value this service '
                             'knows')
        return None
    if find_source(host_states, spec_obj) is None:
        rebuild.warn_ignored(spec_obj, hint, 'the instance is on no host')
        return None
    return hint


def _source_from_hint(spec_obj: RequestSpec
                      ) -> tuple[str, str | None] | None:
    value = spec_obj.get_scheduler_hint(SOURCE_HOST_HINT)
    if not value or not isinstance(value, str):
        return None
    host, _sep, node = value.strip().partition(':')
    if not host:
        return None
    return host, node or None


def find_source(host_states: Iterable[HostState], spec_obj: RequestSpec
                ) -> tuple[str, str | None] | None:
    """The instance's current ``(host, node)``, or None.

    ``host_states`` is an iterable of HostState.  The hint
    ``_nova_source_host`` (``host`` or ``host:node``; node None when not
    given) wins; otherwise the first HostState whose ``instances`` (keys:
    instance uuids) holds ``spec_obj.instance_uuid`` gives the host, and
    the node is the instance's ``node`` when it records one, else that
    HostState's nodename.  A request without an instance uuid, or whose
    instance is on none of ``host_states``, has no source (None).
    """
    hinted = _source_from_hint(spec_obj)
    if hinted is not None:
        return hinted
    uuid = _instance_uuid(spec_obj)
    if not uuid:
        return None
    for state in host_states:
        instances = state.instances or {}
        if uuid in instances:
            node = rebuild.recorded_node(instances[uuid]) or state.nodename
            return state.host, node
    return None


def _excludes_source(kind: str, spec_obj: RequestSpec) -> bool:
    """Whether a move of ``kind`` leaves its source host (see module)."""
    if kind == RESIZE:
        return not CONF.allow_resize_to_same_host
    return kind in MOVE_TYPES


def exclude_source(host_states: Iterable[HostState], spec_obj: RequestSpec,
                   kind: str | None | object = _UNDECIDED
                   ) -> list[HostState]:
    """``host_states`` without the source host of a move, as a new list.

    Follows the rules of the module docstring: Nova's conductor puts the
    source in ``ignore_hosts`` for migrations and evacuations, and for a
    resize unless ``allow_resize_to_same_host``.  Every node of the source
    host goes (host names compared case-insensitively, as
    ``ignore_hosts``).  Returns the hosts unchanged (as a list) for a boot,
    a confirmed rebuild, a move whose source is unknown (its hint is
    ignored, ``check_type``), and a resize allowed to stay.  ``kind``:
    ``check_type`` of the request when the caller decided it over more
    hosts than ``host_states`` (before a ``requested_destination``
    narrowed them); by default it is decided over ``host_states``.
    """
    host_states = list(host_states)
    move = (check_type(host_states, spec_obj) if kind is _UNDECIDED
            else typing.cast('str | None', kind))
    if move == REBUILD:
        return host_states
    source = find_source(host_states, spec_obj)
    if source is None:
        return host_states
    if move is None:
        if spec_obj.get('force_hosts') or spec_obj.get('force_nodes'):
            return host_states
        move = RESIZE
    if not _excludes_source(move, spec_obj):
        LOG.debug('The %s of instance %s may stay on its host %s', move,
                  _instance_uuid(spec_obj), source[0])
        return host_states
    source_host = source[0].lower()
    result = [s for s in host_states if s.host.lower() != source_host]
    LOG.debug('Excluding source host %s from the %s of instance %s (%d '
              'node(s) removed)', source[0], move, _instance_uuid(spec_obj),
              len(host_states) - len(result))
    return result
