"""The payload of Nova's versioned ``scheduler.select_destinations``
notifications: ``RequestSpecPayload`` and the payloads nested in it, with
Nova 34.0.0's names, versions and fields.

=============================  =======  =================================
payload                        version  built from
=============================  =======  =================================
RequestSpecPayload             1.1      RequestSpec
FlavorPayload                  1.4      Flavor
ImageMetaPayload               1.0      ImageMeta
ImageMetaPropsPayload          1.20     ImageMetaProps
ServerGroupPayload             1.1      InstanceGroup
InstanceNUMATopologyPayload    1.0      InstanceNUMATopology
InstanceNUMACellPayload        1.2      InstanceNUMACell
VirtCPUTopologyPayload         1.0      a cell's ``cpu_topology``
InstancePCIRequestsPayload     1.0      InstancePCIRequests
InstancePCIRequestPayload      1.1      InstancePCIRequest
DestinationPayload             1.0      Destination
SchedulerRetriesPayload        1.0      SchedulerRetries
CellMappingPayload             2.0      CellMapping
=============================  =======  =================================

``RequestSpecPayload.from_request_spec(spec)`` builds the whole tree; its
``obj_to_primitive()`` is the notification's payload, with no
``nova_object.changes`` anywhere (Nova clears them before sending).
Values are the source's, field by field, with Nova 34's rules:

* a field the source does not have set is sent as None (ImageMetaProps:
  left out, so that only the image's own properties appear);
* ``force_hosts`` / ``force_nodes`` are the first forced host / node;
  ``security_groups`` the groups' uuids (their names when they have
  none); ``image_meta`` is declared and never filled, ``image`` carries
  the image;
* the NUMA topology and PCI requests take the request's
  ``instance_uuid`` when they have none (Nova writes it into the request;
  here the request is left as it is);
* a server group's ``rules`` are only ``max_server_per_host``, read as an
  integer and sent as a string;
* retries list the node names (``hypervisor_hostname``) tried;
* a destination sends ``host`` / ``node`` / ``cell`` only when set;
* a dedicated NUMA cell's vCPUs are in ``pcpuset`` with an empty
  ``cpuset`` (InstanceNUMACell 1.5+ as Nova holds it; see
  ``scheduler.objects.numa`` for the copy made on reading);
* ``hw_numa_nodes`` is an integer (Nova's type; a string in our
  ImageMetaProps), and ``hw_ephemeral_encryption_secret_uuid`` is not
  part of the properties payload.  Enum properties and
  ``img_hv_requested_version`` (a version predicate for Nova) are
  strings, as in our ImageMetaProps: the same on the wire.

A value the payload cannot hold (a missing ``instance_uuid``, a
non-integer ``max_server_per_host``...) raises ValueError, as in Nova.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base
from scheduler.objects import image_meta

CPU_POLICY_DEDICATED = 'dedicated'


class NotificationPayload(base.SchedulerObject):
    """A payload built from a source object with ``build(source)``.

    ``COPIED`` names the fields whose value is the source's field of the
    same name; ``UNSET_AS_NONE`` says whether a field the source lacks
    is sent as None (True) or left out (False).  ``_fill(source,
    **extra)`` sets the other fields.
    """

    COPIED = ()
    UNSET_AS_NONE = True

    @classmethod
    def build(cls, source, **extra):
        """The payload of ``source`` (one of our objects); ``extra``
        goes to ``_fill``.  ValueError for a value the payload cannot
        hold."""
        payload = cls()
        payload._fill(source, **extra)
        payload._copy(source)
        return payload

    @classmethod
    def build_or_none(cls, source, **extra):
        """``build(source)``, or None when ``source`` is None."""
        return None if source is None else cls.build(source, **extra)

    def _fill(self, source, **extra):
        pass

    def _copy(self, source):
        for name in self.COPIED:
            value = source.obj_get(name)
            if value is not None or self.UNSET_AS_NONE:
                setattr(self, name, value)


@base.register
class FlavorPayload(NotificationPayload):
    VERSION = '1.4'

    fields = {
        'flavorid': fields.StringField(nullable=True),
        'memory_mb': fields.IntegerField(nullable=True),
        'vcpus': fields.IntegerField(nullable=True),
        'root_gb': fields.IntegerField(nullable=True),
        'ephemeral_gb': fields.IntegerField(nullable=True),
        'name': fields.StringField(),
        'swap': fields.IntegerField(),
        'rxtx_factor': fields.FloatField(nullable=True),
        'vcpu_weight': fields.IntegerField(nullable=True),
        'disabled': fields.BooleanField(),
        'is_public': fields.BooleanField(),
        'extra_specs': fields.DictOfStringsField(nullable=True),
        'projects': base.ListOfStringsField(nullable=True),
        'description': fields.StringField(nullable=True),
    }

    COPIED = tuple(fields)


# Our ImageMetaProps fields the properties payload leaves out, and those
# whose type there is Nova's, not ours.
_PROPS_LEFT_OUT = ('hw_ephemeral_encryption_secret_uuid',)
_PROPS_NOVA_TYPES = {'hw_numa_nodes': fields.IntegerField}


def _props_payload_fields():
    """One non-nullable field per image property, of the property's type
    (``_PROPS_NOVA_TYPES`` where Nova's differs)."""
    return {name: _PROPS_NOVA_TYPES.get(name, type(field))()
            for name, field in image_meta.ImageMetaProps.fields.items()
            if name not in _PROPS_LEFT_OUT}


@base.register
class ImageMetaPropsPayload(NotificationPayload):
    """The image properties that are set (ImageMetaProps 1.44)."""

    VERSION = '1.20'

    fields = _props_payload_fields()

    COPIED = tuple(fields)
    UNSET_AS_NONE = False


@base.register
class ImageMetaPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'id': fields.UUIDField(nullable=True),
        'name': fields.StringField(nullable=True),
        'status': fields.StringField(nullable=True),
        'visibility': fields.StringField(nullable=True),
        'protected': fields.FlexibleBooleanField(nullable=True),
        'checksum': fields.StringField(nullable=True),
        'owner': fields.StringField(nullable=True),
        'size': fields.IntegerField(nullable=True),
        'virtual_size': fields.IntegerField(nullable=True),
        'container_format': fields.StringField(nullable=True),
        'disk_format': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'tags': base.ListOfStringsField(nullable=True),
        'direct_url': fields.StringField(nullable=True),
        'min_ram': fields.IntegerField(nullable=True),
        'min_disk': fields.IntegerField(nullable=True),
        'properties': fields.ObjectField('ImageMetaPropsPayload'),
    }

    COPIED = tuple(name for name in fields if name != 'properties')

    def _fill(self, image):
        self.properties = ImageMetaPropsPayload.build(image.properties)


