"""The versioned-object base: Nova's wire envelope for our objects.

Objects travel as oslo.versionedobjects primitives in Nova's namespace
(``nova_object.name``, ``nova_object.namespace`` = ``nova``,
``nova_object.version``, ``nova_object.data``, ``nova_object.changes``), so
that Nova's conductor and this service understand each other's messages.
Classes keep Nova's names and the versions of Nova 34.0.0 (2026.2), so
that every version Nova has sent since Newton is read; a primitive of a
newer minor (or another major) version than ours is refused with
``ObjectVersionNotSupported``, naming the object, its version and ours.
Fields Nova has and the scheduler never reads are left out: their values
in a primitive are ignored.

Going the other way, ``FIELDS_ADDED`` / ``VALUES_ADDED`` drive
``obj_make_compatible``, and ``backport(entity, manifest)`` rewrites a
reply in the versions an older caller reads (Nova's version-manifest
mechanism: a map of object name -> version).
"""

from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import exception as ovo_exc
from oslo_versionedobjects import fields

from scheduler import exception


def version_tuple(version):
    """``'1.15'`` -> ``(1, 15)``."""
    return versionutils.convert_version_to_tuple(version)


class SchedulerObjectRegistry(ovo_base.VersionedObjectRegistry):
    """Registry of the objects this service can send and receive."""


register = SchedulerObjectRegistry.register


# Where oslo.versionedobjects stores a set field's value (its getter and
# setter use ``'_obj_' + name``).
_SET_VALUE_PREFIX = '_obj_'


class SchedulerObject(ovo_base.VersionedObject):
    """Base of every object: Nova's serial and project namespaces.

    ``FIELDS_ADDED`` maps a field to the ``(major, minor)`` version that
    added it, ``VALUES_ADDED`` a field to ``{value: version}`` for enum
    values added later (as Nova's version histories record them).
    ``obj_make_compatible`` drops the fields newer than the target version
    and refuses (ValueError) a value the target cannot hold, as Nova does.
    Sub-objects are written in the versions of the version manifest given
    to ``obj_to_primitive`` (see ``backport``).
    """

    OBJ_SERIAL_NAMESPACE = 'nova_object'
    OBJ_PROJECT_NAMESPACE = 'nova'
    FIELDS_ADDED = {}
    VALUES_ADDED = {}

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = version_tuple(target_version)
        for name, values in self.VALUES_ADDED.items():
            for value, added in values.items():
                if target < added and primitive.get(name) == value:
                    raise ValueError(
                        '%s.%s=%r needs version %d.%d, not %s'
                        % (self.obj_name(), name, value, added[0], added[1],
                           target_version))
        for name, added in self.FIELDS_ADDED.items():
            if target < added:
                primitive.pop(name, None)

    @classmethod
    def from_values(cls, values):
        """An object with the fields of ``values`` (a dict, field name ->
        value) set and marked changed, as ``cls(**values)`` would but
        without coercing them: for values that already are of their
        fields' types (strings from our own objects and rows, a valid
        UUID string for a UUID field, an object of the field's class),
        where oslo.versionedobjects' coercion only costs time (a UUID
        field's, some 10 us, parses the UUID to warn about a bad one).
        ``values`` is trusted: nothing checks it."""
        obj = cls()
        set_trusted(obj, values)
        return obj

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

    def obj_attr_is_set(self, attrname):
        """Whether field ``attrname`` has a value, as oslo.versionedobjects
        answers (AttributeError for a name that is neither a field nor an
        extra field), without listing the fields on every call: every
        ``obj_to_primitive`` and ``obj_what_changed`` asks it once per
        field."""
        if attrname in self.fields:
            return hasattr(self, _SET_VALUE_PREFIX + attrname)
        return super().obj_attr_is_set(attrname)

    def obj_what_changed(self):
        """The names of the fields changed since the last
        ``obj_reset_changes``, a set: those set directly and those whose
        object value has changes of its own (oslo.versionedobjects'
        rule), read from the set values instead of through each field's
        getter."""
        changes = {name for name in self._changed_fields
                   if name in self.fields}
        for name, value in self.obj_set_values().items():
            if (isinstance(value, ovo_base.VersionedObject) and
                    value.obj_what_changed()):
                changes.add(name)
        return changes

    def obj_set_values(self):
        """A dict of the fields that are set, name -> value.  Read from
        where oslo.versionedobjects keeps set values, so its cost grows
        with the fields set, not with all the fields of the class."""
        size = len(_SET_VALUE_PREFIX)
        return {key[size:]: value for key, value in vars(self).items()
                if key.startswith(_SET_VALUE_PREFIX) and
                key[size:] in self.fields}


