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

import numpy as np

from scheduler import filters
from scheduler.filters import overcommit
from scheduler.resources import capacity
from scheduler.resources import ratios

# ``explain_group``'s name of each claimed resource.
CLAIMED_NOUNS = {'vcpus': 'vCPUs', 'memory_mb': 'RAM', 'disk_gb': 'disk'}


class ClaimCapacityFilter(filters.BaseHostFilter):
    """The host has room for one instance by the claims' rule
    (``capacity.claim_fits``): vCPUs, RAM (MiB) and local root +
    ephemeral disk (GiB), each within ``total * ratio`` counting the
    node's reported use, its open claims and this view's consumption,
    and no more than the node's size.  A bare-metal node's claim is its
    whole size (``HostState.claim_amounts``)."""

    HOST_LOCAL = True

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        return capacity.claim_fits(ratios.claimed_reader(host_state),
                                   host_state.claim_amounts(spec_obj))

    def explain(self, host_state, spec_obj):
        """What the claim lacks, as the reservation logs a refused claim:
        ``memory_mb: 1,536 free of 4,096 x 1.5, 2,048 asked``; vCPUs,
        RAM in MiB, disk in GiB (free: ``total * ratio - used``, the
        open claims and this view's consumption counted)."""
        lacking = capacity.shortfalls(ratios.claimed_reader(host_state),
                                      host_state.claim_amounts(spec_obj))
        if not lacking:
            return super().explain(host_state, spec_obj)
        return 'claim refused: ' + '; '.join(
            '%s: %s free of %s x %s, %s asked' % (
                name, overcommit.amount(free), overcommit.amount(total),
                ratio, overcommit.amount(asked))
            for name, free, asked, total, ratio in lacking)

    def explain_group(self, host_state, spec_obj):
        lacking = capacity.shortfalls(ratios.claimed_reader(host_state),
                                      host_state.claim_amounts(spec_obj))
        if not lacking:
            return super().explain_group(host_state, spec_obj)
        return 'insufficient ' + ' and '.join(
            CLAIMED_NOUNS[item[0]] for item in lacking)

    def host_mask(self, table, rows, spec_obj):
        get, single = overcommit.column_reader(table, rows)
        amounts = capacity.claim_amounts(spec_obj)
        whole = get('whole_node')
        if whole if single else whole.any():
            # A bare-metal node's claim is its whole size.
            node = capacity.whole_node_amounts(get)
            amounts = node if single else capacity.Amounts(*(
                np.where(whole, size, asked) for size, asked in zip(
                    node, amounts, strict=True)))
        return overcommit.as_mask(capacity.claim_fits(get, amounts), single)
