"""Requests that queue while a worker decides are decided together.

``scheduler.engine.batching.Batcher`` on its own (threads queued behind
a held lock), then the FilterScheduler: requests queued together get
exactly the answers of the same requests decided one by one in their
arrival order (on an identical database), from one refresh of the view;
a lost race in a batch decides each request again on its own; a request
given up while it waited is skipped.
"""

import functools
import itertools
import threading
import time

import pytest

from scheduler import drivers
from scheduler import exception
from scheduler.db import claims
from scheduler.engine import batching
from scheduler.engine import deadline
from scheduler.engine import reservation
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import workload


def _call_queued(lock, queue, calls):
    """Hold ``lock``; start one thread per function of ``calls``, each
    once the previous one has queued in ``queue`` (so the arrival order
    is the list's); release the lock and wait for them.  Returns their
    outcomes: ``('ok', result)`` or ``('error', exception)``."""
    results = [None] * len(calls)

    def run(index, call):
        try:
            results[index] = ('ok', call())
        except Exception as exc:
            results[index] = ('error', exc)
    with lock:
        threads = []
        for index, call in enumerate(calls):
            thread = threading.Thread(target=run, args=(index, call))
            thread.start()
            threads.append(thread)
            _wait_until(lambda count=index + 1: len(queue) >= count)
    for thread in threads:
        thread.join(30)
    return results


