"""Moves through FilterScheduler on a real SQLite database.

Resize, cold and live migration and evacuation of an instance recorded on
a host; live-migration destination pre-checks.
"""

import datetime
import logging
import uuid

import oslo_messaging as messaging
import pytest
from oslo_utils import timeutils

from scheduler import exception
from scheduler.drivers import filter_scheduler
from scheduler.objects import instance_group as group_obj
from scheduler.objects import request_spec
from scheduler.server import manager
from scheduler_tools import seed
from scheduler_tools import writers

INSTANCE = str(uuid.uuid4())


@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters', [
        'RamFilter', 'DiskFilter', 'ComputeFilter',
        'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
        'RetryFilter'], group='filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'],
                      group='filter_scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'moves.sqlite'))


def _hosts(ctx, *memory, **kwargs):
    """host0, host1, ... with ``memory`` MiB each (host0 the biggest in
    most tests, so that it wins unless excluded)."""
    for i, mem in enumerate(memory):
        seed.add_compute(ctx, 'host%d' % i, memory_mb=mem, **kwargs)


def _place(ctx, host, instance_uuid=INSTANCE):
    writers.instance_create(ctx, {'uuid': instance_uuid, 'host': host,
                                  'node': host, 'memory_mb': 512,
                                  'vcpus': 1, 'root_gb': 1})


def _spec(check_type=None, dest=None, source=None, **kwargs):
    hints = {}
    if check_type:
        hints['_nova_check_type'] = [check_type]
    if source:
        hints['_nova_source_host'] = [source]
    if dest:
        kwargs['requested_destination'] = request_spec.Destination(
            host=dest, node=None)
    kwargs.setdefault('instance_uuid', INSTANCE)
    return seed.make_spec(scheduler_hints=hints, **kwargs)


def _chosen(ctx, spec):
    driver = filter_scheduler.FilterScheduler(ctx)
    return [picks[0].service_host
            for picks in driver.select_destinations(ctx, spec)]


# -- source exclusion --------------------------------------------------------

def test_resize_leaves_the_source_by_default(ctx):
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0')
    assert _chosen(ctx, _spec('resize')) == ['host1']


def test_resize_to_same_host_when_allowed(ctx, conf):
    conf.set_override('allow_resize_to_same_host', True)
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0')
    assert _chosen(ctx, _spec('resize')) == ['host0']


@pytest.mark.parametrize('check_type', ['migrate', 'live_migrate',
                                        'evacuate'])
def test_migrations_always_leave_the_source(ctx, conf, check_type):
    conf.set_override('allow_resize_to_same_host', True)
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0')
    assert _chosen(ctx, _spec(check_type)) == ['host1']


@pytest.mark.parametrize('check_type', ['resize', 'migrate', 'evacuate'])
def test_a_single_host_cannot_take_its_own_instance(ctx, check_type):
    _hosts(ctx, 8192)
    _place(ctx, 'host0')
    with pytest.raises(exception.NoValidHost):
        _chosen(ctx, _spec(check_type))


def test_known_instance_without_hint_is_treated_as_a_resize(ctx, conf):
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0')
    assert _chosen(ctx, _spec()) == ['host1']
    conf.set_override('allow_resize_to_same_host', True)
    assert _chosen(ctx, _spec()) == ['host0']


def test_rebuild_stays_on_its_forced_host(ctx):
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0')
    spec = _spec('rebuild', force_hosts=['host0'], force_nodes=['host0'])
    assert _chosen(ctx, spec) == ['host0']


def test_boot_is_unaffected(ctx):
    _hosts(ctx, 8192, 4096)
    _place(ctx, 'host0', instance_uuid=str(uuid.uuid4()))
    assert _chosen(ctx, _spec(instance_uuid=str(uuid.uuid4()))) == ['host0']


def test_source_host_hint_without_instance_rows(ctx):
    _hosts(ctx, 8192, 4096, 2048)
    assert _chosen(ctx, _spec('migrate', source='host0')) == ['host1']
    assert _chosen(ctx, _spec('evacuate', source='host1:host1')) == [
        'host0']


def test_alternates_do_not_include_the_source(ctx, conf):
    conf.set_override('max_attempts', 3, group='scheduler')
    _hosts(ctx, 8192, 4096, 2048)
    _place(ctx, 'host0')
    driver = filter_scheduler.FilterScheduler(ctx)
    result = driver.select_destinations(ctx, _spec('migrate'),
                                        return_alternates=True)
    assert [p.service_host for p in result[0]] == ['host1', 'host2']


# -- anti-affinity passes a host that already runs the moved instance ------

def _anti_affinity_group(other):
    return group_obj.InstanceGroup(
        uuid=str(uuid.uuid4()), policies=['anti-affinity'],
        members=[INSTANCE, other], hosts=['host0', 'host1'])


def test_resize_to_same_host_passes_anti_affinity(ctx, conf):
    conf.set_override('allow_resize_to_same_host', True)
    other = str(uuid.uuid4())
    _hosts(ctx, 8192, 8192, 2048)
    _place(ctx, 'host0')
    _place(ctx, 'host1', instance_uuid=other)
    spec = _spec('resize', instance_group=_anti_affinity_group(other))
    # host1 holds another member; host0 holds the instance itself.
    assert _chosen(ctx, spec) == ['host0']


