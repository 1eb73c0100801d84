"""Helpers of the filters, and Nova's ``filters.utils`` names.

Follows ``nova/scheduler/filters/utils.py``.  What is not filter-specific
lives below the plug-ins, where the host table and the weighers read it
too, and is re-exported here under Nova's names for filters written for
Nova: aggregate metadata in ``scheduler.resources.aggregates``,
allocation ratios in ``scheduler.resources.ratios``, public data
attributes in ``scheduler.resources.attributes``, and the per-row ratios
of the RAM, vCPU and disk filters in ``scheduler.filters.overcommit``.
This is the plug-in contract for filters written for Nova; the service's
own modules import these names from where they are defined.
"""

import typing

from scheduler.filters.overcommit import allocation_ratio_rows  # noqa: F401
from scheduler.resources.aggregates import aggregate_metadata_get_by_host  # noqa: F401
from scheduler.resources.aggregates import aggregate_min_value  # noqa: F401
from scheduler.resources.aggregates import aggregate_values_from_key  # noqa: F401
from scheduler.resources.aggregates import finite_float  # noqa: F401
from scheduler.resources.aggregates import validate_num_values  # noqa: F401
from scheduler.resources.attributes import public_attribute  # noqa: F401
from scheduler.resources.ratios import aggregate_allocation_ratio  # noqa: F401
from scheduler.resources.ratios import allocation_ratio_value  # noqa: F401
from scheduler.resources.ratios import claimed_reader  # noqa: F401
from scheduler.resources.ratios import host_allocation_ratio  # noqa: F401


def instance_uuids_overlap(host_state: typing.Any,
                           uuids: typing.Iterable[str]) -> bool:
    """Whether any of ``uuids`` is an instance on the host."""
    return bool(set(uuids) & set(host_state.instances))


def other_types_on_host(host_state: typing.Any,
                        instance_type_id: typing.Any) -> set[typing.Any]:
    """The ``instance_type_id`` values of the host's instances other than
    ``instance_type_id`` (None for an instance whose type is unknown)."""
    type_ids = {instance.obj_get('instance_type_id')
                for instance in host_state.instances.values()}
    type_ids.discard(instance_type_id)
    return type_ids
