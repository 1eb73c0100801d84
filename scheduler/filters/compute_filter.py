"""ComputeFilter: keep hosts whose compute service is enabled and alive.

Follows Nova's ComputeFilter.  Down and disabled
hosts are only removed here: without this filter they can be chosen.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import filters
from scheduler.view import servicegroup

LOG = logging.getLogger(__name__)


class ComputeFilter(filters.BaseHostFilter):
    """The host's ``nova-compute`` service is enabled and up.

    * ``service['disabled']`` set -> fail (debug log with the
      ``disabled_reason``);
    * not up -> fail (warning "has not been heard from in a while"):
      ``forced_down``, or the last heartbeat (``last_seen_up``, else
      ``created_at``) older than ``[DEFAULT] service_down_time`` seconds;
    * otherwise pass.

    A host without a service record cannot be checked and fails (Nova's
    host manager never builds such a host).  Runs once per request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        service = host_state.service
        if not service:
            LOG.warning('%(host_state)s has no compute service record',
                        {'host_state': host_state})
            return False
        if service.get('disabled'):
            LOG.debug('%(host_state)s is disabled, reason: %(reason)s',
                      {'host_state': host_state,
                       'reason': service.get('disabled_reason')})
            return False
        if not servicegroup.service_is_up(service):
            LOG.warning('%(host_state)s has not been heard from in a while',
                        {'host_state': host_state})
            return False
        return True

    def explain(self, host_state, spec_obj):
        """Why the service fails: none, disabled (with its reason),
        forced down, or its last heartbeat too old."""
        service = host_state.service
        if not service:
            return 'no compute service record'
        if service.get('disabled'):
            return 'compute service disabled (reason: %s)' % (
                service.get('disabled_reason') or 'none given')
        if service.get('forced_down'):
            return 'compute service forced down'
        last = servicegroup.last_heartbeat(service)
        if last is None:
            return 'compute service down: no heartbeat ever'
        age = abs((timeutils.utcnow() - last).total_seconds())
        return ('compute service down: last heartbeat %s, %d s ago '
                '(service_down_time %d s)' % (
                    last.isoformat(timespec='seconds'), age,
                    servicegroup.service_down_time()))

    def explain_group(self, host_state, spec_obj):
        service = host_state.service
        if not service:
            return 'no compute service'
        return 'disabled' if service.get('disabled') else 'down'

    def host_mask(self, table, rows, spec_obj):
        mask = (table.up_mask(timeutils.utcnow(), rows) &
                ~table.columns['disabled'][rows])
        if not mask.all():
            LOG.debug('%d host(s) are disabled, down or without a compute '
                      'service', len(mask) - int(mask.sum()))
        return mask
