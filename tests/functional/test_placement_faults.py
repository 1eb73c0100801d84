"""Placement mode under faults: a ``scheduler-service`` process on a real
RabbitMQ, claiming in a real Placement (a private one, on PostgreSQL)
through a fault proxy (``tests/fault_proxy.py``) that breaks the claims'
writes as a failing backend behind a load balancer does:

* a write accepted and never answered: the request caught in it is
  answered PlacementUnavailable (naming Placement, not the database)
  within ``decision_timeout``, and once Placement answers again every
  decision goes through at once (no worker stays wedged on the lost
  request: every request to Placement is bounded by ``[placement]
  timeout``);
* every second write answered 503, two instances per request: the
  requests that fail leave no allocation (the claims of a request are
  all or none);
* every write committed but its answer lost: no allocation is left
  (the uncertain claims are read back and undone);
* 1,000 instances in one request: placed, although Placement takes
  longer than ``decision_timeout`` to write them on a busy machine (one
  ``POST /allocations`` per chunk of instances, chunks in parallel, and
  a decision whose Placement calls keep coming back is waited for);
  ``scheduler-bench`` times it.

Each test reports its figures in one line, after the module's tests.
"""

import time
import uuid

import figures
import pytest
from deployment import Deployment
from fault_proxy import FaultProxy
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.conf import CONF
from scheduler.placement import bulk_claims
from scheduler.server import rpcapi
from scheduler_tools import seed

# Most seconds one test may take (servers and service included).
TEST_TIMEOUT = 180
# The caller's patience (s): Nova's conductor waits up to
# ``long_rpc_timeout``; ours only needs to outlast decision_timeout.
CALL_TIMEOUT = 60
PROJECT = 'project-placement-faults'
USER = 'user-placement-faults'

pytestmark = pytest.mark.timeout(TEST_TIMEOUT)


@pytest.fixture
def cloud(private_server, rabbit_url, postgresql_url, fresh_database,
          tmp_path):
    """``cloud(hosts)``: a private Placement with ``hosts`` roomy compute
    nodes (also in the scheduler's database), a fault proxy in front of
    it, and a started service claiming through the proxy; returns
    ``(deployment, proxy, api)``."""
    started = []

    def make(hosts=3):
        placement = private_server('placement', database_url=fresh_database(
            postgresql_url, prefix='placementfaults'))
        api = PlacementAPI(placement.url)
        proxy = FaultProxy(placement.url).start()
        started.append(proxy)
        options = {
            ('scheduler', 'use_placement'): True,
            ('placement', 'auth_type'): 'admin_token',
            ('placement', 'endpoint'): proxy.url,
            ('placement', 'token'): 'admin',
            ('placement_database', 'connection'): placement.database_url,
            ('filter_scheduler', 'enabled_filters'): ['ComputeFilter'],
        }
        dep = Deployment('sqlite:///%s' % (tmp_path / 'own.sqlite'),
                         'process', rabbit_url, str(tmp_path), options)
        started.append(dep)
        for i in range(hosts):
            node = ComputeProvider('pf-host%d' % i, vcpus=256,
                                   memory_mb=1 << 20, disk_gb=10 ** 5)
            seed.add_compute(dep.ctx, node.name, uuid=node.uuid,
                             vcpus=node.vcpus, memory_mb=node.memory_mb,
                             local_gb=node.disk_gb)
            api.add_compute(node)
        dep.start()
        return dep, proxy, api

    yield make
    for thing in reversed(started):
        thing.stop()


def _boot(dep, count=1, timeout=CALL_TIMEOUT):
    """One request for ``count`` new instances: ``(uuids, outcome,
    seconds)``, the outcome 'ok' or the exception."""
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    spec = seed.make_spec(num_instances=count, memory_mb=64, vcpus=1,
                          root_gb=1, project_id=PROJECT, user_id=USER)
    client = rpcapi.SchedulerAPI(dep.transport, timeout=timeout)
    started = time.monotonic()
    try:
        client.select_destinations(dep.ctx, spec, instance_uuids=uuids,
                                   return_objects=True)
    except Exception as exc:
        outcome = exc
    else:
        outcome = 'ok'
    return uuids, outcome, time.monotonic() - started


