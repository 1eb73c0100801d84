"""``Selection`` (Nova v1.1): one chosen or alternate host of a request.

``select_destinations`` with ``return_objects=True`` returns one list of
Selections per instance: the chosen host first, then its alternates.
``to_dict`` gives the pre-4.5 ``{host, nodename, limits}`` shape.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec


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

    @classmethod
    def from_host_state(cls, host_state, limits=None):
        """A Selection for ``host_state``; ``limits`` is a dict or None."""
        limits = host_state.limits if limits is None else limits
        return cls(
            compute_node_uuid=host_state.uuid,
            service_host=host_state.host,
            nodename=host_state.nodename,
            cell_uuid=cell_mapping.SINGLE_CELL_UUID,
            limits=request_spec.SchedulerLimits.from_dict(limits),
            allocation_request=None,
            allocation_request_version=None,
            availability_zone=host_state.availability_zone)

    def to_dict(self):
        """The legacy ``{'host', 'nodename', 'limits'}`` dict."""
        limits = self.limits.to_dict() if self.limits is not None else None
        return {'host': self.service_host, 'nodename': self.nodename,
                'limits': limits}
