"""HostState: the scheduler's view of one compute node (host, nodename).

This is what filters and weighers see (``host_passes(host_state,
spec_obj)``, ``_weigh_object(host_state, weight_properties)``).  Fields
and units follow Nova's HostState: RAM in MiB, disk in MiB for
``free_disk_mb`` / ``disk_mb_used`` and GiB for ``total_usable_disk_gb``,
CPUs in vCPUs.

A HostState is refreshed from its ``compute_nodes`` row by ``update`` and
virtually consumed by ``consume_from_request`` between the instances of a
request.  A row whose ``updated_at`` is older than the last local
consumption is not copied, so the consumption stays until the compute
node reports again; a row stamped ahead of this clock counts as stamped
now (and a warning names its node).

The resources copied from a row are what the compute node reports minus
what schedulers have claimed on it and not yet seen reported
(``claimed_vcpus``, ``claimed_memory_mb``, ``claimed_disk_gb``; see
``scheduler.db.claims``).  Besides Nova's fields, ``memory_mb_used``
(MiB) and ``local_gb_used`` (GiB) count what the claims count: the
node's reported use, its open claims and this view's consumption, so
that a candidate can be checked by the claims' own rule
(``scheduler.resources.capacity``).
"""

import datetime
import functools
import json
import sys
import threading
import typing
import uuid
from collections.abc import Iterable
from collections.abc import Mapping

from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler.conf import CONF
from scheduler.resources import capacity
from scheduler.resources import numa
from scheduler.resources.ratios import DEFAULT_ALLOCATION_RATIOS
from scheduler.resources.ratios import resolve_allocation_ratio

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec

LOG = logging.getLogger(__name__)

# Seconds a compute node row may be stamped ahead of this clock before a
# warning says so (clocks of one deployment differ by less under NTP).
CLOCK_SKEW_WARNING_S = 5.0

def _json(value: typing.Any, default: typing.Any) -> typing.Any:
    """Decode a JSON text column; a dict/list passes through."""
    if value is None or value == '':
        return default
    if isinstance(value, (dict, list)):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        LOG.warning('Ignoring malformed JSON column value %r', value)
        return default


def _shared(text: typing.Any) -> typing.Any:
    """One string object for equal texts that many hosts repeat (CPU
    models, hypervisor types): a 100,000-host view keeps one copy."""
    return sys.intern(text) if isinstance(text, str) else text


@functools.lru_cache(maxsize=1024)
def _decoded_supported_instances(text: str) -> list[typing.Any]:
    return _json(text, []) or []


def _supported_instances(value: typing.Any) -> list[typing.Any]:
    """The ``supported_instances`` column decoded, one list for equal texts
    (hosts of a kind share it; nothing changes it)."""
    if isinstance(value, str):
        return _decoded_supported_instances(value)
    return _json(value, []) or []


