"""Placement mode with Nova 34's own client, over RabbitMQ.

A ``scheduler-service`` process with ``[scheduler] use_placement`` runs
on the session's RabbitMQ and the session's Placement (openstack-placement
under gunicorn, PostgreSQL); Nova's ``SchedulerQueryClient`` (the Nova
driver process of ``test_nova_caller``) sends it RequestSpecs built by
Nova's objects.  The fleet's compute nodes are in the scheduler's
database and their providers in Placement, as nova-compute writes them;
one compute node has a child provider with bandwidth, as Neutron makes
for a QoS port.  Each case has exactly one host where Placement says it
fits (``_fleet``); the allocations are read back from Placement, and
Nova's conductor code claims an alternate and maps its request groups.
"""

import uuid

import pytest
from deployment import Deployment
from functional.test_nova_caller import NovaDriver
from nova_venv import nova_venv
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler_tools import seed

# Nova 34's default enabled filters (no AvailabilityZoneFilter: the zone
# is a request filter since Xena).
FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
           'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
           'ServerGroupAffinityFilter']
ZONE = 'nova-pm-zone'
PHYSNET_TRAITS = ['CUSTOM_PHYSNET_PHYSNET1', 'CUSTOM_VNIC_TYPE_NORMAL']
BANDWIDTH = 'NET_BW_EGR_KILOBIT_PER_SEC'


def _fleet(ctx, api):
    """Five nodes (names suffixed: the session's Placement is shared):
    ``plain`` has the most RAM, so the RAM weigher prefers it whenever it
    fits; ``fast`` has the trait CUSTOM_NOVA_FAST, ``custom`` one
    CUSTOM_NOVA_X, ``zone`` is the zone's only member, ``qos`` has the
    bandwidth child provider.  Only ``plain`` has a big disk."""
    suffix = uuid.uuid4().hex[:6]
    nodes = {
        'plain': ComputeProvider('plain-' + suffix, memory_mb=65536,
                                 disk_gb=1000),
        'fast': ComputeProvider(
            'fast-' + suffix, memory_mb=16384, disk_gb=40,
            traits=('COMPUTE_NET_ATTACH_INTERFACE', 'CUSTOM_NOVA_FAST')),
        'custom': ComputeProvider('custom-' + suffix, memory_mb=16384,
                                  disk_gb=40, custom=(('CUSTOM_NOVA_X', 1),)),
        'zone': ComputeProvider('zone-' + suffix, memory_mb=16384,
                                disk_gb=40),
        'qos': ComputeProvider('qos-' + suffix, memory_mb=16384, disk_gb=40),
    }
    for node in nodes.values():
        seed.add_compute(ctx, node.name, uuid=node.uuid, vcpus=node.vcpus,
                         memory_mb=node.memory_mb, local_gb=node.disk_gb)
        api.add_compute(node)
    aggregate = seed.add_aggregate(ctx, ZONE + '-agg', [nodes['zone'].name],
                                   {'availability_zone': ZONE})
    api.in_aggregate(nodes['zone'].uuid, aggregate['uuid'])
    nodes['bandwidth'] = api.add_child(
        nodes['qos'].uuid, nodes['qos'].name + ':ens1',
        {BANDWIDTH: 10000}, tuple(PHYSNET_TRAITS))
    return nodes


@pytest.fixture(scope='module')
def setting(rabbit_url, placement_server, tmp_path_factory):
    """The service, Nova's driver, the fleet and a PlacementAPI."""
    workdir = tmp_path_factory.mktemp('nova-placement')
    options = {
        ('scheduler', 'use_placement'): True,
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): placement_server.url,
        ('placement', 'token'): 'admin',
        ('placement_database', 'connection'): placement_server.database_url,
        ('filter_scheduler', 'enabled_filters'): FILTERS,
        ('filter_scheduler', 'host_subset_size'): 1,
    }
    api = PlacementAPI(placement_server.url)
    deployment = Deployment('sqlite:///%s' % (workdir / 'scheduler.sqlite'),
                            'process', rabbit_url, str(workdir), options)
    try:
        nodes = _fleet(deployment.ctx, api)
        deployment.start()
        driver = NovaDriver(nova_venv(), rabbit_url,
                            str(workdir / 'driver.log'),
                            placement_url=placement_server.url)
    except BaseException:
        deployment.stop()
        raise
    yield nodes, driver, api
    driver.close()
    deployment.stop()


