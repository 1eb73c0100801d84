"""PCI request objects (Nova 34.0.0 versions: ``InstancePCIRequests``
v1.1, ``InstancePCIRequest`` v1.4): what a request asks of a host's PCI
pools.

``spec`` is a list of alternative device specs, each a dict such as
``{'vendor_id': '8086', 'product_id': '1520'}``; ``count`` devices are
needed.  ``requester_id`` (1.3, Stein) names the port or device profile
that asked; ``numa_policy`` ``socket`` (1.4, Wallaby) is read, and the
fitting code treats it as ``legacy``.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class InstancePCIRequest(base.SchedulerObject):
    VERSION = '1.4'

    fields = {
        'count': fields.IntegerField(),
        'spec': fields.ListOfDictOfNullableStringsField(),
        'alias_name': fields.StringField(nullable=True),
        'is_new': fields.BooleanField(default=False),
        'request_id': fields.UUIDField(nullable=True),
        'requester_id': fields.StringField(nullable=True),
        'numa_policy': fields.StringField(nullable=True),
    }

    FIELDS_ADDED = {'request_id': (1, 1), 'numa_policy': (1, 2),
                    'requester_id': (1, 3)}
    VALUES_ADDED = {'numa_policy': {'socket': (1, 4)}}


@base.register
class InstancePCIRequests(base.SchedulerObject):
    VERSION = '1.1'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'requests': fields.ListOfObjectsField('InstancePCIRequest'),
    }
