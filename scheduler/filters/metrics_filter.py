"""MetricsFilter: keep the hosts that report every weighed metric.

Follows Nova's MetricsFilter (Icehouse onwards): it
pairs with the MetricsWeigher so that ``[metrics] required = True`` never
meets a host lacking a metric.
"""

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.resources import node_metrics

LOG = logging.getLogger(__name__)


class MetricsFilter(BaseHostFilter):
    """Pass a host when it reports every metric named in ``[metrics]
    weight_setting`` (default empty: every host passes).

    Only the names count, as in Nova: a metric reported without a numeric
    value passes here (the weigher then treats it as unavailable).
    Invalid ``name=ratio`` entries are ignored, as the weigher ignores
    them.  Runs for every instance of a request and not on rebuilds.
    """

    HOST_LOCAL = True

    def host_passes(self, host_state, spec_obj):
        wanted = {name for name, _ in node_metrics.configured_weight_setting()}
        missing = wanted - node_metrics.host_metrics(host_state).keys()
        if missing:
            LOG.debug('%(host)s does not report the metrics %(missing)s',
                      {'host': host_state,
                       'missing': ', '.join(sorted(missing))})
            return False
        return True
