"""Reading a host's public data attributes by name.

A query or an extra spec names an attribute of the host (JsonFilter,
ComputeCapabilitiesFilter) and the host table keys its caches by such
names; both read them through ``public_attribute``, which never looks up
a method or a private name.
"""

import functools
import inspect
import types
import typing

# Class attributes that hold per-instance data: properties and slots.
_DATA_DESCRIPTORS = (property, types.MemberDescriptorType)

_ABSENT = object()


@functools.lru_cache(maxsize=1024)
def _is_public_data(cls: typing.Any, name: str) -> bool:
    """Whether ``name`` can only be data on instances of ``cls``: a
    property or slot of the class, or a name the class does not define at
    all (an instance attribute, if any; classes with ``__getattr__``
    excluded).  Methods and class constants are not.  Cached: a memo scope
    may ask it for every host, and names come from requests, hence the
    bound."""
    found = inspect.getattr_static(cls, name, _ABSENT)
    if isinstance(found, _DATA_DESCRIPTORS):
        return True
    return found is _ABSENT and inspect.getattr_static(
        cls, '__getattr__', None) is None


def public_attribute(obj: object, name: typing.Any,
                     default: typing.Any = None) -> typing.Any:
    """``obj.name`` when it is public data: an instance attribute, or a
    property or slot of its class, whose name does not start with ``_``;
    else ``default``.  Methods and other class attributes are never looked
    up, so a query or an extra spec can only read the host's data fields
    (JsonFilter, ComputeCapabilitiesFilter)."""
    if not isinstance(name, str) or not name or name.startswith('_'):
        return default
    if not _is_public_data(typing.cast(typing.Hashable, type(obj)), name):
        return default
    try:
        return getattr(obj, name, default)
    except Exception:  # a property that cannot be computed
        return default
