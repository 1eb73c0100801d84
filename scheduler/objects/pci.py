"""PCI request objects (Nova ``InstancePCIRequests`` v1.1,
``InstancePCIRequest`` v1.2): what a request asks of a host's PCI pools.

``spec`` is a list of alternative device specs, each a dict such as
``{'vendor_id': '8086', 'product_id': '1520'}``; ``count`` devices are
needed.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class InstancePCIRequest(base.SchedulerObject):
    VERSION = '1.2'

    fields = {
        'count': fields.IntegerField(),
        'spec': fields.ListOfDictOfNullableStringsField(),
        'alias_name': fields.StringField(nullable=True),
        'is_new': fields.BooleanField(default=False),
        'request_id': fields.UUIDField(nullable=True),
        'numa_policy': fields.StringField(nullable=True),
    }


@base.register
class InstancePCIRequests(base.SchedulerObject):
    VERSION = '1.1'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'requests': fields.ListOfObjectsField('InstancePCIRequest'),
    }
