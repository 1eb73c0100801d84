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
import shutil
import tempfile
import threading
import time

import pytest
from nova_cloud import CELL1_HOSTS
from nova_cloud import CELL2_HOSTS
from nova_cloud import CloudError
from nova_cloud import NovaCloud
from nova_cloud import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def cloud(request, rabbitmq_server, postgresql_url, module_placement):
    """The cloud; its directory (configurations, every process's log)
    is removed when every step passed, and kept otherwise."""
    failed = request.session.testsfailed
    workdir = tempfile.mkdtemp(prefix='scheduler-real-nova-')
    cloud = NovaCloud(rabbitmq_server, postgresql_url, module_placement,
                      workdir)
    try:
        cloud.start()
    except BaseException:
        cloud.close()
        print('\nthe real Nova cloud\'s logs: %s' % workdir)
        raise
    yield cloud
    cloud.close()
    if request.session.testsfailed == failed:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print('\nthe real Nova cloud\'s logs: %s' % workdir)


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


# -- 4: server groups ---------------------------------------------------------

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
    """Two hosts hold a server already: the RAM weigher alone would put
    the three members on the third."""
    for host in CELL1_HOSTS[1:]:
        reply, request_id = cloud.boot('rn-load', 'medium', host=host)
        assert placed(cloud, reply['server']['id'], request_id,
                      'medium') == host
    hints = {'group': group(cloud, 'soft-anti-affinity')}
    server_ids, request_id = boot_many(cloud, 'rn-soft-anti', 3, hints=hints)
    hosts = [placed(cloud, s, request_id) for s in server_ids]
    assert sorted(hosts) == sorted(CELL1_HOSTS)


# -- 5, 6: zones and disabled hosts -------------------------------------------

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


# -- 7 to 12: moves and image changes -----------------------------------------

def boot_one(cloud, name, flavor='tiny'):
    """A server placed and checked; ``(server id, host)``."""
    reply, request_id = cloud.boot(name, flavor)
    server_id = reply['server']['id']
    return server_id, placed(cloud, server_id, request_id, flavor)


def moved(cloud, server_id, request_id, source, flavor='tiny',
          status='ACTIVE'):
    """Check a move decided by ``request_id``: the server on another
    host than ``source``, its allocations there only; its host."""
    host = placed(cloud, server_id, request_id, flavor, status)
    assert host != source
    return host


def test_07_resize(cloud):
    server_id, source = boot_one(cloud, 'rn-resize')
    request_id = cloud.action(server_id, {'resize': {
        'flavorRef': cloud.flavors['small']['id']}})
    host = moved(cloud, server_id, request_id, source, 'small',
                 'VERIFY_RESIZE')
    cloud.action(server_id, {'confirmResize': None}, expected=(204,))
    cloud.wait_server(server_id, 'ACTIVE')
    assert cloud.allocations(server_id) == {host: resources(cloud, 'small')}


def test_08_cold_migrate(cloud):
    server_id, source = boot_one(cloud, 'rn-migrate')
    request_id = cloud.action(server_id, {'migrate': None})
    host = moved(cloud, server_id, request_id, source,
                 status='VERIFY_RESIZE')
    cloud.action(server_id, {'confirmResize': None}, expected=(204,))
    cloud.wait_server(server_id, 'ACTIVE')
    assert cloud.allocations(server_id) == {host: resources(cloud, 'tiny')}


def test_09_live_migrate(cloud):
    server_id, source = boot_one(cloud, 'rn-live')
    request_id = cloud.action(server_id, {'os-migrateLive': {
        'host': None, 'block_migration': 'auto'}})
    host = moved(cloud, server_id, request_id, source)
    target = next(h for h in CELL1_HOSTS if h not in (source, host))
    request_id = cloud.action(server_id, {'os-migrateLive': {
        'host': target, 'block_migration': 'auto'}})
    assert moved(cloud, server_id, request_id, host) == target


def force_up(cloud, host):
    try:
        return cloud.set_service(host, forced_down=False)
    except CloudError as error:
        if 'evacuation migration records remain' in str(error):
            return None
        raise


# The states in which an evacuation's migration record stays: Nova's
# conductor writes 'error' when no host was found (or the rebuild could
# not be sent), the destination's compute 'failed' when the rebuild
# failed there, and its resource tracker 'done' once it has moved the
# instance to itself.
EVACUATION_ENDED = ('done', 'error', 'failed')


