"""The recording functions of ``scheduler.observability.metrics``: off,
they write nothing; on, each one's values, added up over processes."""

import os

import pytest

from scheduler.observability import metrics


def _sample(registry, name, **labels):
    return registry.get_sample_value(name, labels)


def _record_one_of_each():
    metrics.decision(metrics.SUCCESS, 0.003, placed=2)
    metrics.decision_started()
    metrics.filtered([('RamFilter', 4, 0)])
    metrics.no_valid_host()
    metrics.host_view(5, 4, 1, 0.25)
    metrics.view_read(metrics.FULL_READ, 0.2)
    metrics.lost_race()


def test_off_nothing_is_recorded_nor_written(tmp_path, monkeypatch,
                                             restore_prometheus):
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    assert not metrics.enabled()
    _record_one_of_each()
    assert os.listdir(tmp_path) == []


def test_a_decision(recording, added_up):
    metrics.decision(metrics.SUCCESS, 0.003, placed=2)
    metrics.decision(metrics.NO_VALID_HOST, 0.5)
    registry = added_up(recording)
    assert _sample(registry, 'scheduler_decisions_total',
                   outcome='success') == 1
    assert _sample(registry, 'scheduler_decisions_total',
                   outcome='no_valid_host') == 1
    # Every outcome shows from the start.
    assert _sample(registry, 'scheduler_decisions_total',
                   outcome='error') == 0
    assert _sample(registry, 'scheduler_instances_placed_total') == 2
    assert _sample(registry,
                   'scheduler_decision_duration_seconds_count') == 2
    assert _sample(registry, 'scheduler_decision_duration_seconds_sum') == (
        pytest.approx(0.503))
    assert _sample(registry, 'scheduler_decision_duration_seconds_bucket',
                   le='0.005') == 1


def test_hosts_removed_and_the_filter_that_emptied_the_list(recording,
                                                            added_up):
    metrics.decision_started()
    # Two instances: the second's RamFilter leaves no host.
    metrics.filtered([('ComputeFilter', 10, 8), ('RamFilter', 8, 8)])
    metrics.filtered([('RamFilter', 8, 0)])
    metrics.no_valid_host()
    # Next decision: no filter ran (the prefilter left no host).
    metrics.decision_started()
    metrics.no_valid_host()
    # A filtering of no host at all empties nothing.
    metrics.decision_started()
    metrics.filtered([('ComputeFilter', 0, 0)])
    metrics.no_valid_host()
    registry = added_up(recording)
    removed = 'scheduler_filter_removed_hosts_total'
    assert _sample(registry, removed, filter='ComputeFilter') == 2
    assert _sample(registry, removed, filter='RamFilter') == 8
    nvh = 'scheduler_no_valid_host_total'
    assert _sample(registry, nvh, filter='RamFilter') == 1
    assert _sample(registry, nvh, filter=metrics.NO_FILTER) == 2


def test_the_view_and_the_races(recording, added_up):
    metrics.host_view(5, 4, 1, 0.25)
    metrics.view_read(metrics.FULL_READ, 0.2)
    metrics.view_read(metrics.CHANGES_READ, 0.001)
    metrics.view_read(metrics.CHANGES_READ, 0.002)
    metrics.lost_race()
    metrics.lost_race()
    registry = added_up(recording)
    assert [_sample(registry, 'scheduler_hosts_' + name)
            for name in ('known', 'up', 'disabled')] == [5, 4, 1]
    assert _sample(registry, 'scheduler_view_staleness_seconds') == 0.25
    reads = 'scheduler_view_read_duration_seconds_count'
    assert _sample(registry, reads, read='full') == 1
    assert _sample(registry, reads, read='changes') == 2
    assert _sample(registry, 'scheduler_claim_races_lost_total') == 2


def test_values_of_two_processes_add_up(recording, added_up):
    """A forked process (a worker) writes files of its own; counters
    add up, a gauge of the view is the latest one set."""
    metrics.decision(metrics.SUCCESS, 0.01, placed=1)
    metrics.host_view(3, 3, 0, 0.0)
    child = os.fork()
    if child == 0:      # pragma: no cover - the child
        metrics.decision(metrics.SUCCESS, 0.02, placed=3)
        metrics.host_view(4, 2, 1, 0.5)
        os._exit(0)
    assert os.waitpid(child, 0)[1] == 0
    registry = added_up(recording)
    assert _sample(registry, 'scheduler_decisions_total',
                   outcome='success') == 2
    assert _sample(registry, 'scheduler_instances_placed_total') == 4
    assert _sample(registry,
                   'scheduler_decision_duration_seconds_count') == 2
    assert _sample(registry, 'scheduler_hosts_known') == 4
    assert {name.split('_')[-1] for name in os.listdir(recording)} == {
        '%d.db' % os.getpid(), '%d.db' % child}


def test_in_process_values(in_process):
    metrics.decision(metrics.INVALID, 0.001)
    assert _sample(in_process, 'scheduler_decisions_total',
                   outcome='invalid') == 1


def test_the_view_gauges_are_due_once_a_second(recording, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(metrics.time, 'monotonic', lambda: clock[0])
    assert metrics.view_due()
    clock[0] += metrics.VIEW_INTERVAL / 2
    assert not metrics.view_due()
    clock[0] += metrics.VIEW_INTERVAL / 2
    assert metrics.view_due()
    metrics.disable()
    assert not metrics.view_due()
