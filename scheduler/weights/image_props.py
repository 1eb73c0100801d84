"""ImagePropertiesWeigher: weigh hosts by the image properties their
instances share with the requested image.

Follows Nova's ImagePropertiesWeigher (2025.1 onwards), with one limit
of this service: Nova reads each instance's full image metadata from its
system metadata, which this service's Instance does not carry.  An
instance's image properties are therefore:

* its ``image_props`` attribute when something attached one (a dict of
  property names to values, legacy names accepted, or an
  ImageMetaProps); nothing in this service attaches it yet;
* otherwise the three instance fields that Nova copies from the image
  properties at boot: ``architecture`` (``hw_architecture``),
  ``vm_mode`` (``hw_vm_mode``) and ``os_type``.

Only the properties ImageMetaProps models are compared, on both sides.
"""

import collections

import numpy as np

from scheduler import weights
from scheduler.conf import CONF
from scheduler.objects import image_meta
from scheduler.resources import node_metrics

SETTING_OPTION = 'filter_scheduler.image_props_weight_setting'
# Instance fields holding a copy of an image property (legacy names).
INSTANCE_IMAGE_FIELDS = ('architecture', 'vm_mode', 'os_type')


def _property_pairs(props):
    """``{(name, str(value))}`` of the set, non-None properties of an
    ImageMetaProps (values compared as strings, as Nova)."""
    return {(name, str(value))
            for name, value in props.set_properties().items()
            if value is not None}


def requested_image_props(spec_obj):
    """The ``(name, value)`` pairs of the requested image's properties."""
    image = spec_obj.get('image')
    props = image.obj_get('properties') if image is not None else None
    return _property_pairs(props) if props is not None else set()


def instance_image_props(instance):
    """The ``(name, value)`` pairs of an instance's image properties (see
    the module docstring for where they come from)."""
    props = getattr(instance, 'image_props', None)
    if props is None:
        props = {field: instance.obj_get(field)
                 for field in INSTANCE_IMAGE_FIELDS}
    if isinstance(props, dict):
        props = image_meta.ImageMetaProps.from_dict(props)
    return _property_pairs(props)


def configured_ratios():
    """``{property: ratio}`` from ``[filter_scheduler]
    image_props_weight_setting`` (invalid entries skipped and logged;
    the last of duplicate names wins)."""
    return dict(node_metrics.cached_weight_setting(
        tuple(CONF.filter_scheduler.image_props_weight_setting),
        SETTING_OPTION))


class ImagePropertiesWeigher(weights.BaseHostWeigher):
    """Raw weight: for each property ``(name, value)`` of the requested
    image, the number of the host's instances whose image has the same
    value, times the property's ratio: ``image_props_weight_setting``'s
    ratio for ``name`` (0 when the setting lists other names only), or 1
    for every property when the setting is empty (the default).

    Multiplier ``[filter_scheduler] image_props_weight_multiplier``
    (default 0.0: no effect), overridable per aggregate with the key of
    the same name; positive packs instances of alike images together,
    negative spreads them.  Nova skips the computation when the
    configured multiplier is 0, which also ignores a non-zero aggregate
    override; this weigher always computes (it is cheap here), so the
    override works.  No class bounds.
    """

    HOST_LOCAL = True

    multiplier_option = 'image_props_weight_multiplier'

    def weigh_object(self, host_state, weight_properties):
        return _weight(host_state, requested_image_props(weight_properties),
                       configured_ratios())

    def weigh_rows(self, table, rows, weight_properties):
        requested = requested_image_props(weight_properties)
        if not requested:
            return np.zeros(len(rows))
        ratios = configured_ratios()
        key = (frozenset(requested), tuple(sorted(ratios.items())))
        return table.memo(self, key,
                          lambda state: _weight(state, requested, ratios),
                          rows, dtype=np.float64)


def _weight(host_state, requested, ratios):
    """The raw weight of ``host_state`` for the ``requested`` property
    pairs and the configured ``ratios``."""
    if not requested:
        return 0.0
    counts = collections.Counter(
        pair for instance in host_state.instances.values()
        for pair in instance_image_props(instance) if pair in requested)
    return float(sum(count * (ratios.get(name, 0.0) if ratios else 1.0)
                     for (name, _), count in counts.items()))
