"""``Selection`` (Nova v1.1): one chosen or alternate host of a request.

``select_destinations`` with ``return_objects=True`` returns one list of
Selections per instance: the chosen host first, then its alternates.
``to_dict`` gives the pre-4.5 ``{host, nodename, limits}`` shape.

Replies are written in versions the caller reads: Nova never asks a
scheduler to backport, and a Nova conductor refuses an object newer than
its own.  ``reply_manifest`` tells those versions from the version of the
RequestSpec the caller sent (each Nova release sends its own), following
Nova's history: Selection 1.0 (Queens to Train; 1.1 adds
``availability_zone`` in Ussuri, with RequestSpec 1.13), NUMATopologyLimits
1.0 (to Queens; 1.1 adds ``network_metadata`` in Rocky, with RequestSpec
1.9 to 1.11), SchedulerLimits 1.0 (all).
"""

from oslo_versionedobjects import fields

from scheduler.objects import base
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec

# (first RequestSpec version of a release, versions of the reply objects
# that release reads), newest first.
_REPLY_MANIFESTS = (
    ((1, 13), {'Selection': '1.1', 'SchedulerLimits': '1.0',
               'NUMATopologyLimits': '1.1'}),      # Ussuri to 34.0.0
    ((1, 9), {'Selection': '1.0', 'SchedulerLimits': '1.0',
              'NUMATopologyLimits': '1.1'}),       # Rocky to Train
    ((0, 0), {'Selection': '1.0', 'SchedulerLimits': '1.0',
              'NUMATopologyLimits': '1.0'}),       # Newton to Queens
)


def reply_manifest(spec_version=None):
    """The versions (object name -> version) of the reply objects a caller
    reads, from the version string of the RequestSpec it sent; the oldest
    ones when it is None (a legacy RPC 4.0 request).  For
    ``base.backport``."""
    if spec_version is None:
        return dict(_REPLY_MANIFESTS[-1][1])
    sent = base.version_tuple(spec_version)
    return dict(next(manifest for first, manifest in _REPLY_MANIFESTS
                     if sent >= first))


@base.register
class Selection(base.SchedulerObject):
    VERSION = '1.1'

    fields = {
        'compute_node_uuid': fields.UUIDField(),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'cell_uuid': fields.UUIDField(),
        'limits': fields.ObjectField('SchedulerLimits', nullable=True),
        'allocation_request': fields.StringField(nullable=True),
        'allocation_request_version': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
    }

    FIELDS_ADDED = {'availability_zone': (1, 1)}

    @classmethod
    def from_host_state(cls, host_state, limits=None):
        """A Selection for ``host_state``; ``limits`` is a dict or None.
        The host state's names and UUIDs (strings read from the compute
        node and service rows) are not coerced again
        (``SchedulerObject.from_values``): a 1,000-instance request
        builds a Selection per host it returns."""
        limits = host_state.limits if limits is None else limits
        return cls.from_values({
            'compute_node_uuid': host_state.uuid,
            'service_host': host_state.host,
            'nodename': host_state.nodename,
            'cell_uuid': host_state.cell_uuid or cell_mapping.SINGLE_CELL_UUID,
            'limits': request_spec.SchedulerLimits.from_dict(limits),
            'allocation_request': None,
            'allocation_request_version': None,
            'availability_zone': host_state.availability_zone})

    def to_dict(self):
        """The legacy ``{'host', 'nodename', 'limits'}`` dict."""
        limits = self.limits.to_dict() if self.limits is not None else None
        return {'host': self.service_host, 'nodename': self.nodename,
                'limits': limits}
