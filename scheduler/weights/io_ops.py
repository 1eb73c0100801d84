"""IoOpsWeigher: prefer hosts with fewer concurrent I/O-heavy operations
(Nova's IoOpsWeigher)."""

from scheduler import weights


class IoOpsWeigher(weights.BaseHostWeigher):
    """Raw weight: ``num_io_ops`` (the compute stat ``io_workload``: builds,
    resizes, snapshots, ... in progress), clamped below at 0.

    The multiplier is ``[filter_scheduler] io_ops_weight_multiplier``
    (-1.0: fewer operations win; positive prefers busy hosts),
    overridable per aggregate with the key of the same name.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    minval = 0
    multiplier_option = 'io_ops_weight_multiplier'
    column = 'num_io_ops'

    def weigh_object(self, host_state, weight_properties):
        return host_state.num_io_ops
