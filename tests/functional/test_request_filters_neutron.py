"""Nova 34's request filters that ask Neutron, against the Neutron
stand-in (``tests/neutron_standin.py``, a real HTTP server on
127.0.0.1): the keystoneauth1 client of ``[neutron]``
(``scheduler.placement.neutron``), then routed networks, remote-managed
ports and ``OWNER_NOVA`` end to end in Placement mode, with a real
Placement and the scheduler's own database (standalone schema, SQLite:
its ``services.version`` is the compute version ``owner_nova_filter``
reads).
"""

from __future__ import annotations

import time
import uuid

import fakes
import pytest
import sqlalchemy as sa
from keystoneauth1 import loading as ks_loading
from neutron_standin import NeutronStandin
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.conf import CONF
from scheduler.conf import neutron as conf_neutron
from scheduler.drivers import filter_scheduler
from scheduler.objects import network as network_obj
from scheduler.placement import neutron
from scheduler_tools import seed

pytestmark = pytest.mark.timeout(120)

TOKEN = 'neutron-standin-token'
NET, ROUTED, SUBNET = (str(uuid.uuid4()) for _ in range(3))
SEGMENT, PORT, RM_PORT = (str(uuid.uuid4()) for _ in range(3))


def _neutron_conf(conf, standin, token=TOKEN):
    """``[neutron]`` on the stand-in through ``auth_type =
    admin_token``."""
    conf_neutron.register_client_opts(CONF)
    CONF.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='neutron')
    conf.set_override('auth_type', 'admin_token', 'neutron')
    conf.set_override('endpoint', standin.url, 'neutron')
    conf.set_override('token', token, 'neutron')


@pytest.fixture
def standin():
    with NeutronStandin(
            networks=[{'id': NET}, {'id': ROUTED}],
            subnets=[{'id': SUBNET, 'network_id': ROUTED,
                      'segment_id': SEGMENT},
                     {'id': str(uuid.uuid4()), 'network_id': NET,
                      'segment_id': None}],
            segments=[{'id': SEGMENT, 'network_id': ROUTED}],
            ports=[{'id': PORT, 'network_id': ROUTED,
                    'fixed_ips': [{'subnet_id': SUBNET,
                                   'ip_address': '10.1.0.5'}],
                    'binding:vnic_type': 'normal'},
                   {'id': RM_PORT, 'network_id': NET, 'fixed_ips': [],
                    'binding:vnic_type': 'remote-managed'}],
            token=TOKEN) as server:
        yield server


# -- the client ---------------------------------------------------------------

def test_the_client_reads_ports_and_segments(standin, conf):
    _neutron_conf(conf, standin)
    client = neutron.NeutronClient(CONF)
    assert client.port(PORT)['fixed_ips'][0]['subnet_id'] == SUBNET
    assert client.segment_ids_for_network(ROUTED) == [SEGMENT]
    assert client.segment_ids_for_network(NET) == []
    assert client.segment_id_for_subnet(SUBNET) == SEGMENT
    with pytest.raises(neutron.PortNotFound):
        client.port(str(uuid.uuid4()))
    with pytest.raises(neutron.InvalidRoutedNetwork, match='404'):
        client.segment_id_for_subnet('no-such-subnet')
    # The extension list was read once (extension_sync_interval).
    assert standin.requests.count(('GET', '/v2.0/extensions')) == 1


def test_the_client_without_the_segment_extension(standin, conf):
    _neutron_conf(conf, standin)
    standin.extensions = ['binding']
    client = neutron.NeutronClient(CONF)
    assert client.segment_ids_for_network(ROUTED) == []
    assert client.segment_id_for_subnet(SUBNET) is None
    assert not any(path.startswith('/v2.0/subnets')
                   for _, path in standin.requests)


def test_neutron_errors_are_named_and_bounded(standin, conf):
    _neutron_conf(conf, standin, token='wrong')
    with pytest.raises(neutron.NeutronUnavailable, match='401'):
        neutron.NeutronClient(CONF).port(PORT)
    _neutron_conf(conf, standin)
    standin.fail = {'/v2.0/subnets': 500}
    client = neutron.NeutronClient(CONF)
    with pytest.raises(neutron.InvalidRoutedNetwork, match='500'):
        client.segment_ids_for_network(ROUTED)
    standin.fail = {'/v2.0/extensions': 503}
    with pytest.raises(neutron.NeutronUnavailable, match='503'):
        neutron.NeutronClient(CONF).segment_ids_for_network(ROUTED)
    standin.fail = {}
    conf.set_override('timeout', 0.5, 'neutron')
    conf.set_override('http_retries', 0, 'neutron')
    standin.delay = 3.0
    started = time.monotonic()
    with pytest.raises(neutron.NeutronUnavailable):
        neutron.NeutronClient(CONF).port(PORT)
    assert time.monotonic() - started < 2.5


