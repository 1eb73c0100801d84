"""MetricsWeigher: weigh hosts by the monitor metrics they report.

Follows Nova's MetricsWeigher (Icehouse onwards).
"""

import numpy as np

from scheduler import exception
from scheduler import weights
from scheduler.conf import CONF
from scheduler.resources import aggregates
from scheduler.resources import node_metrics

# Aggregate metadata key overriding ``[metrics] weight_multiplier``.
AGGREGATE_MULTIPLIER_KEY = 'metrics_weight_multiplier'


class MetricsWeigher(weights.BaseHostWeigher):
    """Raw weight: ``sum(value * ratio)`` over the ``name=ratio`` pairs of
    ``[metrics] weight_setting`` (default empty, so every host weighs 0
    and the weigher has no effect).

    Units are the metrics' own (``*.percent`` in percent, see
    ``scheduler.resources.node_metrics``); a name listed twice counts with both
    ratios.
    When a host lacks a listed metric (or reports it with no numeric
    value):

    * ``[metrics] required`` (default True): raise
      ``ComputeHostMetricNotFound``; enable the MetricsFilter to drop such
      hosts beforehand;
    * otherwise the host's raw weight is ``[metrics] weight_of_unavailable``
      (default -10000.0), unless that metric's ``ratio * multiplier`` is 0
      for the host, in which case the metric is skipped (Nova's rule).

    No class bounds.  The multiplier is ``[metrics] weight_multiplier``
    (1.0), overridable per aggregate with ``metrics_weight_multiplier``
    (the minimum over the host's aggregates, as Nova since Stein).  The
    setting is read on every call, so a changed option applies at once.
    """

    HOST_LOCAL = True

    def weight_multiplier(self, host_state):
        return aggregates.aggregate_min_value(
            host_state, AGGREGATE_MULTIPLIER_KEY,
            CONF.metrics.weight_multiplier, cast_to=aggregates.finite_float)

    def weigh_object(self, host_state, weight_properties):
        values = node_metrics.host_metrics(host_state)
        total = 0.0
        for name, ratio in node_metrics.configured_weight_setting():
            value = values.get(name)
            if value is not None:
                total += value * ratio
            elif self._missing_metric_decides(host_state, name, ratio):
                return CONF.metrics.weight_of_unavailable
        return total

    def multiplier_key(self):
        return CONF.metrics.weight_multiplier

    def weigh_rows(self, table, rows, weight_properties):
        if not node_metrics.configured_weight_setting():
            return np.zeros(len(rows))
        return None

    def memo_key(self, weight_properties):
        return (tuple(node_metrics.configured_weight_setting()),
                CONF.metrics.required, CONF.metrics.weight_of_unavailable,
                CONF.metrics.weight_multiplier)

    def _missing_metric_decides(self, host_state, name, ratio):
        """Whether a missing metric makes the host weigh
        ``weight_of_unavailable``; raises when metrics are required."""
        if CONF.metrics.required:
            raise exception.ComputeHostMetricNotFound(
                name=name, host=host_state.host, node=host_state.nodename)
        return ratio * self.weight_multiplier(host_state) != 0
