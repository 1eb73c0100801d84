"""``RequestSpec`` (Nova v1.8, Ocata to Queens) and what it carries.

A RequestSpec describes one scheduling request: the flavor (memory in MiB,
disk in GiB, swap in MiB), the image, the number of instances, hosts to
force or ignore, the server group, the retry record and the scheduler
hints.  It arrives as a primitive (RPC 4.3+) or is built from the legacy
``request_spec`` and ``filter_properties`` dicts (RPC 4.0 to 4.2) by
``from_primitives``, following Nova's conversion rules (reference 8.2).
``validate`` rejects what cannot be scheduled with ``InvalidRequestSpec``.
"""

from oslo_versionedobjects import fields

from scheduler import exception
from scheduler.objects import base
from scheduler.objects import compute_node
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import numa
from scheduler.objects import pci

# Nova's database integers are 32-bit: nothing larger can be a real size.
MAX_INT = 2 ** 31 - 1
# A single request asks for at most this many instances.
MAX_INSTANCES_PER_REQUEST = 10000
_FLAVOR_SIZES = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap')


@base.register
class Destination(base.SchedulerObject):
    """A requested destination: host, node and (1.2) aggregates."""

    VERSION = '1.4'

    fields = {
        'host': fields.StringField(),
        'node': fields.StringField(nullable=True),
        'cell': fields.ObjectField('CellMapping', nullable=True),
        'aggregates': base.ListOfStringsField(nullable=True, default=None),
        'allow_cross_cell_move': fields.BooleanField(default=False),
        'forbidden_aggregates': fields.SetOfStringsField(nullable=True,
                                                         default=None),
    }


@base.register
class SchedulerRetries(base.SchedulerObject):
    """The hosts tried so far for a build (the RetryFilter's input)."""

    VERSION = '1.1'

    fields = {
        'num_attempts': fields.IntegerField(),
        'hosts': fields.ObjectField('ComputeNodeList'),
    }

    @classmethod
    def from_dict(cls, retry):
        """Build from the legacy ``{'num_attempts', 'hosts': [[h, n]]}``.

        Returns None when ``hosts`` is missing, as Nova's quirky check does.
        """
        if not retry or 'hosts' not in retry:
            return None
        nodes = [compute_node.ComputeNode(host=host, hypervisor_hostname=node)
                 for host, node in retry['hosts']]
        return cls(num_attempts=int(retry.get('num_attempts', 0)),
                   hosts=compute_node.ComputeNodeList(objects=nodes))

    def to_dict(self):
        return {'num_attempts': self.num_attempts,
                'hosts': [[n.host, n.hypervisor_hostname]
                          for n in self.hosts.objects]}

    def host_node_pairs(self):
        """The ``(host, node)`` pairs already tried."""
        if not self.obj_attr_is_set('hosts') or self.hosts is None:
            return set()
        return {(n.obj_get('host'), n.obj_get('hypervisor_hostname'))
                for n in self.hosts.objects}


@base.register
class SchedulerLimits(base.SchedulerObject):
    """Resource limits a compute node should enforce in its claim.

    ``memory_mb`` in MiB, ``disk_gb`` in GiB, ``vcpu`` in vCPUs.
    """

    VERSION = '1.0'

    fields = {
        'numa_topology': fields.ObjectField('NUMATopologyLimits',
                                            nullable=True, default=None),
        'vcpu': fields.IntegerField(nullable=True, default=None),
        'disk_gb': fields.IntegerField(nullable=True, default=None),
        'memory_mb': fields.IntegerField(nullable=True, default=None),
    }

    @classmethod
    def from_dict(cls, limits_dict):
        limits = cls()
        for key in ('numa_topology', 'vcpu', 'disk_gb', 'memory_mb'):
            value = (limits_dict or {}).get(key)
            setattr(limits, key, None if value is None else value)
        return limits

    def to_dict(self):
        """The limits that are set, as Nova's ``to_dict`` (None left out)."""
        return {key: getattr(self, key) for key in self.fields
                if self.obj_attr_is_set(key) and getattr(self, key)
                is not None}


