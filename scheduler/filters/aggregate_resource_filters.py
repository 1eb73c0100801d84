"""RAM, vCPU and disk filters with per-aggregate allocation ratios.

Follows Nova's AggregateRamFilter, AggregateCoreFilter and
AggregateDiskFilter (Havana/Juno to 21.0):
the checks and limits are the base filters' (``ram_filter``,
``core_filter``, ``disk_filter``); only the ratio differs.  The ratio is
the smallest value of the aggregate metadata key named like the option
(``ram_allocation_ratio``, ``cpu_allocation_ratio``,
``disk_allocation_ratio``) over the host's aggregates, cast to float.  No
value gives the host's own ratio; a malformed value is logged as a
warning and also gives the host's ratio.  Beyond Nova, a value that is
not a finite, non-negative number (``nan``, ``inf``, ``-1``) counts as
malformed, so a limit is always a finite number.
"""

from scheduler.filters.core_filter import BaseCoreFilter
from scheduler.filters.disk_filter import BaseDiskFilter
from scheduler.filters.ram_filter import BaseRamFilter
from scheduler.resources import ratios


class AggregateRamFilter(BaseRamFilter):
    """RamFilter (MiB) with the aggregates' ``ram_allocation_ratio``."""

    # The ratio depends on the host's aggregates only: cacheable.
    ratio_ignores_request = True

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        return ratios.aggregate_allocation_ratio(
            host_state, 'ram_allocation_ratio')


class AggregateCoreFilter(BaseCoreFilter):
    """CoreFilter (vCPUs) with the aggregates' ``cpu_allocation_ratio``."""

    # The ratio depends on the host's aggregates only: cacheable.
    ratio_ignores_request = True

    def _get_cpu_allocation_ratio(self, host_state, spec_obj):
        return ratios.aggregate_allocation_ratio(
            host_state, 'cpu_allocation_ratio')


class AggregateDiskFilter(BaseDiskFilter):
    """DiskFilter (MiB, limit in GiB) with the aggregates'
    ``disk_allocation_ratio``."""

    # The ratio depends on the host's aggregates only: cacheable.
    ratio_ignores_request = True

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        return ratios.aggregate_allocation_ratio(
            host_state, 'disk_allocation_ratio')
