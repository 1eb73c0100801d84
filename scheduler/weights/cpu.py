"""CPUWeigher: prefer hosts with more free vCPUs (Nova's CPUWeigher, Rocky)."""

from scheduler import weights
from scheduler.resources import ratios


class CPUWeigher(weights.BaseHostWeigher):
    """Raw weight: free vCPUs after overcommit,
    ``vcpus_total * cpu_allocation_ratio - vcpus_used``, clamped below at 0.

    The ratio is the host's (resolved as CoreFilter does).  The multiplier
    is ``[filter_scheduler] cpu_weight_multiplier`` (1.0, spreading;
    negative stacks), overridable per aggregate with the key of the same
    name.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    minval = 0
    multiplier_option = 'cpu_weight_multiplier'

    def weigh_object(self, host_state, weight_properties):
        ratio = ratios.host_allocation_ratio(host_state,
                                            'cpu_allocation_ratio')
        return host_state.vcpus_total * ratio - host_state.vcpus_used

    def weigh_rows(self, table, rows, weight_properties):
        columns = table.columns
        return (columns['vcpus_total'][rows] *
                columns['cpu_allocation_ratio'][rows] -
                columns['vcpus_used'][rows])
