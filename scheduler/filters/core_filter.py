"""vCPU filters: keep hosts with enough free vCPUs after overcommit.

Follows Nova's BaseCoreFilter / CoreFilter, with the capacity rule of
``scheduler.resources.capacity`` for a lenient measure
(``capacity.VCPUS``), shared with the RAM and disk filters
(``overcommit.OvercommitFilter``).  An aggregate variant only has to
override ``_get_cpu_allocation_ratio`` (see
``ratios.aggregate_allocation_ratio``).
"""

import typing

from scheduler.filters import overcommit
from scheduler.resources import capacity
from scheduler.resources import ratios

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState


class BaseCoreFilter(overcommit.OvercommitFilter):
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

    measure = capacity.VCPUS

    def _get_cpu_allocation_ratio(self, host_state: 'HostState',
                                  spec_obj: 'RequestSpec') -> float:
        """The CPU allocation ratio that applies to ``host_state``."""
        raise NotImplementedError()


class CoreFilter(BaseCoreFilter):
    """BaseCoreFilter with the host's ``cpu_allocation_ratio``.

    The ratio is the compute node's, else ``[DEFAULT] cpu_allocation_ratio``,
    else 16.0 (Nova's resolution: a NULL or 0.0 ratio is unset).
    """

    uses_host_ratio = True

    def _get_cpu_allocation_ratio(self, host_state: 'HostState',
                                  spec_obj: 'RequestSpec') -> float:
        return ratios.host_allocation_ratio(host_state, ratios.CPU)
