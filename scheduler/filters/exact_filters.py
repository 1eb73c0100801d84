"""Exact-fit resource filters for bare-metal nodes.

Follows Nova's ``exact_ram_filter``, ``exact_core_filter`` and
``exact_disk_filter`` (Juno to 17.0): a node
passes only when the request takes exactly what the node has free, and the
limit handed to the compute claim is the node's total, so the claim of a
second instance on the same node fails.
"""

import functools
import typing

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.filters import overcommit
from scheduler.resources import capacity

LOG = logging.getLogger(__name__)


class _BaseExactFilter(BaseHostFilter):
    """Pass when the requested amount equals the host's free amount; on
    pass set ``limits[limit_key]`` to the host's total.  The amounts are
    those of the class's ``capacity.Measure`` (as the RAM, vCPU and disk
    filters read them), without overcommit."""

    HOST_LOCAL = True

    # The measured resource; the key of ``host_state.limits`` written on
    # pass; what is compared (for the log message).
    measure: typing.ClassVar[capacity.Measure]
    limit_key: typing.ClassVar[str | None] = None
    resource: typing.ClassVar[str | None] = None

    def _requested(self, spec_obj: typing.Any) -> typing.Any:
        return getattr(spec_obj, self.measure.request)

    def _free(self, host_state: typing.Any) -> typing.Any:
        return self.measure.unused(functools.partial(getattr, host_state))

    def _total(self, host_state: typing.Any) -> typing.Any:
        return getattr(host_state, self.measure.size)

    def host_passes(self, host_state: typing.Any,
                    spec_obj: typing.Any) -> bool:
        requested = self._requested(spec_obj)
        free = self._free(host_state)
        if requested != free:
            LOG.debug('%(host)s does not have exactly %(requested)s '
                      '%(resource)s, it has %(free)s',
                      {'host': host_state, 'requested': requested,
                       'resource': self.resource, 'free': free})
            return False
        host_state.limits[self.limit_key] = self._total(host_state)
        return True

    def explain(self, host_state: typing.Any, spec_obj: typing.Any) -> str:
        """``exactly 2,048 MB of usable RAM asked, the host has 4,096``."""
        return 'exactly %s %s asked, the host has %s' % (
            overcommit.amount(self._requested(spec_obj)), self.resource,
            overcommit.amount(self._free(host_state)))

    def explain_group(self, host_state: typing.Any,
                      spec_obj: typing.Any) -> str:
        return 'no exact fit (%s)' % type(self).__name__


class ExactRamFilter(_BaseExactFilter):
    """Pass when the flavor's ``memory_mb`` equals the host's
    ``free_ram_mb`` (MiB); sets ``limits['memory_mb']`` to
    ``total_usable_ram_mb``."""

    measure = capacity.MEMORY_MB
    limit_key = capacity.MEMORY_MB.limit_key
    resource = 'MB of usable RAM'


class ExactCoreFilter(_BaseExactFilter):
    """Pass when the flavor's ``vcpus`` equals the host's free vCPUs
    (``vcpus_total - vcpus_used``); sets ``limits['vcpu']`` to
    ``vcpus_total``.  A host that reports no vCPUs (0 or None) fails,
    unlike CoreFilter's fail-safe pass."""

    HOST_LOCAL = True

    measure = capacity.VCPUS
    limit_key = capacity.VCPUS.limit_key
    resource = 'usable vCPUs'

    def host_passes(self, host_state: typing.Any,
                    spec_obj: typing.Any) -> bool:
        if not host_state.vcpus_total:
            LOG.debug('%s reports no vCPUs', host_state)
            return False
        return super().host_passes(host_state, spec_obj)

    def explain(self, host_state: typing.Any, spec_obj: typing.Any) -> str:
        if not host_state.vcpus_total:
            return 'the host reports no vCPUs'
        return super().explain(host_state, spec_obj)


class ExactDiskFilter(_BaseExactFilter):
    """Pass when the flavor's disk in MiB (``1024 * (root_gb +
    ephemeral_gb) + swap``) equals the host's ``free_disk_mb``; sets
    ``limits['disk_gb']`` to ``total_usable_disk_gb`` (GiB)."""

    measure = capacity.DISK_MB
    limit_key = capacity.DISK_MB.limit_key
    resource = 'MB of usable disk'
