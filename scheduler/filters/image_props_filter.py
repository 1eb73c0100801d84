"""ImagePropertiesFilter: the host can run the image's architecture,
hypervisor type, VM mode and hypervisor version.

Follows Nova's ImagePropertiesFilter, with the Rocky
``image_properties_default_architecture`` option.  The canonical names are
Nova's: ``canonicalize_arch``, ``canonicalize_hv_type`` and
``canonicalize_vm_mode`` reproduce Nova's ``canonicalize`` functions.
"""

import re

import numpy as np
from oslo_log import log as logging

from scheduler import filters
from scheduler.conf import CONF

LOG = logging.getLogger(__name__)

ARCHITECTURES = frozenset((
    'alpha', 'armv6', 'armv7l', 'armv7b', 'aarch64', 'cris', 'i686', 'ia64',
    'lm32', 'm68k', 'microblaze', 'microblazeel', 'mips', 'mipsel', 'mips64',
    'mips64el', 'openrisc', 'parisc', 'parisc64', 'ppc', 'ppcle', 'ppc64',
    'ppc64le', 'ppcemb', 's390', 's390x', 'sh4', 'sh4eb', 'sparc', 'sparc64',
    'unicore32', 'x86_64', 'xtensa', 'xtensaeb'))
HV_TYPES = frozenset((
    'baremetal', 'bhyve', 'docker', 'fake', 'hyperv', 'ironic', 'kqemu',
    'kvm', 'lxc', 'lxd', 'openvz', 'parallels', 'vz', 'phyp', 'qemu', 'test',
    'uml', 'vbox', 'vmware', 'xen', 'zvm', 'prsm'))
VM_MODES = frozenset(('hvm', 'xen', 'uml', 'exe'))
# The HostState attributes ``host_passes`` reads (its ``memo_scope``).
HOST_ATTRIBUTES = ('hypervisor_version', 'supported_instances')

_ARCH_ALIASES = {'i386': 'i686', 'i486': 'i686', 'i586': 'i686',
                 'x86_32': 'i686', 'x86_32p': 'i686', 'amd64': 'x86_64'}
_HV_TYPE_ALIASES = {'xapi': 'xen'}
_VM_MODE_ALIASES = {'pv': 'xen', 'hv': 'hvm', 'baremetal': 'hvm'}

_PREDICATE = re.compile(r'^\s*(<=|>=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*$')
_COMPARE = {
    '<': lambda a, b: a < b, '<=': lambda a, b: a <= b,
    '>': lambda a, b: a > b, '>=': lambda a, b: a >= b,
    '==': lambda a, b: a == b, '!=': lambda a, b: a != b,
}


class InvalidImageProperty(ValueError):
    """An architecture, hypervisor type or VM mode Nova does not know."""


def _canonicalize(name, aliases, valid, what):
    if name is None:
        return None
    lowered = name.lower()
    canonical = aliases.get(lowered, lowered)
    if canonical not in valid:
        raise InvalidImageProperty('%s is not a valid %s' % (name, what))
    return canonical


def canonicalize_arch(name):
    """Lowercase; i386/i486/i586/x86_32/x86_32p -> i686, amd64 -> x86_64."""
    return _canonicalize(name, _ARCH_ALIASES, ARCHITECTURES, 'architecture')


def canonicalize_hv_type(name):
    """Lowercase; xapi -> xen."""
    return _canonicalize(name, _HV_TYPE_ALIASES, HV_TYPES, 'hypervisor type')


def canonicalize_vm_mode(name):
    """Lowercase; pv -> xen, hv and baremetal -> hvm."""
    return _canonicalize(name, _VM_MODE_ALIASES, VM_MODES, 'VM mode')


