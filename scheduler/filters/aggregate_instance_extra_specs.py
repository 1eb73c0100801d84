"""Match flavor extra specs against the metadata of the host's aggregates.

Follows Nova's ``aggregate_instance_extra_specs``: the comparison language
is ``extra_specs_ops``.  As in Nova, an extra spec without a scope is
checked here too (and by ComputeCapabilitiesFilter), so the host fails
unless one of its aggregates defines that key.
"""

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.filters import extra_specs_ops
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)

SCOPE = 'aggregate_instance_extra_specs'


class AggregateInstanceExtraSpecsFilter(BaseHostFilter):
    """Every flavor extra spec this filter owns must be satisfied by a
    value of the same key in the host's aggregates.

    Keys are split once on ``:``.  A key with another scope
    (``hw:cpu_policy``, ``capabilities:...``) is ignored; a key with the
    ``aggregate_instance_extra_specs:`` scope is checked without that
    prefix; a key with no ``:`` (even ``aggregate_instance_extra_specs``
    itself) is checked as it is, so the host fails unless an aggregate
    defines it.  A key passes when any of its aggregate values (all the
    host's aggregates, comma-split and stripped) matches the requirement
    with ``extra_specs_ops.match``.  A flavor without extra specs passes.
    Runs once per request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        extra_specs = spec_obj.flavor.obj_get('extra_specs')
        if not extra_specs:
            return True
        metadata = aggregates.aggregate_metadata_get_by_host(host_state)
        for key, requirement in extra_specs.items():
            key = _own_key(key)
            if key is None:
                continue
            if not _any_matches(metadata.get(key), requirement):
                LOG.debug('%(host)s fails extra spec %(key)s=%(req)s of '
                          'its aggregates',
                          {'host': host_state, 'key': key,
                           'req': requirement})
                return False
        return True

    explain_label = 'aggregate metadata mismatch'

    def explain(self, host_state, spec_obj):
        """The first extra spec the host's aggregates fail."""
        extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
        metadata = aggregates.aggregate_metadata_get_by_host(host_state)
        for key, requirement in extra_specs.items():
            own = _own_key(key)
            if own is None or _any_matches(metadata.get(own), requirement):
                continue
            return 'extra spec %s=%s, the host\'s aggregates have %s' % (
                key, requirement,
                ', '.join(sorted(metadata.get(own) or ())) or 'none')
        return super().explain(host_state, spec_obj)


def _own_key(key):
    """The aggregate key to check for an extra spec key, or None when the
    key belongs to another scope."""
    scope, sep, rest = key.partition(':')
    if not sep:
        return key
    return rest if scope == SCOPE else None


def _any_matches(values, requirement):
    return any(extra_specs_ops.match(value, requirement)
               for value in values or ())
