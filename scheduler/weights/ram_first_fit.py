"""RamFirstFitWeigher: best fit on RAM, the resource a fleet runs out of
first (ours; Nova has no such weigher).

BestFitWeigher ranks by a node's tightest resource, whichever it is.
When one resource binds the fleet, that is the wrong one to follow: a
node whose vCPUs are nearly full looks tightest, so small vCPU-heavy
instances keep going there, and its RAM, the resource the fleet lacks,
is left stranded.  Nova's allocation ratios (16.0 then 4.0 for vCPUs,
1.0 for RAM) make RAM the usual bottleneck, and on the Azure 2017 trace
(1 vCPU to 1,792 MiB next to 8 vCPUs to 56 GiB, on 80-vCPU / 180 GiB
hosts) RAM binds even at a vCPU ratio of 1.0: there, ranking by RAM
first used 1.8 % fewer hosts on average than best fit, and refused 40 %
fewer instances on a fleet at the capacity lower bound
(``docs/filters.rst``).

A variant for another scarce resource (GPUs) only changes ``FIRST``.
"""

import typing
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from scheduler import weights
from scheduler.resources import capacity
from scheduler.resources import ratios

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState
    from scheduler.view.host_table import HostTable

_Floats = npt.NDArray[np.float64]
# A column or attribute by name: a HostTable's rows or a HostState's.
_Getter = Callable[[str], typing.Any]

# Weight of the other resources' tightest leftover against the first
# one's: enough to break ties among nodes with equal RAM left (identical
# nodes filled with identical flavors), too small to outweigh one MiB of
# RAM on any real node.
TIE_BREAK = 1e-3


class RamFirstFitWeigher(weights.BaseHostWeigher):
    """Raw weight: minus the RAM left after one instance, as a share.

    For each resource the claims count (vCPUs, RAM in MiB, local disk in
    GiB), the leftover after one instance of the request is ``(total *
    ratio - used - requested) / (total * ratio)``.  The raw weight is
    minus (the RAM leftover + ``TIE_BREAK`` x the smallest leftover of
    the other resources); a resource whose total is 0 counts 0.  So the
    node the request leaves with the least free RAM weighs most, and
    among nodes with as much RAM left, the one with the tightest other
    resource.  The multiplier is ``[filter_scheduler]
    ram_first_fit_weight_multiplier`` (0.0: off; positive packs),
    overridable per aggregate with the key of the same name.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'ram_first_fit_weight_multiplier'

    # The claimed resource ranked first (a ``capacity.CLAIMED`` name).
    FIRST = 'memory_mb'

    def weigh_object(self, host_state: 'HostState',
                     weight_properties: 'RequestSpec') -> float:
        return float(_first_fit(ratios.claimed_reader(host_state),
                                weight_properties, self.FIRST)[0])

    def weigh_rows(self, table: 'HostTable', rows: npt.NDArray[np.intp],
                   weight_properties: 'RequestSpec') -> _Floats:
        columns = table.columns
        return _first_fit(lambda name: columns[name][rows],
                          weight_properties, self.FIRST)


def _first_fit(get: _Getter, spec_obj: 'RequestSpec',
               first: str) -> _Floats:
    """Minus (the ``first`` resource's leftover share + ``TIE_BREAK`` x
    the other resources' smallest), a float array (of one value for a
    HostState's scalars)."""
    amounts = capacity.claim_amounts(spec_obj)
    lead: _Floats | None = None
    others: _Floats | None = None
    for resource in capacity.CLAIMED:
        share: _Floats = capacity.leftover_share(
            get, resource, getattr(amounts, resource.name))
        if resource.name == first:
            lead = share
        else:
            others = share if others is None else np.minimum(others, share)
    return -(_finite(lead) + TIE_BREAK * _finite(others))


def _finite(share: _Floats | None) -> _Floats:
    """``share`` with inf (no such resource) counted as 0; None (no
    such resource at all) is 0."""
    if share is None:
        return np.zeros(1)
    return np.where(np.isinf(share), 0.0, share)
