"""PCIWeigher: keep hosts with PCI devices for the requests needing them.

Follows Nova's PCIWeigher (Pike onwards; reference 5.2, 6.3).
"""

from scheduler import weights

# Hosts with this many free devices or more all weigh the same: only
# scarcity matters, not the difference between 500 and 2000 devices.
MAX_DEVS = 100


def pci_pools(pci_stats):
    """The pool dicts of a ``compute_nodes.pci_stats`` value.

    Accepts None, a list of pool dicts (``{vendor_id, product_id,
    numa_node, count, ...}``) or a PciDevicePoolList primitive
    (``{'nova_object.data': {'objects': [pool primitives]}}``, what Nova
    stores); anything else holds no pool.
    """
    if isinstance(pci_stats, dict):
        pci_stats = (pci_stats.get('nova_object.data') or {}).get('objects')
    if not isinstance(pci_stats, list):
        return []
    pools = (pool.get('nova_object.data', pool) for pool in pci_stats
             if isinstance(pool, dict))
    return [pool for pool in pools if isinstance(pool, dict)]


def _pool_count(pool):
    try:
        return max(int(pool.get('count') or 0), 0)
    except (TypeError, ValueError):
        return 0


def free_pci_devices(host_state):
    """The number of free PCI devices of the host: the sum of its pools'
    ``count`` (a malformed or negative count counts as 0)."""
    return sum(_pool_count(pool) for pool in pci_pools(host_state.pci_stats))


class PCIWeigher(weights.BaseHostWeigher):
    """Raw weight: ``100 - min(free PCI devices, 99)``, so between 1
    (99 or more free devices) and 100 (none).

    Hosts with fewer free PCI devices win, whether or not the request asks
    for PCI devices: requests without PCI devices avoid the PCI hosts, and
    requests with them (already limited to hosts that fit by the
    PciPassthroughFilter) stack onto the hosts with the fewest devices,
    keeping the hosts with many free devices for large requests.  This is
    reference 5.2 and Nova's weigher since Pike: the request's
    ``pci_requests`` are not read.

    Multiplier ``[filter_scheduler] pci_weight_multiplier`` (default 1.0,
    min 0.0), overridable per aggregate with the key of the same name.
    No class bounds.
    """

    multiplier_option = 'pci_weight_multiplier'

    def _weigh_object(self, host_state, weight_properties):
        return MAX_DEVS - min(free_pci_devices(host_state), MAX_DEVS - 1)
