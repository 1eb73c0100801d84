"""Fleet CSVs, the generator, seeding a database and heartbeats."""

import datetime
import json

import pytest

from scheduler import context
from scheduler import objects
from scheduler.db import api as db
from scheduler.db import migration
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.replay import fleet

HEADER = 'host,nodename,vcpus,memory_mb,local_gb\n'


@pytest.fixture
def ctx(tmp_path):
    """An admin context on a fresh SQLite database synced to head."""
    objects.register_all()
    writers.reset_engine('sqlite:///%s' % (tmp_path / 'fleet.sqlite'))
    migration.db_sync(db.get_engine())
    yield context.get_admin_context()
    writers.reset_engine()


def _write(tmp_path, text):
    path = tmp_path / 'fleet.csv'
    path.write_text(text)
    return path


# -- shapes and generation ---------------------------------------------------

def test_host_shape():
    shape = fleet.parse_host_shape('64:262144:2000')
    assert shape == (64, 262144, 2000, 0, None)
    assert str(shape) == '64:262144:2000'


def test_host_shape_without_a_disk_leaves_it_to_the_caller():
    shape = fleet.parse_host_shape('80:184320')
    assert shape == (80, 184320, None, 0, None)
    assert str(shape) == '80:184320'


@pytest.mark.parametrize('text, shape', [
    ('96:393216:500:8:G2', (96, 393216, 500, 8, 'G2')),
    ('96:393216::8:G2', (96, 393216, None, 8, 'G2')),
    ('96:393216:500:0:', (96, 393216, 500, 0, None)),
    ('96:393216:500:0:G2', (96, 393216, 500, 0, None))])
def test_host_shape_with_gpus(text, shape):
    parsed = fleet.parse_host_shape(text)
    assert parsed == shape
    assert fleet.parse_host_shape(str(parsed)) == parsed


@pytest.mark.parametrize('text', ['64', '64:0:10', '64:0', 'a:b:c',
                                  '1:2:3:4', '', '1:2:', '1:2:0',
                                  '1:2:3:-1:T4', '1:2:3:x:T4',
                                  '1:2:3:4:T4:5'])
def test_bad_host_shape(text):
    with pytest.raises(fleet.FleetError,
                       match=r'vcpus:memory_mb\[:local_gb\[:gpus:gpu_model'):
        fleet.parse_host_shape(text)


def test_gpus_in_a_host_shape_need_a_model():
    with pytest.raises(fleet.FleetError, match='has GPUs but no GPU model'):
        fleet.parse_host_shape('96:393216::8:')


def test_generated_fleet_is_homogeneous_and_sorted_by_name():
    hosts = fleet.generate_fleet(3, (8, 16384, 100))
    assert [h.host for h in hosts] == ['compute-0001', 'compute-0002',
                                       'compute-0003']
    assert all(h.nodename == h.host for h in hosts)
    assert {(h.vcpus, h.memory_mb, h.local_gb) for h in hosts} == {
        (8, 16384, 100)}
    assert all(h.cpu_allocation_ratio is None for h in hosts)
    wide = fleet.generate_fleet(12345, (1, 1, 1))
    assert wide[0].host == 'compute-00001'
    assert [h.host for h in wide] == sorted(h.host for h in wide)


def test_a_generated_fleet_has_the_gpus_of_its_shape():
    hosts = fleet.generate_fleet(2, fleet.HostShape(96, 393216, 500, 8,
                                                    'G2'))
    assert {(h.gpus, h.gpu_model) for h in hosts} == {(8, 'G2')}
    assert {(h.gpus, h.gpu_model) for h in fleet.generate_fleet(
        1, (1, 1, 1))} == {(0, None)}


def test_generating_no_host_is_an_error():
    with pytest.raises(fleet.FleetError):
        fleet.generate_fleet(0, (1, 1, 1))


# -- CSV -------------------------------------------------------------------

def test_read_fleet_with_optional_columns(tmp_path):
    path = _write(tmp_path, (
        'host,nodename,vcpus,memory_mb,local_gb,availability_zone,'
        'aggregates,cpu_allocation_ratio,ram_allocation_ratio,'
        'disk_allocation_ratio,hypervisor_type\n'
        'h1,n1,16,65536,500,az1,ssd; gpu ,4.0,1.0,,ironic\n'
        'h1,n2,16,65536,500,,,,,,\n'))
    first, second = fleet.read_fleet(path)
    assert first == fleet.HostSpec(
        'h1', 'n1', 16, 65536, 500, availability_zone='az1',
        aggregates=('ssd', 'gpu'), cpu_allocation_ratio=4.0,
        ram_allocation_ratio=1.0, disk_allocation_ratio=None,
        hypervisor_type='ironic')
    assert second == fleet.HostSpec('h1', 'n2', 16, 65536, 500)


def test_write_then_read_round_trips(tmp_path):
    hosts = [fleet.HostSpec('h1', 'n1', 4, 8192, 80, 'az1', ('a', 'b'),
                            2.0, None, 1.5),
             fleet.HostSpec('h2', 'h2', 8, 16384, 160)]
    path = tmp_path / 'out.csv'
    fleet.write_fleet(path, hosts)
    assert fleet.read_fleet(path) == hosts


