"""Instance NUMA topology objects (Nova ``InstanceNUMATopology`` v1.3,
``InstanceNUMACell`` v1.4, ``NUMATopologyLimits`` v1.0).

They arrive inside a RequestSpec; the NUMATopologyFilter reads them.
CPU sets are sets of host CPU ids; memory is in MiB, page size in KiB.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base


@base.register
class InstanceNUMACell(base.SchedulerObject):
    VERSION = '1.4'

    fields = {
        'id': fields.IntegerField(),
        'cpuset': fields.SetOfIntegersField(),
        'memory': fields.IntegerField(),
        'pagesize': fields.IntegerField(nullable=True),
        'cpu_pinning_raw': fields.DictOfIntegersField(nullable=True),
        'cpu_policy': fields.StringField(nullable=True),
        'cpu_thread_policy': fields.StringField(nullable=True),
        'cpuset_reserved': fields.SetOfIntegersField(nullable=True),
    }


@base.register
class InstanceNUMATopology(base.SchedulerObject):
    VERSION = '1.3'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'cells': fields.ListOfObjectsField('InstanceNUMACell'),
        'emulator_threads_policy': fields.StringField(nullable=True),
    }


@base.register
class NUMATopologyLimits(base.SchedulerObject):
    VERSION = '1.0'

    fields = {
        'cpu_allocation_ratio': fields.FloatField(),
        'ram_allocation_ratio': fields.FloatField(),
    }
