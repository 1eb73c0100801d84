"""Pre-checks of a requested live-migration destination.

Before Nova moved live migration to the conductor, its scheduler driver
checked a destination chosen by the operator itself: the compute service
had to be up (``hosts_up``) and the node had to have the memory and, for a
block migration, the disk of the instance
(``assert_compute_node_has_enough_memory`` / ``_disk`` / ``_resources``).
This module brings those checks back for a request marked as a live
migration (scheduler hint ``_nova_check_type=live_migrate``, see
``scheduler.engine.moves``) that names a ``requested_destination`` host:

* ``check_destination`` checks one HostState and raises
  ``MigrationPreCheckError(reason=...)`` with a readable reason;
* ``check_requested_destination`` is what ``FilterScheduler`` calls once
  per request, after refreshing the HostStates and before its loop.  An
  unknown destination raises ``ComputeHostNotFound``; a destination that
  fails a check is logged and refused with ``NoValidHost(reason=<the
  reason>)``.  NoValidHost, not MigrationPreCheckError, reaches the caller
  because Nova's conductor (``LiveMigrationTask``) handles NoValidHost from
  ``select_destinations`` and nothing else; the reason still says why.
  A destination that passes goes on through the normal pre-filters and
  filters, which may still refuse it.

Units: memory in MiB, disk in MiB (flavor root and ephemeral disk in GiB,
swap in MiB).  Allocation ratios are the node's (else the configured
value, else Nova's default), as the RAM and disk filters use; aggregate
ratios are not consulted.
"""

import functools
import typing

from oslo_log import log as logging

from scheduler import exception
from scheduler.engine import moves
from scheduler.resources import capacity
from scheduler.resources import ratios
from scheduler.view import servicegroup

LOG = logging.getLogger(__name__)


def _refuse(host_state: typing.Any, text: str,
            **values: typing.Any) -> typing.NoReturn:
    values['dest'] = '%s:%s' % (host_state.host, host_state.nodename)
    raise exception.MigrationPreCheckError(reason=text % values)


def check_host_is_up(host_state: typing.Any) -> None:
    """Raise MigrationPreCheckError unless the node's compute service is
    enabled and up.

    The same test as ``Scheduler.hosts_up`` and Nova's driver: a
    ``services`` row must exist, must not be ``disabled`` and must be up
    for ``scheduler.view.servicegroup.service_is_up`` (not ``forced_down``,
    last
    heartbeat at most ``[DEFAULT] service_down_time`` seconds old).
    """
    service = host_state.service
    if not service:
        _refuse(host_state, 'Destination %(dest)s has no compute service.')
    if service.get('disabled'):
        _refuse(host_state, 'The compute service of destination %(dest)s '
                'is disabled (%(why)s).',
                why=service.get('disabled_reason') or 'no reason given')
    if not servicegroup.service_is_up(service):
        _refuse(host_state, 'The compute service of destination %(dest)s '
                'is down.')


def _free(host_state: typing.Any, measure: capacity.Measure) -> float:
    """``capacity.free`` of ``measure`` on the host, with the host's own
    allocation ratio (the RAM and disk filters' measure and ratio)."""
    get = functools.partial(getattr, host_state)
    total = measure.total(get)
    ratio = ratios.host_allocation_ratio(host_state, measure.ratio)
    return typing.cast(float, capacity.free(
        total, measure.in_use(get, total), ratio))


def free_memory_mb(host_state: typing.Any) -> float:
    """Free RAM in MiB under the RAM allocation ratio:
    ``total * ratio - used`` with ``used = total - free_ram_mb``
    (``total = total_usable_ram_mb``).  May be negative."""
    return _free(host_state, capacity.MEMORY_MB)


def free_disk_mb(host_state: typing.Any) -> float:
    """Free local disk in MiB under the disk allocation ratio:
    ``total * ratio - used`` with ``total = total_usable_disk_gb * 1024``
    and ``used = total - free_disk_mb``.  May be negative."""
    return _free(host_state, capacity.DISK_MB)


