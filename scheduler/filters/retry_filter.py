"""RetryFilter: do not retry a build on a node that already failed it.

Follows Nova's RetryFilter: a request without a retry record passes every
host (Nova's conductor sets none when ``max_attempts`` is 1 or a single
host or node is forced).
"""

import numpy as np
from oslo_log import log as logging

from scheduler import filters

LOG = logging.getLogger(__name__)


class RetryFilter(filters.BaseHostFilter):
    """The ``(host, nodename)`` pair is not among those already tried.

    ``spec_obj.retry`` lists the nodes of earlier attempts.  No retry
    record -> every host passes (re-scheduling is disabled: one attempt,
    or a single forced host or node).  Runs for every instance.
    """

    HOST_LOCAL = True

    def host_passes(self, host_state, spec_obj):
        retry = spec_obj.get('retry')
        if retry is None:
            LOG.debug('Re-scheduling is disabled')
            return True
        if (host_state.host, host_state.nodename) in retry.host_node_pairs():
            LOG.info('Host %(host)s node %(node)s was already tried and '
                     'fails the RetryFilter',
                     {'host': host_state.host, 'node': host_state.nodename})
            return False
        return True

    explain_label = 'already tried'

    def explain(self, host_state, spec_obj):
        return 'node %s:%s already tried for this request (retry)' % (
            host_state.host, host_state.nodename)

    def passes_all(self, spec_obj):
        return spec_obj.get('retry') is None

    def host_mask(self, table, rows, spec_obj):
        retry = spec_obj.get('retry')
        if retry is None:
            return np.ones(len(rows), dtype=bool)
        tried = [table.row_of[pair] for pair in retry.host_node_pairs()
                 if pair in table.row_of]
        mask = ~np.isin(rows, tried)
        if not mask.all():
            LOG.info('%d node(s) already tried fail the RetryFilter',
                     len(mask) - int(mask.sum()))
        return mask
