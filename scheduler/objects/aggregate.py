"""``Aggregate`` / ``AggregateList`` (Nova v1.3): host aggregates.

The API side sends them in ``update_aggregates`` / ``delete_aggregate``
casts; the host manager also builds them from the database at start-up.
Membership is by service host name.  ``metadata`` maps str -> str;
``availability_zone`` is ``metadata['availability_zone']``.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class Aggregate(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.3'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(nullable=False),
        'name': fields.StringField(),
        'hosts': base.ListOfStringsField(nullable=True),
        'metadata': fields.DictOfStringsField(nullable=True),
    })

    FIELDS_ADDED = {'uuid': (1, 2)}

    @property
    def availability_zone(self):
        return (self.obj_get('metadata') or {}).get('availability_zone')

    @classmethod
    def from_db(cls, row):
        """Build from a ``scheduler.db.api.aggregate_get_all`` dict."""
        agg = cls(id=row['id'], name=row['name'],
                  hosts=list(row.get('hosts') or []),
                  metadata=dict(row.get('metadata') or {}))
        if row.get('uuid'):
            agg.uuid = row['uuid']
        agg.obj_reset_changes()
        return agg


@base.register
class AggregateList(base.ObjectListBase, base.SchedulerObject):
    VERSION = '1.3'

    fields = {'objects': fields.ListOfObjectsField('Aggregate')}