def assert_compute_node_has_enough_memory(host_state: typing.Any,
                                          spec_obj: typing.Any) -> None:
    """Raise MigrationPreCheckError unless ``free_memory_mb(host_state)``
    (MiB, under the RAM allocation ratio) is at least the flavor's
    ``memory_mb`` (MiB).

    Nova's old driver compared the node's ``free_ram_mb`` to the
    instance's memory; the ratio is applied here as RamFilter does.
    """
    needed = spec_obj.memory_mb
    free = free_memory_mb(host_state)
    if free < needed:
        _refuse(host_state, 'Destination %(dest)s lacks memory: '
                '%(free)d MiB free, %(needed)d MiB needed.',
                free=free, needed=needed)


def assert_compute_node_has_enough_disk(host_state: typing.Any,
                                        spec_obj: typing.Any) -> None:
    """Raise MigrationPreCheckError unless ``free_disk_mb(host_state)``
    (MiB, under the disk allocation ratio) is at least the request's local
    disk: ``(root_gb + ephemeral_gb) * 1024 + swap`` MiB.

    A flavor without local disk (boot from volume) always passes.  Nova's
    old driver made this check only for a block migration; the request
    spec does not say which kind it is, so it is always made here.
    """
    needed = spec_obj.requested_resources_disk_mb
    if not needed:
        return
    free = free_disk_mb(host_state)
    if free < needed:
        _refuse(host_state, 'Destination %(dest)s lacks disk: '
                '%(free)d MiB free, %(needed)d MiB needed.',
                free=free, needed=needed)


def assert_compute_node_has_enough_resources(host_state: typing.Any,
                                             spec_obj: typing.Any) -> None:
    """Memory, then disk (the two checks above); raise
    MigrationPreCheckError on the first that fails."""
    assert_compute_node_has_enough_memory(host_state, spec_obj)
    assert_compute_node_has_enough_disk(host_state, spec_obj)


def check_destination(host_state: typing.Any, spec_obj: typing.Any) -> None:
    """All the pre-checks of one destination node, in Nova's order: the
    service is up and enabled, then enough memory and disk.

    Raises MigrationPreCheckError(reason=...) on the first failure;
    returns None when the node passes.
    """
    check_host_is_up(host_state)
    assert_compute_node_has_enough_resources(host_state, spec_obj)


def requested_destination(
        spec_obj: typing.Any) -> tuple[str, str | None] | None:
    """``(host, node)`` of a live migration's requested destination, or
    None when the request is not a live migration (``_nova_check_type``
    hint, ``scheduler.engine.moves``) or names no destination host; node None
    when not given."""
    if moves.move_type(spec_obj) != moves.LIVE_MIGRATE:
        return None
    dest = spec_obj.get('requested_destination')
    if dest is None or not dest.obj_get('host'):
        return None
    return dest.host, dest.obj_get('node') or None


def check_requested_destination(host_states: typing.Iterable[typing.Any],
                                spec_obj: typing.Any) -> None:
    """Pre-check the requested destination of a live migration.

    ``host_states``: the freshly refreshed HostStates.  Does nothing for
    other requests (see ``requested_destination``).  Otherwise:

    * no HostState for the host (and node, when given): raise
      ComputeHostNotFound(host=``host`` or ``host:node``);
    * the destination is the instance's current host (``moves.find_source``):
      refused, an instance cannot live-migrate to itself;
    * ``check_destination`` on each node of the destination: at least one
      must pass, else the first node's reason is logged and
      NoValidHost(reason=<reason>) is raised.
    """
    wanted = requested_destination(spec_obj)
    if wanted is None:
        return
    host, node = wanted
    host_states = list(host_states)
    nodes = [s for s in host_states
             if s.host == host and (node is None or s.nodename == node)]
    if not nodes:
        raise exception.ComputeHostNotFound(
            host=host if node is None else '%s:%s' % (host, node))
    errors = []
    source = moves.find_source(host_states, spec_obj)
    if source is not None and source[0].lower() == host.lower():
        errors.append('Destination %s is the current host of the '
                      'instance.' % host)
    else:
        for state in nodes:
            try:
                check_destination(state, spec_obj)
                return
            except exception.MigrationPreCheckError as exc:
                errors.append(exc.kwargs['reason'])
    reason = errors[0]
    LOG.info('Live migration of instance %(uuid)s refused: %(reason)s',
             {'uuid': spec_obj.obj_get('instance_uuid'), 'reason': reason})
    raise exception.NoValidHost(reason=reason)
