"""RAM filters: keep hosts with enough free RAM after overcommit.

Follows Nova's BaseRamFilter / RamFilter.  The arithmetic
is Nova's, in MiB, so that the limit a compute node receives is the one
Nova would have sent.  An aggregate variant only has to override
``_get_ram_allocation_ratio`` (see ``utils.aggregate_allocation_ratio``).
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import utils

LOG = logging.getLogger(__name__)


class BaseRamFilter(filters.BaseHostFilter):
    """Free RAM after overcommit covers the flavor's ``memory_mb``.

    With ``total = total_usable_ram_mb``, ``ratio`` the allocation ratio
    and ``requested = flavor.memory_mb`` (all MiB):

    1. ``total < requested`` -> fail: an instance may not overcommit
       against itself, only against other instances;
    2. ``limit = total * ratio``; ``used = total - free_ram_mb``;
    3. ``limit - used < requested`` -> fail;
    4. pass, writing ``host_state.limits['memory_mb'] = limit`` for the
       compute node's claim.
    """

    RUN_ON_REBUILD = False

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        """The RAM allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()

    def host_passes(self, host_state, spec_obj):
        requested = spec_obj.memory_mb
        total = host_state.total_usable_ram_mb
        if total < requested:
            LOG.debug('%(host_state)s does not have %(requested)d MB of '
                      'usable RAM in total (%(total)d MB)',
                      {'host_state': host_state, 'requested': requested,
                       'total': total})
            return False
        ratio = self._get_ram_allocation_ratio(host_state, spec_obj)
        limit = total * ratio
        usable = limit - (total - host_state.free_ram_mb)
        if usable < requested:
            LOG.debug('%(host_state)s does not have %(requested)d MB usable '
                      'RAM, it only has %(usable)s MB usable RAM',
                      {'host_state': host_state, 'requested': requested,
                       'usable': usable})
            return False
        host_state.limits['memory_mb'] = limit
        return True

    def host_mask(self, table, rows, spec_obj):
        requested = spec_obj.memory_mb
        total = table.columns['total_usable_ram_mb'][rows]
        limit = total * utils.allocation_ratio_rows(
            self, table, rows, spec_obj, 'ram_allocation_ratio')
        usable = limit - (total - table.columns['free_ram_mb'][rows])
        return (total >= requested) & (usable >= requested)

    def apply_limits(self, host_state, spec_obj):
        ratio = self._get_ram_allocation_ratio(host_state, spec_obj)
        host_state.limits['memory_mb'] = (
            host_state.total_usable_ram_mb * ratio)


class RamFilter(BaseRamFilter):
    """BaseRamFilter with the host's ``ram_allocation_ratio``.

    The ratio is the compute node's, else ``[DEFAULT] ram_allocation_ratio``,
    else 1.5 (Nova's resolution: a NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        return utils.host_allocation_ratio(host_state,
                                           'ram_allocation_ratio')
