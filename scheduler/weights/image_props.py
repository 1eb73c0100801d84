"""ImagePropertiesWeigher: weigh hosts by the image properties their
instances share with the requested image.

Follows Nova's ImagePropertiesWeigher (2025.1 onwards, with the fix of
Nova bug 2125935 in 34.0.0).  An instance's image properties are, in
this order:

* its ``image_props`` attribute when something attached one (a dict of
  property names to values, legacy names accepted, or an
  ImageMetaProps);
* in Nova database mode, the ``image_*`` system metadata of the
  instance in the database of its host's cell, as Nova reads them
  (``scheduler.db.nova.image_props``; the host view lends each HostState
  the reader as ``image_props_reader``).  They are read only when the
  weigher can change the order: a request with image properties and a
  non-zero multiplier (configured or an aggregate's override) on at
  least one host of the view (of the hosts weighed, without a host
  table); in one read for all the hosts weighed
  (cached per instance, see that module).  An instance not in its cell's
  database yet (placed by this service: it has no ``id``) has none, as
  in Nova, and is not looked for;
* otherwise (our own schema, which keeps no system metadata, or a cell
  that did not answer) the three instance fields that Nova copies from
  the image properties at boot: ``architecture`` (``hw_architecture``),
  ``vm_mode`` (``hw_vm_mode``) and ``os_type``.

Only the properties ImageMetaProps models are compared, on both sides,
as strings; a stored value ImageMetaProps cannot take is skipped.
"""

import collections
import functools
import weakref

import numpy as np
from oslo_log import log as logging

from scheduler import weights
from scheduler.conf import CONF
from scheduler.objects import image_meta
from scheduler.resources import node_metrics

LOG = logging.getLogger(__name__)

SETTING_OPTION = 'filter_scheduler.image_props_weight_setting'
# Instance fields holding a copy of an image property (legacy names).
INSTANCE_IMAGE_FIELDS = ('architecture', 'vm_mode', 'os_type')
# The HostState attribute holding the Nova database mode reader.
READER_ATTRIBUTE = 'image_props_reader'


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


@functools.lru_cache(maxsize=4096)
def _stored_pairs(items):
    """The pairs of stored properties (a frozenset of ``(name, value)``
    strings, from system metadata); values ImageMetaProps rejects are
    skipped and logged."""
    try:
        return frozenset(_property_pairs(
            image_meta.ImageMetaProps.from_dict(dict(items))))
    except (ValueError, TypeError):
        pairs = set()
        for name, value in items:
            try:
                pairs |= _property_pairs(
                    image_meta.ImageMetaProps.from_dict({name: value}))
            except (ValueError, TypeError) as exc:
                LOG.warning('Ignoring the image property %s=%r of an '
                            'instance: %s', name, value, exc)
        return frozenset(pairs)


def instance_image_props(instance, found=None):
    """The ``(name, value)`` pairs of an instance's image properties (see
    the module docstring for where they come from); ``found``: ``{uuid:
    properties}`` read from the instances' cells, or None."""
    props = getattr(instance, 'image_props', None)
    if props is None and found is not None:
        stored = found.get(instance.obj_get('uuid'))
        if stored is not None:
            return _stored_pairs(frozenset(stored.items()))
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


def _stamp(instance):
    """What changes when Nova rewrites an instance's image system
    metadata (a rebuild saves the instance): its ``updated_at`` (naive
    UTC) and ``image_ref``."""
    updated = instance.obj_get('updated_at')
    if updated is not None and updated.tzinfo is not None:
        updated = updated.replace(tzinfo=None)
    return updated, instance.obj_get('image_ref')


def _reader(states):
    """The image properties reader the view lent the HostStates, or
    None (our own schema)."""
    for state in states:
        return getattr(state, READER_ATTRIBUTE, None)
    return None


def _wanted(states):
    """The reader's ``(cell uuid, instance uuid, stamp)`` of the
    instances of ``states`` that may be in their cell's database."""
    return [(state.cell_uuid, uuid, _stamp(instance))
            for state in states for uuid, instance in state.instances.items()
            if _written(instance)]


def stored_image_props(states):
    """The stored image properties of the instances of ``states``
    (``{uuid: properties}``, one ``ImagePropsReader.lookup`` for all);
    None without a reader."""
    reader = _reader(states)
    if reader is None:
        return None
    return reader.lookup(_wanted(states))


