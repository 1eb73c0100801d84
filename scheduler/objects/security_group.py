"""``SecurityGroup`` / ``SecurityGroupList`` (Nova v1.2 / v1.1, unchanged
since Newton / Queens).

Carried by RequestSpec since v1.8; the scheduler does not use them.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class SecurityGroup(base.SchedulerObject):
    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'name': fields.StringField(),
        'description': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'uuid': fields.UUIDField(nullable=True),
    }

    FIELDS_ADDED = {'uuid': (1, 2)}


@base.register
class SecurityGroupList(base.ObjectListBase, base.SchedulerObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('SecurityGroup')}
