"""Placement mode in the batcher, against a real Placement: requests that
arrive together share one refresh of the Placement view and one
``POST /allocations``, all or none per request.

A FilterScheduler runs in process with ``[scheduler] use_placement`` on
the session's Placement (tests/functional/test_placement_mode.py sets it
up the same way).  Its PlacementClient is a subclass that records every
request it sends, so the round trips counted are those Placement got;
the view's refreshes are counted on the view.  A batch is made as the
batcher makes one under load: the test holds the view's lock while the
requests queue from their threads, then lets them go.
"""

from __future__ import annotations

import threading
import time
import uuid

import fakes
import pytest
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.conf import CONF
from scheduler.drivers import filter_scheduler
from scheduler.placement import client as client_lib
from scheduler_tools import seed

pytestmark = pytest.mark.timeout(120)

PROJECT = 'project-placement-batching'
USER = 'user-placement-batching'
# The most seconds the requests of a batch may take to queue, or answer.
WAIT = 60


class CountingClient(client_lib.PlacementClient):
    """A PlacementClient recording ``(method, path, body)`` of every
    request it sends to Placement."""

    def __init__(self) -> None:
        super().__init__(conf=CONF)
        self.sent: list[tuple[str, str, object]] = []

    def _request(self, method, path, **kwargs):
        self.sent.append((method, path, kwargs.get('json')))
        return super()._request(method, path, **kwargs)

    def writes(self):
        return [(method, path) for method, path, _ in self.sent
                if method in ('PUT', 'POST')]


@pytest.fixture
def placement_conf(placement_conf):
    """The suite's ``placement_conf``, ComputeFilter alone."""
    placement_conf.set_override('enabled_filters', ['ComputeFilter'],
                                'filter_scheduler')
    return placement_conf


@pytest.fixture
def api(placement_server):
    return PlacementAPI(placement_server.url)


@pytest.fixture
def fleet(tmp_path, api, placement_conf):
    """``fleet(*nodes)``: the nodes in the scheduler's database and in
    Placement; returns ``(ctx, driver, client, refreshes)``: an in-process
    FilterScheduler in Placement mode, its CountingClient and the list
    its view's refreshes are appended to."""
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'own.sqlite'))
    drivers = []

    def make(*nodes):
        for node in nodes:
            seed.add_compute(ctx, node.name, uuid=node.uuid,
                             vcpus=node.vcpus, memory_mb=node.memory_mb,
                             local_gb=node.disk_gb)
            api.add_compute(node)
        driver = filter_scheduler.FilterScheduler(ctx)
        drivers.append(driver)
        client = CountingClient()
        driver.reservation.client = client
        driver.reservation.unsettled.client = client
        view = driver.candidates.view
        refreshes: list[float] = []
        refresh = view.refresh

        def counted():
            refreshes.append(time.monotonic())
            return refresh()
        view.refresh = counted
        return ctx, driver, client, refreshes

    yield make
    for driver in drivers:
        driver.stop()


def _node(name, memory_mb, **fields):
    """A node of ``memory_mb`` MiB, no overcommit (the session's
    Placement is shared: a random suffix)."""
    return ComputeProvider(
        name='%s-%s' % (name, uuid.uuid4().hex[:8]), memory_mb=memory_mb,
        reserved_host_memory_mb=0, ram_allocation_ratio=1.0, **fields)


def _spec(project=PROJECT, **kwargs):
    kwargs.setdefault('memory_mb', 1024)
    return fakes.fake_spec(project_id=project, user_id=USER + '-' + project,
                           **kwargs)


def _together(driver, ctx, specs, before=None):
    """Submit ``specs`` from a thread each while the view's lock is
    held, and let them go once all are queued: one batch (in the order
    they queued).  ``before()`` runs just before they go.  Returns
    ``(instance uuid, Selections or the exception)`` per spec, in the
    order of ``specs``."""
    outcomes: list = [None] * len(specs)

    def call(index, spec):
        instance = str(uuid.uuid4())
        try:
            outcomes[index] = (instance, driver.select_destinations(
                ctx, spec, [instance]))
        except Exception as exc:
            outcomes[index] = (instance, exc)

    threads = [threading.Thread(target=call, args=item, daemon=True)
               for item in enumerate(specs)]
    with driver.host_manager.lock:
        for thread in threads:
            thread.start()
        until = time.monotonic() + WAIT
        while len(driver.batcher._queue) < len(specs):
            assert time.monotonic() < until, 'the requests did not queue'
            time.sleep(0.01)
        if before is not None:
            before()
    for thread in threads:
        thread.join(WAIT)
    assert all(outcome is not None for outcome in outcomes)
    return outcomes


def _allocated(api, instance):
    return {rp: alloc['resources'] for rp, alloc
            in api.allocations(instance)['allocations'].items()}


