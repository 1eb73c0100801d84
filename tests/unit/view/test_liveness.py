"""The liveness of the view's copies of service rows: which services
``suspects.Suspects`` names for a re-read, and the host manager
reading them again by id, on a real SQLite database, when their
heartbeat came too late for the change reads; and the soak's lagging
heartbeats and its ``hosts_up`` check."""

import datetime

import pytest
import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler.db import api
from scheduler.db import changes as db_changes
from scheduler.db import hosts as db_hosts
from scheduler.view import host_manager
from scheduler.view import refresh
from scheduler.view import suspects
from scheduler.view.host_table import HostTable
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import soak_heartbeats
from scheduler_tools.bench import soak_measure
from scheduler_tools.bench import soak_verdict
from tests.unit import fakes

DOWN_TIME_S = 60


def _ago(seconds, now=None):
    return (now or timeutils.utcnow()) - datetime.timedelta(seconds=seconds)


def _state(host, node=None, **service):
    state = fakes.fake_host_state(host, node or host)
    state.service = fakes.fake_service(host=host, **service)
    return state


@pytest.fixture
def down_time(conf):
    conf.set_override('service_down_time', DOWN_TIME_S)
    conf.set_override('report_interval', 10)


# -- Suspects -----------------------------------------------------------------

CLOSING_S = DOWN_TIME_S - suspects.RECHECK_MARGIN_S


def test_suspects_are_services_about_to_look_down_but_forced_ones(
        down_time):
    now = timeutils.utcnow()
    table = HostTable([
        _state('fresh', id=1, last_seen_up=_ago(10, now)),
        _state('closing', id=2, last_seen_up=_ago(CLOSING_S + 0.5, now)),
        _state('dead', id=3, last_seen_up=_ago(3600, now)),
        _state('disabled', id=4, last_seen_up=_ago(3600, now),
               disabled=True),
        _state('forced', id=5, last_seen_up=_ago(3600, now),
               forced_down=True),
        _state('never', id=6, last_seen_up=None, created_at=_ago(3600, now)),
        _state('ironic', 'node-a', id=7, last_seen_up=_ago(3600, now)),
        _state('ironic', 'node-b', id=7, last_seen_up=_ago(3600, now)),
        _state('young', id=8, last_seen_up=_ago(40, now)),
        _state('ahead', id=9, last_seen_up=_ago(-3600, now)),
        _state('none', id=10)])
    table.states[-1].service = None   # a node without a service
    assert suspects.Suspects().due(table, now, 100.0) == [
        2, 3, 4, 6, 7, 9]


def test_copies_before_the_closing_margin_are_read_a_share_per_second(
        down_time):
    """A hundred copies all 9.5 s from the closing margin: the oldest
    eleven (100 / 9.5) now, the rest at the next checks."""
    now = timeutils.utcnow()
    ages = [CLOSING_S - 9.5 - index * 1e-3 for index in range(100)]
    table = HostTable([_state('h%d' % index, id=index,
                              last_seen_up=_ago(age, now))
                       for index, age in enumerate(ages)])
    checker = suspects.Suspects()
    first = checker.due(table, now, 100.0)
    assert first == list(range(11))
    checker.read(first, 100.0)
    second = checker.due(table, now + datetime.timedelta(seconds=1), 101.0)
    assert second == list(range(11, 22))      # 89 / 8.5
    checker.read(second, 101.0)
    # At the margin, the rest.
    last = checker.due(table, now + datetime.timedelta(seconds=9.5), 109.5)
    assert last == list(range(22, 100))


