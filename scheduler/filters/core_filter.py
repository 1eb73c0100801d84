"""vCPU filters: keep hosts with enough free vCPUs after overcommit.

Follows Nova's BaseCoreFilter / CoreFilter.  An aggregate
variant only has to override ``_get_cpu_allocation_ratio`` (see
``utils.aggregate_allocation_ratio``).
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import utils

LOG = logging.getLogger(__name__)


class BaseCoreFilter(filters.BaseHostFilter):
    """Free vCPUs after overcommit cover the flavor's ``vcpus``.

    1. ``vcpus_total`` 0 or None -> pass with a warning: the host does not
       report its CPUs, so nothing can be checked (Nova's fail-safe);
    2. ``limit = vcpus_total * ratio``;
    3. when ``limit > 0``: write ``host_state.limits['vcpu'] = limit`` (as
       Nova, before the checks below, so a failing host gets it too), and
       fail when ``requested > vcpus_total``: an instance may not
       overcommit against itself;
    4. ``limit - vcpus_used < requested`` -> fail; otherwise pass.
    """

    RUN_ON_REBUILD = False

    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        """The CPU allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()

    def host_passes(self, host_state, spec_obj):
        if not host_state.vcpus_total:
            LOG.warning('%(host_state)s reports no vCPUs; assuming its CPU '
                        'collection is broken and letting it pass',
                        {'host_state': host_state})
            return True
        requested = spec_obj.vcpus
        ratio = self._get_cpu_allocation_ratio(host_state, spec_obj)
        limit = host_state.vcpus_total * ratio
        if limit > 0:
            host_state.limits['vcpu'] = limit
            if requested > host_state.vcpus_total:
                LOG.debug('%(host_state)s does not have %(requested)d vCPUs '
                          'in total (%(total)d)',
                          {'host_state': host_state, 'requested': requested,
                           'total': host_state.vcpus_total})
                return False
        free = limit - host_state.vcpus_used
        if free < requested:
            LOG.debug('%(host_state)s does not have %(requested)d usable '
                      'vCPUs, it only has %(free)s usable vCPUs',
                      {'host_state': host_state, 'requested': requested,
                       'free': free})
            return False
        return True

    def host_mask(self, table, rows, spec_obj):
        requested = spec_obj.vcpus
        total = table.columns['vcpus_total'][rows]
        limit = total * utils.allocation_ratio_rows(
            self, table, rows, spec_obj, 'cpu_allocation_ratio')
        too_big = (limit > 0) & (requested > total)
        free = limit - table.columns['vcpus_used'][rows]
        return (total == 0) | (~too_big & (free >= requested))

    def apply_limits(self, host_state, spec_obj):
        if not host_state.vcpus_total:
            return
        limit = host_state.vcpus_total * self._get_cpu_allocation_ratio(
            host_state, spec_obj)
        if limit > 0:
            host_state.limits['vcpu'] = limit


class CoreFilter(BaseCoreFilter):
    """BaseCoreFilter with the host's ``cpu_allocation_ratio``.

    The ratio is the compute node's, else ``[DEFAULT] cpu_allocation_ratio``,
    else 16.0 (Nova's resolution: a NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        return utils.host_allocation_ratio(host_state,
                                           'cpu_allocation_ratio')
