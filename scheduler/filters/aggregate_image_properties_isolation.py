"""Match image properties against the metadata of the host's aggregates.

Follows Nova's ``aggregate_image_properties_isolation``.  Only image
properties that ImageMetaProps models can isolate
anything (as in Nova, where unknown property names are skipped).
"""

from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.filters import BaseHostFilter
from scheduler.resources import aggregates

LOG = logging.getLogger(__name__)


class AggregateImagePropertiesIsolation(BaseHostFilter):
    """For every aggregate metadata key that names an image property set
    on the request's image, the property's value (as a string) must be
    one of the key's comma-separated values, over all the host's
    aggregates.

    Keys naming no image property, properties the image does not set,
    and requests without an image do not restrict anything.  With
    ``[filter_scheduler] aggregate_image_properties_isolation_namespace``
    set, only keys starting with the namespace followed by
    ``aggregate_image_properties_isolation_separator`` (default ``.``)
    are compared; the full key is still the property name, as in Nova.
    Runs on rebuild (the new image must fit the current host) and once
    per request.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        image = spec_obj.get('image')
        props = image.obj_get('properties') if image is not None else None
        if props is None:
            return True
        prefix = _namespace_prefix()
        metadata = aggregates.aggregate_metadata_get_by_host(host_state)
        for key, allowed in metadata.items():
            if prefix and not key.startswith(prefix):
                continue
            prop = props.get(key)
            if prop and str(prop) not in allowed:
                LOG.debug('%(host)s fails image property %(key)s: '
                          '%(prop)s is not in %(allowed)s',
                          {'host': host_state, 'key': key, 'prop': prop,
                           'allowed': sorted(allowed)})
                return False
        return True


def _namespace_prefix():
    """``namespace + separator``, or None when no namespace is set."""
    conf = CONF.filter_scheduler
    namespace = conf.aggregate_image_properties_isolation_namespace
    if not namespace:
        return None
    return namespace + conf.aggregate_image_properties_isolation_separator
