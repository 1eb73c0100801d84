"""A real Nova 34.0.0 control plane scheduled by this service.

``nova_cloud.NovaCloud`` runs nova-api, the conductors, three
nova-compute in cell1 and one in cell2 (fake driver), Glance 33.0.0 and
a real Placement 16.0.0, with ``scheduler-service`` as Nova's scheduler
(Nova database mode, Placement mode).  Neutron alone is a stand-in
(``real_nova/neutron_stub.py``): servers boot with ``"networks":
"none"``.  Each step drives servers through Nova's REST API and checks
the server's status and host, its allocations in Placement, and the
scheduler's decision line for the request id Nova's API answered.

The steps run in file order on one cloud (a module fixture); each starts
from a fleet with no server, cell1's computes up and enabled and cell2's
disabled, and fails at once when it is not so.  cell2's compute is
enabled only by the cell2 step, so that the other steps know their
hosts.  The last step runs Nova's own nova-scheduler beside this one,
then alone, then this one again.
"""

import concurrent.futures
import threading
import time

import pytest
from nova_cloud import CELL1_HOSTS
from nova_cloud import CELL2_HOSTS
from nova_cloud import NovaCloud
from nova_cloud import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def cloud(rabbitmq_server, postgresql_url, module_placement,
          tmp_path_factory):
    workdir = tmp_path_factory.mktemp('real-nova')
    print('real Nova cloud logs in %s' % workdir)
    cloud = NovaCloud(rabbitmq_server, postgresql_url, module_placement,
                      workdir)
    try:
        cloud.start()
        yield cloud
    finally:
        cloud.close()


@pytest.fixture(autouse=True)
def fleet(cloud):
    """Each step starts on the fleet the module describes and leaves no
    server behind."""
    states = {s['host']: s for s in cloud.api.get(
        '/os-services?binary=nova-compute')['services']}
    wrong = {host: states.get(host) for host in CELL1_HOSTS + CELL2_HOSTS
             if states.get(host) is None or states[host]['state'] != 'up' or
             states[host]['forced_down'] or
             (states[host]['status'] == 'enabled') != (host in CELL1_HOSTS)}
    assert not wrong, 'an earlier step left the fleet changed: %s' % wrong
    yield
    cloud.delete_servers()


def resources(cloud, flavor):
    flavor = cloud.flavors[flavor]
    return {'VCPU': flavor['vcpus'], 'MEMORY_MB': flavor['ram'],
            'DISK_GB': flavor['disk']}


def placed(cloud, server_id, request_id, flavor='tiny', status='ACTIVE'):
    """Check one server placed by the decision of ``request_id``: its
    status, its allocations on its host only, and the scheduler's line
    naming that host; return its host."""
    server = cloud.wait_server(server_id, status)
    host = cloud.host_of(server)
    assert cloud.allocations(server_id) == {host: resources(cloud, flavor)}
    host_node = cloud.decision(request_id)[server_id][:2]
    assert host_node == (host, host)
    return host


def refused(cloud, server_id, request_id):
    """Check a server refused by the scheduler: ERROR with a NoValidHost
    fault, no allocation, and the scheduler's refusal line."""
    server = cloud.wait_server(server_id, 'ERROR')
    assert 'No valid host' in server['fault']['message'], server['fault']
    assert cloud.allocations(server_id) == {}
    decision = cloud.decision(request_id)
    assert decision[0] == 'refused' and server_id in decision[1], decision


def boot_many(cloud, name, count, flavor='tiny', **extra):
    """One request for ``count`` servers; ``(servers, request id)``."""
    reply, request_id = cloud.boot(name, flavor, count=count, **extra)
    found = wait_for(lambda: len(cloud.servers_of(
        reply['reservation_id'])) == count and cloud.servers_of(
            reply['reservation_id']), 'the servers of %s' % name)
    return [s['id'] for s in found], request_id


def group(cloud, policy):
    return cloud.api.call('POST', '/os-server-groups', {'server_group': {
        'name': 'rn-' + policy, 'policy': policy}})[1]['server_group']['id']