# -- end to end in Placement mode ---------------------------------------------

@pytest.fixture
def placement(placement_server, placement_conf):
    conf = placement_conf
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    # Only the RAM weigher: the biggest node wins, whatever the earlier
    # requests consumed.
    conf.set_override('weight_classes', ['RAMWeigher'], 'filter_scheduler')
    return PlacementAPI(placement_server.url)


def _fleet(tmp_path, api, *providers):
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    for provider in providers:
        seed.add_compute(ctx, provider.name, uuid=provider.uuid,
                         vcpus=provider.vcpus, memory_mb=provider.memory_mb,
                         local_gb=provider.disk_gb)
        api.add_compute(provider)
    return ctx


def _node(name, **fields):
    fields.setdefault('memory_mb', 4096)
    fields.setdefault('reserved_host_memory_mb', 0)
    fields.setdefault('ram_allocation_ratio', 1.0)
    return ComputeProvider(name='%s-%s' % (name, uuid.uuid4().hex[:8]),
                           **fields)


def _pick(driver, ctx, *entries):
    """The node chosen for a request of ``(network_id, port_id)``
    entries."""
    spec = fakes.fake_spec(
        project_id='p-neutron', user_id='u-neutron',
        requested_networks=network_obj.NetworkRequestList(objects=[
            network_obj.NetworkRequest(network_id=net, port_id=port)
            for net, port in entries]))
    [[picked]] = driver.select_destinations(ctx, spec, [str(uuid.uuid4())],
                                            False)
    return picked.compute_node_uuid


def test_routed_networks_and_remote_managed_ports_end_to_end(
        tmp_path, standin, placement, conf):
    """The RAM weigher prefers ``big``; only the filters keep a request
    on ``small``, which is on the routed network's segment (its
    provider shares an aggregate with the segment's provider, as
    Neutron sets it up) and supports remote-managed ports."""
    api = placement
    _neutron_conf(conf, standin)
    conf.set_override('query_placement_for_routed_network_aggregates', True,
                      'scheduler')
    small, big = _node('nf-small'), _node('nf-big', memory_mb=65536)
    ctx = _fleet(tmp_path, api, small, big)
    segment_aggregate = str(uuid.uuid4())
    api._call('POST', '/resource_providers', (200, 201),
              json={'uuid': SEGMENT, 'name': 'segment-%s' % SEGMENT})
    api.in_aggregate(SEGMENT, segment_aggregate)
    api.in_aggregate(small.uuid, segment_aggregate)
    driver = filter_scheduler.FilterScheduler(ctx)
    try:
        assert _pick(driver, ctx, (NET, None)) == big.uuid
        assert _pick(driver, ctx, (ROUTED, None)) == small.uuid
        assert _pick(driver, ctx, (NET, None)) == big.uuid
        assert _pick(driver, ctx, (None, PORT)) == small.uuid
        with pytest.raises(exception.NoValidHost):
            _pick(driver, ctx, (None, RM_PORT))
        api.add_traits(small.uuid, 'COMPUTE_REMOTE_MANAGED_PORTS')
        assert _pick(driver, ctx, (None, RM_PORT)) == small.uuid
        with pytest.raises(neutron.PortNotFound):
            _pick(driver, ctx, (None, str(uuid.uuid4())))
    finally:
        driver.stop()


def test_owner_nova_once_every_compute_is_at_73(tmp_path, placement, conf):
    """With versions 72 and 73 the filter waits; once both report 73
    (the version is read again after a minute, here at once: a new
    driver), only the provider with OWNER_NOVA is a candidate."""
    api = placement
    owned = _node('nf-owned', traits=('OWNER_NOVA',))
    other = _node('nf-other', memory_mb=16384)
    ctx = _fleet(tmp_path, api, owned, other)
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    services = sa.table('services', sa.column('host'),
                        sa.column('version'))

    def versions(**by_host):
        with engine.begin() as connection:
            for host, version in by_host.items():
                connection.execute(sa.update(services).where(
                    services.c.host == host).values(version=version))
    try:
        versions(**{owned.name: 73, other.name: 72})
        driver = filter_scheduler.FilterScheduler(ctx)
        assert _pick(driver, ctx) == other.uuid
        driver.stop()
        versions(**{other.name: 73})
        driver = filter_scheduler.FilterScheduler(ctx)
        assert _pick(driver, ctx) == owned.uuid
        driver.stop()
    finally:
        engine.dispose()
