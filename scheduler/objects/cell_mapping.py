"""``CellMapping`` (Nova v1.1), as carried by ``Destination.cell``.

This service has a single cell, ``SINGLE_CELL_UUID``; a destination naming
another cell matches no host.
"""

import uuid

from oslo_versionedobjects import fields

from scheduler.objects import base

SINGLE_CELL_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, 'scheduler:cell1'))


@base.register
class CellMapping(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.1'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'disabled': fields.BooleanField(default=False),
    })

    FIELDS_ADDED = {'disabled': (1, 1)}
