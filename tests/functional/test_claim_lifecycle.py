"""The life of a resource claim in the real service, end to end.

``scheduler.db.claims`` promises that a claim taken by
``select_destinations`` does not outlive its instance's need for it: it
is released when the instance is deleted (the ``delete_instance_info``
cast), when the compute node's usage report includes the instance (the
service's periodic ``reconcile`` finds it superseded), or, when the
instance never shows up, ``[scheduler] claim_timeout`` seconds after it
was taken (the same periodic task finds it expired).  The database layer
tests these rules one function at a time; here a real
``scheduler-service`` process on a real RabbitMQ does it by itself, with
a fresh database on the real PostgreSQL and MariaDB servers, and the test
only plays the caller and the compute node.

One small node holds exactly ``SLOTS`` instances of the flavor, so
capacity matters: every test checks that a claim blocks a request while
it lives, that its release leaves the node's ``claimed_*`` exact
(``claims.unbalanced_nodes`` and ``claims.overcommitted_nodes`` empty),
and that the released room can be claimed again (no capacity lost, in
the database nor in the service's in-memory view).

Waits poll with a deadline.  On MariaDB ``DATETIME`` keeps whole
seconds, and the claim rules compare timestamps strictly (equal ones
keep the claim), so the simulated compute node lets a second pass
between its writes there (``db_changes.timestamp_resolution()``; nothing on
PostgreSQL), as writes from different moments do.
"""

import time
import uuid

import pytest
from deployment import Deployment

from scheduler import exception
from scheduler.db import api as db
from scheduler.db import changes as db_changes
from scheduler.db import claims
from scheduler_tools import seed
from scheduler_tools import writers

HOST = 'host0'
# The flavor, and a node with room for exactly SLOTS of it (ratios 1.0).
FLAVOR = {'vcpus': 1, 'memory_mb': 2048, 'root_gb': 10}
SLOTS = 2
NODE = {'vcpus': 2, 'memory_mb': 4096, 'local_gb': 20,
        'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
        'disk_allocation_ratio': 1.0}

PERIODIC_INTERVAL = 1
SHORT_TIMEOUT = 2    # claims expire fast (the expiry test)
LONG_TIMEOUT = 60    # expiry cannot be why a claim went
# How long after the periodic task could have run a release may take.
SLACK = 5


@pytest.fixture(params=['postgresql', 'mysql'])
def deploy(request, tmp_path, rabbit_url):
    """``deploy(claim_timeout)``: a fresh database of the backend with
    the one node, and a ``scheduler-service`` on it whose periodic tasks
    run every PERIODIC_INTERVAL seconds; returns ``(Deployment, node)``.
    """
    db_url = request.getfixturevalue(request.param + '_db_url')
    started = []

    def _deploy(claim_timeout):
        deployment = Deployment(db_url, 'process', rabbit_url, str(tmp_path),
                                options={
            ('scheduler', 'claim_timeout'): claim_timeout,
            ('scheduler', 'periodic_task_interval'): PERIODIC_INTERVAL,
        })
        started.append(deployment)
        node = seed.add_compute(deployment.ctx, HOST, **NODE)
        deployment.start()
        return deployment, node
    yield _deploy
    for deployment in started:
        deployment.stop()
    writers.reset_engine()


def _place(dep, count=1):
    """Schedule ``count`` instances in one request; return their uuids."""
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    result = dep.api.select_destinations(
        dep.ctx, seed.make_spec(num_instances=count, **FLAVOR), uuids)
    assert [r['host'] for r in result] == [HOST] * count
    return uuids


def _assert_full(dep):
    """No room for one more instance (and the refusal claims nothing)."""
    before = claims.get_claims(dep.ctx)
    with pytest.raises(exception.NoValidHost):
        _place(dep)
    assert claims.get_claims(dep.ctx) == before


def _claimed_uuids(dep):
    return sorted(c['instance_uuid'] for c in claims.get_claims(dep.ctx))


def _wait_for_claims(dep, expected, timeout):
    """Poll until the live claims are those of ``expected`` (uuids);
    return the seconds it took."""
    started = time.monotonic()
    dep.wait_for(lambda: _claimed_uuids(dep) == sorted(expected),
                 timeout=timeout, interval=0.1)
    return time.monotonic() - started


def _assert_exact(dep, node, slots):
    """The node's ``claimed_*`` are ``slots`` flavors, the sums of its
    claim rows, and nothing is overcommitted."""
    row = db.compute_node_get(dep.ctx, node['id'])
    assert (row['claimed_vcpus'], row['claimed_memory_mb'],
            row['claimed_disk_gb']) == (
        slots * FLAVOR['vcpus'], slots * FLAVOR['memory_mb'],
        slots * FLAVOR['root_gb'])
    assert claims.unbalanced_nodes(dep.ctx) == []
    assert claims.overcommitted_nodes(dep.ctx) == []


def _next_stored_second():
    """Let the database's timestamp resolution pass (1 s on MariaDB)."""
    time.sleep(db_changes.timestamp_resolution().total_seconds())


