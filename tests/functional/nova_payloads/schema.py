"""How a versioned object's fields look on the wire, for comparing our
payload classes with Nova's: only oslo.versionedobjects is imported, so
that both sides (this repository's tests and the Nova venv's helper) can
use it.

``describe(cls)`` is ``{"version": ..., "fields": {name: [kind, nullable,
default]}}``.  ``kind`` is the oslo.versionedobjects type (``String``,
``Integer``, ``List(String)``, ``Object(FlavorPayload)``...); an enum or
a version predicate is a ``String`` (its values travel as strings; our
objects keep them as strings); ``default`` is ``"-"`` when the field has
none.
"""

from oslo_versionedobjects import fields

NO_DEFAULT = '-'
_CONTAINERS = ((fields.List, 'List'), (fields.Set, 'Set'),
               (fields.Dict, 'Dict'))


def type_kind(field_type):
    """The name of an oslo.versionedobjects field type, recursively."""
    if isinstance(field_type, (fields.Enum, fields.VersionPredicate)):
        return 'String'
    if isinstance(field_type, fields.Object):
        return 'Object(%s)' % field_type._obj_name
    for container, name in _CONTAINERS:
        if isinstance(field_type, container):
            return '%s(%s)' % (name,
                               type_kind(field_type._element_type._type))
    for klass in type(field_type).__mro__:
        if klass.__module__ == fields.__name__:
            return klass.__name__
    return type(field_type).__name__


def describe_field(field):
    default = field.default
    if default is fields.UnspecifiedDefault:
        default = NO_DEFAULT
    return [type_kind(field._type), field.nullable, default]


def describe(cls):
    return {'version': cls.VERSION,
            'fields': {name: describe_field(field)
                       for name, field in sorted(cls.fields.items())}}
