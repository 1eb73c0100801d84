"""BuildFailureWeigher: avoid hosts whose recent builds failed.

Follows Nova's BuildFailureWeigher (Rocky onwards).
"""

from scheduler import weights


class BuildFailureWeigher(weights.BaseHostWeigher):
    """Raw weight: ``failed_builds``, the compute node's count of build
    failures since its last success (the ``failed_builds`` statistic).

    The effective multiplier is **minus** ``[filter_scheduler]
    build_failure_weight_multiplier`` (default 1000000.0), or minus the
    per-aggregate override of the same key (the minimum over the host's
    aggregates), so more failures mean a lower weight.  The large default
    outweighs every other default weigher: a host that keeps failing
    builds is used only when nothing else is left.  No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'build_failure_weight_multiplier'
    column = 'failed_builds'

    def weight_multiplier(self, host_state):
        return -super().weight_multiplier(host_state)

    def multiplier_key(self):
        # ``weight_multiplier`` above still reads only the aggregates'
        # metadata and the option, so its results may be cached.
        return super().multiplier_key()

    def weigh_object(self, host_state, weight_properties):
        return host_state.failed_builds