def set_trusted(obj, values):
    """Set the fields of ``values`` (field name -> value) on ``obj``, a
    SchedulerObject, and mark them changed, without coercing them (see
    ``SchedulerObject.from_values``)."""
    for name, value in values.items():
        setattr(obj, _SET_VALUE_PREFIX + name, value)
    obj._changed_fields.update(values)


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


class ListOfListsOfStringsField(fields.AutoTypedField):
    """ovo's ListOfListsOfStringsField, on StrictList."""

    AUTO_TYPE = StrictList(StrictList(fields.String()))


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

    A primitive that cannot be read raises ``InvalidObjectPrimitive``
    (unknown object, a field of the wrong type) or its subclass
    ``ObjectVersionNotSupported`` (a version newer than ours, nested
    objects included), so that the caller gets a specific, readable error
    instead of a crash.
    """

    OBJ_BASE_CLASS = SchedulerObject

    def _process_object(self, context, objprim):
        try:
            return super()._process_object(context, objprim)
        except ovo_exc.IncompatibleObjectVersion as exc:
            raise exception.ObjectVersionNotSupported(
                **_version_kwargs(exc)) from exc
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


def _version_kwargs(exc):
    """``objname``, ``objver`` and ``supported`` of an ovo
    IncompatibleObjectVersion, as strings."""
    return {key: str(exc.kwargs.get(key))
            for key in ('objname', 'objver', 'supported')}


def backport(entity, manifest):
    """``entity`` with every object in it written at the version
    ``manifest`` (object name -> version string) gives its name.

    ``entity`` may be an object or lists, tuples and dicts holding
    objects; containers are rebuilt, other values kept, and nothing is
    copied when every version of the manifest is already ours.  Objects
    whose name the manifest lacks keep their version, and so do their
    sub-objects (oslo.versionedobjects follows a manifest from a parent
    it names).  Fields newer than the target are dropped (each object's
    ``FIELDS_ADDED``); a value the older version cannot hold raises
    ValueError.  Used for replies to callers older than our objects,
    since Nova never asks a scheduler to backport.
    """
    if all(_registered_version(name) == version
           for name, version in manifest.items()):
        return entity
    return _backport(entity, manifest)


def _registered_version(name):
    classes = SchedulerObjectRegistry.obj_classes().get(name) or [None]
    return getattr(classes[0], 'VERSION', None)


def _backport(entity, manifest):
    if isinstance(entity, SchedulerObject):
        return _backport_object(entity, manifest)
    if isinstance(entity, (list, tuple)):
        return type(entity)(_backport(item, manifest) for item in entity)
    if isinstance(entity, dict):
        return {key: _backport(value, manifest)
                for key, value in entity.items()}
    return entity


def _backport_object(obj, manifest):
    """A copy of ``obj`` at the manifest's version (its own when the
    manifest does not name it), sub-objects included."""
    target = manifest.get(obj.obj_name(), obj.VERSION)
    primitive = obj.obj_to_primitive()
    obj.obj_make_compatible_from_manifest(
        primitive[obj._obj_primitive_key('data')], target, manifest)
    primitive[obj._obj_primitive_key('version')] = target
    return type(obj).obj_from_primitive(primitive, context=obj._context)


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
