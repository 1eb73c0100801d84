"""Nova 34's request filters that read outside the request
(``scheduler.placement.request_filters_neutron``, ``owner_nova`` and
``scheduler.placement.compute_versions``), with a Neutron client and the
cells' versions stood in for."""

import uuid

import fakes
import pytest
from oslo_db import exception as db_exc

from scheduler import exception
from scheduler.objects import network as network_obj
from scheduler.objects import pci as pci_obj
from scheduler.objects import request_group
from scheduler.placement import compute_versions
from scheduler.placement import hardware
from scheduler.placement import neutron
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters
from scheduler.placement import request_filters_neutron
from scheduler.placement import request_filters_owner

NET, NET2, PORT, SUBNET = 'net-1', 'net-2', str(uuid.uuid4()), 'subnet-1'
NORMAL = str(uuid.uuid4())
SEG_A, SEG_B, SEG_C = 'seg-a', 'seg-b', 'seg-c'
AGGREGATES = {SEG_A: frozenset({'agg-a'}), SEG_B: frozenset({'agg-b1',
                                                             'agg-b2'}),
              SEG_C: frozenset()}


class FakeNeutron:
    """What ``neutron.NeutronClient`` answers, from dicts; ``calls``
    lists them."""

    def __init__(self, ports=None, networks=None, subnets=None,
                 segments=True, failing=()):
        self.ports = ports or {}
        self.networks = networks or {}
        self.subnets = subnets or {}
        self.segments = segments
        self.failing = set(failing)
        self.calls = []

    def port(self, port_id):
        self.calls.append(('port', port_id))
        if 'port' in self.failing:
            raise neutron.NeutronUnavailable(reason='injected')
        if port_id not in self.ports:
            raise neutron.PortNotFound(port_id=port_id)
        return self.ports[port_id]

    def segment_ids_for_network(self, network_id):
        self.calls.append(('network', network_id))
        if 'network' in self.failing:
            raise neutron.InvalidRoutedNetwork(reason='injected')
        return list(self.networks.get(network_id, ())) \
            if self.segments else []

    def segment_id_for_subnet(self, subnet_id):
        self.calls.append(('subnet', subnet_id))
        if 'subnet' in self.failing or subnet_id not in self.subnets:
            raise neutron.InvalidRoutedNetwork(reason='no subnet')
        return self.subnets[subnet_id] if self.segments else None


class Conf:
    DEFAULTS = {'limit_tenants_to_placement_aggregate': False,
                'placement_aggregate_required_for_tenants': False,
                'query_placement_for_image_type_support': False,
                'enable_isolated_aggregate_filtering': False,
                'image_metadata_prefilter': False,
                'query_placement_for_routed_network_aggregates': True}

    def __init__(self, **options):
        self.scheduler = type('Scheduler', (), {**self.DEFAULTS,
                                                **options})()


def networks(*entries):
    """A NetworkRequestList of ``(network_id, port_id)`` pairs."""
    return network_obj.NetworkRequestList(objects=[
        network_obj.NetworkRequest(network_id=net, port_id=port)
        for net, port in entries])


def run(spec, client=None, version=0, **options):
    """``spec``'s query after the filters: its parameters."""
    query = request_lib.for_scheduling(spec, None, lambda *args: [])
    lookups = request_filters.Lookups(
        min_compute_version=lambda: version, neutron=client,
        provider_aggregates=AGGREGATES.get)
    request_filters.apply(query, spec, (), Conf(**options), lookups)
    return query


def member_of(query):
    return query.group().member_of


# -- routed networks ----------------------------------------------------------

def test_a_routed_network_becomes_its_segments_aggregates():
    client = FakeNeutron(networks={NET: [SEG_A, SEG_B]})
    query = run(fakes.fake_spec(requested_networks=networks((NET, None))),
                client)
    assert member_of(query) == [['agg-a', 'agg-b1', 'agg-b2']]


def test_each_routed_network_is_one_more_member_of():
    client = FakeNeutron(networks={NET: [SEG_A], NET2: [SEG_B]})
    spec = fakes.fake_spec(requested_networks=networks((NET, None),
                                                       (NET2, None)))
    assert member_of(run(spec, client)) == [['agg-a'], ['agg-b1', 'agg-b2']]


def test_a_port_with_a_fixed_ip_keeps_to_its_subnets_segment():
    client = FakeNeutron(
        ports={PORT: {'id': PORT, 'network_id': NET,
                      'fixed_ips': [{'subnet_id': SUBNET}]}},
        networks={NET: [SEG_A, SEG_B]}, subnets={SUBNET: SEG_B})
    query = run(fakes.fake_spec(requested_networks=networks((None, PORT))),
                client)
    assert member_of(query) == [['agg-b1', 'agg-b2']]
    assert ('network', NET) not in client.calls


