"""Nova 34.0.0 end to end: Nova's own conductor client calls the real
service over RabbitMQ while the service runs in Nova database mode on
databases Nova's own ``nova-manage`` made and Nova's own objects filled.

Two cells (cell1, cell2) with one compute node each and an availability
zone from an aggregate of the API database; Nova's
``SchedulerQueryClient`` asks for Selection objects, and every Selection
names its host's cell mapping uuid, which Nova's conductor compares with
the instance's cell.  The Nova side runs in the Nova venv (helpers of
``test_nova_caller`` and ``nova_databases``); this process never imports
Nova.
"""

import pytest
from deployment import Deployment
from functional.test_nova_caller import NovaDriver
from functional.test_nova_caller import nova_venv
from functional.test_nova_caller import select
from nova_databases import NovaDatabases

from scheduler_tools import databases

GiB = 1024
FILTERS = ['AvailabilityZoneFilter', 'RamFilter', 'ComputeFilter']
HOSTS = {'e2e-one': 'cell1', 'e2e-two': 'cell2'}


@pytest.fixture(scope='module')
def nova_dbs(postgresql_url, tmp_path_factory):
    """Nova's API, cell0, cell1 and cell2 databases on PostgreSQL, with a
    compute node in each cell and an AZ aggregate holding ``e2e-two``."""
    with NovaDatabases(postgresql_url,
                       tmp_path_factory.mktemp('nova-dbs')) as databases:
        for host, cell in HOSTS.items():
            databases.nova.request('add_compute', cell=cell, host=host,
                                   memory_mb=16 * GiB)
        databases.nova.request('add_aggregate', name='e2e-az',
                               hosts=['e2e-two'],
                               metadata={'availability_zone': 'e2e-az'})
        yield databases
        databases.nova.request('clear')


@pytest.fixture(scope='module')
def service(nova_dbs, postgresql_url, rabbit_url, tmp_path_factory):
    """scheduler-service in Nova database mode, its own database new."""
    own_url = databases.create_database(postgresql_url, prefix='scheduler_e2e')
    options = {('api_database', 'connection'): nova_dbs.urls['api'],
               ('filter_scheduler', 'enabled_filters'): FILTERS,
               ('filter_scheduler', 'weight_classes'): ['RAMWeigher']}
    deployment = Deployment(own_url, 'process', rabbit_url,
                            str(tmp_path_factory.mktemp('service')),
                            options)
    try:
        deployment.start()
        yield deployment
    finally:
        deployment.stop()
        databases.drop_database(own_url)


@pytest.fixture(scope='module')
def nova(rabbit_url, tmp_path_factory):
    driver = NovaDriver(nova_venv(), rabbit_url,
                        str(tmp_path_factory.mktemp('nova') / 'driver.log'))
    yield driver
    driver.close()


def test_each_selection_names_its_hosts_cell(nova_dbs, service, nova):
    result = select(nova, None, {'num_instances': 2},
                    return_objects=True, return_alternates=True)
    chosen = sorted(picks[0]['service_host'] for picks in result)
    assert chosen == sorted(HOSTS)
    for picks in result:
        for pick in picks:
            cell = HOSTS[pick['service_host']]
            assert pick['cell_uuid'] == nova_dbs.cells[cell]


def test_an_availability_zone_of_novas_api_database(nova_dbs, service,
                                                    nova):
    result = select(nova, None, {'availability_zone': 'e2e-az'},
                    return_objects=True)
    assert [pick['service_host'] for pick in result[0]] == ['e2e-two']
    assert result[0][0]['cell_uuid'] == nova_dbs.cells['cell2']
    assert result[0][0]['availability_zone'] == 'e2e-az'
