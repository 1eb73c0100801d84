"""``ComputeNode`` / ``ComputeNodeList``, only as Nova sends them to us.

The scheduler reads compute nodes from the database as rows; these
objects exist because ``SchedulerRetries.hosts`` carries a ComputeNodeList
of stubs holding ``host`` and ``hypervisor_hostname``.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class ComputeNode(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.19'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(read_only=True),
        'host': fields.StringField(nullable=True),
        'hypervisor_hostname': fields.StringField(nullable=True),
        'vcpus': fields.IntegerField(),
        'memory_mb': fields.IntegerField(),
        'local_gb': fields.IntegerField(),
    })

    FIELDS_ADDED = {'host': (1, 7), 'uuid': (1, 15)}


@base.register
class ComputeNodeList(base.ObjectListBase, base.SchedulerObject):
    VERSION = '1.17'

    fields = {'objects': fields.ListOfObjectsField('ComputeNode')}