class HostState:
    """Mutable state of one compute node, as Nova's HostState.

    Its fields are slots (a 100,000-host view holds 100,000 of them); a
    plug-in may still set an attribute of its own (``__dict__``).
    """

    __slots__ = (
        'host', 'nodename', 'cell_uuid', 'uuid', 'compute_id', 'generation',
        '_lock', 'total_usable_ram_mb', 'free_ram_mb',
        'total_usable_disk_gb', 'disk_mb_used', 'free_disk_mb',
        'memory_mb_used', 'local_gb_used',
        'vcpus_total', 'vcpus_used', 'numa_topology', 'pci_stats',
        'num_instances', 'num_io_ops', 'failed_builds', 'stats', 'host_ip',
        'hypervisor_type', 'hypervisor_version', 'hypervisor_hostname',
        'cpu_info', 'supported_instances', 'metrics', 'cpu_allocation_ratio',
        'ram_allocation_ratio', 'disk_allocation_ratio', 'limits',
        'aggregates', 'instances', 'service', 'updated', 'own_generation',
        'allocation_candidates', '__dict__')

    # Whether one instance takes the whole node (a bare-metal node,
    # ``scheduler.view.ironic_host_manager``).
    WHOLE_NODE = False

    def __init__(self, host: str, nodename: str,
                 cell_uuid: str | None = None) -> None:
        self.host = host
        self.nodename = nodename
        self.cell_uuid = cell_uuid
        # compute_nodes.uuid; a stable uuid5 of (host, node) when NULL.
        self.uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, 'compute-node:%s:%s'
                                   % (host, nodename)))
        self.compute_id: int | None = None
        self.generation = 0
        self._lock = threading.RLock()
        self.total_usable_ram_mb = 0
        self.free_ram_mb = 0
        self.total_usable_disk_gb = 0
        self.disk_mb_used = 0
        self.free_disk_mb = 0
        self.memory_mb_used = 0
        self.local_gb_used = 0
        self.vcpus_total = 0
        self.vcpus_used = 0
        # The stored shapes of their columns (JSON text, dicts, lists).
        self.numa_topology: typing.Any = None
        self.pci_stats: typing.Any = None
        self.num_instances = 0
        self.num_io_ops = 0
        self.failed_builds = 0
        self.stats: dict[str, typing.Any] = {}
        self.host_ip: typing.Any = None
        self.hypervisor_type: str | None = None
        self.hypervisor_version: int | None = None
        self.hypervisor_hostname: str | None = None
        self.cpu_info: str | None = None
        self.supported_instances: list[typing.Any] = []
        self.metrics: list[typing.Any] | None = None
        self.cpu_allocation_ratio: float | None = None
        self.ram_allocation_ratio: float | None = None
        self.disk_allocation_ratio: float | None = None
        self.limits: dict[str, typing.Any] = {}
        self.aggregates: list[typing.Any] = []
        self.instances: dict[str, typing.Any] = {}
        self.service: dict[str, typing.Any] | None = None
        self.updated: datetime.datetime | None = None
        # The generation the node's row has when only this view's claims
        # wrote it since it was copied (``HostManager.keep_consumption``);
        # None when the consumption was not kept after a claim.
        self.own_generation: int | None = None
        # Placement mode, a request asking NUMA or PCI: the compute
        # node's allocation candidates (allocation request dicts, in
        # Placement's order), which NUMATopologyFilter and
        # PciPassthroughFilter narrow and whose first is claimed (Nova
        # 34); None otherwise, and on a rebuild.
        self.allocation_candidates: typing.Any = None

    # -- refresh ---------------------------------------------------------

    def update(self, compute: Mapping[str, typing.Any] | None = None,
               service: dict[str, typing.Any] | None = None,
               aggregates: Iterable[typing.Any] | None = None,
               instances: dict[str, typing.Any] | None = None) -> None:
        """Refresh from a ``compute_nodes`` row dict, a ``services`` row
        dict (kept as given: the nodes of a host share it), the host's
        Aggregate objects and its ``{uuid: Instance}``.

        Arguments that are None leave that part unchanged.
        """
        with self._lock:
            if compute is not None:
                self._update_from_compute_node(compute)
            if aggregates is not None:
                self.aggregates = list(aggregates)
            if service is not None:
                self.service = service
            if instances is not None:
                self.instances = instances

    def _update_from_compute_node(self, compute: Mapping[str, typing.Any]
                                  ) -> None:
        self.uuid = compute.get('uuid') or self.uuid
        self.compute_id = compute.get('id')
        if compute.get('free_disk_gb') is None:
            # Never reported: keep the zero resources (Nova, Ocata+).
            return
        # A row never updated since its creation counts from created_at.
        updated_at = compute.get('updated_at') or compute.get('created_at')
        stamp = timeutils.normalize_time(updated_at) if updated_at else None
        generation = compute.get('generation') or 0
        if (self.updated and stamp and self.updated > stamp and
                not self._written_by_others(generation)):
            # A local consumption is newer than the row: keep it.
            return
        self._copy_resources(compute)
        self.generation = generation
        self.own_generation = None
        self.updated = self._no_later_than_now(stamp)

    def _written_by_others(self, generation: int) -> bool:
        """Whether a row of ``generation`` holds writes besides this
        view's own claims since it was copied: another scheduler's claim
        or a release, whatever the row's stamp says (one written after
        this view's consumption can read as older: MySQL/MariaDB keep
        whole seconds, and a claim may come between this view's read and
        its own).  Each claim of an instance bumps the generation once
        (``scheduler.db.claims``)."""
        return (self.own_generation is not None and
                generation > self.own_generation)

    def _no_later_than_now(self, stamp: datetime.datetime | None
                           ) -> datetime.datetime | None:
        """The row's ``stamp`` (naive UTC), or now when the row's writer
        stamped it ahead of this clock: a row stamped in the future must
        not make the node's next, correct, report look older than it
        (and be skipped) for as long as the skew.  A skew over
        ``CLOCK_SKEW_WARNING_S`` is logged, naming the node."""
        if stamp is None:
            return None
        now = timeutils.utcnow()
        if stamp <= now:
            return stamp
        skew_s = (stamp - now).total_seconds()
        if skew_s > CLOCK_SKEW_WARNING_S:
            LOG.warning('The compute_nodes row of %s:%s is stamped %.0f s '
                        'ahead of this scheduler\'s clock (updated_at %s): '
                        'check the clock of the host that wrote it',
                        self.host, self.nodename, skew_s, stamp.isoformat())
        return now

    def _copy_resources(self, compute: Mapping[str, typing.Any]) -> None:
        claimed_disk_gb = compute.get('claimed_disk_gb') or 0
        claimed_memory_mb = compute.get('claimed_memory_mb') or 0
        self.total_usable_ram_mb = compute['memory_mb']
        self.free_ram_mb = (compute['free_ram_mb'] or 0) - claimed_memory_mb
        self.memory_mb_used = ((compute.get('memory_mb_used') or 0) +
                               claimed_memory_mb)
        self.total_usable_disk_gb = compute['local_gb']
        self.local_gb_used = ((compute.get('local_gb_used') or 0) +
                              claimed_disk_gb)
        self.disk_mb_used = self.local_gb_used * 1024
        free_gb = compute['free_disk_gb']
        least = compute.get('disk_available_least')
        if least is not None:
            if least > free_gb:
                LOG.debug('Host %s has more disk space than the database '
                          'expected (%s GB > %s GB)', self.host, least,
                          free_gb)
            free_gb = min(free_gb, least)
        self.free_disk_mb = (free_gb - claimed_disk_gb) * 1024
        self.vcpus_total = compute['vcpus']
        self.vcpus_used = ((compute.get('vcpus_used') or 0) +
                           (compute.get('claimed_vcpus') or 0))
        self.numa_topology = compute.get('numa_topology')
        self.pci_stats = _json(compute.get('pci_stats'), None)
        self.stats = _json(compute.get('stats'), {}) or {}
        self.num_instances = int(self.stats.get('num_instances', 0))
        self.num_io_ops = int(self.stats.get('io_workload', 0))
        self.failed_builds = int(self.stats.get('failed_builds', 0))
        self.host_ip = compute.get('host_ip')
        self.hypervisor_type = _shared(compute.get('hypervisor_type'))
        self.hypervisor_version = compute.get('hypervisor_version')
        self.hypervisor_hostname = compute.get('hypervisor_hostname')
        self.cpu_info = _shared(compute.get('cpu_info'))
        self.supported_instances = _supported_instances(
            compute.get('supported_instances'))
        self.metrics = _json(compute.get('metrics'), None)
        for name in DEFAULT_ALLOCATION_RATIOS:
            setattr(self, name,
                    resolve_allocation_ratio(name, compute.get(name)))

    # -- consumption -----------------------------------------------------

    def claim_amounts(self, spec_obj: typing.Any) -> capacity.Amounts:
        """What one instance of ``spec_obj`` takes on this node and its
        claim holds (``capacity.claim_amounts``: vCPUs, RAM in MiB, local
        disk in GiB)."""
        return capacity.claim_amounts(spec_obj)

    def consume_from_request(self, spec_obj: 'RequestSpec') -> None:
        """Virtually take the request's resources (Nova 3.3).

        RAM in MiB and local root + ephemeral disk are subtracted (not
        swap, as Nova; nor the root disk of a boot from volume), vCPUs,
        instance and I/O counters are incremented, the NUMA cells and PCI
        pools the request fits are used (never raising), and ``updated``
        is set to now so the next refresh keeps the consumption until the
        compute node reports.  ``memory_mb_used`` and ``local_gb_used``
        grow by what a claim takes (``claim_amounts``).  Of the HostTable's
        columns only ``host_table.USAGE_COLUMNS`` change (the host manager
        copies no others after a consumption).
        """
        with self._lock:
            amounts = self.claim_amounts(spec_obj)
            self.free_ram_mb -= amounts.memory_mb
            self.memory_mb_used += amounts.memory_mb
            self.free_disk_mb -= amounts.disk_gb * 1024
            self.local_gb_used += amounts.disk_gb
            self.vcpus_used += amounts.vcpus
            self.num_instances += 1
            self.num_io_ops += 1
            numa.consume_numa_and_pci(self, spec_obj)
            self.updated = timeutils.utcnow()

    # -- derived values --------------------------------------------------

    @property
    def availability_zone(self) -> str:
        """The AZ of the host's aggregates, else the default AZ."""
        for aggregate in self.aggregates:
            zone = (aggregate.obj_get('metadata') or {}).get(
                'availability_zone')
            if zone:
                return zone
        return CONF.default_availability_zone

    def __repr__(self) -> str:
        return ('(%s, %s) ram: %sMB disk: %sMB io_ops: %s instances: %s'
                % (self.host, self.nodename, self.free_ram_mb,
                   self.free_disk_mb, self.num_io_ops, self.num_instances))
