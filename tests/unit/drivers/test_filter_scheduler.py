"""FilterScheduler against a real SQLite database."""

import collections
import uuid

import oslo_messaging as messaging
import pytest

from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.drivers import filter_scheduler
from scheduler.objects import instance_group as group_obj
from scheduler.objects import request_spec
from scheduler_tools import seed


@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters', [
        'RamFilter', 'ComputeFilter', 'ServerGroupAntiAffinityFilter',
        'ServerGroupAffinityFilter', 'RetryFilter'], group='filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'],
                      group='filter_scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'fs.sqlite'))


def _hosts(ctx, *memory):
    for i, mem in enumerate(memory):
        seed.add_compute(ctx, 'host%d' % i, memory_mb=mem)


def _driver(ctx, notifier=None):
    return filter_scheduler.FilterScheduler(ctx, notifier=notifier)


def _chosen(selections):
    return [picks[0].service_host for picks in selections]


def test_best_host_wins_and_is_consumed(ctx):
    _hosts(ctx, 2048, 4096, 3072)
    driver = _driver(ctx)
    spec = seed.make_spec(num_instances=3, memory_mb=1024)
    # 4096 -> 3072 left ties host2's 3072: the stable sort keeps host1
    # (lower id) first; then host2 (3072) beats host1 (2048).
    assert _chosen(driver.select_destinations(ctx, spec)) == [
        'host1', 'host1', 'host2']


def test_not_enough_hosts_raises_and_releases(ctx):
    _hosts(ctx, 2048)
    driver = _driver(ctx)
    with pytest.raises(exception.NoValidHost) as err:
        driver.select_destinations(
            ctx, seed.make_spec(num_instances=5, memory_mb=1024))
    assert 'There are not enough hosts available.' in str(err.value)
    state = driver.host_manager.get_all_host_states(ctx)[0]
    assert state.free_ram_mb == 2048  # the virtual consumption was dropped


def test_instance_uuids_set_the_count(ctx):
    _hosts(ctx, 8192)
    uuids = [str(uuid.uuid4()) for _ in range(4)]
    result = _driver(ctx).select_destinations(ctx, seed.make_spec(), uuids)
    assert len(result) == 4


def test_host_subset_size_is_seeded_and_bounded(ctx, conf):
    _hosts(ctx, 8192, 8000, 7900, 1000)
    conf.set_override('host_subset_size', 3, group='filter_scheduler')
    conf.set_override('random_seed', 42, group='scheduler')
    runs = []
    for _ in range(2):
        driver = _driver(ctx)
        picks = [_chosen(driver.select_destinations(
            ctx, seed.make_spec(memory_mb=1)))[0] for _ in range(30)]
        runs.append(picks)
        for state in driver.host_manager.get_all_host_states(ctx):
            state.updated = None  # forget the consumption between runs
    assert runs[0] == runs[1]  # same seed, same placements
    assert set(runs[0]) <= {'host0', 'host1', 'host2'}
    assert len(set(runs[0])) > 1


def test_shuffle_best_same_weighed_hosts(ctx, conf):
    _hosts(ctx, 4096, 4096, 4096, 1024)
    conf.set_override('shuffle_best_same_weighed_hosts', True,
                      group='filter_scheduler')
    conf.set_override('random_seed', 7, group='scheduler')
    driver = _driver(ctx)
    counts = collections.Counter()
    for _ in range(30):
        counts[_chosen(driver.select_destinations(
            ctx, seed.make_spec(memory_mb=1)))[0]] += 1
        for state in driver.host_manager.get_all_host_states(ctx):
            state.updated = None
    assert set(counts) == {'host0', 'host1', 'host2'}


def test_alternates_exclude_chosen_and_respect_max_attempts(ctx, conf):
    _hosts(ctx, 1024, 2048, 3072, 4096, 5120)
    conf.set_override('max_attempts', 4, group='scheduler')
    result = _driver(ctx).select_destinations(
        ctx, seed.make_spec(num_instances=2, memory_mb=512),
        return_alternates=True)
    chosen = _chosen(result)
    assert chosen == ['host4', 'host4']  # 4608 still beats host3's 4096
    for picks in result:
        assert [p.service_host for p in picks[1:]] == [
            'host3', 'host2', 'host1']


