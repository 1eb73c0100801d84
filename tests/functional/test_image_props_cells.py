"""ImagePropertiesWeigher in Nova database mode, with two cells (Nova bug
2125935: the image properties of a host's instances are in its cell).

Nova 34's own migrations make an API database, cell0, cell1 and cell2
(on the session's PostgreSQL: ``nova_databases.NovaDatabases``) and
Nova's objects write the compute nodes and the instances, whose
``image_*`` system metadata is what Nova's compute API stores when it
boots or rebuilds one (driver ops ``add_instance_with_image``,
``rebuild_instance``).
Our FilterScheduler decides on them with the ImagePropertiesWeigher
alone; its raw weights are compared with those of Nova 34's own
ImagePropertiesWeigher on the same databases (driver op
``image_props_weights``, in Nova's venv).
"""

import uuid

import pytest
from nova_databases import NovaDatabases

from scheduler import context as scheduler_context
from scheduler.db import source as db_source
from scheduler.drivers import filter_scheduler
from scheduler.objects import image_meta
from scheduler.weights import image_props
from scheduler_tools import seed
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(280)

LINUX_Q35 = {'os_distro': 'linux', 'hw_machine_type': 'q35'}
WINDOWS_PC = {'os_distro': 'windows', 'hw_machine_type': 'pc'}
# Compute hosts: cell1 hosts come first in the view (equal weights would
# pick one of them).
HOSTS = {'cell1': ('c1-win', 'c1-empty'), 'cell2': ('c2-linux', 'c2-win')}


@pytest.fixture(scope='module')
def nova_dbs(postgresql_url, tmp_path_factory):
    """Nova's databases on the session's PostgreSQL (copies of the
    session's migrated templates)."""
    with NovaDatabases(postgresql_url,
                       tmp_path_factory.mktemp('nova')) as databases:
        yield databases


@pytest.fixture
def nova(nova_dbs, conf, postgresql_url, fresh_database):
    """The Nova driver, the scheduler in Nova database mode weighing with
    the ImagePropertiesWeigher alone (multiplier 1)."""
    conf.set_override('connection', nova_dbs.urls['api'], 'api_database')
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    conf.set_override('weight_classes', ['ImagePropertiesWeigher'],
                      'filter_scheduler')
    conf.set_override('image_props_weight_multiplier', 1.0,
                      'filter_scheduler')
    db_source.reset()
    seed.use_database(fresh_database(postgresql_url, prefix='scheduler_own'))
    yield nova_dbs.nova
    db_source.reset()
    writers.reset_engine()
    nova_dbs.nova.request('clear')


def _fleet(nova):
    """c1-win: two Windows instances; c1-empty: none; c2-linux: two
    instances of a Linux/q35 image; c2-win: one Windows instance.
    Returns ``{host: [instance uuids]}``."""
    images = {'c1-win': [WINDOWS_PC, WINDOWS_PC], 'c1-empty': [],
              'c2-linux': [LINUX_Q35, LINUX_Q35], 'c2-win': [WINDOWS_PC]}
    placed = {}
    for cell, hosts in HOSTS.items():
        for host in hosts:
            nova.request('add_compute', cell=cell, host=host)
            placed[host] = []
            for props in images[host]:
                instance_uuid = str(uuid.uuid4())
                nova.request('add_instance_with_image', cell=cell,
                             uuid=instance_uuid, host=host,
                             image_ref=props['os_distro'],
                             image_properties=props)
                placed[host].append(instance_uuid)
    return placed


def _spec(props):
    return seed.make_spec(memory_mb=512, image=image_meta.ImageMeta(
        properties=image_meta.ImageMetaProps.from_dict(props)))


def _raw_weights(driver, ctx, spec):
    """``{host: raw weight}`` of our weigher over the view (its
    vectorised form, as the pipeline calls it)."""
    states = driver.host_manager.get_all_host_states(ctx)
    table = driver.host_manager.table
    raw = image_props.ImagePropertiesWeigher().weigh_rows(
        table, table.rows_of(states), spec)
    return dict(zip([s.host for s in states], raw.tolist(), strict=True))


