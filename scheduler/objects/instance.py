"""``Instance`` / ``InstanceList`` (Nova v2.8 / v2.6, Nova 34.0.0; every
2.x Nova sent since Newton is read).

The compute side sends them in ``update_instance_info``.  The scheduler
only needs ``uuid`` and ``host`` (and ``node``, ``instance_type_id``,
``project_id`` for some filters); Nova's many other fields in a primitive
are ignored.  Sizes in MiB (memory) and GiB (disk).
"""

from oslo_versionedobjects import fields

from scheduler.objects import base

_OPTIONAL_STRINGS = ('host', 'node', 'project_id', 'user_id', 'vm_state',
                     'task_state', 'availability_zone', 'image_ref',
                     'os_type', 'architecture', 'vm_mode', 'launched_on')


@base.register
class Instance(base.TimestampedObject, base.SchedulerObject):
    VERSION = '2.8'

    fields = dict(
        base.TimestampedObject.fields,
        id=fields.IntegerField(),
        uuid=fields.UUIDField(),
        instance_type_id=fields.IntegerField(nullable=True),
        memory_mb=fields.IntegerField(nullable=True),
        vcpus=fields.IntegerField(nullable=True),
        root_gb=fields.IntegerField(nullable=True),
        ephemeral_gb=fields.IntegerField(nullable=True),
        **{name: fields.StringField(nullable=True)
           for name in _OPTIONAL_STRINGS})

    @classmethod
    def from_db(cls, row):
        """Build from a ``scheduler.db.api`` instance dict."""
        inst = cls()
        for name in cls.fields:
            if name in row and (row[name] is not None or
                                cls.fields[name].nullable):
                setattr(inst, name, row[name])
        inst.obj_reset_changes()
        return inst

    @classmethod
    def placed(cls, uuid, host, node, spec_obj):
        """The instance ``uuid`` of the request ``spec_obj`` (a
        RequestSpec), as placed on ``host``/``node``: its flavor's id
        and sizes, its project and user, as the filters that read a
        host's instances see them."""
        flavor = spec_obj.flavor
        shared = {
            'instance_type_id': flavor.obj_get('id'),
            'memory_mb': flavor.memory_mb, 'vcpus': flavor.vcpus,
            'root_gb': flavor.root_gb, 'ephemeral_gb': flavor.ephemeral_gb,
            'project_id': spec_obj.obj_get('project_id'),
            'user_id': spec_obj.obj_get('user_id'),
            'availability_zone': spec_obj.obj_get('availability_zone')}
        # The instances of one request share all but uuid, host and
        # node: each is a copy of the last one made for the same values,
        # those three set (a 1,000-instance request makes 1,000).
        key = (cls, tuple(shared.values()))
        global _LAST_PLACED
        last = _LAST_PLACED
        if last is None or last[0] != key:
            last = _LAST_PLACED = (key, cls.from_db(shared))
        inst = cls.__new__(cls)
        inst.__dict__.update(last[1].__dict__)
        inst._changed_fields = set()
        # Not coerced: a UUID the manager checked, names from the host
        # state.
        base.set_trusted(inst, {'uuid': uuid, 'host': host, 'node': node})
        inst.obj_reset_changes()
        return inst


# ``Instance.placed``'s last (values, Instance) made, which the next
# instance of the same request copies.
_LAST_PLACED = None


@base.register
class InstanceList(base.ObjectListBase, base.SchedulerObject):
    VERSION = '2.6'

    fields = {'objects': fields.ListOfObjectsField('Instance')}