def _written(instance):
    """Whether the instance may be in its cell's database: read from it
    or reported by its compute service (it has an ``id``), not placed by
    this service and not written yet (Nova finds no system metadata for
    those), and no ``image_props`` attached."""
    return (getattr(instance, 'image_props', None) is None and
            instance.obj_get('id') is not None)


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
    override; here the system metadata is read when the multiplier
    (configured or overridden) of a host of the view is non-zero, so the
    override works.  No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'image_props_weight_multiplier'

    def __init__(self):
        # (weak reference to a HostTable, the row_version of each of its
        # rows when its instances were last all looked up).
        self._looked_up = None

    def weigh_object(self, host_state, weight_properties):
        requested = requested_image_props(weight_properties)
        found = None
        if requested and self.weight_multiplier(host_state) != 0:
            found = stored_image_props([host_state])
        return _weight(host_state, requested, configured_ratios(), found)

    def weigh_objects(self, weighed_hosts, weight_properties):
        """Raw weights of every host, the stored properties read once for
        all of them."""
        weighed_hosts = list(weighed_hosts)
        if weights.per_host_method(self) != self.weigh_object:
            return super().weigh_objects(weighed_hosts, weight_properties)
        states = [weighed.obj for weighed in weighed_hosts]
        requested = requested_image_props(weight_properties)
        found = None
        if requested and any(self.weight_multiplier(state) != 0
                             for state in states):
            found = stored_image_props(states)
        ratios = configured_ratios()
        return [_weight(state, requested, ratios, found) for state in states]

    def weigh_rows(self, table, rows, weight_properties):
        requested = requested_image_props(weight_properties)
        if not requested:
            return np.zeros(len(rows))
        ratios = configured_ratios()
        reader = _reader(table.states_at(rows[:1]))
        if reader is not None and not self._may_count(table):
            reader = None
        if reader is not None:
            self._prefetch(reader, table, rows)

        def weigh(state):
            found = None
            if reader is not None:
                found = reader.cached(state.instances)
            return _weight(state, requested, ratios, found)
        key = (frozenset(requested), tuple(sorted(ratios.items())),
               reader is not None, reader.epoch if reader else None)
        return table.memo(self, key, weigh, rows, dtype=np.float64)

    def _prefetch(self, reader, table, rows):
        """Look up, in one read, the instances of the ``rows`` that changed
        since their last complete lookup (their ``row_version``), so that
        the weights computed next (only for changed rows, or for a new
        request image) find every instance in the reader's cache.  A row
        with an instance left out (its cell did not answer) is looked up
        again next time."""
        done = self._looked_up
        if done is None or done[0]() is not table:
            done = self._looked_up = (weakref.ref(table), np.full(
                len(table.states), -1, dtype=np.int64))
        versions = done[1]
        stale = rows[versions[rows] != table.row_version[rows]]
        if not len(stale):
            return
        states = table.states_at(stale)
        found = reader.lookup(_wanted(states))
        complete = np.fromiter(
            (all(uuid in found for _cell, uuid, _stamp in _wanted([state]))
             for state in states), dtype=bool, count=len(states))
        versions[stale[complete]] = table.row_version[stale[complete]]

    def _may_count(self, table):
        """Whether the multiplier of a host of ``table`` is non-zero (the
        whole table, so that the hosts a request weighs again between
        its instances are weighed from the same source)."""
        known = weights.HostWeightHandler.table_multipliers([self], table)[0]
        if known is None:
            return any(self.weight_multiplier(state) != 0
                       for state in table.states)
        return bool(np.any(np.asarray(known) != 0))


def _weight(host_state, requested, ratios, found=None):
    """The raw weight of ``host_state`` for the ``requested`` property
    pairs and the configured ``ratios``; ``found``: the stored image
    properties of the instances, or None."""
    if not requested:
        return 0.0
    counts = collections.Counter(
        pair for instance in host_state.instances.values()
        for pair in instance_image_props(instance, found)
        if pair in requested)
    return float(sum(count * (ratios.get(name, 0.0) if ratios else 1.0)
                     for (name, _), count in counts.items()))
