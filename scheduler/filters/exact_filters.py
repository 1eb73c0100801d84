"""Exact-fit resource filters for bare-metal nodes.

Follows Nova's ``exact_ram_filter``, ``exact_core_filter`` and
``exact_disk_filter`` (Juno to 17.0): a node
passes only when the request takes exactly what the node has free, and the
limit handed to the compute claim is the node's total, so the claim of a
second instance on the same node fails.
"""

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter

LOG = logging.getLogger(__name__)


class _BaseExactFilter(BaseHostFilter):
    """Pass when the requested amount equals the host's free amount; on
    pass set ``limits[limit_key]`` to the host's total."""

    # Key of ``host_state.limits`` written on pass, and what is compared
    # (for the log message).
    limit_key = None
    resource = None

    def _requested(self, spec_obj):
        raise NotImplementedError()

    def _free(self, host_state):
        raise NotImplementedError()

    def _total(self, host_state):
        raise NotImplementedError()

    def host_passes(self, host_state, spec_obj):
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


class ExactRamFilter(_BaseExactFilter):
    """Pass when the flavor's ``memory_mb`` equals the host's
    ``free_ram_mb`` (MiB); sets ``limits['memory_mb']`` to
    ``total_usable_ram_mb``."""

    limit_key = 'memory_mb'
    resource = 'MB of usable RAM'

    def _requested(self, spec_obj):
        return spec_obj.memory_mb

    def _free(self, host_state):
        return host_state.free_ram_mb

    def _total(self, host_state):
        return host_state.total_usable_ram_mb


class ExactCoreFilter(_BaseExactFilter):
    """Pass when the flavor's ``vcpus`` equals the host's free vCPUs
    (``vcpus_total - vcpus_used``); sets ``limits['vcpu']`` to
    ``vcpus_total``.  A host that reports no vCPUs (0 or None) fails,
    unlike CoreFilter's fail-safe pass."""

    limit_key = 'vcpu'
    resource = 'usable vCPUs'

    def _requested(self, spec_obj):
        return spec_obj.vcpus

    def _free(self, host_state):
        return host_state.vcpus_total - host_state.vcpus_used

    def _total(self, host_state):
        return host_state.vcpus_total

    def host_passes(self, host_state, spec_obj):
        if not host_state.vcpus_total:
            LOG.debug('%s reports no vCPUs', host_state)
            return False
        return super().host_passes(host_state, spec_obj)


class ExactDiskFilter(_BaseExactFilter):
    """Pass when the flavor's disk in MiB (``1024 * (root_gb +
    ephemeral_gb) + swap``) equals the host's ``free_disk_mb``; sets
    ``limits['disk_gb']`` to ``total_usable_disk_gb`` (GiB)."""

    limit_key = 'disk_gb'
    resource = 'MB of usable disk'

    def _requested(self, spec_obj):
        return spec_obj.requested_resources_disk_mb

    def _free(self, host_state):
        return host_state.free_disk_mb

    def _total(self, host_state):
        return host_state.total_usable_disk_gb