def test_resize_without_same_host_avoids_members(ctx):
    other = str(uuid.uuid4())
    _hosts(ctx, 8192, 8192, 2048)
    _place(ctx, 'host0')
    _place(ctx, 'host1', instance_uuid=other)
    spec = _spec('resize', instance_group=_anti_affinity_group(other))
    assert _chosen(ctx, spec) == ['host2']


def test_boot_of_another_member_is_kept_off_group_hosts(ctx):
    other = str(uuid.uuid4())
    _hosts(ctx, 8192, 8192, 2048)
    _place(ctx, 'host0')
    _place(ctx, 'host1', instance_uuid=other)
    spec = _spec(instance_uuid=str(uuid.uuid4()),
                 instance_group=_anti_affinity_group(other))
    assert _chosen(ctx, spec) == ['host2']


# -- live migration to a requested destination -------------------------------

def test_live_migration_to_a_good_destination(ctx):
    _hosts(ctx, 8192, 8192, 4096)
    _place(ctx, 'host0')
    assert _chosen(ctx, _spec('live_migrate', dest='host2')) == ['host2']


def _refused(ctx, spec, caplog):
    with caplog.at_level(logging.INFO), \
            pytest.raises(exception.NoValidHost) as err:
        _chosen(ctx, spec)
    message = str(err.value)
    assert message.startswith('No valid host was found. ')
    assert message[len('No valid host was found. '):] in caplog.text
    return message


def test_live_migration_to_a_down_host(ctx, caplog):
    _hosts(ctx, 8192)
    old = timeutils.utcnow() - datetime.timedelta(hours=1)
    seed.add_compute(ctx, 'down', last_seen_up=old)
    _place(ctx, 'host0')
    message = _refused(ctx, _spec('live_migrate', dest='down'), caplog)
    assert 'destination down:down is down' in message


def test_live_migration_to_a_disabled_host(ctx, caplog):
    _hosts(ctx, 8192)
    seed.add_compute(ctx, 'off', disabled=True)
    _place(ctx, 'host0')
    message = _refused(ctx, _spec('live_migrate', dest='off'), caplog)
    assert 'destination off:off is disabled' in message


def test_live_migration_lacking_memory(ctx, caplog, conf):
    conf.set_override('initial_ram_allocation_ratio', 1.5)   # Ocata's
    _hosts(ctx, 8192)
    # 2048 * 1.5 - 2048 = 1024 MiB free under the Ocata RAM ratio.
    seed.add_compute(ctx, 'small', memory_mb=2048, memory_mb_used=2048)
    _place(ctx, 'host0')
    message = _refused(ctx, _spec('live_migrate', dest='small',
                                  memory_mb=2048), caplog)
    assert 'lacks memory: 1024 MiB free, 2048 MiB needed' in message


def test_live_migration_lacking_disk(ctx, caplog):
    _hosts(ctx, 8192)
    seed.add_compute(ctx, 'tiny', local_gb=10, local_gb_used=8)
    _place(ctx, 'host0')
    message = _refused(ctx, _spec('live_migrate', dest='tiny', root_gb=2,
                                  ephemeral_gb=1), caplog)
    assert 'lacks disk: 2048 MiB free, 3072 MiB needed' in message


def test_live_migration_to_its_own_host(ctx, caplog):
    _hosts(ctx, 8192, 8192)
    _place(ctx, 'host0')
    message = _refused(ctx, _spec('live_migrate', dest='host0'), caplog)
    assert 'current host of the instance' in message


def test_live_migration_to_an_unknown_host(ctx):
    _hosts(ctx, 8192)
    _place(ctx, 'host0')
    with pytest.raises(exception.ComputeHostNotFound) as err:
        _chosen(ctx, _spec('live_migrate', dest='nowhere'))
    assert str(err.value) == 'Compute host nowhere could not be found.'


def test_host_without_service_row_is_unknown(ctx):
    _hosts(ctx, 8192)
    seed.add_compute(ctx, 'orphan', service=False)
    with pytest.raises(exception.ComputeHostNotFound):
        _chosen(ctx, _spec('live_migrate', dest='orphan'))


def test_cold_migration_destination_is_not_pre_checked(ctx):
    # Only live migration gets the pre-checks; a cold migration to a
    # disabled host is refused by ComputeFilter, without a reason.
    _hosts(ctx, 8192)
    seed.add_compute(ctx, 'off', disabled=True)
    _place(ctx, 'host0')
    with pytest.raises(exception.NoValidHost) as err:
        _chosen(ctx, _spec('migrate', dest='off'))
    assert 'disabled' not in str(err.value)


def test_manager_passes_compute_host_not_found_as_expected(ctx):
    _hosts(ctx, 8192)
    mgr = manager.SchedulerManager(
        ctx, driver=filter_scheduler.FilterScheduler(ctx))
    with pytest.raises(messaging.ExpectedException) as err:
        mgr.select_destinations(ctx, spec_obj=_spec('live_migrate',
                                                     dest='nowhere'))
    assert err.value.exc_info[0] is exception.ComputeHostNotFound