def evacuation_ended(cloud, server_id):
    """The status of the server's evacuation migration once it has ended,
    else None.  The server is ACTIVE without a task a moment before its
    destination writes itself as the instance's host (Nova 34's
    ``_do_rebuild_instance`` saves the instance, then
    ``ResourceTracker.finish_evacuation`` moves it and marks the
    migration 'done')."""
    evacuations = [m for m in cloud.api.get(
        '/os-migrations?instance_uuid=%s' % server_id)['migrations']
        if m['instance_uuid'] == server_id and
        m.get('migration_type') == 'evacuation']
    if not evacuations:
        return None
    status = max(evacuations, key=lambda m: m['id'])['status']
    return status if status in EVACUATION_ENDED else None


def test_10_evacuate(cloud):
    server_id, source = boot_one(cloud, 'rn-evacuate')
    compute = cloud.compute(source)
    compute.stop()
    cloud.set_service(source, forced_down=True)
    try:
        request_id = cloud.action(server_id, {'evacuate': {}},
                                  expected=(200,))
        cloud.wait_server(server_id, 'ACTIVE')
        wait_for(lambda: evacuation_ended(cloud, server_id),
                 'the evacuation of %s ended' % server_id)
        host = cloud.host_of(cloud.server(server_id))
        # What the scheduler decided, in the message when the server
        # stayed on its source (Nova puts an evacuation that found no
        # host back to ACTIVE there).
        decided = cloud.decision(request_id)
        assert host != source, (source, decided)
        assert decided[server_id][:2] == (host, host)
        # The source's allocation stays until its compute cleans up.
        assert cloud.allocations(server_id)[host] == resources(cloud, 'tiny')
    finally:
        compute.start()
        # Nova refuses to force a host up until its restarted compute
        # has completed the evacuation's migration.
        wait_for(lambda: force_up(cloud, source), '%s forced up' % source)
    wait_for(lambda: cloud.allocations(server_id) == {
        host: resources(cloud, 'tiny')}, 'the source allocation released')
    wait_for(lambda: cloud.api.get('/os-services?host=%s&binary=nova-compute'
                                   % source)['services'][0]['state'] == 'up',
             '%s up again' % source)


def test_11_shelve_offload_unshelve(cloud):
    server_id, _ = boot_one(cloud, 'rn-shelve')
    cloud.action(server_id, {'shelve': None})
    cloud.wait_server(server_id, 'SHELVED')
    cloud.action(server_id, {'shelveOffload': None})
    cloud.wait_server(server_id, 'SHELVED_OFFLOADED')
    assert cloud.allocations(server_id) == {}
    request_id = cloud.action(server_id, {'unshelve': None})
    assert placed(cloud, server_id, request_id) in CELL1_HOSTS


def test_12_rebuild_with_a_new_image(cloud):
    server_id, host = boot_one(cloud, 'rn-rebuild')
    request_id = cloud.action(server_id, {'rebuild': {
        'imageRef': cloud.images[1]}})
    server = cloud.wait_server(server_id, 'ACTIVE')
    assert server['image']['id'] == cloud.images[1]
    assert placed(cloud, server_id, request_id) == host


# -- 13, 14: capacity ---------------------------------------------------------

def room(cloud, flavor, hosts=CELL1_HOSTS):
    """How many more servers of ``flavor`` Placement lets ``hosts`` take
    (memory decides: the fake nodes have vCPUs and disk to spare)."""
    ram = cloud.flavors[flavor]['ram']
    return sum((cloud.capacity(h) - cloud.usage(h).get('MEMORY_MB', 0)) //
               ram for h in hosts)


def test_13_delete_then_refill(cloud):
    """Fill every host, see a boot refused (that decision reads the full
    hosts), delete one server: Placement frees its host without bumping
    the provider's generation, and the very next boot goes there."""
    server_ids, request_id = boot_many(cloud, 'rn-fill', len(CELL1_HOSTS),
                                       'big')
    hosts = {placed(cloud, s, request_id, 'big'): s for s in server_ids}
    assert sorted(hosts) == sorted(CELL1_HOSTS)
    assert room(cloud, 'big') == 0
    reply, request_id = cloud.boot('rn-full', 'big')
    refused(cloud, reply['server']['id'], request_id)
    freed = CELL1_HOSTS[1]
    generation = cloud.placement_api.provider(
        cloud.providers[freed])['generation']
    cloud.delete_servers([hosts[freed], reply['server']['id']])
    wait_for(lambda: not cloud.usage(freed).get('MEMORY_MB'),
             'the usage of %s back to 0' % freed)
    assert cloud.placement_api.provider(cloud.providers[freed])[
        'generation'] == generation
    reply, request_id = cloud.boot('rn-refill', 'big')
    assert placed(cloud, reply['server']['id'], request_id, 'big') == freed


