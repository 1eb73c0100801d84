"""ComputeCapabilitiesFilter: flavor extra specs against host capabilities.

Follows Nova's ComputeCapabilitiesFilter: each
extra spec with no scope, or with the ``capabilities:`` scope, names a
host attribute (or a ``stats`` key), possibly a path into JSON text and
dicts, and its value is a requirement in the ``extra_specs_ops`` language.
"""

import json

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler.filters import extra_specs_ops
from scheduler.resources import attributes

LOG = logging.getLogger(__name__)

SCOPE = 'capabilities'


class ComputeCapabilitiesFilter(filters.BaseHostFilter):
    """Every relevant flavor extra spec matches the host's capability.

    For each ``key: requirement`` of ``flavor.extra_specs`` (none set ->
    pass):

    * ``key`` without ``:`` is checked only when the host has a public
      attribute or a ``stats`` key of that name, and ignored otherwise
      (Nova's backward-compatible path);
    * ``key`` with a scope other than ``capabilities`` is ignored; the
      ``capabilities`` scope is dropped and the rest is a path;
    * the path ``a:b:c`` is walked from the HostState: a text value is
      parsed as JSON first (``capabilities:cpu_info:features``); an object
      gives its public attribute, else its ``stats`` entry; a dict gives
      its key.  Unparsable JSON, a missing step or a name starting with
      ``_`` (private attributes are never read) -> the host fails;
    * ``extra_specs_ops.match(str(capability), requirement)`` must hold.

    Runs once per request, as in Nova.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
        for key, requirement in extra_specs.items():
            path = self._capability_path(host_state, key)
            if path is None:
                continue
            if not self._satisfies(host_state, path, requirement):
                LOG.debug('%(host_state)s fails extra spec %(key)s='
                          '%(req)s', {'host_state': host_state, 'key': key,
                                      'req': requirement})
                return False
        return True

    explain_label = 'capabilities mismatch'

    def explain(self, host_state, spec_obj):
        """The first extra spec the host fails, with its value there."""
        extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
        for key, requirement in extra_specs.items():
            path = self._capability_path(host_state, key)
            if path is None or self._satisfies(host_state, path,
                                               requirement):
                continue
            return 'extra spec %s=%s, the host has %s' % (
                key, requirement, resolve_capability(host_state, path))
        return super().explain(host_state, spec_obj)

    def host_mask(self, table, rows, spec_obj):
        if not spec_obj.flavor.obj_get('extra_specs'):
            return np.ones(len(rows), dtype=bool)
        return None

    def memo_key(self, spec_obj):
        extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
        if any(key.split(':')[:2] in (['service'], [SCOPE, 'service'],
                                      ['limits'], [SCOPE, 'limits'])
               for key in extra_specs):
            # The service row changes without a version; limits are
            # written by other filters as they run.
            return None
        return tuple(sorted(extra_specs.items()))

    def memo_scope(self, spec_obj):
        """The attributes the extra specs name (the first step of each
        path) and ``stats``, where a name that is no attribute is looked
        up."""
        extra_specs = spec_obj.flavor.obj_get('extra_specs') or {}
        names = {'stats'}
        for key in extra_specs:
            scope = key.split(':')
            if len(scope) == 1:
                names.add(key)
            elif scope[0] == SCOPE:
                names.add(scope[1])
        return tuple(sorted(names))

    @staticmethod
    def _capability_path(host_state, key):
        """The path of the capability ``key`` names, or None to ignore."""
        scope = key.split(':')
        if len(scope) == 1:
            return scope if _has_capability(host_state, key) else None
        if scope[0] != SCOPE:
            return None
        return scope[1:]

    @staticmethod
    def _satisfies(host_state, path, requirement):
        capability = resolve_capability(host_state, path)
        if capability is None:
            return False
        return extra_specs_ops.match(str(capability), requirement)


def _has_capability(host_state, name):
    """Whether an unscoped key names a host attribute (even one that is
    None, which then fails the host, as Nova) or a stats key."""
    return (_is_public_attribute(host_state, name) or
            name in _stats_of(host_state))


def resolve_capability(obj, path):
    """Walk ``path`` (a list of names) from ``obj``; None when it breaks.

    Text is parsed as JSON before each step; objects give public, non
    callable attributes, then ``stats`` entries; dicts give their keys.
    """
    value = obj
    for name in path:
        value = _step(value, name)
        if value is None:
            return None
    return value


def _step(value, name):
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            LOG.debug('Capability %(value)r is not JSON; cannot read '
                      '%(name)s in it', {'value': value, 'name': name})
            return None
    if isinstance(value, dict):
        return value.get(name)
    found = attributes.public_attribute(value, name)
    if found is None:
        found = _stats_of(value).get(name)
    return found


_MISSING = object()


def _is_public_attribute(obj, name):
    return attributes.public_attribute(obj, name, _MISSING) is not _MISSING


def _stats_of(obj):
    stats = getattr(obj, 'stats', None)
    return stats if isinstance(stats, dict) else {}
