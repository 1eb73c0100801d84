"""``list_plugin_opts`` for the ``scheduler.plugins`` generator namespace.

A filter, weigher or driver package may register options of its own on
``CONF`` when it is imported (``examples/free_ram_filter`` registers
``[free_ram_threshold] min_free_ram_mb``).  Such options belong in the
sample file and the option reference too, but no ``list_opts`` names
them, so this namespace finds them by loading the plug-ins:

1. the service's own drivers, filters and weighers (every module of
   ``scheduler.drivers``, ``scheduler.filters`` and ``scheduler.weights``)
   are imported, so that what they and the libraries they use register
   counts as the service's, not a plug-in's;
2. the ``(group, name)`` pairs registered on ``CONF`` are noted;
3. every entry point of the ``scheduler.driver``, ``scheduler.filters``
   and ``scheduler.weighers`` namespaces is loaded, with the loaders the
   service itself uses (``scheduler.loadables``);
4. the options registered since step 2 are the plug-ins'.

It is meant for a process that has not loaded the plug-ins yet, such as
``oslo-config-generator``'s or Sphinx's: a plug-in imported earlier in
the same process registered its options before step 2 and is not
listed.  This module sits above the plug-ins (it imports their loaders);
nothing of the service imports it.
"""

import importlib
import pkgutil
import types

from oslo_config import cfg

from scheduler import drivers
from scheduler import filters
from scheduler import weights
from scheduler.conf import CONF

# The packages of the service's own drivers, filters and weighers.
_OWN_PACKAGES = (drivers, filters, weights)

# ``(group name, option dest)``; the group is 'DEFAULT' for [DEFAULT].
OptKey = tuple[str, str]


def list_plugin_opts() -> list[tuple[str | cfg.OptGroup, list[cfg.Opt]]]:
    """Return ``[(group, [opts])]``: the options the installed plug-ins
    register on ``CONF`` when they load, groups sorted by name
    ('DEFAULT' first), options in the order they were registered."""
    for package in _OWN_PACKAGES:
        _import_all(package)
    before = set(_registered())
    drivers.names()
    filters.all_filters()
    weights.all_weighers()
    found: dict[str, tuple[str | cfg.OptGroup, list[cfg.Opt]]] = {}
    for (group_name, dest), group, opt in _registered_opts():
        if (group_name, dest) in before:
            continue
        entry = found.setdefault(group_name, (group or 'DEFAULT', []))
        entry[1].append(opt)
    return [found[name] for name in sorted(
        found, key=lambda name: (name != 'DEFAULT', name))]


def _import_all(package: types.ModuleType) -> None:
    """Import every module of ``package`` (its sub-packages included)."""
    for module in pkgutil.walk_packages(package.__path__,
                                        package.__name__ + '.'):
        importlib.import_module(module.name)


def _registered() -> list[OptKey]:
    """The ``(group, dest)`` of every option registered on ``CONF``."""
    return [key for key, _, _ in _registered_opts()]


def _registered_opts() -> list[tuple[OptKey, cfg.OptGroup | None,
                                     cfg.Opt]]:
    """``((group name, dest), group, opt)`` of every option registered
    on ``CONF``; ``group`` is None for [DEFAULT].  oslo.config has no
    public listing of registered options: this reads the one its own
    ``ConfigOpts`` methods use."""
    return [((group.name if group is not None else 'DEFAULT',
              info['opt'].dest), group, info['opt'])
            for info, group in CONF._all_opt_infos()]
