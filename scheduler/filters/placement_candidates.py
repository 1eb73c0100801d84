"""PlacementCandidatesFilter: keep the hosts Placement says can hold the
request.

In Placement mode (``[scheduler] use_placement``) the host manager runs
this filter before the enabled ones, in place of the claims' capacity
check: a host passes when its compute node's resource provider is an
allocation candidate of the request (``PlacementView.select``), and,
for the second and later instances of a request, still has room once
the earlier ones consumed.  Nova's scheduler since Pike likewise
considers only the hosts of Placement's ``provider_summaries``.  Not an
entry point: it cannot be enabled, disabled or ordered by configuration;
a rebuild (no new resources) skips it, as Nova asks Placement nothing
for one.  The search of candidates over provider trees is bounded by
``[placement] max_candidate_combinations``: when it stops there and no
host is left, the filter raises the NoValidHost that names the option
(``scheduler.placement.trees.Plan.hosts``), which ends the request.
"""

from scheduler import filters


class PlacementCandidatesFilter(filters.BaseHostFilter):
    """The host's compute node uuid is a candidate of the current
    request in ``view`` (a ``scheduler.placement.view.PlacementView``)."""

    RUN_ON_REBUILD = False

    def __init__(self, view):
        self.view = view

    def host_passes(self, host_state, spec_obj):
        return bool(self.view.passes([host_state.uuid])[0])

    def host_mask(self, table, rows, spec_obj):
        return self.view.passes_rows(table, rows)

    def explain(self, host_state, spec_obj):
        return 'not an allocation candidate (see the Placement section)'
