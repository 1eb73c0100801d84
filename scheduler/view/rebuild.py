"""Which request is Nova's own rebuild: its shape, confirmed by the view.

A rebuild (Nova's compute API, ``rebuild`` with a new image) asks the
scheduler only whether the instance's current host still takes the new
image: the filters that do not ``RUN_ON_REBUILD`` are skipped and
nothing is claimed (the instance already holds its resources there).
Before OSSA-2026-022 (CVE-2026-46448) Nova's API passed a user's
``_nova_*`` scheduler hints through, so a boot could carry
``_nova_check_type=rebuild`` and skip the filters and the claim.
``is_rebuild`` is the one decision every reader of the hint uses (the
filter handler, TrustedFilter, the pipeline, ``engine.moves`` and the
Placement candidate source).

Nova's rebuild shape (``nova/compute/api.py`` ``API.rebuild`` and
``nova/conductor/manager.py`` ``rebuild_instance``, Newton to 34)
    * ``scheduler_hints['_nova_check_type'] == ['rebuild']``;
    * ``force_hosts == [instance.host]`` and ``force_nodes ==
      [instance.node]``: exactly one of each;
    * no ``ignore_hosts`` (the RequestSpec does not persist it);
    * ``requested_destination`` None, or naming only the instance's cell
      (the conductor's ``_restrict_request_spec_to_cell``, since Pike):
      a host or node in it, if any, is the forced one;
    * ``instance_uuid`` set.

Confirmation by the view
    The HostStates given (the hosts left after forcing) include the
    forced host (compared case-insensitively, as ``force_hosts``) and
    node (exactly), and that HostState's ``instances`` holds the
    instance, whose recorded ``node``, if any, is the forced node.  A
    caller that claims (the Placement source) also asks ``allocated``:
    whether the instance holds allocations on that node in Placement,
    which is what makes skipping the claim safe.

Anything else carrying the hint is not a rebuild: the hint is ignored
and one WARNING names the instance and the hint (once per request
object, however many readers ask).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

CHECK_TYPE_HINT = '_nova_check_type'
REBUILD = 'rebuild'

# The (hint value, instance uuid) pairs each live request was warned
# about: keyed by the request object itself, weakly, so an entry goes
# with its request (an id would pass to the next request given the same
# memory, and its warning would be lost).
_warned: weakref.WeakKeyDictionary[Any, set[tuple[str, str | None]]] = (
    weakref.WeakKeyDictionary())
_warned_lock = threading.Lock()


def instance_uuid(spec_obj: Any) -> str | None:
    """``spec_obj.instance_uuid``, None when unset."""
    getter = getattr(spec_obj, 'obj_get', None)
    if getter is not None:
        return getter('instance_uuid')
    return getattr(spec_obj, 'instance_uuid', None)


def _destination_fits(dest: Any, host: str, node: str) -> bool:
    if dest is None:
        return True
    dest_host = dest.obj_get('host')
    dest_node = dest.obj_get('node')
    return ((not dest_host or dest_host.lower() == host.lower()) and
            (not dest_node or dest_node == node))


def rebuild_target(spec_obj: Any) -> tuple[str, str] | None:
    """``(host, node)`` when ``spec_obj`` has Nova's rebuild shape (see
    the module), else None.  Reads the request only."""
    if spec_obj.get_scheduler_hint(CHECK_TYPE_HINT) != REBUILD:
        return None
    force_hosts = spec_obj.get('force_hosts') or []
    force_nodes = spec_obj.get('force_nodes') or []
    if len(force_hosts) != 1 or len(force_nodes) != 1:
        return None
    host, node = force_hosts[0], force_nodes[0]
    if (not instance_uuid(spec_obj) or spec_obj.get('ignore_hosts') or
            not _destination_fits(spec_obj.get('requested_destination'),
                                  host, node)):
        return None
    return host, node


def recorded_node(instance: Any) -> str | None:
    """The ``node`` an instance (an Instance object or a dict) records,
    else None."""
    getter = getattr(instance, 'obj_get', None)
    if getter is not None:
        return getter('node')
    if isinstance(instance, dict):
        return instance.get('node')
    return None


def holds_instance(state: Any, host: str, node: str, uuid: str) -> bool:
    """Whether HostState ``state`` is ``host`` (any case) and ``node``
    and its ``instances`` hold instance ``uuid`` (recorded on ``node``,
    when the record names a node)."""
    if state.host.lower() != host.lower() or state.nodename != node:
        return False
    instance = (state.instances or {}).get(uuid)
    if instance is None:
        return False
    recorded = recorded_node(instance)
    return recorded is None or recorded == node


def is_rebuild(spec_obj: Any, host_states: Iterable[Any] | None = None,
               allocated: Callable[[str, str], bool] | None = None
               ) -> bool:
    """Whether ``spec_obj`` is treated as Nova's rebuild (see the module).

    ``host_states``: HostStates of which one must be the forced host and
    node holding the instance (None: not asked).  ``allocated(instance
    uuid, node)``: whether Placement holds the instance's allocations on
    the node (None: not asked).  At least one must be given.  A request
    that carries ``_nova_check_type=rebuild`` and is not one is logged
    once (WARNING) and gets False.
    """
    hint = spec_obj.get_scheduler_hint(CHECK_TYPE_HINT)
    if hint != REBUILD:
        return False
    target = rebuild_target(spec_obj)
    uuid = instance_uuid(spec_obj)
    if target is None or uuid is None:
        warn_ignored(spec_obj, hint, 'the request is not in the shape of '
                     'Nova\'s rebuild (forced to the instance\'s host and '
                     'node)')
        return False
    host, node = target
    if host_states is not None and not any(
            holds_instance(state, host, node, uuid)
            for state in host_states):
        warn_ignored(spec_obj, hint, 'the instance is not on %s:%s in the '
                     'host view' % (host, node))
        return False
    if allocated is not None and not allocated(uuid, node):
        warn_ignored(spec_obj, hint, 'the instance holds no allocation on '
                     'node %s in Placement' % node)
        return False
    return host_states is not None or allocated is not None


def warn_ignored(spec_obj: Any, hint: Any, why: str) -> None:
    """One WARNING per request object and hint value: the ``_nova_check_
    type`` hint ``hint`` of the request for instance ``spec_obj.
    instance_uuid`` is ignored, because ``why``."""
    key = (str(hint), instance_uuid(spec_obj))
    with _warned_lock:
        try:
            given = _warned.setdefault(spec_obj, set())
        except TypeError:   # not weakly referable: each call warns
            given = set()
        if key in given:
            return
        given.add(key)
    LOG.warning('Ignoring the scheduler hint %s=%s of the request for '
                'instance %s: %s (OSSA-2026-022: an unpatched nova-api '
                'passes users\' _nova_* hints through)', CHECK_TYPE_HINT,
                hint, instance_uuid(spec_obj), why)