def test_a_port_without_fixed_ip_takes_any_segment_of_its_network():
    client = FakeNeutron(
        ports={PORT: {'id': PORT, 'network_id': NET, 'fixed_ips': []}},
        networks={NET: [SEG_A]})
    query = run(fakes.fake_spec(requested_networks=networks((None, PORT))),
                client)
    assert member_of(query) == [['agg-a']]


def test_an_unrouted_network_and_a_neutron_without_segments_add_nothing():
    spec = fakes.fake_spec(requested_networks=networks((NET, None)))
    assert member_of(run(spec, FakeNeutron(networks={NET: []}))) == []
    no_extension = FakeNeutron(networks={NET: [SEG_A]}, segments=False)
    assert member_of(run(spec, no_extension)) == []


def test_routed_networks_are_off_by_default_and_without_networks():
    client = FakeNeutron(networks={NET: [SEG_A]})
    spec = fakes.fake_spec(requested_networks=networks((NET, None)))
    off = run(spec, client,
              query_placement_for_routed_network_aggregates=False)
    assert member_of(off) == [] and client.calls == []
    assert member_of(run(fakes.fake_spec(), client)) == []
    assert client.calls == []


def test_a_segment_without_aggregates_fails_the_request():
    """Nova's InvalidRoutedNetworkConfiguration, ended as NoValidHost."""
    client = FakeNeutron(networks={NET: [SEG_A, SEG_C]})
    spec = fakes.fake_spec(requested_networks=networks((NET, None)))
    with pytest.raises(exception.NoValidHost,
                       match='Aggregates not found for the network net-1'):
        run(spec, client)


def test_a_segment_placement_does_not_hold_is_an_error():
    """Nova's report client raises for Placement's 404: not
    NoValidHost."""
    client = FakeNeutron(networks={NET: [SEG_A, 'seg-unknown']})
    spec = fakes.fake_spec(requested_networks=networks((NET, None)))
    with pytest.raises(request_filters_neutron.SegmentProviderNotFound,
                       match='seg-unknown'):
        run(spec, client)


def test_neutron_failing_on_segments_fails_the_request():
    spec = fakes.fake_spec(requested_networks=networks((NET, None)))
    with pytest.raises(exception.NoValidHost, match='network net-1'):
        run(spec, FakeNeutron(failing={'network'}))
    port_spec = fakes.fake_spec(requested_networks=networks((None, PORT)))
    client = FakeNeutron(ports={PORT: {'id': PORT, 'network_id': NET,
                                       'fixed_ips': [{'subnet_id': 'x'}]}})
    with pytest.raises(exception.NoValidHost, match='subnet x'):
        run(port_spec, client)


def test_a_missing_or_unreadable_port_is_an_error_not_no_valid_host():
    """Nova raises PortNotFound / NovaException for the port itself."""
    spec = fakes.fake_spec(requested_networks=networks((None, PORT)))
    with pytest.raises(neutron.PortNotFound):
        run(spec, FakeNeutron())
    with pytest.raises(neutron.NeutronUnavailable):
        run(spec, FakeNeutron(failing={'port'}))
    assert not isinstance(neutron.PortNotFound(port_id='x'),
                          exception.NoValidHost)


# -- remote-managed ports -----------------------------------------------------

def test_a_remote_managed_port_requires_the_trait_once_read():
    client = FakeNeutron(ports={
        PORT: {'id': PORT, 'network_id': NET, 'fixed_ips': [],
               'binding:vnic_type': 'remote-managed'},
        NORMAL: {'id': NORMAL, 'network_id': NET, 'fixed_ips': []}},
        networks={NET: []})
    spec = fakes.fake_spec(requested_networks=networks((None, NORMAL)))
    assert 'COMPUTE_REMOTE_MANAGED_PORTS' not in run(
        spec, client).root_required
    client.calls.clear()
    spec = fakes.fake_spec(requested_networks=networks((None, PORT),
                                                       (NET, None)))
    query = run(spec, client)
    assert 'COMPUTE_REMOTE_MANAGED_PORTS' in query.root_required
    assert client.calls.count(('port', PORT)) == 1


def test_remote_managed_ports_are_checked_without_routed_networks():
    client = FakeNeutron(ports={PORT: {
        'id': PORT, 'binding:vnic_type': 'remote-managed'}})
    spec = fakes.fake_spec(requested_networks=networks((None, PORT)))
    query = run(spec, client,
                query_placement_for_routed_network_aggregates=False)
    assert 'COMPUTE_REMOTE_MANAGED_PORTS' in query.root_required


