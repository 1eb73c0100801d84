"""Allocation ratios: the overcommit that applies to a host.

A host's own ratio is its compute node's, else the configured value,
else the ``initial_*`` option (``resolve_allocation_ratio``); the
Aggregate* filters take the smallest valid value of the host's
aggregates instead.  The filters, weighers, host table, live-migration
checks and claims all resolve ratios here.
"""

import math
import typing
from collections.abc import Callable

from scheduler.conf import CONF
from scheduler.resources import aggregates

# The ratio names, as HostState attributes, HostTable columns, options
# and aggregate metadata keys.
CPU = 'cpu_allocation_ratio'
RAM = 'ram_allocation_ratio'
DISK = 'disk_allocation_ratio'

# The Newton/Ocata hard defaults when neither the row nor the config set
# a ratio; the ``initial_*`` options (Nova since Stein: 4.0, 1.0, 1.0)
# replace them.  Operators get them back by setting those options.
OCATA_ALLOCATION_RATIOS = {CPU: 16.0, RAM: 1.5, DISK: 1.0}
# The ratio names (keys only: the values are the Ocata ones).
DEFAULT_ALLOCATION_RATIOS = OCATA_ALLOCATION_RATIOS


def resolve_allocation_ratio(name: str, row_value: typing.Any) -> float:
    """A node's allocation ratio ``name``: the row's, else the config's
    (``[DEFAULT] cpu_allocation_ratio`` ...), else ``[DEFAULT]
    initial_<name>`` (Nova's defaults since Stein: 4.0 CPU, 1.0 RAM, 1.0
    disk).  0.0 and NULL mean "unset", as in Nova."""
    if row_value:
        return float(row_value)
    configured = getattr(CONF, name)
    if configured:
        return float(configured)
    return float(getattr(CONF, 'initial_' + name))


def host_allocation_ratio(host_state: typing.Any, ratio_name: str) -> float:
    """The host's ``ratio_name`` (``cpu_allocation_ratio``,
    ``ram_allocation_ratio``, ``disk_allocation_ratio``).

    A host that was never refreshed has no ratio (None); it then gets the
    configured value, else the ``initial_*`` option (4.0 CPU, 1.0 RAM, 1.0
    disk by default), as a compute node row without a ratio would.
    """
    value = getattr(host_state, ratio_name, None)
    if value is None:
        return resolve_allocation_ratio(ratio_name, None)
    return typing.cast(float, value)


def allocation_ratio_value(value: typing.Any) -> float:
    """An aggregate's ratio text as a float; ValueError when it is not a
    finite, non-negative number (``nan``, ``inf``, ``-1``), so that a limit
    is always finite."""
    ratio = float(value)
    if not math.isfinite(ratio) or ratio < 0:
        raise ValueError('%r is not a valid allocation ratio' % (value,))
    return ratio


def aggregate_allocation_ratio(host_state: typing.Any,
                               ratio_name: str) -> float:
    """The minimum valid ``ratio_name`` of the host's aggregates, else the
    host's own ratio (Nova's Aggregate{Ram,Core,Disk}Filter); a malformed
    value is logged and gives the host's ratio."""
    return typing.cast(float, aggregates.aggregate_min_value(
        host_state, ratio_name,
        host_allocation_ratio(host_state, ratio_name),
        cast_to=allocation_ratio_value))


def claimed_reader(host_state: typing.Any) -> Callable[[str], typing.Any]:
    """``get(name)`` for ``scheduler.resources.capacity``: a HostState
    attribute of ``capacity.CLAIMED`` (or of a ``capacity.Measure``), its
    allocation ratios resolved as ``host_allocation_ratio`` does."""
    def get(name: str) -> typing.Any:
        if name.endswith('_allocation_ratio'):
            return host_allocation_ratio(host_state, name)
        return getattr(host_state, name)
    return get