def test_no_alternates_unless_asked(ctx):
    _hosts(ctx, 1024, 2048)
    result = _driver(ctx).select_destinations(ctx, seed.make_spec())
    assert [len(picks) for picks in result] == [1]


def test_anti_affinity_spreads_a_multi_instance_request(ctx):
    _hosts(ctx, 4096, 4096, 4096)
    group = group_obj.InstanceGroup(uuid=str(uuid.uuid4()),
                                    policies=['anti-affinity'], members=[],
                                    hosts=[])
    spec = seed.make_spec(num_instances=3, instance_group=group)
    assert sorted(_chosen(_driver(ctx).select_destinations(ctx, spec))) == [
        'host0', 'host1', 'host2']
    assert sorted(group.hosts) == ['host0', 'host1', 'host2']


def test_anti_affinity_cannot_fit_more_than_hosts(ctx):
    _hosts(ctx, 4096, 4096)
    group = group_obj.InstanceGroup(uuid=str(uuid.uuid4()),
                                    policies=['anti-affinity'], members=[],
                                    hosts=[])
    spec = seed.make_spec(num_instances=3, instance_group=group)
    with pytest.raises(exception.NoValidHost):
        _driver(ctx).select_destinations(ctx, spec)


def test_affinity_keeps_the_group_together(ctx):
    _hosts(ctx, 4096, 8192)
    group = group_obj.InstanceGroup(uuid=str(uuid.uuid4()),
                                    policies=['affinity'], members=[],
                                    hosts=[])
    spec = seed.make_spec(num_instances=3, memory_mb=2048,
                          instance_group=group)
    assert _chosen(_driver(ctx).select_destinations(ctx, spec)) == [
        'host1'] * 3


def _soft_group(ctx, conf, policy, count, memory_mb=512):
    """A ``policy`` group whose ``count`` members are the instances of
    one request (Nova's API adds them before scheduling), weighed by the
    soft-affinity weighers only, over three equal hosts."""
    conf.set_override('weight_classes', [
        'scheduler.weights.affinity.ServerGroupSoftAffinityWeigher',
        'scheduler.weights.affinity.ServerGroupSoftAntiAffinityWeigher'],
        group='filter_scheduler')
    _hosts(ctx, 8192, 8192, 8192)
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    group = group_obj.InstanceGroup(uuid=str(uuid.uuid4()),
                                    policies=[policy], members=list(uuids),
                                    hosts=[])
    return seed.make_spec(num_instances=count, memory_mb=memory_mb,
                          instance_group=group), uuids


@pytest.mark.parametrize('seed_value', range(5))
def test_soft_anti_affinity_spreads_one_request(ctx, conf, seed_value):
    """Each member counts on its host for the next member of the same
    request (as Nova adds it when it consumes the host): three members,
    three hosts with room, three hosts used."""
    conf.set_override('random_seed', seed_value, group='scheduler')
    conf.set_override('shuffle_best_same_weighed_hosts', True,
                      group='filter_scheduler')
    spec, uuids = _soft_group(ctx, conf, 'soft-anti-affinity', 3)
    chosen = _chosen(_driver(ctx).select_destinations(ctx, spec, uuids))
    assert sorted(chosen) == ['host0', 'host1', 'host2']


@pytest.mark.parametrize('seed_value', range(5))
def test_soft_affinity_keeps_one_request_together(ctx, conf, seed_value):
    conf.set_override('random_seed', seed_value, group='scheduler')
    conf.set_override('shuffle_best_same_weighed_hosts', True,
                      group='filter_scheduler')
    spec, uuids = _soft_group(ctx, conf, 'soft-affinity', 2)
    chosen = _chosen(_driver(ctx).select_destinations(ctx, spec, uuids))
    assert len(set(chosen)) == 1