@base.register
class ServerGroupPayload(NotificationPayload):
    VERSION = '1.1'

    fields = {
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'policies': base.ListOfStringsField(nullable=True),
        'members': base.ListOfStringsField(nullable=True),
        'hosts': base.ListOfStringsField(nullable=True),
        'policy': fields.StringField(nullable=True),
        'rules': fields.DictOfStringsField(),
    }

    COPIED = tuple(name for name in fields if name != 'rules')

    def _fill(self, group):
        rules = group.obj_get('_rules') or {}
        limit = rules.get('max_server_per_host')
        self.rules = ({} if limit is None else
                      {'max_server_per_host': int(limit)})


@base.register
class VirtCPUTopologyPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'sockets': fields.IntegerField(nullable=True, default=1),
        'cores': fields.IntegerField(nullable=True, default=1),
        'threads': fields.IntegerField(nullable=True, default=1),
    }

    COPIED = tuple(fields)


@base.register
class InstanceNUMACellPayload(NotificationPayload):
    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'cpuset': fields.SetOfIntegersField(),
        'pcpuset': fields.SetOfIntegersField(),
        'cpuset_reserved': fields.SetOfIntegersField(nullable=True),
        'memory': fields.IntegerField(),
        'pagesize': fields.IntegerField(nullable=True),
        'cpu_topology': fields.ObjectField('VirtCPUTopologyPayload',
                                           nullable=True),
        'cpu_pinning_raw': fields.DictOfIntegersField(nullable=True),
        'cpu_policy': fields.StringField(nullable=True),
        'cpu_thread_policy': fields.StringField(nullable=True),
    }

    COPIED = tuple(name for name in fields
                   if name not in ('cpuset', 'cpu_topology'))

    def _fill(self, cell):
        self.cpuset = _shared_cpus(cell)
        topology = (cell.obj_get('cpu_topology')
                    if 'cpu_topology' in cell.fields else None)
        self.cpu_topology = VirtCPUTopologyPayload.build_or_none(topology)


def _shared_cpus(cell):
    """The cell's ``cpuset`` as Nova holds it: empty for a dedicated cell
    whose ``pcpuset`` was copied into it on reading."""
    cpuset = cell.obj_get('cpuset')
    if (cell.obj_get('cpu_policy') == CPU_POLICY_DEDICATED and cpuset and
            cpuset == cell.obj_get('pcpuset')):
        return set()
    return cpuset


@base.register
class InstanceNUMATopologyPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'cells': fields.ListOfObjectsField('InstanceNUMACellPayload'),
        'emulator_threads_policy': fields.StringField(nullable=True),
    }

    COPIED = ('emulator_threads_policy',)

    def _fill(self, topology, instance_uuid=None):
        self.instance_uuid = topology.obj_get('instance_uuid') or instance_uuid
        self.cells = [InstanceNUMACellPayload.build(cell)
                      for cell in topology.cells]