class UsageSampler(threading.Thread):
    """Samples every cell1 provider's memory usage until stopped; the
    samples over capacity are ``overcommits``."""

    def __init__(self, cloud):
        super().__init__(daemon=True)
        self.cloud = cloud
        self.capacity = {h: cloud.capacity(h) for h in CELL1_HOSTS}
        self.overcommits = []
        self.samples = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for host, capacity in self.capacity.items():
                used = self.cloud.usage(host).get('MEMORY_MB', 0)
                if used > capacity:
                    self.overcommits.append((host, used, capacity))
            self.samples += 1
            self.done.wait(0.2)

    def stop(self):
        self.done.set()
        self.join(30)


def race(cloud, name, flavor='medium', extra=3):
    """More concurrent boots of ``flavor`` than cell1 has room for, with
    Placement's usages watched; checks that exactly the room was filled,
    the other servers refused with NoValidHost, and no overcommit.
    Returns ``{server id: (request id, server)}``."""
    slots = room(cloud, flavor)
    assert slots > 0
    watch = UsageSampler(cloud)
    watch.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(slots + extra) as pool:
            boots = list(pool.map(lambda n: cloud.boot(
                '%s-%d' % (name, n), flavor), range(slots + extra)))
        servers = {reply['server']['id']: (request_id, cloud.wait_server(
            reply['server']['id'], ('ACTIVE', 'ERROR')))
            for reply, request_id in boots}
    finally:
        watch.stop()
    assert watch.samples and not watch.overcommits, watch.overcommits
    active = [s for s, (_, server) in servers.items()
              if server['status'] == 'ACTIVE']
    assert len(active) == slots, (slots, len(active))
    for _, server in servers.values():
        if server['status'] == 'ERROR':
            assert 'No valid host' in server['fault']['message']
    assert room(cloud, flavor) == 0
    return servers


def test_14_concurrent_boots_race_for_the_last_slots(cloud):
    servers = race(cloud, 'rn-race')
    for server_id, (request_id, server) in servers.items():
        if server['status'] == 'ACTIVE':
            placed(cloud, server_id, request_id, 'medium')
        else:
            refused(cloud, server_id, request_id)


# -- 15: the second cell ------------------------------------------------------

def test_15_second_cell(cloud):
    [host] = CELL2_HOSTS
    cloud.set_service(host, status='enabled')
    aggregate = zone_of(cloud, 'rn-cell2', host)
    try:
        reply, request_id = cloud.boot('rn-cell2',
                                       availability_zone='rn-cell2')
        server_id = reply['server']['id']
        assert placed(cloud, server_id, request_id) == host
        verified = cloud.manage('cell_v2', 'verify_instance', '--uuid',
                                server_id)
        assert cloud.cells['cell2'] in verified, verified
    finally:
        drop_zone(cloud, aggregate, host)
        cloud.set_service(host, status='disabled')


# -- 16: switching over to Nova's scheduler and back --------------------------

def test_16_switch_over(cloud):
    timings = {}        # step: seconds, printed as they pass
    started = time.monotonic()

    def lap(name):
        nonlocal started
        now = time.monotonic()
        timings[name] = round(now - started, 1)
        print('switch-over: %s in %.1f s' % (name, timings[name]))
        started = now

    cloud.start_nova_scheduler()
    lap('nova-scheduler started')
    race(cloud, 'rn-both')
    lap('race with both schedulers')
    cloud.delete_servers()
    lap('deleted')
    cloud.stop_scheduler()
    lap('scheduler-service stopped')
    first = cloud.boot('rn-nova-alone')[0]['server']['id']
    second = cloud.boot('rn-nova-alone')[0]['server']['id']
    for server_id in (first, second):
        server = cloud.wait_server(server_id, 'ACTIVE')
        assert cloud.allocations(server_id) == {
            cloud.host_of(server): resources(cloud, 'tiny')}
    cloud.delete_servers([first])
    lap('nova-scheduler alone: two boots and a delete')
    cloud.services['nova-scheduler'].stop()
    cloud.start_scheduler()
    lap('nova-scheduler stopped, scheduler-service started')
    reply, request_id = cloud.boot('rn-back')
    assert placed(cloud, reply['server']['id'], request_id) in CELL1_HOSTS
    lap('a boot with scheduler-service again')
