"""scheduler.engine.deadline: a decision waiting past its deadline is
abandoned, keeps no claim, and a computing one is waited for."""

import threading
import time

import pytest

from scheduler import exception
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.engine import deadline
from scheduler_tools import seed


def test_a_quick_decision_answers_and_an_error_travels():
    assert deadline.run(5, lambda: 'answer') == 'answer'
    with pytest.raises(KeyError):
        deadline.run(5, lambda: {}['missing'])
    assert deadline.run(0, lambda: threading.current_thread().name) == (
        threading.current_thread().name)


def test_a_waiting_decision_is_abandoned():
    release = threading.Event()
    seen = []

    def decide():
        release.wait(10)
        seen.append(deadline.current().abandoned)
        deadline.check()

    started = time.monotonic()
    with pytest.raises(exception.DatabaseUnavailable):
        deadline.run(0.2, decide)
    assert time.monotonic() - started < 0.2 + 2 * deadline.PROGRESS_WINDOW
    release.set()
    time.sleep(0.1)
    assert seen == [True]


def test_a_computing_decision_is_waited_for():
    def decide():
        until = time.monotonic() + 1.0
        while time.monotonic() < until:
            pass
        return 'done'

    assert deadline.run(0.1, decide) == 'done'


def test_a_decision_waiting_on_placement_is_answered_placement_unavailable():
    release = threading.Event()

    def decide():
        with deadline.outside('Placement', exception.PlacementUnavailable):
            release.wait(10)

    try:
        with pytest.raises(exception.PlacementUnavailable,
                           match='Placement did not answer within'):
            deadline.run(0.2, decide)
    finally:
        release.set()


def test_a_decision_whose_placement_calls_come_back_is_waited_for():
    def decide():
        for _ in range(8):
            with deadline.outside('Placement',
                                  exception.PlacementUnavailable):
                time.sleep(0.1)
        return 'claimed'

    assert deadline.run(0.1, decide) == 'claimed'


def test_finishing_and_abandoning_exclude_each_other():
    finished = deadline.Deadline(1)
    assert finished.finish() and not finished.abandon()
    abandoned = deadline.Deadline(1)
    assert abandoned.abandon() and not abandoned.finish()
    with pytest.raises(deadline.Abandoned):
        abandoned.check()


@pytest.fixture
def ctx(tmp_path, conf):
    return seed.use_database('sqlite:///%s' % (tmp_path / 'dl.sqlite'))


def test_an_abandoned_decision_releases_the_claims_it_committed(ctx):
    """The claims commit (SQLite: in claim itself), then the decision
    stalls past its deadline: its caller is refused, and once it goes on
    its claims are released and its consumption forgotten."""
    seed.add_compute(ctx, 'host0', memory_mb=4096)
    driver = filter_scheduler.FilterScheduler(ctx)
    claim = driver.reservation.claim
    resumed = threading.Event()

    def stalling_claim(*args, **kwargs):
        claim(*args, **kwargs)
        assert claims.claims_count(ctx) == 1
        time.sleep(0.8)           # waiting, not computing
        resumed.set()

    driver.reservation.claim = stalling_claim
    spec = seed.make_spec(memory_mb=1024)
    with pytest.raises(exception.DatabaseUnavailable):
        deadline.run(0.2, lambda: driver.select_destinations(ctx, spec))
    assert resumed.wait(5)
    wait_until = time.monotonic() + 5
    while claims.claims_count(ctx) and time.monotonic() < wait_until:
        time.sleep(0.05)
    assert claims.claims_count(ctx) == 0
    state = driver.host_manager.get_all_host_states(ctx)[0]
    assert state.free_ram_mb == 4096
