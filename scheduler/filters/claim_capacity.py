"""ClaimCapacityFilter: drop the hosts a resource claim would refuse.

With ``[scheduler] claim_resources`` (the default) every chosen node is
claimed in the database, and a claim enforces vCPUs, RAM and local disk
with the node's allocation ratios whatever filters are enabled
(``scheduler.db.claims``).  The host manager runs this filter before the
enabled ones, so that a host the claim would refuse is never ranked,
chosen and then found full: as Nova since Pike asks Placement for the
hosts with room before it runs its filters.  It is not an entry point:
it cannot be enabled, disabled or ordered by configuration.
"""

from scheduler import filters
from scheduler.resources import capacity
from scheduler.resources import ratios


class ClaimCapacityFilter(filters.BaseHostFilter):
    """The host has room for one instance by the claims' rule
    (``capacity.claim_fits``): vCPUs, RAM (MiB) and local root +
    ephemeral disk (GiB), each within ``total * ratio`` counting the
    node's reported use, its open claims and this view's consumption,
    and no more than the node's size."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        return capacity.claim_fits(ratios.claimed_reader(host_state),
                                   capacity.claim_amounts(spec_obj))

    def host_mask(self, table, rows, spec_obj):
        columns = table.columns
        return capacity.claim_fits(lambda name: columns[name][rows],
                                   capacity.claim_amounts(spec_obj))