def version_from_int(version):
    """Nova's integer hypervisor version as a tuple: 2011000 -> (2, 11, 0)."""
    version = int(version)
    return (version // 1000000, version // 1000 % 1000, version % 1000)


def version_satisfies(version, predicate):
    """Whether the ``version`` tuple satisfies ``predicate``, a comma list
    of ``<op><dotted version>`` such as ``">=6.0,<6.2"``.  Raises
    ValueError for a malformed predicate."""
    for clause in predicate.split(','):
        found = _PREDICATE.match(clause)
        if not found:
            raise ValueError('bad version requirement %r' % clause)
        wanted = tuple(int(part) for part in found.group(2).split('.'))
        width = max(len(wanted), len(version))
        if not _COMPARE[found.group(1)](_pad(version, width),
                                        _pad(wanted, width)):
            return False
    return True


def _pad(version, width):
    return tuple(version) + (0,) * (width - len(version))


class ImagePropertiesFilter(filters.BaseHostFilter):
    """The host supports what the image properties ask for.

    * The image's ``hw_architecture`` (else
      ``[filter_scheduler] image_properties_default_architecture``),
      ``img_hv_type`` and ``hw_vm_mode`` are canonicalised as Nova does.
      None of the three set -> pass.
    * Otherwise the host must advertise ``supported_instances``, a list of
      ``[arch, hv_type, vm_mode]``; empty -> fail.
    * Pass when some entry contains every requested value (a membership
      test, as Nova) and, when both the image's
      ``img_hv_requested_version`` (e.g. ``">=6.0,<6.2"``) and the host's
      ``hypervisor_version`` (an integer, 6002000 = 6.2.0) are set, the
      version satisfies the requirement.

    An unknown architecture, hypervisor type or VM mode, or a malformed
    version requirement, cannot be satisfied: the host fails with a
    warning (Nova raises).  Runs once per request and on rebuilds.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        props = _image_properties(spec_obj)
        try:
            requested = _requested_triple(props)
        except InvalidImageProperty as exc:
            LOG.warning('Image cannot be placed: %s', exc)
            return False
        if not any(requested):
            return True
        supported = host_state.supported_instances or []
        if not supported:
            LOG.debug('%(host_state)s advertises no supported instances; '
                      'the image asks for %(req)s',
                      {'host_state': host_state, 'req': requested})
            return False
        if not self._supports(supported, requested):
            LOG.debug('%(host_state)s does not support %(req)s',
                      {'host_state': host_state, 'req': requested})
            return False
        return self._version_ok(host_state, props)

    explain_label = 'image properties unsupported'

    def explain(self, host_state, spec_obj):
        """The architecture, hypervisor type and VM mode asked and what
        the host supports, or the hypervisor version asked and its."""
        props = _image_properties(spec_obj)
        try:
            requested = _requested_triple(props)
        except InvalidImageProperty as exc:
            return 'the image cannot be placed: %s' % exc
        supported = host_state.supported_instances or []
        if not self._supports(supported, requested):
            return 'image asks %s, the host supports %s' % (
                '/'.join(item or '*' for item in requested),
                ', '.join('/'.join(str(v) for v in entry)
                          for entry in supported) or 'nothing')
        return 'image asks hypervisor version %s, the host has %s' % (
            props.get('img_hv_requested_version'),
            host_state.hypervisor_version)

    def host_mask(self, table, rows, spec_obj):
        try:
            requested = _requested_triple(_image_properties(spec_obj))
        except InvalidImageProperty as exc:
            LOG.warning('Image cannot be placed: %s', exc)
            return np.zeros(len(rows), dtype=bool)
        if not any(requested):
            return np.ones(len(rows), dtype=bool)
        return None

    def memo_key(self, spec_obj):
        props = _image_properties(spec_obj)
        return (tuple(_requested_triple(props)),
                props.get('img_hv_requested_version'))

    def memo_scope(self, spec_obj):
        return HOST_ATTRIBUTES

    @staticmethod
    def _supports(supported, requested):
        for entry in supported:
            values = {_host_value(value) for value in entry}
            if all(item in values for item in requested if item):
                return True
        return False

    @staticmethod
    def _version_ok(host_state, props):
        wanted = props.get('img_hv_requested_version')
        version = host_state.hypervisor_version
        if not (wanted and version):
            return True
        try:
            if version_satisfies(version_from_int(version), wanted):
                return True
        except (TypeError, ValueError) as exc:
            LOG.warning('Cannot check hypervisor version %(version)r of '
                        '%(host_state)s: %(exc)s',
                        {'version': version, 'host_state': host_state,
                         'exc': exc})
            return False
        LOG.debug('%(host_state)s hypervisor version %(version)s does not '
                  'satisfy %(wanted)s', {'host_state': host_state,
                                         'version': version,
                                         'wanted': wanted})
        return False


def _image_properties(spec_obj):
    """The image's ImageMetaProps, or ``{}`` without an image."""
    image = spec_obj.get('image')
    if image is None:
        return {}
    return image.obj_get('properties') or {}


def _requested_triple(props):
    arch = (props.get('hw_architecture') or
            CONF.filter_scheduler.image_properties_default_architecture)
    return [canonicalize_arch(arch),
            canonicalize_hv_type(props.get('img_hv_type')),
            canonicalize_vm_mode(props.get('hw_vm_mode'))]


def _host_value(value):
    """A host's advertised value, lowercased (hosts report canonical
    names; this only forgives case)."""
    return value.lower() if isinstance(value, str) else value
