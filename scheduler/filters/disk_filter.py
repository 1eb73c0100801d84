"""Disk filters: keep hosts with enough free local disk after overcommit.

Follows Nova's DiskFilter, with the capacity rule of
``scheduler.resources.capacity`` (``capacity.DISK_MB``), shared with the
RAM and vCPU filters (``overcommit.OvercommitFilter``).  Swap counts here
although ``HostState.consume_from_request`` does not subtract it: Nova's
DiskFilter asks for root + ephemeral + swap, its HostState consumes
root + ephemeral.  An aggregate variant only has to override
``_get_disk_allocation_ratio`` (see ``ratios.aggregate_allocation_ratio``).
"""

import typing

from scheduler.filters import overcommit
from scheduler.resources import capacity
from scheduler.resources import ratios

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState


class BaseDiskFilter(overcommit.OvercommitFilter):
    """Free disk after overcommit covers root + ephemeral + swap.

    In MiB: ``requested = 1024 * (root_gb + ephemeral_gb) + swap``,
    ``total = total_usable_disk_gb * 1024``.

    1. ``total < requested`` -> fail: no overcommit against itself;
    2. ``limit = total * ratio``; ``used = total - free_disk_mb``;
    3. ``limit - used < requested`` -> fail;
    4. pass, writing ``host_state.limits['disk_gb'] = limit / 1024`` (GiB,
       possibly fractional, as Nova).
    """

    measure = capacity.DISK_MB

    def _get_disk_allocation_ratio(self, host_state: 'HostState',
                                   spec_obj: 'RequestSpec') -> float:
        """The disk allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()


class DiskFilter(BaseDiskFilter):
    """BaseDiskFilter with the host's ``disk_allocation_ratio``.

    The ratio is the compute node's, else
    ``[DEFAULT] disk_allocation_ratio``, else 1.0 (Nova's resolution: a
    NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_disk_allocation_ratio(self, host_state: 'HostState',
                                   spec_obj: 'RequestSpec') -> float:
        return ratios.host_allocation_ratio(host_state, ratios.DISK)