@base.register
class InstancePCIRequestPayload(NotificationPayload):
    VERSION = '1.1'

    fields = {
        'count': fields.IntegerField(),
        'spec': fields.ListOfDictOfNullableStringsField(),
        'alias_name': fields.StringField(nullable=True),
        'request_id': fields.UUIDField(nullable=True),
        'numa_policy': fields.StringField(nullable=True),
    }

    COPIED = tuple(fields)


@base.register
class InstancePCIRequestsPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'requests': fields.ListOfObjectsField('InstancePCIRequestPayload'),
    }

    def _fill(self, pci_requests, instance_uuid=None):
        self.instance_uuid = (pci_requests.obj_get('instance_uuid') or
                              instance_uuid)
        self.requests = [InstancePCIRequestPayload.build(request)
                         for request in pci_requests.requests]


@base.register
class CellMappingPayload(NotificationPayload):
    VERSION = '2.0'

    fields = {
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'disabled': fields.BooleanField(default=False),
    }

    COPIED = tuple(fields)


@base.register
class DestinationPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(),
        'node': fields.StringField(nullable=True),
        'cell': fields.ObjectField('CellMappingPayload', nullable=True),
        'aggregates': base.ListOfStringsField(nullable=True, default=None),
    }

    COPIED = ('aggregates',)

    def _fill(self, destination):
        for name in ('host', 'node'):
            if destination.obj_get(name) is not None:
                setattr(self, name, destination.obj_get(name))
        cell = destination.obj_get('cell')
        if cell is not None:
            self.cell = CellMappingPayload.build(cell)


@base.register
class SchedulerRetriesPayload(NotificationPayload):
    VERSION = '1.0'

    fields = {
        'num_attempts': fields.IntegerField(),
        'hosts': base.ListOfStringsField(),
    }

    COPIED = ('num_attempts',)

    def _fill(self, retry):
        self.hosts = [node.obj_get('hypervisor_hostname')
                      for node in retry.hosts]


@base.register
class RequestSpecPayload(NotificationPayload):
    VERSION = '1.1'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('FlavorPayload', nullable=True),
        'force_hosts': fields.StringField(nullable=True),
        'force_nodes': fields.StringField(nullable=True),
        'ignore_hosts': base.ListOfStringsField(nullable=True),
        'image_meta': fields.ObjectField('ImageMetaPayload', nullable=True),
        'instance_group': fields.ObjectField('ServerGroupPayload',
                                             nullable=True),
        'image': fields.ObjectField('ImageMetaPayload', nullable=True),
        'numa_topology': fields.ObjectField('InstanceNUMATopologyPayload',
                                            nullable=True),
        'pci_requests': fields.ObjectField('InstancePCIRequestsPayload',
                                           nullable=True),
        'num_instances': fields.IntegerField(default=1),
        'requested_destination': fields.ObjectField('DestinationPayload',
                                                    nullable=True),
        'retry': fields.ObjectField('SchedulerRetriesPayload',
                                    nullable=True),
        'scheduler_hints': base.DictOfListOfStringsField(nullable=True),
        'security_groups': base.ListOfStringsField(),
    }

    COPIED = ('ignore_hosts', 'instance_uuid', 'project_id', 'user_id',
              'availability_zone', 'num_instances', 'scheduler_hints')

    # Payload field -> the payload class built from the request's field
    # of the same name.
    _NESTED = {'flavor': FlavorPayload, 'image': ImageMetaPayload,
               'instance_group': ServerGroupPayload,
               'requested_destination': DestinationPayload,
               'retry': SchedulerRetriesPayload}
    # The same, for sources that take the request's instance_uuid.
    _NESTED_WITH_UUID = {'numa_topology': InstanceNUMATopologyPayload,
                         'pci_requests': InstancePCIRequestsPayload}

    @classmethod
    def from_request_spec(cls, spec):
        """The payload of ``spec``, ready to send (no changes recorded)."""
        payload = cls.build(spec)
        payload.obj_reset_changes(recursive=True)
        return payload

    def _fill(self, spec):
        for name, payload_cls in self._NESTED.items():
            setattr(self, name, payload_cls.build_or_none(spec.obj_get(name)))
        uuid = spec.obj_get('instance_uuid')
        for name, payload_cls in self._NESTED_WITH_UUID.items():
            setattr(self, name, payload_cls.build_or_none(
                spec.obj_get(name), instance_uuid=uuid))
        for name in ('force_hosts', 'force_nodes'):
            forced = spec.obj_get(name)
            setattr(self, name, forced[0] if forced else None)
        groups = spec.obj_get('security_groups')
        self.security_groups = [_group_identifier(group)
                                for group in (groups or ())]


def _group_identifier(security_group):
    """A security group's uuid, or its name when it has none."""
    if security_group.obj_attr_is_set('uuid'):
        return security_group.uuid
    return security_group.obj_get('name')