def test_a_failed_request_leaves_no_instance_on_its_hosts(ctx, conf):
    """The members a refused request counted on their hosts are dropped
    with its consumption."""
    spec, uuids = _soft_group(ctx, conf, 'soft-anti-affinity', 4,
                              memory_mb=7000)   # one per host
    driver = _driver(ctx)
    states = driver.host_manager.get_all_host_states(ctx)
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(ctx, spec, uuids)
    assert all(not set(uuids) & set(state.instances) for state in states)
    assert not driver.host_manager.table.instance_counts(uuids).any()


def test_the_instances_of_a_claimed_request_stay_on_their_hosts(ctx, conf):
    """Once its claims are taken, a request's instances count on their
    hosts until the hosts report, whatever casts come meanwhile."""
    spec, uuids = _soft_group(ctx, conf, 'soft-anti-affinity', 3)
    driver = _driver(ctx)
    chosen = _chosen(driver.select_destinations(ctx, spec, uuids))
    driver.host_manager.delete_instance_info(ctx, chosen[0],
                                             str(uuid.uuid4()))
    states = {s.host: s for s in
              driver.host_manager.get_all_host_states(ctx)}
    assert uuids[0] in states[chosen[0]].instances


def test_an_instance_counted_on_its_host_carries_its_flavor(ctx, conf):
    """TypeAffinityFilter reads the flavor of a host's instances: the
    first instance of a request, counted on its host, is of the
    request's flavor, so the second may join it."""
    conf.set_override('enabled_filters', ['TypeAffinityFilter'],
                      group='filter_scheduler')
    _hosts(ctx, 8192)
    uuids = [str(uuid.uuid4()) for _ in range(2)]
    spec = seed.make_spec(num_instances=2, instance_uuid=uuids[0],
                          project_id='project-t')
    driver = _driver(ctx)
    assert _chosen(driver.select_destinations(ctx, spec, uuids)) == [
        'host0', 'host0']
    placed = driver.host_manager.host_state_map['host0', 'host0'].instances
    assert placed[uuids[1]].instance_type_id == spec.flavor.id
    assert placed[uuids[1]].project_id == 'project-t'


def test_retry_filter_skips_tried_hosts(ctx):
    _hosts(ctx, 4096, 8192)
    retry = request_spec.SchedulerRetries.from_dict(
        {'num_attempts': 1, 'hosts': [['host1', 'host1']]})
    spec = seed.make_spec(retry=retry)
    assert _chosen(_driver(ctx).select_destinations(ctx, spec)) == ['host0']


def test_forced_host_skips_filters_but_not_weighing(ctx):
    _hosts(ctx, 1024, 2048)
    spec = seed.make_spec(memory_mb=100000, force_hosts=['HOST0'])
    assert _chosen(_driver(ctx).select_destinations(ctx, spec)) == ['host0']


def test_limits_written_by_filters(ctx, conf):
    conf.set_override('initial_ram_allocation_ratio', 1.5)   # Ocata's
    _hosts(ctx, 4096)
    picks = _driver(ctx).select_destinations(ctx, seed.make_spec())[0]
    assert picks[0].limits.to_dict() == {'memory_mb': 6144}


def test_notifications_start_and_end(ctx):
    _hosts(ctx, 4096)
    transport = messaging.get_notification_transport(CONF, url='fake://')
    notifier = messaging.Notifier(transport, publisher_id='scheduler.test',
                                  driver='test')
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    spec = seed.make_spec()
    _driver(ctx, notifier).select_destinations(ctx, spec)
    events = [(n[1]['event_type'], n[1]['payload'])
              for n in _impl_test.NOTIFICATIONS]
    assert [e[0] for e in events] == ['scheduler.select_destinations.start',
                                      'scheduler.select_destinations.end']
    payload = events[0][1]['request_spec']
    assert payload['num_instances'] == 1
    assert payload['instance_properties']['uuid'] == spec.instance_uuid
    _impl_test.reset()


def test_no_end_notification_on_no_valid_host(ctx):
    transport = messaging.get_notification_transport(CONF, url='fake://')
    notifier = messaging.Notifier(transport, publisher_id='scheduler.test',
                                  driver='test')
    from oslo_messaging.notify import _impl_test
    _impl_test.reset()
    with pytest.raises(exception.NoValidHost):
        _driver(ctx, notifier).select_destinations(ctx, seed.make_spec())
    assert [n[1]['event_type'] for n in _impl_test.NOTIFICATIONS] == [
        'scheduler.select_destinations.start']
    _impl_test.reset()


