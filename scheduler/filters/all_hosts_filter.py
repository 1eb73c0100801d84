"""AllHostsFilter: the filter that keeps every host (Nova's no-op filter)."""

from scheduler import filters


class AllHostsFilter(filters.BaseHostFilter):
    """Every host passes.

    Nova's AllHostsFilter: useful as the only enabled filter, to schedule
    on weights alone.  It runs once per request, as in Nova, since its
    answer cannot change between the instances of a request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        return True
