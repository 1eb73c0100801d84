"""Bare-metal nodes, as ``[scheduler] host_manager = ironic_host_manager``
schedules them (Nova's choice for Ironic in Newton and Ocata, before
Placement's custom resource classes).

A compute node whose ``hypervisor_type`` is ``ironic`` is one physical
machine: it cannot be shared, so it is consumed whole.

* Choosing it for an instance takes all of it in this view: no free RAM
  (MiB) or disk left, every vCPU used, whatever the flavor asked.
* Its claim (``scheduler.db.claims``) takes its whole size, ``vcpus``,
  ``memory_mb`` and ``local_gb``, so that no other worker or service can
  hand it out while the instance is built; such a claim fits only on a
  node nothing uses (with allocation ratios of 1.0, as bare-metal nodes
  are registered).
* It holds no instance list (the one ``nova-compute`` of many nodes
  reports its instances per service host, not per node): the affinity
  filters see none on it.
* ``[filter_scheduler] use_baremetal_filters`` runs
  ``baremetal_enabled_filters`` (the Exact* filters: a flavor matching
  a node's size exactly) instead of ``enabled_filters``; the default host
  manager ignores it, as Nova's did.

Other nodes are scheduled as by the default host manager.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from oslo_utils import timeutils

from scheduler.resources import capacity
from scheduler.view import host_manager
from scheduler.view.host_state import HostState

# ``compute_nodes.hypervisor_type`` of a node Nova's Ironic driver
# reports (Nova's HVType IRONIC).
IRONIC = 'ironic'


def is_ironic(compute: dict[str, Any]) -> bool:
    """Whether the ``compute_nodes`` row (a dict) is a bare-metal node."""
    return compute.get('hypervisor_type') == IRONIC


class IronicNodeState(HostState):
    """A bare-metal node: consumed and claimed whole (see the module)."""

    __slots__ = ()
    WHOLE_NODE = True

    def update(self, compute: Mapping[str, Any] | None = None,
               service: dict[str, Any] | None = None,
               aggregates: Iterable[Any] | None = None,
               instances: dict[str, Any] | None = None) -> None:
        """``HostState.update``, except that the node keeps no instance
        list."""
        super().update(compute, service, aggregates,
                       None if instances is None else {})

    def claim_amounts(self, spec_obj: Any) -> capacity.Amounts:
        """The node's whole size, whatever ``spec_obj`` asks: vCPUs, RAM
        in MiB, local disk in GiB."""
        return capacity.whole_node_amounts(
            lambda name: int(getattr(self, name)))

    def consume_from_request(self, spec_obj: Any) -> None:
        """Take the whole node: no free RAM or disk, every vCPU used (as
        Nova's IronicNodeState); ``memory_mb_used`` and ``local_gb_used``
        grow by what its claim takes."""
        with self._lock:
            amounts = self.claim_amounts(spec_obj)
            self.free_ram_mb = 0
            self.free_disk_mb = 0
            self.vcpus_used = self.vcpus_total
            self.memory_mb_used += amounts.memory_mb
            self.local_gb_used += amounts.disk_gb
            self.num_instances += 1
            self.num_io_ops += 1
            self.updated = timeutils.utcnow()


class IronicHostManager(host_manager.HostManager):
    """The host view with an ``IronicNodeState`` for every bare-metal
    node and a ``HostState`` for the others."""

    @staticmethod
    def state_class(compute: dict[str, Any]) -> type[HostState]:
        return IronicNodeState if is_ironic(compute) else HostState
