"""PCIWeigher: keep hosts with PCI devices for the requests needing them.

Follows Nova's PCIWeigher (Pike onwards).
"""

from oslo_log import log as logging

from scheduler import weights
from scheduler.resources import pci_pools as device_pools

LOG = logging.getLogger(__name__)

# Hosts with this many free devices or more all weigh the same: only
# scarcity matters, not the difference between 500 and 2000 devices.
MAX_DEVS = 100


def free_pci_devices(host_state):
    """The number of free PCI devices of the host: the sum of its pools'
    ``count``.  ``pci_stats`` is parsed by
    ``scheduler.resources.pci_pools.parse_pools``
    (None, a legacy pool list or a PciDevicePoolList primitive); a
    malformed value counts as no device rather than failing the request.
    """
    try:
        pools = device_pools.parse_pools(host_state.pci_stats)
    except device_pools.InvalidPciPools as exc:
        LOG.warning('Ignoring the PCI pools of %(host)s: %(error)s',
                    {'host': host_state, 'error': exc})
        return 0
    return sum(pool.count for pool in pools)


class PCIWeigher(weights.BaseHostWeigher):
    """Raw weight: ``100 - min(free PCI devices, 99)``, so between 1
    (99 or more free devices) and 100 (none).

    Hosts with fewer free PCI devices win, whether or not the request asks
    for PCI devices: requests without PCI devices avoid the PCI hosts, and
    requests with them (already limited to hosts that fit by the
    PciPassthroughFilter) stack onto the hosts with the fewest devices,
    keeping the hosts with many free devices for large requests.  This is
    Nova's weigher since Pike: the request's ``pci_requests`` are not
    read.

    Multiplier ``[filter_scheduler] pci_weight_multiplier`` (default 1.0,
    min 0.0), overridable per aggregate with the key of the same name.
    No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'pci_weight_multiplier'

    def weigh_object(self, host_state, weight_properties):
        return MAX_DEVS - min(free_pci_devices(host_state), MAX_DEVS - 1)

    def memo_key(self, weight_properties):
        return ()
