"""Telling this view's own claim writes from other writes to a node's row.

Nova's rule keeps a node's local consumption against a row older than
it, and after its claims commit a decision marks its consumption newer
than them, so that its own claim write is not taken for the node's usage
report.  By stamps alone, another scheduler's claim could be taken for
an older row too, and skipped (its version then held, so not read
again): on MySQL/MariaDB, whose ``DATETIME`` keeps whole seconds, a row
written 0.1 s after a consumption at 12:00:00.5 reads 12:00:00; and on
any database, a claim that came between this view's read and its own
claim is stamped before them.  A node that kept taking instances then
kept its old usage while other schedulers filled it, and every claim on
it lost its race.  Each claim bumps the row's generation once, so a row
with a later generation than this view's own claims account for is
copied.
"""

import datetime
import uuid

import pytest
from oslo_utils import timeutils

from scheduler.db import api as db
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.view.host_state import HostState
from scheduler_tools import seed

NOON = datetime.datetime(2026, 1, 1, 12, 0, 0, 500000)


def _row(stamp, generation, memory_mb_used):
    return {'id': 1, 'host': 'h', 'hypervisor_hostname': 'h',
            'memory_mb': 8192, 'memory_mb_used': memory_mb_used,
            'free_ram_mb': 8192 - memory_mb_used, 'vcpus': 8,
            'vcpus_used': 0, 'local_gb': 100, 'local_gb_used': 0,
            'free_disk_gb': 100, 'updated_at': stamp,
            'generation': generation}


def _kept_after_one_claim():
    """A state copied at generation 7, then one instance consumed and
    claimed at NOON (what ``keep_consumption`` leaves)."""
    state = HostState('h', 'h')
    state.update(compute=_row(NOON - datetime.timedelta(seconds=5), 7, 0))
    state.updated = NOON
    state.own_generation = 8
    return state


def test_the_row_of_this_views_own_claim_keeps_the_consumption():
    state = _kept_after_one_claim()
    state.update(compute=_row(NOON.replace(microsecond=0), 8, 1024))
    assert (state.memory_mb_used, state.generation) == (0, 7)


def test_a_row_with_another_write_is_copied_whatever_its_stamp():
    state = _kept_after_one_claim()
    state.update(compute=_row(NOON.replace(microsecond=0), 9, 3072))
    assert (state.memory_mb_used, state.generation) == (3072, 9)
    assert state.own_generation is None


def test_without_a_kept_claim_an_older_row_is_not_copied():
    state = _kept_after_one_claim()
    state.own_generation = None     # consumed, no claim (Nova's rule)
    state.update(compute=_row(NOON.replace(microsecond=0), 9, 3072))
    assert state.memory_mb_used == 0


class _Clock:
    """``timeutils.utcnow`` stopped at NOON, moved by ``advance``."""

    def __init__(self):
        self.now = NOON

    def __call__(self, with_timezone=False):
        if with_timezone:
            return self.now.replace(tzinfo=datetime.timezone.utc)
        return self.now

    def advance(self):
        self.now += datetime.timedelta(milliseconds=100)


@pytest.fixture
def ctx(ram_scheduler_ctx):
    return ram_scheduler_ctx


@pytest.fixture
def clock(monkeypatch):
    stopped = _Clock()
    monkeypatch.setattr(timeutils, 'utcnow', stopped)
    return stopped


def _other_scheduler_claims(ctx, memory_mb):
    (node,) = db.compute_node_get_all(ctx)
    assert claims.claim(ctx, node['id'], str(uuid.uuid4()), 0, memory_mb, 0)


def _assert_current(state, ctx):
    (node,) = db.compute_node_get_all(ctx)
    assert node['claimed_memory_mb'] == 3072
    assert state.memory_mb_used == (node['memory_mb_used'] +
                                    node['claimed_memory_mb'])
    assert state.generation == node['generation']


def test_another_schedulers_claim_in_the_same_second_is_seen(ctx, clock):
    seed.add_compute(ctx, 'host0', memory_mb=8192)
    driver = filter_scheduler.FilterScheduler(ctx)
    # This view consumes 1 GiB at 12:00:00.5 and claims it.
    driver.select_destinations(ctx, seed.make_spec(memory_mb=1024))
    clock.advance()
    _other_scheduler_claims(ctx, 2048)          # at 12:00:00.6
    clock.advance()
    (state,) = driver.host_manager.get_all_host_states(ctx)
    _assert_current(state, ctx)


def test_a_claim_between_this_views_read_and_its_own_is_seen(ctx, conf):
    # The clock runs: this view's claim is stamped before its
    # consumption is kept, and the other claim before both.
    seed.add_compute(ctx, 'host0', memory_mb=8192)
    driver = filter_scheduler.FilterScheduler(ctx)
    driver.host_manager.get_all_host_states(ctx)
    _other_scheduler_claims(ctx, 2048)
    # The decision decides on the view read before that claim.
    conf.set_override('host_state_max_age', 3600, group='scheduler')
    driver.select_destinations(ctx, seed.make_spec(memory_mb=1024))
    conf.clear_override('host_state_max_age', group='scheduler')
    (state,) = driver.host_manager.get_all_host_states(ctx)
    _assert_current(state, ctx)


def test_this_views_own_claim_keeps_what_it_does_not_count(ctx, clock):
    """The claim counts vCPUs, RAM and disk, not the I/O operations a
    consumption adds, which stay until the node reports."""
    seed.add_compute(ctx, 'host0', memory_mb=8192)
    driver = filter_scheduler.FilterScheduler(ctx)
    (state,) = driver.host_manager.get_all_host_states(ctx)
    reported = state.num_io_ops
    driver.select_destinations(ctx, seed.make_spec(memory_mb=1024))
    clock.advance()
    (state,) = driver.host_manager.get_all_host_states(ctx)
    assert state.num_io_ops == reported + 1
    assert state.memory_mb_used == 1024 + (
        db.compute_node_get_all(ctx)[0]['memory_mb_used'])
