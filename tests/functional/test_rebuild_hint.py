"""OSSA-2026-022 over RabbitMQ, in Placement mode.

A ``scheduler-service`` process with ``[scheduler] use_placement`` runs
on the session's RabbitMQ and Placement.  An unpatched nova-api passes a
user's ``_nova_check_type=rebuild`` hint through on a boot: that boot must
be filtered and claimed in Placement like any other.  Nova's own rebuild
(the hint, forced to the instance's host and node, where the view has
the instance and Placement its allocations) is still not claimed.
"""

import uuid

import pytest
from deployment import Deployment
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler_tools import seed
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(180)

# Nova 34's default filters.
FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
           'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
           'ServerGroupAffinityFilter']
REBUILD_HINT = {'_nova_check_type': ['rebuild']}


@pytest.fixture(scope='module')
def setting(rabbit_url, placement_server, tmp_path_factory):
    """The service, one compute node (in the scheduler's database and in
    Placement) and a PlacementAPI."""
    workdir = tmp_path_factory.mktemp('rebuild-hint')
    options = {
        ('scheduler', 'use_placement'): True,
        ('placement', 'auth_type'): 'admin_token',
        ('placement', 'endpoint'): placement_server.url,
        ('placement', 'token'): 'admin',
        ('placement_database', 'connection'): placement_server.database_url,
        ('filter_scheduler', 'enabled_filters'): FILTERS,
        ('filter_scheduler', 'host_subset_size'): 1,
        # Logged once at start (scheduler.conf.unhonoured).
        ('filter_scheduler', 'enabled_filter'): 'ComputeFilter',
        ('api_database', 'db_max_retries'): 5,
    }
    api = PlacementAPI(placement_server.url)
    deployment = Deployment('sqlite:///%s' % (workdir / 'scheduler.sqlite'),
                            'process', rabbit_url, str(workdir), options)
    node = ComputeProvider('rebuild-%s' % uuid.uuid4().hex[:8], vcpus=4,
                           memory_mb=4096, reserved_host_memory_mb=0,
                           ram_allocation_ratio=1.0, disk_gb=100)
    try:
        seed.add_compute(deployment.ctx, node.name, uuid=node.uuid,
                         vcpus=node.vcpus, memory_mb=node.memory_mb,
                         local_gb=node.disk_gb)
        api.add_compute(node)
        deployment.start()
    except BaseException:
        deployment.stop()
        raise
    yield deployment, node, api
    deployment.stop()


def _spec(**kwargs):
    return seed.make_spec(user_id='user-rebuild-hint', **kwargs)


def _select(deployment, spec):
    [[selection]] = deployment.api.select_destinations(
        deployment.ctx, spec, [spec.instance_uuid], return_objects=True)
    return selection


def _allocated(api, consumer):
    return {rp: alloc['resources'] for rp, alloc
            in api.allocations(consumer)['allocations'].items()}


def test_a_boot_with_the_rebuild_hint_is_claimed_as_a_boot(setting):
    deployment, node, api = setting
    instance = str(uuid.uuid4())
    spec = _spec(memory_mb=1024, vcpus=1, root_gb=1,
                          instance_uuid=instance,
                          scheduler_hints=REBUILD_HINT)
    selection = _select(deployment, spec)
    assert selection.compute_node_uuid == node.uuid
    assert selection.allocation_request
    assert _allocated(api, instance) == {node.uuid: {
        'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 1}}
    log = deployment.log(tail=200000)
    assert log.count('Ignoring the scheduler hint _nova_check_type=rebuild '
                     'of the request for instance %s' % instance) == 1
    # More than the node has: refused, not placed unchecked.
    too_big = _spec(memory_mb=8192, instance_uuid=str(uuid.uuid4()),
                             scheduler_hints=REBUILD_HINT)
    with pytest.raises(Exception, match='NoValidHost|No valid host'):
        _select(deployment, too_big)


def test_unhonoured_options_are_logged_once_at_start(setting):
    deployment, _, _ = setting
    lines = deployment.log(tail=200000).splitlines()
    unknown = [line for line in lines
               if 'Unknown option [filter_scheduler] enabled_filter ' in line]
    ignored = [line for line in lines
               if 'Option [api_database] db_max_retries' in line]
    assert len(unknown) == 1 and ' WARNING ' in unknown[0], unknown
    assert len(ignored) == 1 and ' INFO ' in ignored[0], ignored
    assert 'accepted and ignored' in ignored[0]


def test_nova_rebuild_is_still_not_claimed(setting):
    deployment, node, api = setting
    instance = str(uuid.uuid4())
    boot = _spec(memory_mb=512, vcpus=1, root_gb=1,
                          instance_uuid=instance)
    assert _select(deployment, boot).compute_node_uuid == node.uuid
    before = _allocated(api, instance)
    assert before == {node.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                  'DISK_GB': 1}}
    # nova-compute records the instance on its host and node.
    writers.instance_create(deployment.ctx, {
        'uuid': instance, 'host': node.name, 'node': node.name,
        'memory_mb': 512, 'vcpus': 1, 'root_gb': 1})
    # Nova's rebuild with a new image (compute API + conductor): the
    # hint, forced to the instance's host and node; a bigger flavor
    # would show in Placement if it were claimed.
    rebuild = _spec(memory_mb=2048, vcpus=2, root_gb=1,
                             instance_uuid=instance,
                             force_hosts=[node.name],
                             force_nodes=[node.name],
                             scheduler_hints=REBUILD_HINT)
    selection = _select(deployment, rebuild)
    assert (selection.service_host, selection.nodename) == (node.name,
                                                           node.name)
    # Not claimed: the instance's allocations are the boot's.
    assert _allocated(api, instance) == before
    assert 'Ignoring the scheduler hint _nova_check_type=rebuild of the ' \
        'request for instance %s' % instance not in deployment.log(
            tail=200000)
