"""Instance NUMA topology objects (Nova 34.0.0 versions:
``InstanceNUMATopology`` v1.3, ``InstanceNUMACell`` v1.6,
``NUMATopologyLimits`` v1.1).

They arrive inside a RequestSpec; the NUMATopologyFilter reads them.
CPU sets are sets of guest vCPU ids; memory is in MiB, page size in KiB.

Since InstanceNUMACell 1.5 (Victoria) Nova keeps a dedicated (pinned)
cell's vCPUs in ``pcpuset`` and leaves ``cpuset`` for the shared ones.
The fitting code (``scheduler.resources.numa``) reads a cell's vCPUs from
``cpuset``, as every cell had them before 1.5, so a dedicated cell read
from a 1.5+ primitive gets its ``pcpuset`` copied into an empty
``cpuset`` (the reverse of Nova's own backport to 1.4); ``pcpuset`` is
kept as received.  ``cpu_policy`` ``mixed`` (1.6, Victoria) is read and
left to the fitting code, which does not place it.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base

CPU_POLICY_DEDICATED = 'dedicated'


@base.register
class InstanceNUMACell(base.SchedulerObject):
    VERSION = '1.6'

    fields = {
        'id': fields.IntegerField(),
        'cpuset': fields.SetOfIntegersField(),
        'pcpuset': fields.SetOfIntegersField(),
        'memory': fields.IntegerField(),
        'pagesize': fields.IntegerField(nullable=True),
        'cpu_pinning_raw': fields.DictOfIntegersField(nullable=True),
        'cpu_policy': fields.StringField(nullable=True),
        'cpu_thread_policy': fields.StringField(nullable=True),
        'cpuset_reserved': fields.SetOfIntegersField(nullable=True),
    }

    FIELDS_ADDED = {'pagesize': (1, 1), 'cpu_pinning_raw': (1, 2),
                    'cpu_policy': (1, 3), 'cpu_thread_policy': (1, 3),
                    'cpuset_reserved': (1, 4), 'pcpuset': (1, 5)}
    VALUES_ADDED = {'cpu_policy': {'mixed': (1, 6)}}

    @classmethod
    def _obj_from_primitive(cls, context, objver, primitive):
        cell = super()._obj_from_primitive(context, objver, primitive)
        cell._copy_pinned_cpus_to_cpuset()
        return cell

    def _copy_pinned_cpus_to_cpuset(self):
        """A dedicated cell with an empty ``cpuset``: copy ``pcpuset``
        into it, without marking ``cpuset`` changed."""
        if (self.obj_get('cpu_policy') != CPU_POLICY_DEDICATED or
                self.obj_get('cpuset') or not self.obj_get('pcpuset')):
            return
        changed = 'cpuset' in self.obj_what_changed()
        self.cpuset = set(self.pcpuset)
        if not changed:
            self.obj_reset_changes(['cpuset'])

    def obj_make_compatible(self, primitive, target_version):
        """Before 1.5 a dedicated cell's vCPUs are in ``cpuset`` (Nova's
        backport rule); then the table-driven rules."""
        if (base.version_tuple(target_version) < (1, 5) and
                primitive.get('cpu_policy') == CPU_POLICY_DEDICATED and
                primitive.get('pcpuset')):
            primitive['cpuset'] = primitive['pcpuset']
        super().obj_make_compatible(primitive, target_version)


@base.register
class InstanceNUMATopology(base.SchedulerObject):
    VERSION = '1.3'

    fields = {
        'id': fields.IntegerField(),
        'instance_uuid': fields.UUIDField(),
        'cells': fields.ListOfObjectsField('InstanceNUMACell'),
        'emulator_threads_policy': fields.StringField(nullable=True),
    }

    FIELDS_ADDED = {'emulator_threads_policy': (1, 3)}


@base.register
class NUMATopologyLimits(base.SchedulerObject):
    """Allocation ratios for the NUMA fit, and (1.1, Rocky) the network
    metadata of the request for physnet NUMA affinity."""

    VERSION = '1.1'

    fields = {
        'cpu_allocation_ratio': fields.FloatField(),
        'ram_allocation_ratio': fields.FloatField(),
        'network_metadata': fields.ObjectField('NetworkMetadata'),
    }

    FIELDS_ADDED = {'network_metadata': (1, 1)}
