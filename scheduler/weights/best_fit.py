"""BestFitWeigher: prefer the host the request fills most tightly (ours;
Nova has no such weigher).

Nova's RAM, CPU and disk weighers each look at one resource, and a
negative multiplier stacks by that resource only: a host can be full in
vCPUs and empty in RAM.  Best fit looks at every resource the claims
count and ranks by the tightest one, as bin packers do for vectors.
"""

import numpy as np

from scheduler import weights
from scheduler.resources import capacity
from scheduler.resources import ratios


class BestFitWeigher(weights.BaseHostWeigher):
    """Raw weight: minus the leftover of the host's tightest resource.

    For each resource the claims count (vCPUs, RAM in MiB, local disk in
    GiB; a resource whose total is 0 is skipped), the leftover after one
    instance of the request is ``(total * ratio - used - requested) /
    (total * ratio)``: the share of the node's capacity still free.  The
    raw weight is minus the smallest of them, so the host the request
    leaves with the least room in its scarcest resource weighs most.  The
    multiplier is ``[filter_scheduler] best_fit_weight_multiplier`` (0.0:
    off; positive packs), overridable per aggregate with the key of the
    same name.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'best_fit_weight_multiplier'

    def weigh_object(self, host_state, weight_properties):
        return float(_tightest_leftover(ratios.claimed_reader(host_state),
                                        weight_properties)[0])

    def weigh_rows(self, table, rows, weight_properties):
        columns = table.columns
        return _tightest_leftover(lambda name: columns[name][rows],
                                  weight_properties)


def _tightest_leftover(get, spec_obj):
    """Minus the smallest leftover share over the claimed resources, as a
    float array (of one value for a HostState's scalars); 0 for a host
    whose totals are all 0."""
    amounts = capacity.claim_amounts(spec_obj)
    tightest = None
    for resource in capacity.CLAIMED:
        share = capacity.leftover_share(get, resource,
                                        getattr(amounts, resource.name))
        tightest = share if tightest is None else np.minimum(tightest, share)
    tightest[np.isinf(tightest)] = 0.0
    return -tightest
