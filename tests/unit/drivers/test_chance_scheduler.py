"""ChanceScheduler against a real SQLite database."""

import datetime

import pytest
from oslo_utils import timeutils

from scheduler import exception
from scheduler.drivers import chance_scheduler
from scheduler_tools import seed


@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('random_seed', 3, group='scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'cs.sqlite'))


def _chosen(selections):
    return [picks[0].service_host for picks in selections]


def test_only_live_enabled_hosts_and_ignore_hosts(ctx):
    seed.add_compute(ctx, 'up1')
    seed.add_compute(ctx, 'up2')
    seed.add_compute(ctx, 'disabled', disabled=True)
    seed.add_compute(ctx, 'down', last_seen_up=timeutils.utcnow() -
                     datetime.timedelta(hours=1))
    driver = chance_scheduler.ChanceScheduler(ctx)
    picks = set()
    for _ in range(20):
        picks.update(_chosen(driver.select_destinations(
            ctx, seed.make_spec(ignore_hosts=['up2']))))
    assert picks == {'up1'}


def test_ignores_resources(ctx):
    seed.add_compute(ctx, 'tiny', memory_mb=1)
    result = chance_scheduler.ChanceScheduler(ctx).select_destinations(
        ctx, seed.make_spec(memory_mb=10**6))
    assert _chosen(result) == ['tiny']
    assert result[0][0].limits.to_dict() == {}


def test_distinct_hosts_when_enough(ctx):
    for i in range(3):
        seed.add_compute(ctx, 'h%d' % i)
    result = chance_scheduler.ChanceScheduler(ctx).select_destinations(
        ctx, seed.make_spec(num_instances=3))
    assert sorted(_chosen(result)) == ['h0', 'h1', 'h2']


def test_repeats_when_fewer_hosts_than_instances(ctx):
    seed.add_compute(ctx, 'only')
    result = chance_scheduler.ChanceScheduler(ctx).select_destinations(
        ctx, seed.make_spec(num_instances=3))
    assert _chosen(result) == ['only'] * 3


def test_alternates(ctx, conf):
    for i in range(5):
        seed.add_compute(ctx, 'h%d' % i)
    result = chance_scheduler.ChanceScheduler(ctx).select_destinations(
        ctx, seed.make_spec(), return_alternates=True)
    hosts = [p.service_host for p in result[0]]
    assert len(hosts) == 3 and len(set(hosts)) == 3


def test_no_live_host(ctx):
    seed.add_compute(ctx, 'off', disabled=True)
    with pytest.raises(exception.NoValidHost) as err:
        chance_scheduler.ChanceScheduler(ctx).select_destinations(
            ctx, seed.make_spec())
    assert 'Is the appropriate service running?' in str(err.value)


def test_every_host_ignored(ctx):
    seed.add_compute(ctx, 'h1')
    with pytest.raises(exception.NoValidHost) as err:
        chance_scheduler.ChanceScheduler(ctx).select_destinations(
            ctx, seed.make_spec(ignore_hosts=['h1']))
    assert 'Could not find another compute' in str(err.value)