def _holding(api, uuids):
    """The instances of ``uuids`` that hold allocations in Placement."""
    return {instance for instance in uuids
            if api.allocations(instance)['allocations']}


FIGURES = []


_print_figures = figures.reported(FIGURES)


def _figures(name, **measured):
    FIGURES.append('placement faults, %s: %s' % (name, ', '.join(
        '%s=%s' % item for item in measured.items())))


def test_a_request_never_answered_does_not_wedge_later_decisions(cloud):
    dep, proxy, api = cloud()
    assert _boot(dep)[1] == 'ok'
    proxy.set_fault('blackhole')
    _, caught, caught_s = _boot(dep)
    proxy.set_fault(None)
    healed = time.monotonic()
    after = [_boot(dep) for _ in range(5)]
    back = max(seconds for _, _, seconds in after)
    _figures('blackholed write', caught=type(caught).__name__,
             caught_seconds='%.1f' % caught_s,
             answered_after=sum(o == 'ok' for _, o, _ in after),
             slowest_after='%.1f' % back,
             all_back_within='%.1f' % (time.monotonic() - healed))
    assert isinstance(caught, exception.PlacementUnavailable), caught
    assert 'Placement' in str(caught)
    assert caught_s < CONF.scheduler.decision_timeout + 2
    assert [o for _, o, _ in after] == ['ok'] * 5, after
    assert back < 2
    assert dep.returncode is None, dep.log()


def test_a_partial_multi_instance_claim_leaves_nothing(cloud):
    dep, proxy, api = cloud()
    proxy.set_fault('503-every-second')
    results = [_boot(dep, count=2) for _ in range(20)]
    proxy.set_fault(None)
    answered = {i for uuids, o, _ in results if o == 'ok' for i in uuids}
    failed = {i for uuids, o, _ in results if o != 'ok' for i in uuids}
    leaked = _holding(api, failed)
    _figures('503 on every second write, 20 requests of 2 instances',
             answered=len(answered) // 2, failed=len(failed) // 2,
             leaked_instances=len(leaked), writes=proxy.writes,
             faulted=proxy.faulted)
    assert proxy.faulted and failed
    assert all(isinstance(o, exception.PlacementUnavailable)
               for _, o, _ in results if o != 'ok'), results
    assert leaked == set()
    assert _holding(api, answered) == answered


def test_a_claim_written_whose_answer_is_lost_leaves_nothing(cloud):
    dep, proxy, api = cloud()
    proxy.set_fault('drop-answer')
    results = [_boot(dep, count=count) for count in (1, 2, 1, 3, 1)]
    proxy.set_fault(None)
    requested = {i for uuids, _, _ in results for i in uuids}
    # The next claim settles what could not be settled on the spot.
    assert _boot(dep)[1] == 'ok'
    leaked = _holding(api, requested)
    _figures('every write committed, its answer lost',
             requests=len(results), instances=len(requested),
             failed=sum(o != 'ok' for _, o, _ in results),
             leaked_instances=len(leaked), writes=proxy.writes)
    assert all(isinstance(o, exception.PlacementUnavailable)
               for _, o, _ in results), results
    assert leaked == set()


def test_a_thousand_instances_in_one_request(cloud):
    dep, proxy, api = cloud(hosts=10)
    uuids, outcome, seconds = _boot(dep, count=1000)
    holding = _holding(api, uuids[:50] + uuids[-50:])
    _figures('1,000 instances in one request', outcome=(
        outcome if outcome == 'ok' else type(outcome).__name__),
        seconds='%.1f' % seconds, writes=proxy.writes,
        claims_seconds='%.1f' % (proxy.last_answer - proxy.first_write))
    assert outcome == 'ok', outcome
    assert len(holding) == 100
    # One POST per chunk of instances.
    assert proxy.writes == -(-1000 // bulk_claims.CHUNK)
