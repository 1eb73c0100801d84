"""ReleaseQueue: releases of deleted instances' claims taken together."""

import threading
import time

import pytest

from scheduler.db import claim_releases


class Recorder:
    """A ``release_many`` that records its batches; the first call can be
    held until ``go`` is set."""

    def __init__(self, hold_first=False):
        self.batches = []
        self.entered = threading.Event()
        self.go = threading.Event()
        if not hold_first:
            self.go.set()

    def __call__(self, context, uuids):
        self.batches.append(list(uuids))
        self.entered.set()
        self.go.wait(10)
        return 0


def test_a_lone_release_is_done_before_it_returns():
    recorder = Recorder()
    queue = claim_releases.ReleaseQueue(recorder)
    queue.release('ctx', 'u1')
    queue.release('ctx', 'u2')
    assert recorder.batches == [['u1'], ['u2']]


def test_releases_queued_during_one_are_released_together_by_it():
    recorder = Recorder(hold_first=True)
    queue = claim_releases.ReleaseQueue(recorder)
    first = threading.Thread(target=queue.release, args=('ctx', 'u0'))
    first.start()
    assert recorder.entered.wait(10)
    others = [threading.Thread(target=queue.release, args=('ctx', 'u%d' % i))
              for i in range(1, 6)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(10)
        assert not thread.is_alive()  # they only queued
    recorder.go.set()
    first.join(10)
    assert recorder.batches[0] == ['u0']
    assert sorted(recorder.batches[1]) == ['u%d' % i for i in range(1, 6)]
    assert len(recorder.batches) == 2


@pytest.mark.parametrize('delay_s', [0.0, 0.01])
def test_no_uuid_is_left_behind_under_concurrency(delay_s):
    recorder = Recorder()
    queue = claim_releases.ReleaseQueue(recorder, delay_s=delay_s)
    uuids = ['u%d' % i for i in range(2000)]
    threads = [threading.Thread(target=lambda part=uuids[i::8]: [
        queue.release('ctx', uuid) for uuid in part]) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    def released():
        return sorted(uuid for batch in list(recorder.batches)
                      for uuid in batch)
    assert _wait_until(lambda: released() == sorted(uuids))
    if delay_s:
        assert len(recorder.batches) < len(uuids)


@pytest.mark.parametrize('delay_s', [0.0, 0.01])
def test_a_database_error_is_logged_and_later_releases_go_on(caplog,
                                                              delay_s):
    calls = []

    def failing_once(context, uuids):
        calls.append(list(uuids))
        if len(calls) == 1:
            raise RuntimeError('database gone')

    queue = claim_releases.ReleaseQueue(failing_once, delay_s=delay_s)
    queue.release('ctx', 'u1')
    assert _wait_until(lambda: calls == [['u1']])
    queue.release('ctx', 'u2')
    assert _wait_until(lambda: calls == [['u1'], ['u2']])
    assert 'Could not release the claims of 1 deleted instances' in \
        caplog.text

def _wait_until(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_with_a_delay_releases_within_it_are_taken_together_later():
    recorder = Recorder()
    queue = claim_releases.ReleaseQueue(recorder, delay_s=0.3)
    started = time.monotonic()
    for i in range(5):
        queue.release('ctx', 'u%d' % i)
    assert recorder.batches == []  # nothing released by the callers
    assert _wait_until(lambda: recorder.batches)
    assert time.monotonic() - started >= 0.3
    assert recorder.batches == [['u%d' % i for i in range(5)]]
    # The queue is idle again: the next release starts a new delay.
    queue.release('ctx', 'u5')
    assert _wait_until(lambda: len(recorder.batches) == 2)
    assert recorder.batches[1] == ['u5']