@base.register
class RequestSpec(base.SchedulerObject):
    VERSION = '1.8'

    fields = {
        'id': fields.IntegerField(),
        'image': fields.ObjectField('ImageMeta', nullable=True),
        'numa_topology': fields.ObjectField('InstanceNUMATopology',
                                            nullable=True),
        'pci_requests': fields.ObjectField('InstancePCIRequests',
                                           nullable=True),
        'project_id': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('Flavor', nullable=False),
        'num_instances': fields.IntegerField(default=1),
        'ignore_hosts': base.ListOfStringsField(nullable=True),
        'force_hosts': base.ListOfStringsField(nullable=True),
        'force_nodes': base.ListOfStringsField(nullable=True),
        'requested_destination': fields.ObjectField('Destination',
                                                    nullable=True,
                                                    default=None),
        'retry': fields.ObjectField('SchedulerRetries', nullable=True),
        'limits': fields.ObjectField('SchedulerLimits', nullable=True),
        'instance_group': fields.ObjectField('InstanceGroup', nullable=True),
        'scheduler_hints': base.DictOfListOfStringsField(nullable=True),
        'instance_uuid': fields.UUIDField(),
        'security_groups': fields.ObjectField('SecurityGroupList'),
    }

    # Nova's forwarding properties: the request's sizes are the flavor's.
    @property
    def vcpus(self):
        return self.flavor.vcpus

    @property
    def memory_mb(self):
        return self.flavor.memory_mb

    @property
    def root_gb(self):
        return self.flavor.root_gb

    @property
    def ephemeral_gb(self):
        return self.flavor.ephemeral_gb

    @property
    def swap(self):
        return self.flavor.swap

    def get(self, name, default=None):
        """The field's value, or ``default`` when unset or None."""
        value = self.obj_get(name)
        return default if value is None else value

    def get_scheduler_hint(self, hint_name, default=None):
        """A hint's value; one-element lists are unwrapped (Nova rule)."""
        hints = self.get('scheduler_hints', {})
        value = hints.get(hint_name)
        if not value:
            return default
        if isinstance(value, list) and len(value) == 1:
            return value[0]
        return value

    @property
    def requested_resources_disk_mb(self):
        """Disk the request needs in MiB: root + ephemeral (GiB) + swap."""
        return 1024 * (self.root_gb + self.ephemeral_gb) + self.swap

    # -- validation -------------------------------------------------------

    def validate(self):
        """Check the spec can be scheduled; raise InvalidRequestSpec if not.

        A flavor is required and its sizes must be integers between 0 and
        2**31 - 1; ``num_instances`` must be between 1 and
        MAX_INSTANCES_PER_REQUEST.
        """
        if not self.obj_attr_is_set('flavor') or self.flavor is None:
            raise exception.InvalidRequestSpec(reason='the flavor is missing')
        for name in _FLAVOR_SIZES:
            if not self.flavor.obj_attr_is_set(name):
                raise exception.InvalidRequestSpec(
                    reason='flavor.%s is missing' % name)
            _check_range('flavor.%s' % name, getattr(self.flavor, name),
                         0, MAX_INT)
        _check_range('num_instances', self.get('num_instances', 1), 1,
                     MAX_INSTANCES_PER_REQUEST)
        retry = self.get('retry')
        if retry is not None and retry.obj_attr_is_set('num_attempts'):
            _check_range('retry.num_attempts', retry.num_attempts, 0,
                         MAX_INT)

    def ensure_defaults(self):
        """Give every unset field its default (Nova's ``_from_objects``)."""
        for name in ('image', 'numa_topology', 'pci_requests', 'project_id',
                     'availability_zone', 'ignore_hosts', 'force_hosts',
                     'force_nodes', 'requested_destination', 'retry',
                     'limits', 'instance_group', 'scheduler_hints'):
            if not self.obj_attr_is_set(name):
                setattr(self, name, None)
        if not self.obj_attr_is_set('num_instances'):
            self.num_instances = 1
        return self

    # -- legacy (RPC 4.0) form -------------------------------------------

    @classmethod
    def from_primitives(cls, context, request_spec, filter_properties):
        """Build a spec from the legacy dicts of RPC 4.0 to 4.2.

        ``request_spec``: ``num_instances``, ``image`` (dict),
        ``instance_properties`` (dict), ``instance_type`` (Flavor or dict).
        ``filter_properties``: ``ignore_hosts``, ``force_hosts``,
        ``force_nodes``, ``retry``, ``limits``, ``group_*``,
        ``scheduler_hints``, ``instance_type``.  Raises InvalidRequestSpec
        when they are not dicts or a value has the wrong type.
        """
        if not isinstance(request_spec, dict):
            raise exception.InvalidRequestSpec(
                reason='request_spec must be a dict')
        filter_properties = filter_properties or {}
        if not isinstance(filter_properties, dict):
            raise exception.InvalidRequestSpec(
                reason='filter_properties must be a dict')
        try:
            return cls._from_legacy(request_spec, filter_properties)
        except (ValueError, TypeError, KeyError, AttributeError,
                OverflowError) as exc:
            raise exception.InvalidRequestSpec(
                reason='%s: %s' % (type(exc).__name__, exc)) from exc

    @classmethod
    def _from_legacy(cls, request_spec, filter_properties):
        spec = cls()
        spec.num_instances = request_spec.get('num_instances', 1)
        image = request_spec.get('image')
        spec.image = (image_meta.ImageMeta.from_dict(image)
                      if image else None)
        props = request_spec.get('instance_properties') or {}
        if props.get('uuid'):
            spec.instance_uuid = props['uuid']
        spec.numa_topology = _object_or_none(
            props.get('numa_topology'), numa.InstanceNUMATopology)
        spec.pci_requests = _object_or_none(
            props.get('pci_requests'), pci.InstancePCIRequests)
        spec.project_id = props.get('project_id')
        spec.availability_zone = props.get('availability_zone')
        flavor = (request_spec.get('instance_type') or
                  filter_properties.get('instance_type'))
        if isinstance(flavor, dict):
            flavor = _flavor_from_dict(flavor)
        if flavor is not None:
            spec.flavor = flavor
        for key in ('ignore_hosts', 'force_hosts', 'force_nodes'):
            setattr(spec, key, filter_properties.get(key))
        spec.retry = SchedulerRetries.from_dict(
            filter_properties.get('retry'))
        spec.limits = SchedulerLimits.from_dict(
            filter_properties.get('limits'))
        spec.instance_group = _group_from_filter_properties(
            filter_properties)
        hints = filter_properties.get('scheduler_hints') or {}
        spec.scheduler_hints = {
            key: value if isinstance(value, list) else [value]
            for key, value in hints.items()}
        return spec.ensure_defaults()

    def to_legacy_request_spec_dict(self):
        """The legacy ``request_spec`` dict (RPC 4.0, notifications)."""
        image = self.get('image')
        return {
            'num_instances': self.get('num_instances', 1),
            'image': base.obj_to_dict(image) if image is not None else {},
            'instance_properties': self._legacy_instance_properties(),
            'instance_type': (self.flavor.obj_to_primitive()
                              if self.obj_attr_is_set('flavor') else {}),
        }

    def _legacy_instance_properties(self):
        props = {'project_id': self.get('project_id'),
                 'availability_zone': self.get('availability_zone'),
                 'uuid': self.obj_get('instance_uuid'),
                 'numa_topology': self.get('numa_topology'),
                 'pci_requests': self.get('pci_requests')}
        if self.obj_attr_is_set('flavor'):
            for name in ('root_gb', 'ephemeral_gb', 'memory_mb', 'vcpus'):
                props[name] = self.flavor.obj_get(name)
        return props

    def to_legacy_filter_properties_dict(self):
        """The legacy ``filter_properties`` dict (RPC 4.0)."""
        props = {}
        for key in ('ignore_hosts', 'force_hosts', 'force_nodes'):
            if self.get(key):
                props[key] = list(self.get(key))
        if self.get('retry') is not None:
            props['retry'] = self.retry.to_dict()
        if self.get('limits') is not None:
            props['limits'] = self.limits.to_dict()
        group = self.get('instance_group')
        if group is not None:
            props['group_updated'] = True
            props['group_hosts'] = group.host_list()
            props['group_policies'] = (
                [group.policy_name] if group.policy_name else [])
            props['group_members'] = list(group.obj_get('members') or [])
        hints = self.get('scheduler_hints')
        if hints:
            props['scheduler_hints'] = {
                key: value[0] if len(value) == 1 else value
                for key, value in hints.items()}
        return props


