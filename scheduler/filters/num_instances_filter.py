"""Filter out hosts that already run too many instances.

Follows Nova's ``num_instances_filter``: a
host passes while its ``num_instances`` (the compute node's
``num_instances`` statistic, plus one per instance the scheduler placed on
it since the node last reported) is strictly below the maximum.
"""

from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.filters import BaseHostFilter
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)


class NumInstancesFilter(BaseHostFilter):
    """Pass hosts with ``num_instances < [filter_scheduler]
    max_instances_per_host`` (default 50, at least 1 as in Nova Pike+)."""

    HOST_LOCAL = True

    def _get_max_instances_per_host(self, host_state, spec_obj):
        return CONF.filter_scheduler.max_instances_per_host

    def host_passes(self, host_state, spec_obj):
        max_instances = self._get_max_instances_per_host(host_state,
                                                         spec_obj)
        passes = host_state.num_instances < max_instances
        if not passes:
            LOG.debug('%(host)s fails num_instances check: %(num)d '
                      'instances, the maximum is %(max)d',
                      {'host': host_state, 'num': host_state.num_instances,
                       'max': max_instances})
        return passes


class AggregateNumInstancesFilter(NumInstancesFilter):
    """NumInstancesFilter with the maximum taken from the host's
    aggregates.

    The aggregate metadata key ``max_instances_per_host`` is read as an
    int; with several aggregates the smallest value wins.  No value, or a
    malformed one (logged as a warning), falls back to
    ``[filter_scheduler] max_instances_per_host``.
    """

    def _get_max_instances_per_host(self, host_state, spec_obj):
        default = super()._get_max_instances_per_host(host_state, spec_obj)
        return aggregates.aggregate_min_value(host_state,
                                         'max_instances_per_host', default,
                                         cast_to=int)
