"""Nova 34's request filters that ask Neutron: ``routed_networks_filter``
and ``remote_managed_ports_filter`` (``nova.scheduler.request_filter``),
over a ``scheduler.placement.neutron.NeutronClient``.

Routed networks (``[scheduler]
query_placement_for_routed_network_aggregates``, False by default, as
Nova): for each requested network of ``requested_networks`` (none when
the field is unset, as Nova: a create without requested networks takes
any host),

* a port with fixed IPs: the segment of its first fixed IP's subnet;
* a port without: any segment of its network;
* a network: any segment of the network (its subnets' segments);

each segment being Placement's resource provider of the same uuid, its
aggregates (from the Placement view) become one ``member_of=in:`` of the
unsuffixed group (the networks' lists are ANDed, as Nova's
``Destination.require_aggregates`` does).  A network without segments
(not routed, or Neutron without the ``segment`` extension) adds
nothing.  An entry with neither a port nor a network adds nothing
(Nova repeats the previous entry's aggregates, which changes nothing,
or fails on a first such entry).

Remote-managed ports (always): a requested port whose
``binding:vnic_type`` is ``remote-managed`` requires
``COMPUTE_REMOTE_MANAGED_PORTS`` on the root provider.

Errors, as Nova's scheduler ends them: Neutron failing to say a
network's or subnet's segments, or a segment whose provider is in no
aggregate, end the request with NoValidHost (Nova's
RequestFilterFailed); a segment Placement has no provider for raises
``SegmentProviderNotFound`` (Nova: ResourceProviderAggregateRetrievalFailed),
a port Neutron does not have ``neutron.PortNotFound`` and Neutron
failing on a port or on its extension list
``neutron.NeutronUnavailable`` (Nova raises these too).
Each is logged with the port, network, subnet or segment concerned.
A port is read once per request (Nova reads it in both filters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import os_traits
from oslo_log import log as logging

from scheduler import exception
from scheduler.placement import neutron as neutron_lib
from scheduler.placement import request as request_lib

LOG = logging.getLogger(__name__)

VNIC_TYPE_REMOTE_MANAGED = 'remote-managed'
VNIC_TYPE_NORMAL = 'normal'

# Aggregate uuids of a resource provider (None: Placement has no such
# provider).
ProviderAggregates = Callable[[str], 'frozenset[str] | None']


class Ports:
    """The requested ports of one request, each read once from
    Neutron."""

    def __init__(self, client: neutron_lib.NeutronClient) -> None:
        self.client = client
        self._read: dict[str, dict[str, Any]] = {}

    def __getitem__(self, port_id: str) -> dict[str, Any]:
        if port_id not in self._read:
            try:
                self._read[port_id] = self.client.port(port_id)
            except neutron_lib.PortNotFound:
                LOG.warning('Request filters: Neutron has no port %s',
                            port_id)
                raise
            except neutron_lib.NeutronUnavailable as exc:
                LOG.error('Request filters: failed to read port %s from '
                          'Neutron: %s', port_id, exc.message)
                raise
        return self._read[port_id]


def requested_networks(spec_obj: Any) -> list[Any]:
    """The NetworkRequests of ``spec_obj`` (none when unset)."""
    networks = spec_obj.obj_get('requested_networks')
    return list(networks) if networks is not None else []


def routed_networks(query: request_lib.ResourceRequest, spec_obj: Any,
                    ports: Ports, provider_aggregates: ProviderAggregates
                    ) -> None:
    """Nova's ``routed_networks_filter`` (see the module).

    :raises NoValidHost: a segment's aggregates cannot be found.
    :raises PortNotFound, NeutronUnavailable: see the module.
    """
    for network in requested_networks(spec_obj):
        port_id = network.obj_get('port_id')
        network_id = network.obj_get('network_id')
        aggregates: set[str] = set()
        if port_id:
            port = ports[port_id]
            fixed_ips = port.get('fixed_ips') or []
            network_id = None if fixed_ips else port.get('network_id')
            if fixed_ips:
                aggregates = _subnet_aggregates(
                    ports.client, fixed_ips[0]['subnet_id'],
                    provider_aggregates)
        if network_id:
            aggregates = _network_aggregates(ports.client, network_id,
                                             provider_aggregates)
        if aggregates:
            LOG.debug('routed_networks_filter: network %s is on aggregates '
                      '%s', network_id or port_id,
                      ', '.join(sorted(aggregates)))
            query.group().member_of.append(sorted(aggregates))


def _failed(what: str, error: str) -> exception.NoValidHost:
    LOG.warning('routed_networks_filter: aggregates not found for %s: %s',
                what, error)
    return exception.NoValidHost(
        reason='Aggregates not found for the %s' % what)


class SegmentProviderNotFound(exception.NotFound):
    """Placement has no resource provider for a routed network's segment
    (Nova's report client raises ResourceProviderAggregateRetrievalFailed
    for Placement's 404, which ends the request as an error)."""

    msg_fmt = ('Placement has no resource provider for segment %(uuid)s '
               'of a routed network: its aggregates are unknown.')


def _segment_aggregates(segment_id: str,
                        provider_aggregates: ProviderAggregates
                        ) -> frozenset[str]:
    """The aggregates of the segment's resource provider.

    :raises InvalidRoutedNetwork: it is in no aggregate.
    :raises SegmentProviderNotFound: Placement has no such provider.
    """
    found = provider_aggregates(segment_id)
    if found is None:
        LOG.error('routed_networks_filter: %s',
                  SegmentProviderNotFound.msg_fmt % {'uuid': segment_id})
        raise SegmentProviderNotFound(uuid=segment_id)
    if not found:
        raise neutron_lib.InvalidRoutedNetwork(
            reason='Failed to find aggregate related to segment %s'
            % segment_id)
    return found


def _subnet_aggregates(client: neutron_lib.NeutronClient, subnet_id: str,
                       provider_aggregates: ProviderAggregates) -> set[str]:
    try:
        segment = client.segment_id_for_subnet(subnet_id)
        if not segment:
            return set()
        return set(_segment_aggregates(segment, provider_aggregates))
    except neutron_lib.InvalidRoutedNetwork as exc:
        raise _failed('subnet %s' % subnet_id, exc.message) from exc


def _network_aggregates(client: neutron_lib.NeutronClient, network_id: str,
                        provider_aggregates: ProviderAggregates
                        ) -> set[str]:
    try:
        found: set[str] = set()
        for segment in client.segment_ids_for_network(network_id):
            found |= _segment_aggregates(segment, provider_aggregates)
        return found
    except neutron_lib.InvalidRoutedNetwork as exc:
        raise _failed('network %s' % network_id, exc.message) from exc


def remote_managed_ports(query: request_lib.ResourceRequest, spec_obj: Any,
                         ports: Ports) -> None:
    """Nova's ``remote_managed_ports_filter`` (see the module).

    :raises PortNotFound, NeutronUnavailable: see the module.
    """
    for network in requested_networks(spec_obj):
        port_id = network.obj_get('port_id')
        if not port_id:
            continue
        vnic_type = ports[port_id].get('binding:vnic_type',
                                       VNIC_TYPE_NORMAL)
        if vnic_type == VNIC_TYPE_REMOTE_MANAGED:
            query.root_required.add(os_traits.COMPUTE_REMOTE_MANAGED_PORTS)
            LOG.debug('remote_managed_ports_filter: port %s is '
                      'remote-managed', port_id)
