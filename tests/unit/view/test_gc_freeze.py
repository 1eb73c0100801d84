"""The host view's objects are kept out of full garbage collections
(scheduler.view.gc_freeze)."""

import gc
import weakref

import pytest

from scheduler.view import gc_freeze
from scheduler.view import host_manager
from scheduler_tools import seed


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class _Cycle:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self):
        self.me = self


@pytest.fixture
def freezer(monkeypatch):
    """A fresh process-wide freezer on a clock of the test's, and the
    collector given back its frozen objects afterwards."""
    clock = _Clock()
    fresh = gc_freeze.HeapFreezer(clock)
    monkeypatch.setattr(gc_freeze, 'FREEZER', fresh)
    yield fresh, clock
    gc.unfreeze()


def _tracked(obj):
    """Whether the collector still walks ``obj`` (it is not frozen)."""
    return any(tracked is obj for tracked in gc.get_objects())


def test_the_first_full_read_freezes_what_is_alive(freezer):
    fresh, _clock = freezer
    alive = _Cycle()
    assert _tracked(alive)
    assert fresh.after_full_read(True)
    assert gc.get_freeze_count() > 0
    assert not _tracked(alive)


def test_at_most_one_freeze_a_minute(freezer):
    fresh, clock = freezer
    assert fresh.after_full_read(True)
    clock.now += gc_freeze.MIN_INTERVAL_S - 1
    later = _Cycle()
    assert not fresh.after_full_read(True)
    assert _tracked(later)
    clock.now += 1
    assert fresh.after_full_read(True)
    assert not _tracked(later)


def test_frozen_cyclic_garbage_is_reclaimed_at_the_next_freeze(freezer):
    fresh, clock = freezer
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    fresh.after_full_read(True)
    del garbage
    gc.collect()
    assert gone() is not None       # frozen: the collector does not see it
    clock.now += gc_freeze.MIN_INTERVAL_S
    fresh.after_full_read(True)
    assert gone() is None


def test_turned_off_it_gives_the_frozen_objects_back(freezer):
    fresh, _clock = freezer
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    fresh.after_full_read(True)
    fresh.after_full_read(False)     # within the minute: not rate-limited
    assert gc.get_freeze_count() == 0
    del garbage
    gc.collect()
    assert gone() is None


def _view(tmp_path, conf, enabled):
    conf.set_override('freeze_host_view', enabled, 'scheduler')
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'gc.sqlite'))
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2')
    manager = host_manager.HostManager(ctx)
    return manager.get_all_host_states(ctx)


def test_the_view_is_frozen_after_its_full_read(tmp_path, conf, freezer):
    states = _view(tmp_path, conf, True)
    assert gc.get_freeze_count() > 0
    assert not any(_tracked(state) for state in states)


def test_the_option_off_leaves_the_collector_alone(tmp_path, conf,
                                                   freezer):
    gc.unfreeze()
    states = _view(tmp_path, conf, False)
    assert gc.get_freeze_count() == 0
    assert all(_tracked(state) for state in states)
