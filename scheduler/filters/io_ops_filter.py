"""Filter out hosts that are busy with too many I/O-heavy operations.

Follows Nova's ``io_ops_filter``: a host
passes while its ``num_io_ops`` is strictly below the maximum.
``num_io_ops`` is the compute node's ``io_workload`` statistic (instances
being built, resized, migrated, rebuilt, snapshotted, backed up, rescued
or unshelved), plus one per instance the scheduler placed on it since the
node last reported.
"""

from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.filters import BaseHostFilter
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)


class IoOpsFilter(BaseHostFilter):
    """Pass hosts with ``num_io_ops < [filter_scheduler]
    max_io_ops_per_host`` (default 8).  A maximum of 0 rejects every
    host."""

    HOST_LOCAL = True

    def _get_max_io_ops_per_host(self, host_state, spec_obj):
        return CONF.filter_scheduler.max_io_ops_per_host

    def host_passes(self, host_state, spec_obj):
        max_io_ops = self._get_max_io_ops_per_host(host_state, spec_obj)
        passes = host_state.num_io_ops < max_io_ops
        if not passes:
            LOG.debug('%(host)s fails I/O ops check: %(num)d ops, the '
                      'maximum is %(max)d',
                      {'host': host_state, 'num': host_state.num_io_ops,
                       'max': max_io_ops})
        return passes


class AggregateIoOpsFilter(IoOpsFilter):
    """IoOpsFilter with the maximum taken from the host's aggregates.

    The aggregate metadata key ``max_io_ops_per_host`` is read as an int;
    with several aggregates the smallest value wins.  No value, or a
    malformed one (logged as a warning), falls back to
    ``[filter_scheduler] max_io_ops_per_host``.
    """

    def _get_max_io_ops_per_host(self, host_state, spec_obj):
        default = super()._get_max_io_ops_per_host(host_state, spec_obj)
        return aggregates.aggregate_min_value(
            host_state, 'max_io_ops_per_host', default, cast_to=int)