def test_missing_column(tmp_path):
    path = _write(tmp_path, 'host,vcpus,memory_mb\nh1,1,1\n')
    with pytest.raises(fleet.FleetError, match='nodename, local_gb'):
        fleet.read_fleet(path)


@pytest.mark.parametrize('row, message', [
    ('h1,n1,many,1024,10', 'line 2: vcpus'),
    ('h1,n1,4,-1,10', 'line 2: memory_mb .* negative'),
    (',n1,4,1024,10', 'line 2: host is empty'),
])
def test_bad_values_name_the_line(tmp_path, row, message):
    with pytest.raises(fleet.FleetError, match=message):
        fleet.read_fleet(_write(tmp_path, HEADER + row + '\n'))


def test_bad_ratio(tmp_path):
    text = ('host,nodename,vcpus,memory_mb,local_gb,ram_allocation_ratio\n'
            'h1,n1,4,1024,10,0\n')
    with pytest.raises(fleet.FleetError, match='must be positive'):
        fleet.read_fleet(_write(tmp_path, text))


def test_duplicate_node_and_empty_fleet(tmp_path):
    with pytest.raises(fleet.FleetError, match='listed twice'):
        fleet.read_fleet(_write(tmp_path, HEADER + 'h,n,1,1,1\nh,n,1,1,1\n'))
    with pytest.raises(fleet.FleetError, match='no compute node'):
        fleet.read_fleet(_write(tmp_path, HEADER))


def test_aggregate_members():
    hosts = [fleet.HostSpec('h1', 'n1', 1, 1, 1, 'az1', ('ssd',)),
             fleet.HostSpec('h1', 'n2', 1, 1, 1, 'az1', ('ssd',)),
             fleet.HostSpec('h2', 'h2', 1, 1, 1, None, ('ssd', 'gpu'))]
    assert seed.aggregate_members(hosts) == {
        'ssd': ({}, ['h1', 'h2']),
        'az-az1': ({'availability_zone': 'az1'}, ['h1']),
        'gpu': ({}, ['h2']),
    }


# -- database ----------------------------------------------------------------

def test_seed_writes_services_nodes_and_aggregates(ctx):
    hosts = [fleet.HostSpec('h1', 'n1', 16, 65536, 500, 'az1', ('ssd',),
                            ram_allocation_ratio=1.0),
             fleet.HostSpec('h1', 'n2', 16, 65536, 500, 'az1'),
             fleet.HostSpec('h2', 'h2', 8, 32768, 250)]
    seed.seed_fleet(ctx, hosts)
    rows = fleet.load_nodes(ctx)
    assert [(r['host'], r['hypervisor_hostname']) for r in rows] == [
        ('h1', 'n1'), ('h1', 'n2'), ('h2', 'h2')]
    first = rows[0]
    assert (first['vcpus'], first['memory_mb'], first['local_gb']) == (
        16, 65536, 500)
    assert (first['vcpus_used'], first['memory_mb_used'],
            first['free_ram_mb'], first['free_disk_gb']) == (0, 0, 65536,
                                                              500)
    assert first['ram_allocation_ratio'] == 1.0
    assert first['cpu_allocation_ratio'] is None
    assert json.loads(first['stats']) == {'num_instances': 0,
                                          'io_workload': 0}
    services = db.service_get_all_by_binary(ctx, 'nova-compute')
    assert [s['host'] for s in services] == ['h1', 'h2']
    assert rows[0]['service_id'] == rows[1]['service_id'] == \
        services[0]['id']
    aggregates = {a['name']: a for a in db.aggregate_get_all(ctx)}
    assert aggregates['az-az1']['metadata'] == {'availability_zone': 'az1'}
    assert aggregates['az-az1']['hosts'] == ['h1']
    assert aggregates['ssd']['hosts'] == ['h1']


def test_seeding_twice_is_refused(ctx):
    hosts = fleet.generate_fleet(2, (1, 1024, 10))
    seed.seed_fleet(ctx, hosts)
    with pytest.raises(fleet.FleetError, match='already has 2'):
        seed.seed_fleet(ctx, hosts)


def test_load_nodes_of_an_empty_database(ctx):
    with pytest.raises(fleet.FleetError, match='--seed-only'):
        fleet.load_nodes(ctx)


def test_heartbeat_refreshes_every_compute_service(ctx):
    seed.seed_fleet(ctx, fleet.generate_fleet(3, (1, 1024, 10)))
    old = datetime.datetime(2000, 1, 1)
    for service in db.service_get_all_by_binary(ctx, 'nova-compute'):
        writers.service_update(ctx, service['id'], {'last_seen_up': old})
    writers.service_create(ctx, {'host': 'sched', 'binary': 'nova-scheduler',
                                 'topic': 'scheduler', 'last_seen_up': old})
    assert seed.heartbeat_services(ctx) == 3
    computes = db.service_get_all_by_binary(ctx, 'nova-compute')
    assert all(s['last_seen_up'] > old for s in computes)
    assert all(s['report_count'] == 2 for s in computes)
    other, = db.service_get_all_by_binary(ctx, 'nova-scheduler')
    assert other['last_seen_up'] == old