def _report(dep, node, instance_uuids):
    """Play the compute node's resource tracker: record the instances on
    the host, then write the node's usage including them."""
    _next_stored_second()
    for instance_uuid in instance_uuids:
        writers.instance_create(dep.ctx, {
            'uuid': instance_uuid, 'host': HOST, 'node': HOST,
            'vm_state': 'building', 'vcpus': FLAVOR['vcpus'],
            'memory_mb': FLAVOR['memory_mb'], 'root_gb': FLAVOR['root_gb'],
            'ephemeral_gb': 0})
    _next_stored_second()
    used = len(instance_uuids)
    writers.compute_node_update(dep.ctx, node['id'], {
        'vcpus_used': used * FLAVOR['vcpus'],
        'memory_mb_used': used * FLAVOR['memory_mb'],
        'local_gb_used': used * FLAVOR['root_gb'],
        'free_ram_mb': NODE['memory_mb'] - used * FLAVOR['memory_mb'],
        'free_disk_gb': NODE['local_gb'] - used * FLAVOR['root_gb']})


def test_claim_of_an_instance_that_never_shows_up_expires(deploy):
    dep, node = deploy(SHORT_TIMEOUT)
    started = time.monotonic()
    _place(dep, SLOTS)
    _assert_exact(dep, node, SLOTS)
    _assert_full(dep)

    waited = _wait_for_claims(dep, [], SHORT_TIMEOUT + SLACK)
    # Released by expiry, not earlier (MariaDB may store expires_at up
    # to its resolution early).
    assert (time.monotonic() - started >= SHORT_TIMEOUT
            - db_changes.timestamp_resolution().total_seconds())
    assert waited <= SHORT_TIMEOUT + PERIODIC_INTERVAL + SLACK
    _assert_exact(dep, node, 0)
    # No capacity lost: the whole node can be claimed again.
    again = _place(dep, SLOTS)
    assert _claimed_uuids(dep) == sorted(again)
    _assert_exact(dep, node, SLOTS)
    _assert_full(dep)


def test_delete_instance_info_cast_releases_the_claim(deploy):
    dep, node = deploy(LONG_TIMEOUT)
    deleted, kept = _place(dep, SLOTS)
    _assert_full(dep)

    # The instance lived a little: the cast comes in a later stored
    # second than the claim (see the next test for the same second).
    _next_stored_second()
    dep.api.delete_instance_info(dep.ctx, HOST, deleted)
    _wait_for_claims(dep, [kept], SLACK)
    _assert_exact(dep, node, 1)
    # The released slot, and only it, can be claimed again.
    new = _place(dep)
    assert _claimed_uuids(dep) == sorted([kept] + new)
    _assert_exact(dep, node, SLOTS)
    _assert_full(dep)


def _start_of_a_second():
    """Sleep until the wall clock has just passed a whole second."""
    time.sleep(1.05 - time.time() % 1.0)


def test_room_released_within_the_claims_second_can_be_claimed_again(
        deploy):
    """A build aborted at once: the claim and its release fall in one
    second, which MariaDB stores as one ``updated_at``."""
    dep, node = deploy(LONG_TIMEOUT)
    _start_of_a_second()
    deleted, kept = _place(dep, SLOTS)
    dep.api.delete_instance_info(dep.ctx, HOST, deleted)
    _wait_for_claims(dep, [kept], SLACK)
    _assert_exact(dep, node, 1)

    row = db.compute_node_get(dep.ctx, node['id'])
    claim = claims.get_claims(dep.ctx)[0]
    try:
        new = _place(dep)
    except exception.NoValidHost:
        pytest.fail(
            'the database has one free slot (claimed_memory_mb %d of %d, '
            'updated_at %s after the release, claim created_at %s), but '
            'the service still counts the released claim: its host state '
            'keeps the consumption of the claim, stamped with microseconds, '
            'over a node row whose updated_at has whole seconds'
            % (row['claimed_memory_mb'], NODE['memory_mb'],
               row['updated_at'], claim['created_at']))
    assert _claimed_uuids(dep) == sorted([kept] + new)
    _assert_exact(dep, node, SLOTS)
    _assert_full(dep)


def test_usage_report_supersedes_the_claim(deploy):
    dep, node = deploy(LONG_TIMEOUT)
    reported = _place(dep)
    _assert_exact(dep, node, 1)

    _report(dep, node, reported)
    # Well before LONG_TIMEOUT: the periodic reconcile saw the report.
    _wait_for_claims(dep, [], PERIODIC_INTERVAL + SLACK)
    row = db.compute_node_get(dep.ctx, node['id'])
    assert row['memory_mb_used'] == FLAVOR['memory_mb']
    _assert_exact(dep, node, 0)
    # Counted once (by the report): exactly the other slot is left.
    new = _place(dep)
    assert _claimed_uuids(dep) == new
    _assert_exact(dep, node, 1)
    _assert_full(dep)