def test_a_service_read_again_with_nothing_new_waits_unless_its_row_changes(
        down_time):
    now = timeutils.utcnow()
    table = HostTable([
        _state('dead', id=3, last_seen_up=_ago(3600, now)),
        _state('closing', id=2, last_seen_up=_ago(CLOSING_S + 1, now))])
    checker = suspects.Suspects()
    checker.read([2, 3], 100.0)
    # 'closing' is still up: read again at every check until it is not.
    assert checker.due(table, now, 100.5) == [2]
    wait = suspects.UNCHANGED_RECHECK_S
    assert checker.due(table, now, 100.0 + wait) == [2, 3]
    checker.read([2, 3], 200.0)
    checker.changed([3])            # a read brought a new row
    assert checker.due(table, now, 200.5) == [2, 3]
    checker.read([2, 3], 300.0)
    checker.clear()
    assert checker.due(table, now, 300.5) == [2, 3]


def test_no_paced_reads_within_the_report_interval(conf):
    """With ``service_down_time`` 15 s and heartbeats every 10 s, only
    the closing copies are read: a punctual one is up to 10 s old."""
    conf.set_override('service_down_time', 15)
    conf.set_override('report_interval', 10)
    now = timeutils.utcnow()
    table = HostTable([_state('h1', id=1, last_seen_up=_ago(11, now)),
                       _state('h2', id=2, last_seen_up=_ago(12.5, now))])
    assert suspects.Suspects().due(table, now, 100.0) == [2]


# -- the host manager ---------------------------------------------------------