def test_rpc_notifier_publisher_id():
    transport = messaging.get_notification_transport(CONF, url='fake://')
    assert rpc.get_notifier(transport, 'sched-7').publisher_id == \
        'scheduler.sched-7'


def test_rpc_notifier_is_disabled_without_a_driver(conf):
    """No ``[oslo_messaging_notifications] driver``: the notifier says it
    is disabled, so the driver builds no payload; with one, enabled."""
    transport = messaging.get_notification_transport(CONF, url='fake://')
    conf.set_override('driver', [], group='oslo_messaging_notifications')
    assert not rpc.get_notifier(transport, 'sched-7').is_enabled()
    conf.set_override('driver', ['test'], group='oslo_messaging_notifications')
    assert rpc.get_notifier(transport, 'sched-7').is_enabled()


# -- claims ---------------------------------------------------------------


def _claimed(ctx):
    from scheduler.db import claims

    return collections.Counter(row['host'] for row in claims.get_claims(ctx))


def test_a_request_is_claimed_in_one_transaction(ctx, monkeypatch):
    from scheduler.db import claims

    _hosts(ctx, 8192, 6000)
    calls = []
    real = claims.claim_many
    monkeypatch.setattr(claims, 'claim_many', lambda *args, **kwargs: (
        calls.append(args[1]) or real(*args, **kwargs)))
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    _driver(ctx).select_destinations(
        ctx, seed.make_spec(memory_mb=2048), uuids)
    assert len(calls) == 1
    assert sorted(item.instance_uuid for item in calls[0]) == sorted(uuids)
    assert _claimed(ctx) == {'host0': 2, 'host1': 1}


def test_lost_race_places_again_claiming_each_instance(ctx, monkeypatch,
                                                      conf):
    """Another scheduler takes host0's room between our read and our
    claim: the request still succeeds, on host1, and the group's hosts
    are those of the second placement only."""
    conf.set_override('initial_ram_allocation_ratio', 1.5)   # Ocata's
    from scheduler.db import api as db
    from scheduler.db import claims

    _hosts(ctx, 4096, 3072)
    host0 = db.compute_node_get_all(ctx)[0]
    real = claims.claim_many
    raced = []

    def rival_first(context, wanted, *args, **kwargs):
        if not raced:
            raced.append(True)
            for _ in range(2):   # 6000 of host0's 6144 MiB (ratio 1.5)
                assert claims.claim(context, host0['id'],
                                    str(uuid.uuid4()), 1, 3000, 1)
        return real(context, wanted, *args, **kwargs)

    monkeypatch.setattr(claims, 'claim_many', rival_first)
    group = group_obj.InstanceGroup(
        uuid=str(uuid.uuid4()), policies=['anti-affinity'], hosts=[],
        members=[])
    spec = seed.make_spec(memory_mb=2048)
    spec.instance_group = group
    selections = _driver(ctx).select_destinations(ctx, spec)
    assert _chosen(selections) == ['host1']
    assert group.hosts == ['host1']
    assert _claimed(ctx) == {'host0': 2, 'host1': 1}
    assert claims.overcommitted_nodes(ctx) == []
    assert claims.unbalanced_nodes(ctx) == []


def test_no_valid_host_leaves_no_claim(ctx):
    from scheduler.db import claims

    _hosts(ctx, 4096, 2048)
    with pytest.raises(exception.NoValidHost):
        _driver(ctx).select_destinations(
            ctx, seed.make_spec(num_instances=5, memory_mb=2048))
    assert claims.claims_count(ctx) == 0


def test_forced_host_takes_no_claim(ctx):
    from scheduler.db import claims

    _hosts(ctx, 4096, 2048)
    spec = seed.make_spec(memory_mb=1024)
    spec.force_hosts = ['host1']
    assert _chosen(_driver(ctx).select_destinations(ctx, spec)) == ['host1']
    assert claims.claims_count(ctx) == 0
