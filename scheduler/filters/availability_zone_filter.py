"""AvailabilityZoneFilter: keep hosts in the requested availability zone.

Follows Nova's AvailabilityZoneFilter: a host's
zones are the ``availability_zone`` values of its aggregates (split on
commas); a host in no zone aggregate is in the default zone.
"""

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler.conf import CONF
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)

AZ_KEY = 'availability_zone'


class AvailabilityZoneFilter(filters.BaseHostFilter):
    """The requested ``spec_obj.availability_zone`` is one of the host's.

    * no zone requested -> pass;
    * the host's aggregates set ``availability_zone`` -> pass when the
      requested zone is among their values (comma-separated, stripped);
    * otherwise the host is in ``[DEFAULT] default_availability_zone``
      (``nova``) -> pass when that is the requested zone.

    Runs once per request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        requested = spec_obj.get('availability_zone')
        if not requested:
            return True
        zones = self._host_zones(host_state)
        if requested in zones:
            return True
        LOG.debug('Availability zone %(az)s requested; %(host_state)s is in '
                  '%(zones)s', {'az': requested, 'host_state': host_state,
                                'zones': sorted(zones)})
        return False

    def explain(self, host_state, spec_obj):
        return 'in availability zone %s, %s asked' % (
            ', '.join(sorted(self._host_zones(host_state))),
            spec_obj.get('availability_zone'))

    def explain_group(self, host_state, spec_obj):
        return 'not in availability zone %s' % spec_obj.get(
            'availability_zone')

    def passes_all(self, spec_obj):
        return not spec_obj.get('availability_zone')

    def host_mask(self, table, rows, spec_obj):
        if not spec_obj.get('availability_zone'):
            return np.ones(len(rows), dtype=bool)
        return None

    def memo_key(self, spec_obj):
        return (spec_obj.get('availability_zone'),
                CONF.default_availability_zone)

    def memo_scope(self, spec_obj):
        # A host's zones come from its aggregates' metadata only.
        return aggregates.AGGREGATE_METADATA

    @staticmethod
    def _host_zones(host_state):
        """The host's zones: its aggregates', else the default zone."""
        metadata = aggregates.aggregate_metadata_get_by_host(host_state,
                                                        key=AZ_KEY)
        if AZ_KEY in metadata:
            return metadata[AZ_KEY]
        return {CONF.default_availability_zone}
