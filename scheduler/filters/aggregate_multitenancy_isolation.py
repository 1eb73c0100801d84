"""Reserve hosts of an aggregate for the tenants the aggregate lists.

Follows Nova's ``aggregate_multitenancy_isolation``, including the 2024.2
rule that every metadata key beginning with
``filter_tenant_id`` (``filter_tenant_id``, ``filter_tenant_id2``,
``filter_tenant_id_extra`` ...) contributes tenants, so that long tenant
lists can be spread over several 255-character values.
"""

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)

TENANT_KEY_PREFIX = 'filter_tenant_id'


class AggregateMultiTenancyIsolation(BaseHostFilter):
    """Pass when the host's aggregates list no tenant, or list the
    request's ``project_id``.

    Tenants are the comma-separated, stripped values of every aggregate
    metadata key starting with ``filter_tenant_id``, over all the host's
    aggregates.  Empty values name no tenant, so ``filter_tenant_id=``
    restricts nothing.  This only keeps other tenants off the listed
    hosts; it does not keep the tenant on them.  Runs once per request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        tenants = _allowed_tenants(host_state)
        if not tenants:
            return True
        project_id = spec_obj.get('project_id')
        if project_id not in tenants:
            LOG.debug('%(host)s is reserved for other tenants than '
                      '%(project)s', {'host': host_state,
                                      'project': project_id})
            return False
        return True

    explain_label = 'reserved for other projects'

    def explain(self, host_state, spec_obj):
        return 'aggregates reserve the host for projects %s, not %s' % (
            ', '.join(sorted(_allowed_tenants(host_state))),
            spec_obj.get('project_id'))


def _allowed_tenants(host_state):
    tenants = set()
    metadata = aggregates.aggregate_metadata_get_by_host(host_state)
    for key, values in metadata.items():
        if key.startswith(TENANT_KEY_PREFIX):
            tenants.update(values)
    tenants.discard('')
    return tenants
