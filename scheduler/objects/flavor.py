"""``Flavor`` (Nova v1.2): the size and extra specs of a request.

Memory in MiB, root and ephemeral disk in GiB, swap in MiB (as Nova).
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class Flavor(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.2'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(),
        'name': fields.StringField(nullable=True),
        'memory_mb': fields.IntegerField(),
        'vcpus': fields.IntegerField(),
        'root_gb': fields.IntegerField(),
        'ephemeral_gb': fields.IntegerField(),
        'flavorid': fields.StringField(),
        'swap': fields.IntegerField(),
        'rxtx_factor': fields.FloatField(nullable=True, default=1.0),
        'vcpu_weight': fields.IntegerField(nullable=True),
        'disabled': fields.BooleanField(),
        'is_public': fields.BooleanField(),
        'extra_specs': fields.DictOfStringsField(),
        'projects': base.ListOfStringsField(),
        'description': fields.StringField(nullable=True),
    })

    FIELDS_ADDED = {'description': (1, 2)}
