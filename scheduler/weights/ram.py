"""RAMWeigher: prefer hosts with more free RAM (Nova's RAMWeigher)."""

from scheduler import weights


class RAMWeigher(weights.BaseHostWeigher):
    """Raw weight: ``free_ram_mb`` (MiB), clamped below at 0.

    ``minval = 0``: a host with overcommitted (negative) free RAM weighs as
    one with none, and normalisation runs from 0 to the largest free RAM of
    the request.  The multiplier is
    ``[filter_scheduler] ram_weight_multiplier`` (1.0, spreading; negative
    stacks), overridable per aggregate with the key of the same name
    (Nova since Stein).
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    minval = 0
    multiplier_option = 'ram_weight_multiplier'
    column = 'free_ram_mb'

    def weigh_object(self, host_state, weight_properties):
        return host_state.free_ram_mb
