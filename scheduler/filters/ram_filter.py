"""RAM filters: keep hosts with enough free RAM after overcommit.

Follows Nova's BaseRamFilter / RamFilter.  The arithmetic
is Nova's, in MiB, so that the limit a compute node receives is the one
Nova would have sent; the rule is ``scheduler.resources.capacity``'s
(``host_check`` / ``filter_fits`` with ``capacity.MEMORY_MB``), shared
with the vCPU and disk filters (``overcommit.OvercommitFilter``).  An
aggregate variant only has to override ``_get_ram_allocation_ratio``
(see ``ratios.aggregate_allocation_ratio``).
"""

import typing

from scheduler.filters import overcommit
from scheduler.resources import capacity
from scheduler.resources import ratios

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState


class BaseRamFilter(overcommit.OvercommitFilter):
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

    measure = capacity.MEMORY_MB

    def _get_ram_allocation_ratio(self, host_state: 'HostState',
                                  spec_obj: 'RequestSpec') -> float:
        """The RAM allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()


class RamFilter(BaseRamFilter):
    """BaseRamFilter with the host's ``ram_allocation_ratio``.

    The ratio is the compute node's, else ``[DEFAULT] ram_allocation_ratio``,
    else 1.5 (Nova's resolution: a NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_ram_allocation_ratio(self, host_state: 'HostState',
                                  spec_obj: 'RequestSpec') -> float:
        return ratios.host_allocation_ratio(host_state, ratios.RAM)