@pytest.fixture
def ctx(tmp_path, conf, down_time, monkeypatch):
    """A database, a sweep at every refresh, no full read but the first.
    The sweep's window starts at the previous sweep (no ``CLOCK_MARGIN``):
    the rows seeded just before are not read again as late rows."""
    monkeypatch.setattr(refresh, 'SWEEP_INTERVAL', 0.0)
    monkeypatch.setattr(refresh, 'CLOCK_MARGIN', datetime.timedelta(0))
    conf.set_override('full_refresh_interval', 3600, 'scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'live.sqlite'))


@pytest.fixture
def reads(monkeypatch):
    """The service ids of every ``get_rows_by_ids`` call, in order."""
    asked = []
    real = db_changes.get_rows_by_ids

    def spy(context, compute_node_ids=(), service_ids=()):
        asked.append(sorted(service_ids))
        return real(context, compute_node_ids, service_ids)

    monkeypatch.setattr(db_changes, 'get_rows_by_ids', spy)
    return asked


def _up(manager):
    table = manager.table
    up = table.up_mask(timeutils.utcnow())
    return {state.host: bool(up[row]) for row, state in
            enumerate(table.states)}


def test_a_heartbeat_stamped_long_before_its_commit_is_read_by_id(ctx,
                                                                  reads):
    """A heartbeat 30 s older than its commit (a stalled transaction, or
    a clock 30 s behind) is in no change read nor in the sweep's window;
    the host's copy, about to look down, is read again by id."""
    seed.add_compute(ctx, 'late', last_seen_up=_ago(DOWN_TIME_S - 2))
    seed.add_compute(ctx, 'punctual')
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    service = db_hosts.compute_service_get(ctx, 'late')
    stamp = _ago(30)
    writers.service_update(ctx, service['id'], {'last_seen_up': stamp,
                                                'updated_at': stamp})
    manager.get_all_host_states(ctx)
    assert reads == [[service['id']]]
    state = manager.refresher.states_of(['late'])[0]
    assert state.service['last_seen_up'] == stamp
    assert _up(manager) == {'late': True, 'punctual': True}
    # Fresh again: no more reads.
    manager.get_all_host_states(ctx)
    assert reads == [[service['id']]]


def test_a_dead_host_costs_a_read_per_recheck_interval(ctx, reads,
                                                       monkeypatch):
    seed.add_compute(ctx, 'dead', last_seen_up=_ago(3600))
    seed.add_compute(ctx, 'alive')
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    dead = manager.refresher.states_of(['dead'])[0].service['id']
    for _ in range(3):
        manager.get_all_host_states(ctx)
    assert reads == [[dead]]
    assert _up(manager) == {'dead': False, 'alive': True}
    monkeypatch.setattr(suspects, 'UNCHANGED_RECHECK_S', 0.0)
    manager.get_all_host_states(ctx)
    assert reads == [[dead], [dead]]


def test_a_dead_host_back_with_a_late_heartbeat_is_up_at_the_recheck(
        ctx, reads, monkeypatch):
    seed.add_compute(ctx, 'back', last_seen_up=_ago(3600))
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    manager.get_all_host_states(ctx)     # read again: still down
    assert _up(manager) == {'back': False}
    service = db_hosts.compute_service_get(ctx, 'back')
    stamp = _ago(20)
    writers.service_update(ctx, service['id'], {'last_seen_up': stamp,
                                                'updated_at': stamp})
    manager.get_all_host_states(ctx)
    assert _up(manager) == {'back': False}   # waits for the recheck
    monkeypatch.setattr(suspects, 'UNCHANGED_RECHECK_S', 0.0)
    manager.get_all_host_states(ctx)
    assert _up(manager) == {'back': True}
    assert len(reads) == 2


def test_a_deleted_service_found_by_the_recheck_makes_a_full_read(ctx):
    seed.add_compute(ctx, 'gone', last_seen_up=_ago(DOWN_TIME_S - 1))
    seed.add_compute(ctx, 'stays')
    manager = host_manager.HostManager(ctx)
    manager.get_all_host_states(ctx)
    service = db_hosts.compute_service_get(ctx, 'gone')
    # Deleted by a writer whose clock is ten minutes behind.
    with api.context_manager.writer.using(ctx) as session:
        session.execute(sa.update(db_hosts.SERVICES).where(
            db_hosts.SERVICES.c.id == service['id']).values(
            deleted=service['id'], deleted_at=_ago(600),
            updated_at=db_hosts.SERVICES.c.updated_at))
    assert [s.host for s in manager.get_all_host_states(ctx)] == ['stays']


# -- the soak's heartbeats and its hosts_up check -----------------------------

def test_the_soak_beats_every_service_with_a_lagging_stamp(ctx):
    seed.add_compute(ctx, 'h1', last_seen_up=_ago(3600))
    seed.add_compute(ctx, 'h2', last_seen_up=_ago(3600))
    before = timeutils.utcnow()
    assert soak_heartbeats.beat(ctx, lag_s=3.0) >= 0.0
    after = timeutils.utcnow()
    for host in ('h1', 'h2'):
        service = db_hosts.compute_service_get(ctx, host)
        assert (_ago(3, before) <= service['last_seen_up'] ==
                service['updated_at'] <= _ago(3, after))
        assert service['report_count'] == 2


def test_the_soak_checks_the_fewest_hosts_up_a_view_held():
    text = '\n'.join([
        '# TYPE scheduler_hosts_up gauge', 'scheduler_hosts_up %d',
        '# TYPE scheduler_hosts_known gauge', 'scheduler_hosts_known 100'])
    one = soak_measure.parse_metrics(text % 98)
    two = soak_measure.parse_metrics(text % 95)
    assert (one['hosts_up'], one['hosts_known']) == (98, 100)
    combined = soak_measure.combine_metrics([one, None, two])
    assert (combined['hosts_up'], combined['hosts_known']) == (95, 200)
    # The first sample is taken before the load (and before the first
    # decision): it does not count.
    samples = [{'hosts_up': 0}, {'hosts_up': 99}, {'hosts_up': None},
               {'hosts_up': 98}]
    assert soak_verdict.fewest_up(samples) == 98
    assert soak_verdict.fewest_up(samples[:1]) is None
    clean = {'lost': [], 'leaked': [], 'misplaced': [],
             'instances_match': True}
    found = {'overcommitted': [], 'unbalanced': []}
    probe = {'measured': 1, 'timeouts': 0}

    def checks(expected_up):
        return soak_verdict.verdict(samples, clean, found, {'errors': 0},
                                    probe, 0, 0.0, 5.0, expected_up)[0]
    assert checks(98)[soak_verdict.HOSTS_UP]['passed']
    assert not checks(99)[soak_verdict.HOSTS_UP]['passed']
    assert soak_verdict.HOSTS_UP not in checks(None)