def _chosen(driver, ctx, spec):
    return driver.select_destinations(ctx, spec)[0][0].service_host


def test_weigher_reads_each_host_cell_as_nova_34(nova):
    placed = _fleet(nova)
    ctx = scheduler_context.get_admin_context()
    driver = filter_scheduler.FilterScheduler(ctx)
    spec = _spec(LINUX_Q35)
    ours = _raw_weights(driver, ctx, spec)
    # c2-linux: os_distro=linux x2 + hw_machine_type=q35 x2.
    assert ours == {'c1-win': 0.0, 'c1-empty': 0.0, 'c2-linux': 4.0,
                    'c2-win': 0.0}
    hosts = [[host, host] for host in ours]
    assert nova.request('image_props_weights', hosts=hosts,
                        image_properties=LINUX_Q35) == ours
    windows = _raw_weights(driver, ctx, _spec(WINDOWS_PC))
    assert windows == nova.request('image_props_weights', hosts=hosts,
                                   image_properties=WINDOWS_PC) == {
        'c1-win': 4.0, 'c1-empty': 0.0, 'c2-linux': 0.0, 'c2-win': 2.0}
    assert _chosen(driver, ctx, spec) == 'c2-linux'
    # The instances of cell2 are not in cell1's database: reading the
    # wrong cell (Nova before bug 2125935 was fixed) finds nothing.
    reader = driver.host_manager.image_props
    cells = nova.request('cells')
    cell_uuids = {cell['name']: cell['uuid'] for cell in cells}
    linux = placed['c2-linux'][0]
    assert reader.lookup([(cell_uuids['cell1'], linux, 'other')]) == {
        linux: {}}
    assert reader.lookup([(cell_uuids['cell2'], linux, 'again')]) == {
        linux: {'os_distro': 'linux', 'hw_machine_type': 'q35',
                'base_image_ref': 'linux'}}


def test_one_read_per_cell_then_cached_until_a_rebuild(nova):
    placed = _fleet(nova)
    ctx = scheduler_context.get_admin_context()
    driver = filter_scheduler.FilterScheduler(ctx)
    reader = driver.host_manager.image_props
    spec = _spec(WINDOWS_PC)
    assert _chosen(driver, ctx, spec) == 'c1-win'
    assert reader.reads == 2            # one SELECT per cell
    # The instance placed by the first request (not in its cell yet) is
    # not looked for, the others come from the cache.
    assert _chosen(driver, ctx, _spec(WINDOWS_PC)) == 'c1-win'
    assert reader.reads == 2
    # Both Windows instances of c1-win rebuilt from the Linux image: the
    # instance rows change, the view reads them again, and so their
    # image properties.
    for instance_uuid in placed['c1-win']:
        nova.request('rebuild_instance', cell='cell1', uuid=instance_uuid,
                     image_ref='linux', image_properties=LINUX_Q35)
    ours = _raw_weights(driver, ctx, _spec(LINUX_Q35))
    assert ours['c1-win'] == ours['c2-linux'] == 4.0
    assert _raw_weights(driver, ctx, _spec(WINDOWS_PC))['c1-win'] == 0.0
    hosts = [[host, host] for host in ours]
    assert nova.request('image_props_weights', hosts=hosts,
                        image_properties=LINUX_Q35) == ours


def test_zero_multiplier_reads_nothing(nova, conf):
    _fleet(nova)
    conf.set_override('image_props_weight_multiplier', 0.0,
                      'filter_scheduler')
    ctx = scheduler_context.get_admin_context()
    driver = filter_scheduler.FilterScheduler(ctx)
    _chosen(driver, ctx, _spec(LINUX_Q35))
    assert driver.host_manager.image_props.reads == 0
