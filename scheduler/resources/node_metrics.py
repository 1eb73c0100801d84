"""Compute-node monitor metrics and ``name=ratio`` settings.

Shared by the MetricsFilter and the MetricsWeigher, and by the
ImagePropertiesWeigher for its own ``prop=ratio`` setting.

* ``parse_weight_setting(entries, option)`` turns a list option such as
  ``[metrics] weight_setting = cpu.idle.time=1.0, cpu.user.time=-2`` into
  ``(name, ratio)`` pairs, in order.  As in Nova, an entry with no ``=``,
  an empty name or a ratio that is not a number is logged and skipped,
  and duplicates are kept (the MetricsWeigher adds their ratios up).
  Unlike Nova, ``nan`` and infinite ratios are rejected too: they would
  make every weight meaningless.
* ``configured_weight_setting()`` is the parsed ``[metrics]
  weight_setting``; parsing is cached per distinct option value, so a
  malformed entry is logged once, not once per host and request.
* ``host_metrics(host_state)`` maps each metric the host reports to its
  value.  ``host_state.metrics`` is the ``compute_nodes.metrics`` JSON
  list of ``{name, value, timestamp, source}`` dicts.  Nova stores the
  ``*.percent`` metrics there as fractions in [0, 1] and
  ``MonitorMetricList.from_json`` multiplies them by 100, so this does the
  same.  A metric reported without a numeric value (``numa.membw.*``
  carry ``numa_membw_values`` instead) maps to None: it counts as
  reported for the filter and as unavailable for the weigher.
"""

import functools
import math
from collections.abc import Iterable
from typing import Any

from oslo_log import log as logging

from scheduler.conf import CONF

LOG = logging.getLogger(__name__)

METRICS_OPTION = 'metrics.weight_setting'
# Metrics whose stored value is a fraction to be shown as a percentage.
PERCENT_SUFFIX = '.percent'


def _parse_entry(entry: object) -> tuple[str, float] | None:
    """``(name, ratio)`` of one ``name=ratio`` entry, or None if invalid."""
    name, sep, text = str(entry).partition('=')
    name = name.strip()
    if not sep or not name:
        return None
    try:
        ratio = float(text)
    except ValueError:
        return None
    return (name, ratio) if math.isfinite(ratio) else None


def parse_weight_setting(entries: Iterable[object] | None,
                         option: str = METRICS_OPTION
                         ) -> list[tuple[str, float]]:
    """The valid ``(name, ratio)`` pairs of ``entries``, in order.

    Invalid entries are skipped and logged as a warning naming
    ``option``.
    """
    pairs: list[tuple[str, float]] = []
    invalid: list[object] = []
    for entry in entries or ():
        pair = _parse_entry(entry)
        if pair is None:
            invalid.append(entry)
        else:
            pairs.append(pair)
    if invalid:
        LOG.warning('Ignoring the invalid elements of the option %(option)s:'
                    ' %(entries)s', {'option': option,
                                     'entries': ', '.join(map(str, invalid))})
    return pairs


@functools.lru_cache(maxsize=32)
def cached_weight_setting(entries: tuple[object, ...],
                          option: str = METRICS_OPTION
                          ) -> tuple[tuple[str, float], ...]:
    """``parse_weight_setting`` of a tuple of entries, memoised (the
    returned tuple is shared: do not mutate it)."""
    return tuple(parse_weight_setting(entries, option))


def configured_weight_setting() -> tuple[tuple[str, float], ...]:
    """The parsed ``[metrics] weight_setting`` (pairs, in order)."""
    return cached_weight_setting(tuple(CONF.metrics.weight_setting))


def _metric_value(name: str, raw: Any) -> float | None:
    """A metric's value as a float (percentages x100), or None."""
    if raw is None or isinstance(raw, bool):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    if name.endswith(PERCENT_SUFFIX):
        value *= 100
    return value


def host_metrics(host_state: Any) -> dict[str, float | None]:
    """``{name: value}`` of the metrics ``host_state`` reports.

    Entries that are not dicts with a name are ignored; a later entry of
    the same name wins.  Values are floats, or None when not numeric.
    """
    values: dict[str, float | None] = {}
    for metric in host_state.metrics or ():
        if not isinstance(metric, dict) or not metric.get('name'):
            continue
        name = metric['name']
        values[name] = _metric_value(name, metric.get('value'))
    return values
