"""NumInstancesWeigher: weigh hosts by how many instances they run.

Follows Nova's NumInstancesWeigher (2023.2 onwards).
"""

from scheduler import weights


class NumInstancesWeigher(weights.BaseHostWeigher):
    """Raw weight: ``num_instances`` (the compute node's instance count,
    plus the instances placed on it during this request).

    Multiplier ``[filter_scheduler] num_instances_weight_multiplier``
    (default 0.0: no effect), overridable per aggregate with the key of
    the same name.  Positive packs instances onto busy hosts, negative
    spreads them.  No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'num_instances_weight_multiplier'
    column = 'num_instances'

    def weigh_object(self, host_state, weight_properties):
        return host_state.num_instances