def _wait_until(condition, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, 'timed out'
        time.sleep(0.001)


def test_queued_requests_form_one_batch_in_arrival_order():
    lock = threading.RLock()
    batches = []

    def decide(tickets):
        batches.append([t.request for t in tickets])
        for ticket in tickets:
            if ticket.request == 'bad':
                ticket.fail(ValueError('bad request'))
            else:
                ticket.succeed(ticket.request.upper())

    batcher = batching.Batcher(lock, decide, max_batch=10)
    results = _call_queued(lock, batcher._queue, [
        functools.partial(batcher.submit, request)
        for request in ['a', 'bad', 'c']])
    assert batches == [['a', 'bad', 'c']]
    assert results[0] == ('ok', 'A') and results[2] == ('ok', 'C')
    assert results[1][0] == 'error' and str(results[1][1]) == 'bad request'


def test_a_lone_request_is_decided_at_once_and_batches_are_bounded():
    lock = threading.RLock()
    batches = []

    def decide(tickets):
        batches.append([t.request for t in tickets])
        for ticket in tickets:
            ticket.succeed(ticket.request)

    batcher = batching.Batcher(lock, decide, max_batch=2)
    assert batcher.submit('alone') == 'alone'
    results = _call_queued(lock, batcher._queue, [
        functools.partial(batcher.submit, request) for request in 'wxyz'])
    assert batches[0] == ['alone']
    assert batches[1:] == [['w', 'x'], ['y', 'z']]
    assert [results[i] for i in range(4)] == [('ok', c) for c in 'wxyz']


def test_a_ticket_left_without_outcome_fails():
    lock = threading.RLock()
    batcher = batching.Batcher(lock, lambda tickets: None, max_batch=4)
    with pytest.raises(RuntimeError, match='without an outcome'):
        batcher.submit('forgotten')


# -- the FilterScheduler -----------------------------------------------------

@pytest.fixture(scope='module')
def database_urls(tmp_path_factory):
    directory = tmp_path_factory.mktemp('batching')
    urls = ('sqlite:///%s' % (directory / ('db%d.sqlite' % i))
            for i in itertools.count())
    yield lambda: next(urls)
    writers.reset_engine()


def _driver(url, hosts=40, ram_divisor=16):
    from scheduler_tools.bench import load_fleet
    ctx = seed.use_database(url)
    fleet = load_fleet.load_hosts(hosts, 5, ram_divisor)
    workload.seed_hosts(ctx, fleet)
    return ctx, drivers.load_driver(ctx, name='filter_scheduler'), fleet


def _outcome(result):
    kind, value = result
    if kind == 'error':
        return type(value).__name__
    return [[(s.service_host, s.nodename) for s in alternates]
            for alternates in value]


def _requests(fleet, count):
    bench = workload.Workload(fleet, 5)
    sizes = itertools.islice(itertools.cycle([1, 3, 1, 2, 8]), count)
    return [bench.requests(n, 1, 'batching-%d' % index)[0]
            for index, n in enumerate(sizes)]


def _concurrent(ctx, driver, requests):
    """Queue ``requests`` behind the view's lock, in order; release it;
    return their outcomes and how many refreshes the batch made."""
    refreshes = []
    read = driver.host_manager.get_all_host_states

    def counting(context):
        refreshes.append(1)
        return read(context)
    driver.host_manager.get_all_host_states = counting
    results = _call_queued(driver.host_manager.lock, driver.batcher._queue, [
        functools.partial(driver.select_destinations, ctx, request.spec,
                          request.instance_uuids, return_alternates=True)
        for request in requests])
    return [_outcome(result) for result in results], refreshes


def _one_by_one(ctx, driver, requests):
    outcomes = []
    for request in requests:
        try:
            outcomes.append(_outcome(('ok', driver.select_destinations(
                ctx, request.spec, request.instance_uuids,
                return_alternates=True))))
        except Exception as exc:
            outcomes.append(_outcome(('error', exc)))
    return outcomes


@pytest.mark.parametrize('count', [2, 12])
def test_a_batch_answers_as_one_by_one_in_arrival_order(database_urls,
                                                        count):
    ctx, driver, fleet = _driver(database_urls())
    expected = _one_by_one(ctx, driver, _requests(fleet, count))
    ctx, driver, fleet = _driver(database_urls())
    outcomes, refreshes = _concurrent(ctx, driver, _requests(fleet, count))
    assert outcomes == expected
    assert len(refreshes) == 1


def test_the_fleet_fills_up_in_a_batch_as_one_by_one(database_urls):
    """Small hosts: later requests of the batch get NoValidHost exactly
    when they would one by one."""
    ctx, driver, fleet = _driver(database_urls(), hosts=6, ram_divisor=64)
    expected = _one_by_one(ctx, driver, _requests(fleet, 20))
    assert 'NoValidHost' in expected
    ctx, driver, fleet = _driver(database_urls(), hosts=6, ram_divisor=64)
    outcomes, _ = _concurrent(ctx, driver, _requests(fleet, 20))
    assert outcomes == expected


def test_a_lost_race_decides_each_request_again(database_urls,
                                                monkeypatch):
    """The batch's second claim loses a race.  On SQLite each request's
    claims commit on their own: the first request keeps its answer, the
    others are decided again, each on its own refresh (which reads
    their nodes again, as after any lost race).  Every request is
    answered and the claims are exactly the instances placed."""
    ctx, driver, fleet = _driver(database_urls())
    claim = driver.reservation.claim
    calls = []

    def racing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise reservation.LostRace()
        return claim(*args, **kwargs)
    monkeypatch.setattr(driver.reservation, 'claim', racing)
    requests = _requests(fleet, 4)
    outcomes, refreshes = _concurrent(ctx, driver, requests)
    assert all(isinstance(outcome, list) for outcome in outcomes)
    assert len(refreshes) == 1 + 3
    placed = sum(len(outcome) for outcome in outcomes)
    assert claims.claims_count(ctx) == placed == sum(
        len(request.instance_uuids) for request in requests)


def test_a_request_given_up_while_queued_is_skipped(database_urls):
    ctx, driver, fleet = _driver(database_urls())
    requests = _requests(fleet, 3)
    gone = deadline.Deadline(60)
    assert gone.abandon()

    def call(request, request_deadline):
        with deadline.acting_for(request_deadline):
            return driver.select_destinations(ctx, request.spec,
                                              request.instance_uuids)
    results = _call_queued(driver.host_manager.lock, driver.batcher._queue, [
        functools.partial(call, request, gone if index == 1 else None)
        for index, request in enumerate(requests)])
    assert results[0][0] == results[2][0] == 'ok'
    assert isinstance(results[1][1], deadline.Abandoned)
    assert not isinstance(results[0][1], exception.NoValidHost)
