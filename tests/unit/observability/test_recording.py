"""What the service records, through a real SchedulerManager on SQLite:
each decision's outcome, the filter that emptied the list, the hosts
each filter removed, the host view, and the claims that lost a race."""

import datetime
import uuid

import oslo_messaging as messaging
import pytest
from oslo_utils import timeutils

from scheduler import exception
from scheduler.conf import scheduler as scheduler_conf
from scheduler.db import claims
from scheduler.engine import reservation
from scheduler.observability import metrics
from scheduler.resources import capacity
from scheduler.server import manager
from scheduler_tools import seed
from scheduler_tools import writers


@pytest.fixture
def endpoint(tmp_path, in_process, conf):
    """A manager over host0 and host1, host2 disabled, host3 down; and
    the registry of what it records.  The Ocata-era filters, whose
    removals these tests count (Nova 34's defaults have no RamFilter or
    AvailabilityZoneFilter)."""
    conf.set_override('enabled_filters', scheduler_conf.NEWTON_DEFAULT_FILTERS,
                      'filter_scheduler')
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'r.sqlite'))
    for host in ('host0', 'host1'):
        seed.add_compute(ctx, host)
    seed.add_compute(ctx, 'host2', disabled=True)
    seed.add_compute(ctx, 'host3', last_seen_up=timeutils.utcnow() -
                     datetime.timedelta(days=1))
    yield ctx, manager.SchedulerManager(ctx), in_process
    writers.reset_engine()


def _count(registry, name, **labels):
    return registry.get_sample_value(name, labels) or 0


def _fails(mgr, ctx, cls, spec):
    with pytest.raises(messaging.ExpectedException) as info:
        mgr.select_destinations(ctx, spec_obj=spec)
    assert isinstance(info.value.exc_info[1], cls)


def test_decisions_by_outcome(endpoint):
    ctx, mgr, registry = endpoint
    assert len(mgr.select_destinations(
        ctx, spec_obj=seed.make_spec(num_instances=2))) == 2
    _fails(mgr, ctx, exception.NoValidHost,
           seed.make_spec(availability_zone='nowhere'))
    _fails(mgr, ctx, exception.InvalidRequestSpec,
           seed.make_spec(memory_mb=-1))
    decisions = 'scheduler_decisions_total'
    assert [_count(registry, decisions, outcome=outcome)
            for outcome in metrics.OUTCOMES] == [1, 1, 1, 0, 0, 0]
    assert _count(registry, 'scheduler_instances_placed_total') == 2
    assert _count(registry,
                  'scheduler_decision_duration_seconds_count') == 3


@pytest.mark.parametrize('spec, culprit', [
    (dict(availability_zone='nowhere'), 'AvailabilityZoneFilter'),
    (dict(memory_mb=10 ** 6), 'ClaimCapacityFilter'),
    (dict(force_hosts=['no-such-host']), metrics.NO_FILTER),
    # The third instance: host0 and host1 hold one each.
    (dict(num_instances=3, memory_mb=16000), 'ClaimCapacityFilter'),
])
def test_no_valid_host_by_the_filter_that_emptied_the_list(
        endpoint, spec, culprit):
    ctx, mgr, registry = endpoint
    _fails(mgr, ctx, exception.NoValidHost, seed.make_spec(**spec))
    assert _count(registry, 'scheduler_no_valid_host_total',
                  filter=culprit) == 1


def test_hosts_removed_per_filter(endpoint):
    ctx, mgr, registry = endpoint
    mgr.select_destinations(ctx, spec_obj=seed.make_spec(num_instances=2))
    removed = 'scheduler_filter_removed_hosts_total'
    # Once per request: the disabled host and the one down.
    assert _count(registry, removed, filter='ComputeFilter') == 2
    assert registry.get_sample_value(removed, {'filter': 'RamFilter'}) == 0


def test_the_host_view(endpoint):
    ctx, mgr, registry = endpoint
    mgr.select_destinations(ctx, spec_obj=seed.make_spec())
    mgr.select_destinations(ctx, spec_obj=seed.make_spec())
    assert [_count(registry, 'scheduler_hosts_' + name)
            for name in ('known', 'up', 'disabled')] == [4, 3, 1]
    assert 0 <= _count(registry, 'scheduler_view_staleness_seconds') < 1
    reads = 'scheduler_view_read_duration_seconds_count'
    # The first decision reads every row, the next the changed ones.
    assert _count(registry, reads, read='full') == 1
    assert _count(registry, reads, read='changes') == 1


def test_claims_that_lost_a_race(endpoint):
    """Another scheduler took host0's room behind this view's back: the
    claims of the request, and one instance's, are refused."""
    ctx, mgr, registry = endpoint
    states = mgr.host_manager.get_all_host_states(ctx)
    host0 = next(state for state in states if state.host == 'host0')
    while claims.claim(ctx, host0.compute_id, str(uuid.uuid4()), 0, 1024,
                       0):
        pass
    spec = seed.make_spec(memory_mb=1024)
    with pytest.raises(reservation.LostRace):
        reservation.SqlReservation().claim(ctx, spec, [host0],
                                           [str(uuid.uuid4())])
    reservation.log_refusal(ctx, host0, capacity.claim_amounts(spec))
    assert _count(registry, 'scheduler_claim_races_lost_total') == 2
