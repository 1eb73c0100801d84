"""PciPassthroughFilter: keep hosts whose PCI pools can serve the request.

Follows Nova's PciPassthroughFilter:

* the request has no PCI requests (``spec_obj.pci_requests`` unset, None
  or an empty ``requests`` list) -> pass;
* the host has no PCI pools (``host_state.pci_stats`` None: the
  ``compute_nodes.pci_stats`` column is NULL) -> fail;
* otherwise pass when ``scheduler.resources.pci_pools.support_requests(pools,
  requests)``
  holds: every request finds ``count`` free devices in the pools matching
  one of its specs (``vendor_id``/``product_id``/tags; module
  ``scheduler.resources.pci_pools``), requests served in order;
* in Placement mode (``host_state.allocation_candidates`` set), as Nova
  34: that check with each allocation candidate's ``mappings`` (a
  request whose devices Placement allocates uses the pools of the
  providers the candidate maps its groups to:
  ``scheduler.resources.pci_placement``); the candidates that fail are
  dropped, and the host passes when one is left
  (``filters.filter_candidates``).

No NUMA restriction is applied here (as Nova): NUMA affinity of the
devices is checked by the NUMATopologyFilter, which fits PCI requests
together with the instance's NUMA cells.  A host whose pools cannot be
read fails, with a warning.  No options; no limits are written.
"""

from oslo_log import log as logging

from scheduler import filters
from scheduler.resources import pci_pools

LOG = logging.getLogger(__name__)


class PciPassthroughFilter(filters.BaseHostFilter):
    """Pass hosts that have the PCI devices the request asks for."""

    HOST_LOCAL = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        requests = pci_pools.request_list(spec_obj.obj_get('pci_requests'))
        if not requests:
            return True
        if host_state.pci_stats is None:
            LOG.debug('%(host_state)s has no PCI devices',
                      {'host_state': host_state})
            return False
        try:
            pools = pci_pools.parse_pools(host_state.pci_stats)
            supported = filters.filter_candidates(
                host_state, lambda mapping: pci_pools.support_requests(
                    pools, requests, provider_mapping=mapping))
        except pci_pools.InvalidPciPools as exc:
            LOG.warning('%(host_state)s: unreadable PCI pools: %(error)s',
                        {'host_state': host_state, 'error': exc})
            return False
        if not supported:
            LOG.debug('%(host_state)s does not have the PCI devices '
                      'required by %(requests)s',
                      {'host_state': host_state, 'requests': requests})
        return supported
