"""``RequestSpec`` (Nova v1.15, Nova 34.0.0) and what it carries.

A RequestSpec describes one scheduling request: the flavor (memory in MiB,
disk in GiB, swap in MiB), the image, the number of instances, hosts to
force or ignore, the server group, the retry record and the scheduler
hints; since Rocky also whether the root disk is a volume (``is_bfv``),
since Stein/Ussuri Placement request groups from ports and accelerators
(``requested_resources``, ``request_level_params``) and since Yoga the
requested networks.  Every version Nova sent since Newton (1.6) is read.
It arrives as a primitive (RPC 4.3+) or is built from the legacy
``request_spec`` and ``filter_properties`` dicts (RPC 4.0 to 4.2) by
``from_primitives``, following the conversion rules of Nova's own
``RequestSpec.from_primitives``.
``validate`` rejects what cannot be scheduled with ``InvalidRequestSpec``;
``placement_only_requests`` lists what only Placement could honour.
"""

import typing
from typing import Any

from oslo_versionedobjects import fields

from scheduler import exception
from scheduler.objects import base
from scheduler.objects import compute_node
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import network  # noqa: F401 (registers objects)
from scheduler.objects import numa
from scheduler.objects import pci
from scheduler.objects import request_group  # noqa: F401 (registers)
from scheduler.objects import request_spec_placement

# Nova's database integers are 32-bit: nothing larger can be a real size.
MAX_INT = 2 ** 31 - 1
# A single request asks for at most this many instances.
MAX_INSTANCES_PER_REQUEST = 10000
_FLAVOR_SIZES = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap')
MIB_PER_GIB = 1024


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

    FIELDS_ADDED = {'cell': (1, 1), 'aggregates': (1, 2),
                    'allow_cross_cell_move': (1, 3),
                    'forbidden_aggregates': (1, 4)}


@base.register
class SchedulerRetries(base.SchedulerObject):
    """The hosts tried so far for a build (the RetryFilter's input)."""

    VERSION = '1.1'

    fields = {
        'num_attempts': fields.IntegerField(),
        'hosts': fields.ObjectField('ComputeNodeList'),
    }

    if typing.TYPE_CHECKING:  # the fields read here, for mypy
        num_attempts: int
        hosts: Any

    @classmethod
    def from_dict(cls, retry: dict | None) -> 'SchedulerRetries | None':
        """Build from the legacy ``{'num_attempts', 'hosts': [[h, n]]}``.

        Returns None when ``hosts`` is missing: Nova's check,
        ``('num_attempts' and 'hosts') in retry_dict``, only ever tests
        ``hosts`` (Nova then returns an empty record).
        """
        if not retry or 'hosts' not in retry:
            return None
        nodes = [compute_node.ComputeNode(host=host, hypervisor_hostname=node)
                 for host, node in retry['hosts']]
        return cls(num_attempts=int(retry.get('num_attempts', 0)),
                   hosts=compute_node.ComputeNodeList(objects=nodes))

    def to_dict(self) -> dict[str, Any]:
        return {'num_attempts': self.num_attempts,
                'hosts': [[n.host, n.hypervisor_hostname]
                          for n in self.hosts.objects]}

    def host_node_pairs(self) -> set[tuple[str, str]]:
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
    def from_dict(cls, limits_dict: dict | None) -> 'SchedulerLimits':
        limits = cls()
        for key in ('numa_topology', 'vcpu', 'disk_gb', 'memory_mb'):
            value = (limits_dict or {}).get(key)
            setattr(limits, key, None if value is None else value)
        return limits

    def to_dict(self) -> dict[str, Any]:
        """The limits that are set, as Nova's ``to_dict`` (None left out)."""
        return {key: getattr(self, key) for key in self.fields
                if self.obj_attr_is_set(key) and getattr(self, key)
                is not None}


