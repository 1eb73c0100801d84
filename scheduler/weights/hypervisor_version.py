"""HypervisorVersionWeigher: weigh hosts by their hypervisor version.

Follows Nova's HypervisorVersionWeigher (2023.2 onwards).
"""

from scheduler import weights


class HypervisorVersionWeigher(weights.BaseHostWeigher):
    """Raw weight: ``hypervisor_version``, the integer the virt driver
    reports (e.g. 2011000 for 2.11.0), or 0 when unknown.

    Versions of different hypervisor types are not comparable; mixed
    fleets should set the multiplier per aggregate.  Multiplier
    ``[filter_scheduler] hypervisor_version_weight_multiplier`` (default
    1.0: newer hypervisors win; negative prefers older ones), overridable
    per aggregate with the key of the same name.  No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'hypervisor_version_weight_multiplier'
    column = 'hypervisor_version'

    def weigh_object(self, host_state, weight_properties):
        return host_state.hypervisor_version or 0