def test_without_neutron_the_neutron_filters_are_skipped():
    spec = fakes.fake_spec(requested_networks=networks((None, PORT)))
    query = run(spec, None)
    assert member_of(query) == []
    assert 'COMPUTE_REMOTE_MANAGED_PORTS' not in query.root_required


def test_novas_order_packed_virtqueue_then_neutron_then_encryption():
    """The first refusal is Nova's: a packed-ring conflict before any
    Neutron call, a missing port before an encryption conflict."""
    client = FakeNeutron()
    ports = networks((None, PORT))
    spec = fakes.fake_spec(requested_networks=ports,
                           extra_specs={'hw:virtio_packed_ring': 'false'},
                           image_props={'hw_virtio_packed_ring': True})
    with pytest.raises(hardware.HardwareRequestError):
        run(spec, client)
    assert client.calls == []
    spec = fakes.fake_spec(requested_networks=ports,
                           extra_specs={'hw:ephemeral_encryption': 'no'},
                           image_props={'hw_ephemeral_encryption': True})
    with pytest.raises(neutron.PortNotFound):
        run(spec, client)


# -- OWNER_NOVA ---------------------------------------------------------------

def pci_spec():
    """A spec with a PCI alias request (its group ``<id>-0``), a port's
    PCI request (no alias) and a flavor group."""
    alias, port = str(uuid.uuid4()), str(uuid.uuid4())
    requests = pci_obj.InstancePCIRequests(requests=[
        pci_obj.InstancePCIRequest(count=1, spec=[{}], alias_name='gpu',
                                   request_id=alias),
        pci_obj.InstancePCIRequest(count=1, spec=[{}], alias_name=None,
                                   request_id=port)])
    groups = [request_group.RequestGroup(
        requester_id='%s-0' % request_id,
        resources={'CUSTOM_PCI_%d' % n: 1})
        for n, request_id in enumerate((alias, port))]
    spec = fakes.fake_spec(pci_requests=requests, requested_resources=groups,
                           extra_specs={'resources1:CUSTOM_X': '1'})
    return spec, alias, port


@pytest.mark.parametrize('version', [0, 72])
def test_owner_nova_waits_for_every_compute(version):
    spec, _, _ = pci_spec()
    query = run(spec, version=version)
    assert 'OWNER_NOVA' not in query.root_required
    assert all('OWNER_NOVA' not in group.required
               for group in query.groups.values())


@pytest.mark.parametrize('version', [73, 80])
def test_owner_nova_on_the_root_and_the_pci_alias_groups(version):
    spec, alias, port = pci_spec()
    query = run(spec, version=version)
    assert 'OWNER_NOVA' in query.root_required
    owned = {suffix for suffix, group in query.groups.items()
             if 'OWNER_NOVA' in group.required}
    assert owned == {'%s-0' % alias}
    assert 'root_required' in dict(query.query_params())


def test_owner_nova_already_required_reads_no_version():
    spec = fakes.fake_spec()
    query = request_lib.for_scheduling(spec, None, lambda *args: [])
    query.root_required.add('OWNER_NOVA')

    def version():
        raise AssertionError('the version was read')
    request_filters_owner.owner_nova(query, spec, version)
    assert query.root_required == {'OWNER_NOVA'}


# -- the minimum compute version ----------------------------------------------

def test_the_minimum_leaves_out_forced_down_zero_and_null():
    rows = [{'version': 80}, {'version': 70, 'forced_down': True},
            {'version': 0}, {'version': None}, {'version': 75}]
    assert compute_versions.minimum(rows) == 75
    assert compute_versions.minimum([{'version': None}]) == 0
    assert compute_versions.minimum([]) == 0


def test_the_minimum_is_kept_a_while_and_a_failure_is_not():
    now = [0.0]
    answers = [[{'version': 72}], [{'version': 73}],
               db_exc.DBError('cells down'), [{'version': 74}]]

    def read():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    versions = compute_versions.MinComputeVersion(read, ttl=60,
                                                  clock=lambda: now[0])
    assert versions() == 72
    now[0] = 59.0
    assert versions() == 72
    now[0] = 60.0
    assert versions() == 73
    now[0] = 130.0
    assert versions() == 0
    assert versions() == 74
    assert answers == []


# -- Lookups from the configuration -------------------------------------------

def test_lookups_without_neutron_configured(conf):
    lookups = request_filters.lookups_from_config(conf)
    assert lookups.neutron is None
    assert isinstance(lookups.min_compute_version,
                      compute_versions.MinComputeVersion)
    conf.set_override('endpoint_override', 'http://127.0.0.1:9', 'neutron')
    assert isinstance(request_filters.lookups_from_config(conf).neutron,
                      neutron.NeutronClient)
