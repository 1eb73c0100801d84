"""Disk filters: keep hosts with enough free local disk after overcommit.

Follows Nova's DiskFilter.  Swap counts here although
``HostState.consume_from_request`` does not subtract it: Nova's DiskFilter
asks for root + ephemeral + swap, its HostState consumes root + ephemeral.
An aggregate variant only has to override ``_get_disk_allocation_ratio``
(see ``utils.aggregate_allocation_ratio``).
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import utils

LOG = logging.getLogger(__name__)


class BaseDiskFilter(filters.BaseHostFilter):
    """Free disk after overcommit covers root + ephemeral + swap.

    In MiB: ``requested = 1024 * (root_gb + ephemeral_gb) + swap``,
    ``total = total_usable_disk_gb * 1024``.

    1. ``total < requested`` -> fail: no overcommit against itself;
    2. ``limit = total * ratio``; ``used = total - free_disk_mb``;
    3. ``limit - used < requested`` -> fail;
    4. pass, writing ``host_state.limits['disk_gb'] = limit / 1024`` (GiB,
       possibly fractional, as Nova).
    """

    RUN_ON_REBUILD = False

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        """The disk allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()

    def host_passes(self, host_state, spec_obj):
        requested = spec_obj.requested_resources_disk_mb
        total = host_state.total_usable_disk_gb * 1024
        if total < requested:
            LOG.debug('%(host_state)s does not have %(requested)d MB of '
                      'usable disk in total (%(total)d MB)',
                      {'host_state': host_state, 'requested': requested,
                       'total': total})
            return False
        ratio = self._get_disk_allocation_ratio(host_state, spec_obj)
        limit = total * ratio
        usable = limit - (total - host_state.free_disk_mb)
        if usable < requested:
            LOG.debug('%(host_state)s does not have %(requested)d MB usable '
                      'disk, it only has %(usable)s MB usable disk',
                      {'host_state': host_state, 'requested': requested,
                       'usable': usable})
            return False
        host_state.limits['disk_gb'] = limit / 1024
        return True

    def host_mask(self, table, rows, spec_obj):
        requested = spec_obj.requested_resources_disk_mb
        total = table.columns['total_usable_disk_gb'][rows] * 1024
        limit = total * utils.allocation_ratio_rows(
            self, table, rows, spec_obj, 'disk_allocation_ratio')
        usable = limit - (total - table.columns['free_disk_mb'][rows])
        return (total >= requested) & (usable >= requested)

    def apply_limits(self, host_state, spec_obj):
        ratio = self._get_disk_allocation_ratio(host_state, spec_obj)
        host_state.limits['disk_gb'] = (
            host_state.total_usable_disk_gb * 1024 * ratio / 1024)


class DiskFilter(BaseDiskFilter):
    """BaseDiskFilter with the host's ``disk_allocation_ratio``.

    The ratio is the compute node's, else
    ``[DEFAULT] disk_allocation_ratio``, else 1.0 (Nova's resolution: a
    NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        return utils.host_allocation_ratio(host_state,
                                           'disk_allocation_ratio')