def _boot(driver, spec, **args):
    answer = driver.request('boot', spec=spec, **args)
    assert 'ok' in answer, answer
    return answer['ok']


def _allocations(api, consumer):
    return {rp: alloc['resources'] for rp, alloc
            in api.allocations(consumer)['allocations'].items()}


CASES = {
    # case: (Nova's request, the node it must go to, the allocation
    # expected on that node)
    'one': ({}, 'plain', {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}),
    'trait': ({'extra_specs': {'trait:CUSTOM_NOVA_FAST': 'required'}},
              'fast', {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}),
    'custom resource': ({'extra_specs': {'resources:CUSTOM_NOVA_X': '1'}},
                        'custom', {'VCPU': 1, 'MEMORY_MB': 512,
                                   'DISK_GB': 1, 'CUSTOM_NOVA_X': 1}),
    'boot from volume': ({'root_gb': 5000, 'is_bfv': True}, 'plain',
                         {'VCPU': 1, 'MEMORY_MB': 512}),
    'zone': ({'availability_zone': ZONE}, 'zone',
             {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}),
}


@pytest.mark.parametrize('case', CASES)
def test_placed_where_placement_says_and_claimed(setting, case):
    nodes, driver, api = setting
    spec, where, allocated = CASES[case]
    result = _boot(driver, spec)
    [instance_uuid] = result['instance_uuids']
    [[chosen, *alternates]] = result['selections']
    assert chosen['compute_node_uuid'] == nodes[where].uuid
    assert chosen['allocation_request_version'] == '1.36'
    assert _allocations(api, instance_uuid) == {nodes[where].uuid:
                                                allocated}
    for alternate in alternates:
        assert alternate['allocation_request']


def test_three_instances(setting):
    nodes, driver, api = setting
    result = _boot(driver, {'num_instances': 3, 'memory_mb': 1024})
    mine = {node.uuid for name, node in nodes.items() if name != 'bandwidth'}
    for instance_uuid, picks in zip(result['instance_uuids'],
                                    result['selections'], strict=True):
        chosen = picks[0]['compute_node_uuid']
        assert chosen in mine
        assert _allocations(api, instance_uuid) == {chosen: {
            'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 1}}


def test_an_alternate_is_claimed_by_novas_conductor_code(setting):
    """Nova's ``claim_resources`` takes an alternate's allocation request
    as it is, as the conductor does on a reschedule."""
    nodes, driver, api = setting
    result = _boot(driver, {}, claim_alternate=True)
    alternate = result['alternate']
    assert alternate['claimed'] is True
    assert _allocations(api, alternate['consumer']) == {
        alternate['compute_node_uuid']: {'VCPU': 1, 'MEMORY_MB': 512,
                                         'DISK_GB': 1}}


def test_a_qos_port_gets_its_bandwidth_child_provider(setting):
    """A port's request group (bandwidth, physnet traits) fits only under
    ``qos``; the claim includes the child provider's bandwidth, and
    Nova's ``fill_provider_mapping`` maps the port's group to it."""
    nodes, driver, api = setting
    port = {'resources': {BANDWIDTH: 1000}, 'required': PHYSNET_TRAITS}
    result = _boot(driver, {'port_requests': [port]})
    [instance_uuid] = result['instance_uuids']
    [[chosen, *_]] = result['selections']
    assert chosen['compute_node_uuid'] == nodes['qos'].uuid
    assert _allocations(api, instance_uuid) == {
        nodes['qos'].uuid: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
        nodes['bandwidth']: {BANDWIDTH: 1000}}
    assert list(result['mappings'].values()) == [[nodes['bandwidth']]]
