"""The versioned-object base: Nova's wire envelope for our objects.

Objects travel as oslo.versionedobjects primitives in Nova's namespace
(``nova_object.name``, ``nova_object.namespace`` = ``nova``,
``nova_object.version``, ``nova_object.data``, ``nova_object.changes``), so
that Nova's conductor and this service understand each other's messages.
Classes keep Nova's names and the version of the release they mirror; a
primitive of a newer minor version than ours is refused with
``IncompatibleObjectVersion``, which the serializer reports to the caller
as ``InvalidObjectPrimitive``.  Fields Nova has and the scheduler never
reads are left out: their values in a primitive are ignored.
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import exception as ovo_exc
from oslo_versionedobjects import fields

from scheduler import exception


class SchedulerObjectRegistry(ovo_base.VersionedObjectRegistry):
    """Registry of the objects this service can send and receive."""


register = SchedulerObjectRegistry.register


# Where oslo.versionedobjects stores a set field's value (its getter and
# setter use ``'_obj_' + name``).
_SET_VALUE_PREFIX = '_obj_'


class SchedulerObject(ovo_base.VersionedObject):
    """Base of every object: Nova's serial and project namespaces."""

    OBJ_SERIAL_NAMESPACE = 'nova_object'
    OBJ_PROJECT_NAMESPACE = 'nova'

    def obj_get(self, name, default=None):
        """The field's value, or ``default`` when it is not set; raises
        AttributeError for a name that is not a field (as
        ``obj_attr_is_set``).

        Filters and weighers call this for every request field they read,
        so a field goes straight to where oslo.versionedobjects keeps a
        set value (its ``_obj_<name>`` attribute, which its getter
        returns) instead of through ``obj_attr_is_set``, which lists the
        fields on every call.
        """
        if name in self.fields:
            return getattr(self, _SET_VALUE_PREFIX + name, default)
        if self.obj_attr_is_set(name):
            return getattr(self, name)
        return default


class StrictList(fields.List):
    """ovo's List, whose ``from_primitive`` also refuses a value that is
    not a list: ovo iterates whatever it gets, so that ``"host3"`` would
    be read as ``["h", "o", "s", "t", "3"]`` and a dict as its keys."""

    def from_primitive(self, obj, attr, value):
        if not isinstance(value, (list, tuple)):
            raise ValueError('A list is required in field %s, not a %s'
                             % (attr, type(value).__name__))
        return super().from_primitive(obj, attr, value)


class ListOfStringsField(fields.AutoTypedField):
    """ovo's ListOfStringsField, on StrictList."""

    AUTO_TYPE = StrictList(fields.String())


class DictOfListOfStringsField(fields.AutoTypedField):
    """ovo's DictOfListOfStringsField, on StrictList."""

    AUTO_TYPE = fields.Dict(StrictList(fields.String()))


class TimestampedObject:
    """Mix-in with Nova's ``created_at`` / ``updated_at`` fields."""

    fields = {
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }


class ObjectListBase(ovo_base.ObjectListBase):
    """A list of objects whose ``objects`` field holds the items."""


class ObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Turns our objects into Nova-style primitives and back.

    A primitive that cannot be read (unknown object, incompatible version,
    a field of the wrong type) raises ``InvalidObjectPrimitive``, so that
    the caller gets a specific, readable error instead of a crash.
    """

    OBJ_BASE_CLASS = SchedulerObject

    def _process_object(self, context, objprim):
        try:
            return super()._process_object(context, objprim)
        except (ovo_exc.VersionedObjectsException, ValueError, TypeError,
                KeyError, AttributeError, OverflowError) as exc:
            raise exception.InvalidObjectPrimitive(
                reason='%s: %s' % (type(exc).__name__, exc)) from exc

    def deserialize_entity(self, context, entity):
        try:
            return super().deserialize_entity(context, entity)
        except RecursionError as exc:
            raise exception.InvalidObjectPrimitive(
                reason='the argument is nested too deeply') from exc


def obj_to_dict(obj):
    """A plain dict of the set fields of ``obj``, recursively.

    Used for legacy (RPC 4.0) dicts and notification payloads: objects
    become dicts of their set fields, lists of objects become lists, sets
    become lists.
    """
    if isinstance(obj, ovo_base.ObjectListBase):
        return [obj_to_dict(item) for item in obj.objects]
    if isinstance(obj, ovo_base.VersionedObject):
        return {name: obj_to_dict(getattr(obj, name)) for name in obj.fields
                if obj.obj_attr_is_set(name)}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [obj_to_dict(item) for item in obj]
    if isinstance(obj, dict):
        return {key: obj_to_dict(value) for key, value in obj.items()}
    return obj
