"""``InstanceGroup`` (Nova v1.11): a server group and its policy.

``policies`` (Newton to Queens) and ``policy`` (Rocky and later) are both
accepted; ``policy_name`` gives the one that is set.  ``hosts`` is not
stored anywhere: the caller fills it with the hosts of the members, and
the filter scheduler appends the hosts it picks during a request.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base

POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
            'soft-anti-affinity')


@base.register
class InstanceGroup(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.11'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.IntegerField(),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'policies': base.ListOfStringsField(nullable=True, default=[]),
        'members': base.ListOfStringsField(nullable=True, default=[]),
        'hosts': base.ListOfStringsField(nullable=True),
        'policy': fields.StringField(nullable=True, default=None),
        '_rules': fields.DictOfStringsField(default={}),
    })

    FIELDS_ADDED = {'hosts': (1, 10), 'policy': (1, 11), '_rules': (1, 11)}

    def obj_make_compatible(self, primitive, target_version):
        """Before 1.11 (Rocky) the policy travels as ``policies``, a
        one-element list (Nova's rule); then the table-driven rules."""
        if base.version_tuple(target_version) < (1, 11) and primitive.get(
                'policy'):
            primitive['policies'] = [primitive['policy']]
        super().obj_make_compatible(primitive, target_version)

    @property
    def policy_name(self):
        """The group's policy (``affinity``, ``anti-affinity``...) or None."""
        policy = self.obj_get('policy')
        if policy:
            return policy
        policies = self.obj_get('policies') or []
        return policies[0] if policies else None

    @property
    def rules(self):
        """The group's rules, e.g. ``{'max_server_per_host': '2'}``."""
        return dict(self.obj_get('_rules') or {})

    def host_list(self):
        """The hosts of the group's members, as a list (may be empty)."""
        return list(self.obj_get('hosts') or [])

    def add_host(self, host):
        """Record a host picked during the request, never persisted.
        Appended in place (as Nova's FilterScheduler does): assigning a
        new list would coerce every host again, O(N^2) over a request
        for N instances."""
        if self.obj_attr_is_set('hosts') and self.hosts is not None:
            self.hosts.append(host)
        else:
            self.hosts = [host]
        self.obj_reset_changes(['hosts'])