def _assert_claimed(api, outcomes, spec_of):
    """Each placed instance holds exactly its Selection's node's
    allocation for its own request (its project and user)."""
    for (instance, selections), spec in zip(outcomes, spec_of,
                                            strict=True):
        if isinstance(selections, Exception):
            assert _allocated(api, instance) == {}
            continue
        chosen = selections[0][0].compute_node_uuid
        held = api.allocations(instance)
        assert held['project_id'] == spec.project_id
        assert held['user_id'] == spec.user_id
        assert _allocated(api, instance) == {chosen: {
            'VCPU': 1, 'MEMORY_MB': spec.memory_mb, 'DISK_GB': 1}}


def _no_overcommit(api, nodes):
    for node in nodes:
        assert api.usages(node.uuid).get('MEMORY_MB', 0) <= node.memory_mb


def test_a_batch_is_one_refresh_and_one_post(fleet, api):
    nodes = [_node('pb-a', 4096), _node('pb-b', 4096), _node('pb-c', 2048)]
    ctx, driver, client, refreshes = fleet(*nodes)
    specs = [_spec('p%d' % i) for i in range(8)]
    outcomes = _together(driver, ctx, specs,
                         before=lambda: (refreshes.clear(),
                                         client.sent.clear()))
    assert all(not isinstance(s, Exception) for _, s in outcomes), outcomes
    assert len(refreshes) == 1
    assert client.writes() == [('POST', '/allocations')]
    (posted,) = [body for method, _, body in client.sent
                 if method == 'POST']
    assert sorted(posted) == sorted(instance for instance, _ in outcomes)
    _assert_claimed(api, outcomes, specs)
    _no_overcommit(api, nodes)
    # 8 GiB asked of 10 GiB: the batch saw its own consumption.
    assert sum(api.usages(node.uuid).get('MEMORY_MB', 0)
               for node in nodes) == 8 * 1024


def test_a_request_that_races_is_decided_again(fleet, api):
    """Another consumer takes the room of the node one request of the
    batch was placed on, between the batch's refresh and its claim:
    Placement refuses the batch's POST, nothing of it is kept, and its
    requests are decided again one by one: the one that raced gets
    NoValidHost (no other node has its trait), the others land where
    they were."""
    fast = _node('pb-fast', 2048, traits=(
        'COMPUTE_NET_ATTACH_INTERFACE', 'CUSTOM_PB_RACE'))
    roomy = _node('pb-roomy', 8192)
    ctx, driver, client, refreshes = fleet(fast, roomy)
    specs = [_spec('racer', extra_specs={'trait:CUSTOM_PB_RACE':
                                         'required'}),
             _spec('q1'), _spec('q2')]
    outsider = str(uuid.uuid4())
    view = driver.candidates.view
    refresh = view.refresh

    def racing_refresh():
        read = refresh()
        if not api.allocations(outsider)['allocations']:
            assert api.claim(outsider, {'allocations': {fast.uuid: {
                'resources': {'VCPU': 1, 'MEMORY_MB': 2048}}}},
                PROJECT, USER) == 204
        return read

    def go():
        client.sent.clear()
        view.refresh = racing_refresh
    outcomes = _together(driver, ctx, specs, before=go)
    view.refresh = refresh
    racer, *others = outcomes
    assert isinstance(racer[1], exception.NoValidHost)
    for _, selections in others:
        assert selections[0][0].compute_node_uuid == roomy.uuid
    writes = client.writes()
    assert writes[0] == ('POST', '/allocations')    # refused, whole
    assert sorted(writes[1:]) == sorted(
        ('PUT', '/allocations/%s' % instance) for instance, _ in others)
    _assert_claimed(api, outcomes, specs)
    assert _allocated(api, outsider) == {fast.uuid: {
        'VCPU': 1, 'MEMORY_MB': 2048}}
    _no_overcommit(api, [fast, roomy])
    api.delete([], consumers=[outsider])


def test_a_request_with_no_valid_host_fails_alone(fleet, api):
    nodes = [_node('pb-x', 4096), _node('pb-y', 4096)]
    ctx, driver, client, refreshes = fleet(*nodes)
    specs = [_spec('ok1'), _spec('huge', memory_mb=8192),
             _spec('ok2'), _spec('ok3')]
    outcomes = _together(driver, ctx, specs,
                         before=lambda: (refreshes.clear(),
                                         client.sent.clear()))
    kinds = [type(selections).__name__ if isinstance(selections, Exception)
             else 'ok' for _, selections in outcomes]
    assert kinds == ['ok', 'NoValidHost', 'ok', 'ok']
    # The failure read no Placement view again, and the others were
    # claimed in one round trip.
    assert len(refreshes) == 1
    assert client.writes() == [('POST', '/allocations')]
    _assert_claimed(api, outcomes, specs)
    _no_overcommit(api, nodes)
