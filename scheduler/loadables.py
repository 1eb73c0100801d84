"""Finding plug-in classes by name, entry point or dotted path.

Filters and weighers are found the two ways Nova operators know:

* a class name registered in a stevedore namespace (``scheduler.filters``,
  ``scheduler.weighers``): ours, and any installed package's;
* a dotted path in ``available_filters`` / ``weight_classes``: a class, or
  a function returning a list of classes (``scheduler.filters.all_filters``).

Nova's own paths (``nova.scheduler.weights.ram.RAMWeigher``,
``nova.scheduler.filters.all_filters``) are mapped to the plug-in of the same
name, so an operator's Nova configuration works unchanged.
"""

import functools
import inspect

import stevedore
from oslo_log import log as logging
from oslo_utils import importutils

from scheduler import exception

LOG = logging.getLogger(__name__)


@functools.lru_cache(maxsize=None)
def entry_point_classes(namespace):
    """Every class registered in ``namespace``, as ``{name: class}``.

    Entry points that fail to load are logged and skipped, so a broken
    third-party package cannot stop the service.
    """
    manager = stevedore.ExtensionManager(
        namespace=namespace, invoke_on_load=False,
        on_load_failure_callback=_log_load_failure)
    return {ext.name: ext.plugin for ext in manager}


def _log_load_failure(manager, entrypoint, exc):
    LOG.error('Could not load plug-in %s from %s: %s',
              entrypoint.name, manager.namespace, exc)


def resolve(paths, namespace, base_class):
    """Turn names or dotted paths into a list of ``base_class`` subclasses.

    Each entry of ``paths`` may be a name registered in ``namespace``, the
    dotted path of a class, or the dotted path of a function returning a
    list of classes.  Duplicates are dropped, order is kept.  Raises
    ClassNotFound for an entry that is none of these.
    """
    classes = []
    for path in paths:
        for cls in _resolve_one(path.strip(), namespace, base_class):
            if cls not in classes:
                classes.append(cls)
    return classes


def _resolve_one(path, namespace, base_class):
    registered = entry_point_classes(namespace)
    if path in registered:
        return [registered[path]]
    if path.startswith('nova.scheduler.'):
        return _resolve_nova_path(path, namespace, registered)
    try:
        obj = importutils.import_class(path)
    except (ImportError, ValueError, AttributeError) as exc:
        raise exception.ClassNotFound(class_name=path,
                                      exception=exc) from exc
    if isinstance(obj, type) and issubclass(obj, base_class):
        return [obj]
    if inspect.isfunction(obj):
        classes = list(obj())
        if all(isinstance(c, type) and issubclass(c, base_class)
               for c in classes):
            return classes
    raise exception.ClassNotFound(
        class_name=path,
        exception='not a %s class, nor a function returning such classes'
                  % base_class.__name__)


def _resolve_nova_path(path, namespace, registered):
    """Map ``nova.scheduler.<...>.<Name>`` to our plug-in ``Name``."""
    name = path.rsplit('.', 1)[-1]
    if name in ('all_filters', 'all_weighers'):
        return list(registered.values())
    if name in registered:
        return [registered[name]]
    raise exception.ClassNotFound(
        class_name=path,
        exception='no plug-in named %s in %s' % (name, namespace))


@functools.lru_cache(maxsize=None)
def _defining_class(cls, name):
    return next((klass for klass in cls.__mro__ if name in vars(klass)),
                None)


def fast_form_applies(obj, fast, reference):
    """Whether ``obj``'s method ``fast`` (a vectorised or cached form)
    still stands for its ``reference`` methods: it is defined by the same
    class as each of them, or by a subclass of it.  A plug-in that
    overrides ``host_passes`` of a filter with a ``host_mask`` therefore
    gets its own ``host_passes`` called, never the inherited fast form.
    """
    return _fast_form_applies(type(obj), fast, tuple(reference))


def declares(obj, flag, reference):
    """Whether ``obj`` sets the class attribute ``flag`` true (False
    when it has none) in the class defining its ``reference`` methods or
    in a subclass of it: a plug-in that overrides one of them does not
    inherit a promise made about the parent's (``HOST_LOCAL`` of a
    weigher, ``uses_host_ratio`` of a filter)."""
    return bool(getattr(obj, flag, False)) and fast_form_applies(
        obj, flag, reference)


@functools.lru_cache(maxsize=None)
def _fast_form_applies(cls, fast, reference):
    fast_class = _defining_class(cls, fast)
    return all(issubclass(fast_class, _defining_class(cls, name))
               for name in reference)
