"""Reading aggregate metadata and instance lists for filters and weighers.

Follows ``nova/scheduler/filters/utils.py``: values are
sets over the host's aggregates; comma-separated values are split and
stripped where Nova does; numeric settings take the minimum.
"""

import collections
import functools
import inspect
import math
import types

import numpy as np
from oslo_log import log as logging

from scheduler import host_state as host_state_module
from scheduler import loadables

LOG = logging.getLogger(__name__)


def aggregate_values_from_key(host_state, key_name):
    """The set of raw metadata values of ``key_name`` over the host's
    aggregates (values are not split)."""
    values = set()
    for aggregate in host_state.aggregates:
        value = (aggregate.obj_get('metadata') or {}).get(key_name)
        if value is not None:
            values.add(value)
    return values


def aggregate_metadata_get_by_host(host_state, key=None):
    """``{key: set(values)}`` over the host's aggregates.

    Values are split on ``,`` and stripped.  With ``key``, only aggregates
    holding that key contribute, but all their keys are returned (Nova).
    """
    metadata = collections.defaultdict(set)
    for aggregate in host_state.aggregates:
        agg_meta = aggregate.obj_get('metadata') or {}
        if key is not None and key not in agg_meta:
            continue
        for agg_key, value in agg_meta.items():
            metadata[agg_key].update(v.strip() for v in value.split(','))
    return metadata


def validate_num_values(values, default=None, cast_to=int, based_on=min):
    """Reduce a set of metadata values to one number.

    An empty set gives ``default``; otherwise the values are cast with
    ``cast_to`` and reduced with ``based_on`` (minimum).  A value that
    cannot be cast is logged and ``default`` is returned (callers in Nova
    catch the ValueError and fall back to the host default the same way).
    """
    if not values:
        return default
    if len(values) > 1:
        LOG.info('%(num_values)d values found, of which the %(based_on)s '
                 'is used', {'num_values': len(values),
                             'based_on': based_on.__name__})
    try:
        return based_on(cast_to(value) for value in values)
    except (ValueError, TypeError) as exc:
        LOG.warning('Could not decode aggregate values %s: %s', values, exc)
        return default


def instance_uuids_overlap(host_state, uuids):
    """Whether any of ``uuids`` is an instance on the host."""
    return bool(set(uuids) & set(host_state.instances))


def aggregate_min_value(host_state, key_name, default, cast_to=int):
    """The minimum of the host's aggregate values of ``key_name`` cast
    with ``cast_to``; ``default`` when there is none or one is malformed
    (the Aggregate* filters' per-aggregate setting, Nova's pattern)."""
    return validate_num_values(aggregate_values_from_key(host_state, key_name),
                               default, cast_to=cast_to)


def other_types_on_host(host_state, instance_type_id):
    """The ``instance_type_id`` values of the host's instances other than
    ``instance_type_id`` (None for an instance whose type is unknown)."""
    type_ids = {instance.obj_get('instance_type_id')
                for instance in host_state.instances.values()}
    type_ids.discard(instance_type_id)
    return type_ids


def host_allocation_ratio(host_state, ratio_name):
    """The host's ``ratio_name`` (``cpu_allocation_ratio``,
    ``ram_allocation_ratio``, ``disk_allocation_ratio``).

    A host that was never refreshed has no ratio (None); it then gets the
    configured value, else Nova's hard default (16.0 CPU, 1.5 RAM, 1.0
    disk), as a compute node row without a ratio would.
    """
    value = getattr(host_state, ratio_name, None)
    if value is None:
        return host_state_module.resolve_allocation_ratio(ratio_name, None)
    return value


def claimed_reader(host_state):
    """``get(name)`` for ``scheduler.resources.capacity``: a HostState
    attribute of ``capacity.CLAIMED``, its allocation ratios resolved as
    ``host_allocation_ratio`` does."""
    def get(name):
        if name.endswith('_allocation_ratio'):
            return host_allocation_ratio(host_state, name)
        return getattr(host_state, name)
    return get


def allocation_ratio_rows(host_filter, table, rows, spec_obj, ratio_name):
    """The ratio ``host_filter._get_<ratio_name>(host_state, spec_obj)``
    gives each host of ``rows`` (a HostTable's intp row array), as a float
    array: the table's column of the host's own ratio when the filter says
    it uses that (``uses_host_ratio``), the hook's value cached per host
    when it says the request does not matter (``ratio_ignores_request``),
    else the hook called for each host.  Each flag counts only when set
    by the class that defines the hook."""
    hook = '_get_' + ratio_name
    ratio_of = getattr(host_filter, hook)
    if _declared_with(host_filter, 'uses_host_ratio', hook):
        return table.columns[ratio_name][rows]
    if _declared_with(host_filter, 'ratio_ignores_request', hook):
        return table.memo(host_filter, 'ratio',
                          lambda state: ratio_of(state, spec_obj),
                          rows, dtype=float)
    return np.fromiter((ratio_of(state, spec_obj)
                        for state in table.states_at(rows)),
                       dtype=float, count=len(rows))


def _declared_with(obj, flag, method):
    return bool(getattr(obj, flag, False)) and loadables.fast_form_applies(
        obj, flag, (method,))


def finite_float(value):
    """``float(value)``; ValueError for ``nan`` and infinities, which no
    multiplier or setting may be (they would make weights incomparable).
    """
    number = float(value)
    if not math.isfinite(number):
        raise ValueError('%r is not a finite number' % (value,))
    return number


def allocation_ratio_value(value):
    """An aggregate's ratio text as a float; ValueError when it is not a
    finite, non-negative number (``nan``, ``inf``, ``-1``), so that a limit
    is always finite."""
    ratio = float(value)
    if not math.isfinite(ratio) or ratio < 0:
        raise ValueError('%r is not a valid allocation ratio' % (value,))
    return ratio


def aggregate_allocation_ratio(host_state, ratio_name):
    """The minimum valid ``ratio_name`` of the host's aggregates, else the
    host's own ratio (Nova's Aggregate{Ram,Core,Disk}Filter); a malformed
    value is logged and gives the host's ratio."""
    return aggregate_min_value(
        host_state, ratio_name,
        host_allocation_ratio(host_state, ratio_name),
        cast_to=allocation_ratio_value)


# Class attributes that hold per-instance data: properties and slots.
_DATA_DESCRIPTORS = (property, types.MemberDescriptorType)


@functools.lru_cache(maxsize=1024)
def _is_public_data(cls, name):
    """Whether ``name`` can only be data on instances of ``cls``: a
    property or slot of the class, or a name the class does not define at
    all (an instance attribute, if any; classes with ``__getattr__``
    excluded).  Methods and class constants are not.  Cached: a memo scope
    may ask it for every host, and names come from requests, hence the
    bound."""
    found = inspect.getattr_static(cls, name, _ABSENT)
    if isinstance(found, _DATA_DESCRIPTORS):
        return True
    return found is _ABSENT and inspect.getattr_static(
        cls, '__getattr__', None) is None


_ABSENT = object()


def public_attribute(obj, name, default=None):
    """``obj.name`` when it is public data: an instance attribute, or a
    property or slot of its class, whose name does not start with ``_``;
    else ``default``.  Methods and other class attributes are never looked
    up, so a query or an extra spec can only read the host's data fields
    (JsonFilter, ComputeCapabilitiesFilter)."""
    if not isinstance(name, str) or not name or name.startswith('_'):
        return default
    if not _is_public_data(type(obj), name):
        return default
    try:
        return getattr(obj, name, default)
    except Exception:  # a property that cannot be computed
        return default
