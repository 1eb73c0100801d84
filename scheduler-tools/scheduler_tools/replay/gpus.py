"""GPUs as Nova schedules them: PCI passthrough devices.

Without Placement tracking PCI devices (the service's SQL mode), Nova
schedules a GPU as a PCI passthrough device, and the replay plays each
part of that as Nova's services would:

* nova-compute reports a node's assignable devices as pools in
  ``compute_nodes.pci_stats`` (``scheduler.resources.pci_pools``): a
  fleet node with GPUs has one pool of its GPU model, tagged
  ``gpu_model`` (``scheduler_tools.seed.gpu_pci_stats``), so every model
  is its own ``(vendor_id, product_id)``;
* an operator defines the ``[pci] alias`` ``gpu`` of nova-api once per
  model, with the same name each time, so that the alias matches any of
  them; a flavor asks ``n`` GPUs with the extra spec
  ``pci_passthrough:alias = gpu:n``, which nova-api turns into the
  RequestSpec's ``pci_requests``: one ``InstancePCIRequest`` of
  ``count`` n, ``alias_name`` ``gpu``, ``numa_policy`` ``legacy`` and a
  ``spec`` listing each model's ``vendor_id``, ``product_id`` and
  ``dev_type`` (``GpuAlias``, built from the models of the fleet's
  pools; a fleet without GPUs gets a spec no pool matches, so GPU
  requests meet NoValidHost there);
* PciPassthroughFilter (which the replay enables when the trace asks for
  GPUs) keeps the hosts whose pools can serve the request, and the host
  state takes the devices of a multi-instance request's earlier
  instances; nova-compute's PCI tracker then claims the devices and
  frees them at deletion (``agent``).

Nova cannot ask for part of a device: a VM whose source shared a GPU
(``trace.VM.gpu_milli`` below 1000) asks one whole GPU, and
``gpu_figures.sharing`` counts what that overstates.
"""

import sys
import uuid

from scheduler.objects import pci as pci_obj
from scheduler.resources import pci_pools
from scheduler_tools.seed import GPU_DEV_TYPE
from scheduler_tools.seed import GPU_MODEL_TAG
from scheduler_tools.seed import GPU_VENDOR_ID

ALIAS_NAME = 'gpu'
ALIAS_EXTRA_SPEC = 'pci_passthrough:alias'
NUMA_POLICY = 'legacy'      # a [pci] alias's default numa_policy
FILTER_NAME = 'PciPassthroughFilter'
# The spec of an alias on a fleet without GPUs: no pool has this product.
NO_PRODUCT = '0000'


def is_gpu_pool(pool):
    """Whether a ``PciDevicePool`` holds the fleet's GPUs."""
    return GPU_MODEL_TAG in pool.tags


def gpu_count(pools):
    """Free GPUs in ``pools`` (``PciDevicePool`` list)."""
    return sum(pool.count for pool in pools if is_gpu_pool(pool))


def trace_has_gpus(vms):
    """Whether a VM of ``vms`` asks for GPUs."""
    return any(vm.gpus for vm in vms)


class GpuAlias:
    """The ``[pci] alias`` ``gpu`` nova-api would have: one spec per GPU
    model, ``{'vendor_id', 'product_id', 'dev_type'}`` (strings)."""

    def __init__(self, specs):
        self.specs = list(specs) or [{'vendor_id': GPU_VENDOR_ID,
                                      'product_id': NO_PRODUCT,
                                      'dev_type': GPU_DEV_TYPE}]

    @classmethod
    def from_pools(cls, pools):
        """From the GPU pools of a fleet (``PciDevicePool`` iterable), a
        spec per model in first-seen order."""
        specs = {}
        for pool in pools:
            if is_gpu_pool(pool):
                key = (pool.vendor_id, pool.product_id)
                specs.setdefault(key, {
                    'vendor_id': pool.vendor_id,
                    'product_id': pool.product_id,
                    'dev_type': pool.tags.get('dev_type', GPU_DEV_TYPE)})
        return cls(specs.values())

    @classmethod
    def from_rows(cls, rows):
        """From ``compute_nodes`` row dicts (their ``pci_stats``)."""
        return cls.from_pools(pool for row in rows
                              for pool in pci_pools.parse_pools(
                                  row.get('pci_stats')))

    @staticmethod
    def extra_specs(gpus):
        """The flavor extra specs asking ``gpus`` GPUs ({} for none)."""
        if not gpus:
            return {}
        return {ALIAS_EXTRA_SPEC: '%s:%d' % (ALIAS_NAME, gpus)}

    def pci_requests(self, gpus, instance_uuid):
        """The ``InstancePCIRequests`` nova-api builds from
        ``extra_specs(gpus)`` (None for no GPU)."""
        if not gpus:
            return None
        request = pci_obj.InstancePCIRequest(
            count=gpus, spec=[dict(spec) for spec in self.specs],
            alias_name=ALIAS_NAME, is_new=False,
            request_id=str(uuid.uuid4()), requester_id=None,
            numa_policy=NUMA_POLICY)
        return pci_obj.InstancePCIRequests(instance_uuid=instance_uuid,
                                           requests=[request])


def require_filter(conf, vms, embedded, stream=None):
    """Make sure PciPassthroughFilter runs when ``vms`` ask for GPUs, as
    an operator enabling PCI passthrough adds it to ``[filter_scheduler]
    enabled_filters``: embedded, add it (and say so on ``stream``,
    stderr by default); against a separate service, whose settings the
    replay cannot change, only warn.  Returns whether it was added."""
    enabled = list(conf.filter_scheduler.enabled_filters)
    if not trace_has_gpus(vms) or FILTER_NAME in enabled:
        return False
    stream = stream or sys.stderr
    if not embedded:
        print('scheduler-replay: warning: the trace asks for GPUs; the '
              'service must run %s ([filter_scheduler] enabled_filters)'
              % FILTER_NAME, file=stream)
        return False
    conf.set_override('enabled_filters', enabled + [FILTER_NAME],
                      'filter_scheduler')
    print('scheduler-replay: the trace asks for GPUs: %s added to '
          '[filter_scheduler] enabled_filters' % FILTER_NAME, file=stream)
    return True

