"""DiskWeigher: prefer hosts with more free disk (Nova's DiskWeigher)."""

from scheduler import weights


class DiskWeigher(weights.BaseHostWeigher):
    """Raw weight: ``free_disk_mb`` (MiB), clamped below at 0.

    ``minval = 0``, so normalisation runs from 0 to the largest free disk
    of the request.  The multiplier is
    ``[filter_scheduler] disk_weight_multiplier`` (1.0, spreading; negative
    stacks), overridable per aggregate with the key of the same name.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    minval = 0
    multiplier_option = 'disk_weight_multiplier'
    column = 'free_disk_mb'

    def weigh_object(self, host_state, weight_properties):
        return host_state.free_disk_mb
