"""The service's run: every arrival a ``select_destinations`` call.

``Replay`` is the ``loop.EventLoop`` of the service: an arrival becomes a
RequestSpec (its flavor from ``FlavorCatalog``; a VM with GPUs asks them
with the flavor's ``pci_passthrough:alias`` and the RequestSpec's
``pci_requests``, as nova-api builds them, ``gpus``) and one
``select_destinations`` call through ``SchedulerAPI``, waited for; the
simulated compute agents (``agent``) then record the instances, write
the chosen nodes' rows and cast ``update_instance_info``.  Departures
are removed from the agents' usage one by one and written in one batch
before the next arrival (``ComputeAgents.commit_removals``), so every
decision sees exactly the rows the agents would have written event by
event.  NoValidHost is counted, never fatal; other call errors are
counted too, and the replay stops after ``MAX_CONSECUTIVE_ERRORS`` in a
row.
"""

import csv
import time

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import exception
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import request_spec
from scheduler_tools.replay import gpus
from scheduler_tools.replay import loop
from scheduler_tools.replay import metrics

LOG = logging.getLogger(__name__)

MAX_CONSECUTIVE_ERRORS = 5


class ReplayError(RuntimeError):
    """The replay cannot go on."""


class FlavorCatalog:
    """Flavor objects for trace sizes, ids from 1 in first-seen order."""

    def __init__(self):
        self._flavors = {}

    def get(self, vm):
        """The Flavor of ``vm`` (root disk ``disk_gb`` GiB, no swap; its
        GPUs in the ``pci_passthrough:alias`` extra spec)."""
        key = (vm.resources, vm.flavor_name)
        flavor = self._flavors.get(key)
        if flavor is None:
            flavor_id = len(self._flavors) + 1
            flavor = flavor_obj.Flavor(
                id=flavor_id, name=vm.flavor_name, flavorid=str(flavor_id),
                memory_mb=vm.memory_mb, vcpus=vm.vcpus, root_gb=vm.disk_gb,
                ephemeral_gb=0, swap=0,
                extra_specs=gpus.GpuAlias.extra_specs(vm.gpus),
                is_public=True,
                disabled=False, projects=[], rxtx_factor=1.0)
            self._flavors[key] = flavor
        return flavor


def build_spec(request, flavor, instance_uuids, pci_requests=None):
    """The RequestSpec of a trace Request for ``flavor``, with the
    ``pci_requests`` (InstancePCIRequests) of its GPUs, if any."""
    first = request.first
    spec = request_spec.RequestSpec(
        flavor=flavor, num_instances=request.num_instances,
        instance_uuid=instance_uuids[0], project_id=first.project_id,
        availability_zone=first.availability_zone,
        pci_requests=pci_requests)
    return spec.ensure_defaults()


class PlacementsWriter:
    """``vm_id,host,nodename`` rows, in decision order (or nothing)."""

    def __init__(self, path):
        self._file = open(path, 'w', newline='') if path else None
        self._writer = None
        if self._file is not None:
            self._writer = csv.writer(self._file, lineterminator='\n')
            self._writer.writerow(('vm_id', 'host', 'nodename'))

    def placed(self, records):
        if self._writer is not None:
            for record in records:
                self._writer.writerow((record.vm.vm_id, record.host,
                                       record.nodename))

    def rejected(self, vms):
        if self._writer is not None:
            for vm in vms:
                self._writer.writerow((vm.vm_id, '', ''))

    def close(self):
        if self._file is not None:
            self._file.close()


class Replay(loop.EventLoop):
    """One replay of ``requests`` on the agents' fleet through ``api``
    (a SchedulerAPI), measured into ``ledger``; GPUs are asked with the
    alias of the fleet's GPU models (``gpus.GpuAlias``)."""

    def __init__(self, ctx, api, agents, requests, ledger, speed=None,
                 placements=None):
        super().__init__(requests, ledger, speed)
        self.ctx = ctx
        self.api = api
        self.agents = agents
        self.catalog = FlavorCatalog()
        self.alias = gpus.GpuAlias.from_pools(
            pool for node in agents.ordered for pool in node.pools)
        self.decisions = metrics.DecisionStats()
        self.placements = placements or PlacementsWriter(None)
        self._errors_in_a_row = 0

    def place(self, request):
        flavor = self.catalog.get(request.first)
        uuids = self.agents.new_uuids(request.num_instances)
        pci_requests = self.alias.pci_requests(request.first.gpus, uuids[0])
        spec = build_spec(request, flavor, uuids, pci_requests)
        started = time.perf_counter()
        try:
            destinations = self.api.select_destinations(
                self.ctx, spec, instance_uuids=uuids)
        except exception.NoValidHost:
            self._rejected(request, time.perf_counter() - started)
            return None
        except (messaging.MessagingException, exception.SchedulerException):
            self._failed(request, time.perf_counter() - started)
            return []
        self.decisions.record(time.perf_counter() - started,
                              request.num_instances, len(destinations))
        self._errors_in_a_row = 0
        return self._build(request, uuids, destinations, flavor.id,
                           pci_requests)

    def remove(self, record):
        self.agents.remove(record)

    def commit(self, records):
        self.agents.commit_removals(records)

    def node_state(self, index):
        node = self.agents.ordered[index]
        return node.usage, node.running_vms

    def _rejected(self, request, latency_s):
        self.decisions.record(latency_s, request.num_instances, 0)
        self.placements.rejected(request.vms)
        self._errors_in_a_row = 0

    def _failed(self, request, latency_s):
        LOG.exception('select_destinations failed for request %d',
                      request.index)
        self.decisions.record_error(latency_s, request.num_instances)
        self.placements.rejected(request.vms)
        self._errors_in_a_row += 1
        if self._errors_in_a_row >= MAX_CONSECUTIVE_ERRORS:
            raise ReplayError('%d select_destinations calls failed in a '
                              'row' % self._errors_in_a_row)

    def _build(self, request, uuids, destinations, flavor_id,
               pci_requests=None):
        if len(destinations) != request.num_instances:
            raise ReplayError('asked for %d hosts, got %d'
                              % (request.num_instances, len(destinations)))
        placed, _ = self.agents.spawn(request.vms, uuids, destinations,
                                      flavor_id, pci_requests)
        self.placements.placed(placed)
        return placed