@base.register
class RequestSpec(base.SchedulerObject):
    """One scheduling request (Nova's RequestSpec, v1.15).

    Version history (Nova's): 1.6 requested_destination (Newton), 1.8
    security_groups (Ocata), 1.9 user_id, 1.10 network_metadata, 1.11
    is_bfv (Rocky), 1.12 requested_resources (Stein), 1.13
    request_level_params (Ussuri), 1.14 requested_networks, 1.15 no new
    field (Yoga).
    """

    VERSION = '1.15'

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
        'user_id': fields.StringField(nullable=True),
        'network_metadata': fields.ObjectField('NetworkMetadata'),
        'is_bfv': fields.BooleanField(),
        'requested_resources': fields.ListOfObjectsField(
            'RequestGroup', nullable=True, default=None),
        'request_level_params': fields.ObjectField('RequestLevelParams'),
        'requested_networks': fields.ObjectField('NetworkRequestList'),
    }

    FIELDS_ADDED = {'requested_destination': (1, 6),
                    'security_groups': (1, 8), 'user_id': (1, 9),
                    'network_metadata': (1, 10), 'is_bfv': (1, 11),
                    'requested_resources': (1, 12),
                    'request_level_params': (1, 13),
                    'requested_networks': (1, 14)}

    if typing.TYPE_CHECKING:  # the fields read here, for mypy
        flavor: Any
        image: Any
        instance_uuid: str
        numa_topology: Any
        pci_requests: Any
        project_id: str | None
        user_id: str | None
        availability_zone: str | None
        retry: Any
        limits: Any
        instance_group: Any
        scheduler_hints: dict[str, list[str]] | None
        requested_destination: Any

    # Nova's forwarding properties: the request's sizes are the flavor's.
    @property
    def vcpus(self) -> int:
        return self.flavor.vcpus

    @property
    def memory_mb(self) -> int:
        return self.flavor.memory_mb

    @property
    def root_gb(self) -> int:
        return self.flavor.root_gb

    @property
    def ephemeral_gb(self) -> int:
        return self.flavor.ephemeral_gb

    @property
    def swap(self) -> int:
        return self.flavor.swap

    def get(self, name: str, default: Any = None) -> Any:
        """The field's value, or ``default`` when unset or None."""
        value = self.obj_get(name)
        return default if value is None else value

    def get_scheduler_hint(self, hint_name: str, default: Any = None) -> Any:
        """A hint's value; one-element lists are unwrapped (Nova rule)."""
        hints = self.get('scheduler_hints', {})
        value = hints.get(hint_name)
        if not value:
            return default
        if isinstance(value, list) and len(value) == 1:
            return value[0]
        return value

    @property
    def requested_resources_disk_mb(self) -> int:
        """Local disk the request needs in MiB: local root (none for a
        boot from volume, ``local_root_gb``) + ephemeral (GiB) + swap."""
        return 1024 * (self.local_root_gb + self.ephemeral_gb) + self.swap

    @property
    def boot_from_volume(self) -> bool:
        """Whether the root disk is a volume (``is_bfv``, RequestSpec
        1.11, Rocky); False when the caller did not say (older Nova)."""
        return bool(self.obj_get('is_bfv', False))

    @property
    def local_root_gb(self) -> int:
        """The root disk in GiB that takes local disk on the host: 0 when
        it is a volume (``is_bfv``), else ``flavor.root_gb``.  Nova counts
        no root disk for a boot-from-volume request since Rocky (its
        Placement DISK_GB request)."""
        return 0 if self.boot_from_volume else self.flavor.root_gb

    @property
    def local_disk_gb(self) -> int:
        """Local disk in GiB, as Nova asks Placement for DISK_GB:
        ``local_root_gb + ephemeral_gb`` + swap (MiB) rounded up to GiB."""
        return (self.local_root_gb + self.ephemeral_gb +
                -(-self.swap // MIB_PER_GIB))

    def placement_only_requests(self) -> list[str]:
        """What the request asks that only Placement can check, as
        readable strings (empty list when nothing).

        Nova (Queens to 34.0.0) turns these into Placement resources or
        traits and has no filter for them: ``resources[$S]:<CLASS>=<n>``
        flavor extra specs (a VCPU / MEMORY_MB / DISK_GB override in the
        unsuffixed group only when it asks more than the flavor, which
        our filters check), ``trait[$S]:<NAME>=required|forbidden``, the
        image's ``traits_required``, the request groups of ports and
        accelerators (``requested_resources``), root traits and
        ``same_subtree`` (``request_level_params``), and the features of
        ``_PLACEMENT_FEATURES`` (memory encryption, persistent memory,
        vTPM, secure boot, physical address mode, stateless firmware,
        socket PCI NUMA affinity; rules in ``request_spec_placement``).
        """
        return request_spec_placement.placement_only_requests(self)

    # -- validation -------------------------------------------------------

    def validate(self) -> None:
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

    def ensure_defaults(self) -> 'RequestSpec':
        """Give every unset field its default (Nova's ``_from_objects``)."""
        for name in ('image', 'numa_topology', 'pci_requests', 'project_id',
                     'user_id', 'availability_zone', 'ignore_hosts',
                     'force_hosts', 'force_nodes', 'requested_destination',
                     'retry', 'limits', 'instance_group', 'scheduler_hints'):
            if not self.obj_attr_is_set(name):
                setattr(self, name, None)
        if not self.obj_attr_is_set('num_instances'):
            self.num_instances = 1
        return self

    # -- legacy (RPC 4.0) form -------------------------------------------

    @classmethod
    def from_primitives(cls, context: Any, request_spec: Any,
                        filter_properties: Any) -> 'RequestSpec':
        """Build a spec from the legacy dicts of RPC 4.0 to 4.2.

        ``request_spec``: ``num_instances``, ``image`` (dict),
        ``instance_properties`` (dict), ``instance_type`` (Flavor or dict).
        ``filter_properties``: ``ignore_hosts``, ``force_hosts``,
        ``force_nodes``, ``retry``, ``limits``, ``group_*``,
        ``scheduler_hints``, ``instance_type``, ``requested_destination``
        (a Destination).  Raises InvalidRequestSpec when they are not dicts
        or a value has the wrong type.
        """
        if not isinstance(request_spec, dict):
            raise exception.InvalidRequestSpec(
                reason='request_spec must be a dict')
        filter_properties = filter_properties or {}
        if not isinstance(filter_properties, dict):
            raise exception.InvalidRequestSpec(
                reason='filter_properties must be a dict')
        try:
            return _spec_from_legacy(cls, request_spec, filter_properties)
        except (ValueError, TypeError, KeyError, AttributeError,
                OverflowError) as exc:
            raise exception.InvalidRequestSpec(
                reason='%s: %s' % (type(exc).__name__, exc)) from exc

    def to_legacy_request_spec_dict(self) -> dict[str, Any]:
        """The legacy ``request_spec`` dict (RPC 4.0, notifications)."""
        image = self.get('image')
        return {
            'num_instances': self.get('num_instances', 1),
            'image': base.obj_to_dict(image) if image is not None else {},
            'instance_properties': _legacy_instance_properties(self),
            'instance_type': (self.flavor.obj_to_primitive()
                              if self.obj_attr_is_set('flavor') else {}),
        }

    def to_legacy_filter_properties_dict(self) -> dict[str, Any]:
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
        if self.get('requested_destination') is not None:
            props['requested_destination'] = self.requested_destination
        return props


def _spec_from_legacy(cls: type[RequestSpec], request_spec: dict,
                      filter_properties: dict) -> RequestSpec:
    """A new ``cls`` from the legacy dicts (``from_primitives``)."""
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
    spec.user_id = props.get('user_id')
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
    spec.requested_destination = _object_or_none(
        filter_properties.get('requested_destination'), Destination)
    hints = filter_properties.get('scheduler_hints') or {}
    spec.scheduler_hints = {
        key: value if isinstance(value, list) else [value]
        for key, value in hints.items()}
    return spec.ensure_defaults()


def _legacy_instance_properties(spec: RequestSpec) -> dict[str, Any]:
    """The ``instance_properties`` of the legacy ``request_spec``."""
    props = {'project_id': spec.get('project_id'),
             'user_id': spec.get('user_id'),
             'availability_zone': spec.get('availability_zone'),
             'uuid': spec.obj_get('instance_uuid'),
             'numa_topology': spec.get('numa_topology'),
             'pci_requests': spec.get('pci_requests')}
    if spec.obj_attr_is_set('flavor'):
        for name in ('root_gb', 'ephemeral_gb', 'memory_mb', 'vcpus'):
            props[name] = spec.flavor.obj_get(name)
    return props


def _check_range(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise exception.InvalidRequestSpec(
            reason='%s must be an integer, not %r' % (name, value))
    if not low <= value <= high:
        raise exception.InvalidRequestSpec(
            reason='%s must be between %d and %d, not %d'
                   % (name, low, high, value))


def _object_or_none(value: Any, cls: type) -> Any:
    """``value`` when it is a ``cls`` object (the RPC serializer already
    turned its primitive into one), else None."""
    return value if isinstance(value, cls) else None


def _flavor_from_dict(values: dict) -> flavor_obj.Flavor:
    """A Flavor from a legacy dict (ignoring keys that are not fields) or
    from a Flavor primitive still in its ``nova_object`` envelope."""
    if flavor_obj.Flavor._obj_primitive_key('name') in values:
        return flavor_obj.Flavor.obj_from_primitive(values)
    flavor = flavor_obj.Flavor()
    for key, value in values.items():
        if key in flavor_obj.Flavor.fields and value is not None:
            setattr(flavor, key, value)
    return flavor


def _group_from_filter_properties(filter_properties: dict
                                  ) -> group_obj.InstanceGroup | None:
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
