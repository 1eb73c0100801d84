"""Flavor-based host affinity.

Follows Nova's ``type_filter``.
TypeAffinityFilter was removed from Nova in 17.0; it is kept for
deployments that still enable it.
"""

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.filters import utils
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)

INSTANCE_TYPE_KEY = 'instance_type'


class TypeAffinityFilter(BaseHostFilter):
    """Pass when every instance on the host has the request's flavor
    (``instance.instance_type_id == flavor.id``), so a host only ever
    runs one flavor.  An empty host passes.  An instance whose flavor is
    unknown counts as another flavor."""

    HOST_LOCAL = True

    def host_passes(self, host_state, spec_obj):
        other_types = utils.other_types_on_host(
            host_state, spec_obj.flavor.obj_get('id'))
        if other_types:
            LOG.debug('%(host)s runs other flavors: %(types)s',
                      {'host': host_state, 'types': other_types})
            return False
        return True


class AggregateTypeAffinityFilter(BaseHostFilter):
    """Pass when the flavor's name is in the ``instance_type`` metadata
    (a comma-separated, stripped list of flavor names) of one of the
    host's aggregates, or when none of them has that key.  Runs once per
    request."""

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        values = aggregates.aggregate_values_from_key(host_state,
                                                 INSTANCE_TYPE_KEY)
        if not values:
            return True
        name = spec_obj.flavor.obj_get('name')
        return any(name in _split(value) for value in values)


def _split(value):
    return [item.strip() for item in value.split(',')]