# -- 1 to 3: boots ------------------------------------------------------------

def test_01_boot_one(cloud):
    reply, request_id = cloud.boot('rn-one')
    assert placed(cloud, reply['server']['id'], request_id) in CELL1_HOSTS


def test_02_boot_three_in_one_request(cloud):
    server_ids, request_id = boot_many(cloud, 'rn-three', 3)
    decision = cloud.decision(request_id)
    assert sorted(decision) == sorted(server_ids)
    for server_id in server_ids:
        assert placed(cloud, server_id, request_id) in CELL1_HOSTS


def test_03_impossible_flavor(cloud):
    reply, request_id = cloud.boot('rn-huge', 'huge')
    refused(cloud, reply['server']['id'], request_id)


# -- 4: server groups ------------------------------------------------------------

def test_04a_affinity(cloud):
    hints = {'group': group(cloud, 'affinity')}
    reply, first_id = cloud.boot('rn-aff', hints=hints)
    host = placed(cloud, reply['server']['id'], first_id)
    server_ids, request_id = boot_many(cloud, 'rn-aff', 2, hints=hints)
    assert {placed(cloud, s, request_id) for s in server_ids} == {host}


def test_04b_anti_affinity(cloud):
    hints = {'group': group(cloud, 'anti-affinity')}
    hosts = []
    for _ in CELL1_HOSTS:
        reply, request_id = cloud.boot('rn-anti', hints=hints)
        hosts.append(placed(cloud, reply['server']['id'], request_id))
    assert sorted(hosts) == sorted(CELL1_HOSTS)
    reply, request_id = cloud.boot('rn-anti-extra', hints=hints)
    refused(cloud, reply['server']['id'], request_id)


def test_04c_soft_affinity_in_one_request(cloud):
    hints = {'group': group(cloud, 'soft-affinity')}
    server_ids, request_id = boot_many(cloud, 'rn-soft-aff', 2, hints=hints)
    hosts = {placed(cloud, s, request_id) for s in server_ids}
    assert len(hosts) == 1, hosts


def test_04d_soft_anti_affinity_in_one_request(cloud):
    hints = {'group': group(cloud, 'soft-anti-affinity')}
    server_ids, request_id = boot_many(cloud, 'rn-soft-anti', 3, hints=hints)
    hosts = [placed(cloud, s, request_id) for s in server_ids]
    assert sorted(hosts) == sorted(CELL1_HOSTS)


# -- 5, 6: zones and disabled hosts ----------------------------------------------

def zone_of(cloud, name, host):
    """An aggregate that makes ``host`` the zone ``name``; its id."""
    aggregate = cloud.api.call('POST', '/os-aggregates', {'aggregate': {
        'name': name, 'availability_zone': name}})[1]['aggregate']['id']
    cloud.api.call('POST', '/os-aggregates/%s/action' % aggregate,
                   {'add_host': {'host': host}})
    return aggregate


def drop_zone(cloud, aggregate, host):
    cloud.delete_servers()
    cloud.api.call('POST', '/os-aggregates/%s/action' % aggregate,
                   {'remove_host': {'host': host}})
    cloud.api.call('DELETE', '/os-aggregates/%s' % aggregate)


def test_05_availability_zone_of_an_aggregate(cloud):
    host = CELL1_HOSTS[-1]
    aggregate = zone_of(cloud, 'rn-az5', host)
    try:
        for _ in range(2):
            reply, request_id = cloud.boot('rn-az',
                                           availability_zone='rn-az5')
            assert placed(cloud, reply['server']['id'], request_id) == host
    finally:
        drop_zone(cloud, aggregate, host)


def test_06_disabled_host_avoided(cloud):
    host = CELL1_HOSTS[0]
    cloud.set_service(host, status='disabled', disabled_reason='rn test')
    try:
        server_ids, request_id = boot_many(cloud, 'rn-dis', 4)
        hosts = {placed(cloud, s, request_id) for s in server_ids}
        assert hosts and host not in hosts
    finally:
        cloud.set_service(host, status='enabled')
