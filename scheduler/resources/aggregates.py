"""Reading the metadata of a host's aggregates.

Follows ``nova/scheduler/filters/utils.py``: values are sets over the
host's aggregates; comma-separated values are split and stripped where
Nova does; numeric settings take the minimum.  Filters, weighers and the
host table read aggregate metadata through this module (it is below
them: it reads a HostState's ``aggregates`` and nothing else).
"""

import collections
import math
import typing
from collections.abc import Callable
from collections.abc import Iterable

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# ``HostTable.memo`` scope: the function reads only the ``metadata`` of
# the host's aggregates (in the host's order).
AGGREGATE_METADATA = 'aggregate_metadata'

_T = typing.TypeVar('_T')
_D = typing.TypeVar('_D')


def aggregate_values_from_key(host_state: typing.Any,
                              key_name: str) -> set[typing.Any]:
    """The set of raw metadata values of ``key_name`` over the host's
    aggregates (values are not split)."""
    values = set()
    for aggregate in host_state.aggregates:
        value = (aggregate.obj_get('metadata') or {}).get(key_name)
        if value is not None:
            values.add(value)
    return values


def aggregate_metadata_get_by_host(
        host_state: typing.Any,
        key: str | None = None) -> collections.defaultdict[str, set[str]]:
    """``{key: set(values)}`` over the host's aggregates.

    Values are split on ``,`` and stripped.  With ``key``, only aggregates
    holding that key contribute, but all their keys are returned (Nova).
    """
    metadata: collections.defaultdict[str, set[str]] = (
        collections.defaultdict(set))
    for aggregate in host_state.aggregates:
        agg_meta = aggregate.obj_get('metadata') or {}
        if key is not None and key not in agg_meta:
            continue
        for agg_key, value in agg_meta.items():
            metadata[agg_key].update(v.strip() for v in value.split(','))
    return metadata


def validate_num_values(values: Iterable[typing.Any],
                        default: typing.Any = None,
                        cast_to: Callable[[typing.Any], typing.Any] = int,
                        based_on: Callable[..., typing.Any] = min
                        ) -> typing.Any:
    """Reduce a set of metadata values to one number.

    An empty set gives ``default``; otherwise the values are cast with
    ``cast_to`` and reduced with ``based_on`` (minimum).  A value that
    cannot be cast is logged and ``default`` is returned (callers in Nova
    catch the ValueError and fall back to the host default the same way).
    """
    if not values:
        return default
    values = typing.cast(typing.Collection[typing.Any], values)
    if len(values) > 1:
        LOG.info('%(num_values)d values found, of which the %(based_on)s '
                 'is used', {'num_values': len(values),
                             'based_on': based_on.__name__})
    try:
        return based_on(cast_to(value) for value in values)
    except (ValueError, TypeError) as exc:
        LOG.warning('Could not decode aggregate values %s: %s', values, exc)
        return default


def aggregate_min_value(host_state: typing.Any, key_name: str,
                        default: typing.Any,
                        cast_to: Callable[[typing.Any], typing.Any] = int
                        ) -> typing.Any:
    """The minimum of the host's aggregate values of ``key_name`` cast
    with ``cast_to``; ``default`` when there is none or one is malformed
    (the Aggregate* filters' per-aggregate setting, Nova's pattern)."""
    return validate_num_values(aggregate_values_from_key(host_state, key_name),
                               default, cast_to=cast_to)


def finite_float(value: typing.Any) -> float:
    """``float(value)``; ValueError for ``nan`` and infinities, which no
    multiplier or setting may be (they would make weights incomparable).
    """
    number = float(value)
    if not math.isfinite(number):
        raise ValueError('%r is not a finite number' % (value,))
    return number