def _check_range(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int):
        raise exception.InvalidRequestSpec(
            reason='%s must be an integer, not %r' % (name, value))
    if not low <= value <= high:
        raise exception.InvalidRequestSpec(
            reason='%s must be between %d and %d, not %d'
                   % (name, low, high, value))


def _object_or_none(value, cls):
    """``value`` when it is a ``cls`` object (the RPC serializer already
    turned its primitive into one), else None."""
    return value if isinstance(value, cls) else None


def _flavor_from_dict(values):
    """A Flavor from a legacy dict (ignoring keys that are not fields) or
    from a Flavor primitive still in its ``nova_object`` envelope."""
    if flavor_obj.Flavor._obj_primitive_key('name') in values:
        return flavor_obj.Flavor.obj_from_primitive(values)
    flavor = flavor_obj.Flavor()
    for key, value in values.items():
        if key in flavor_obj.Flavor.fields and value is not None:
            setattr(flavor, key, value)
    return flavor


def _group_from_filter_properties(filter_properties):
    """The server group of a legacy request (Nova's conversion rules)."""
    group = filter_properties.get('instance_group')
    if isinstance(group, group_obj.InstanceGroup):
        return group
    if not filter_properties.get('group_updated'):
        return None
    group = group_obj.InstanceGroup(
        policies=list(filter_properties.get('group_policies') or []),
        hosts=list(filter_properties.get('group_hosts') or []),
        members=list(filter_properties.get('group_members') or []))
    group.obj_reset_changes(['hosts'])
    return group
