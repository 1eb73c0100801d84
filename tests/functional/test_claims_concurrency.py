"""Concurrent claims on real PostgreSQL and MariaDB servers, and on a
SQLite file (threads and processes of one machine).

Many threads, and separate processes, try to claim 1 GiB slots on the
same few compute nodes far more often than the slots exist.  Whatever the
interleaving, exactly the capacity must be claimed, no node may end up
overcommitted, and every node's ``claimed_*`` must equal the sum of its
claim rows.  Concurrent releases of the same claims (a fanout cast that
several workers receive) must subtract each claim once.
"""

import datetime
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid

import pytest

from scheduler.db import api
from scheduler.db import claims
from scheduler_tools import seed
from scheduler_tools import writers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

ONE = {'cpu_allocation_ratio': 1.0, 'ram_allocation_ratio': 1.0,
       'disk_allocation_ratio': 1.0}

# (host, node values, slots of (1 vCPU, 1024 MiB, 1 GiB) that fit): RAM
# bounds the first three nodes, vCPUs the last one.
NODES = (
    ('host0', {}, 8),
    ('host1', {'memory_mb_used': 1024}, 7),
    ('host2', {'memory_mb_used': 3072, 'local_gb_used': 10}, 5),
    ('host3', {'vcpus': 6, 'vcpus_used': 2, 'memory_mb': 65536}, 4),
)
CAPACITY = sum(slots for _, _, slots in NODES)
SLOT = (1, 1024, 1)

THREADS = 8
JOIN_TIMEOUT = 60


@pytest.fixture
def sqlite_db_url(tmp_path):
    return 'sqlite:///%s' % (tmp_path / 'claims.sqlite')


@pytest.fixture(params=['postgresql', 'mysql', 'sqlite'])
def db(request):
    """``(url, ctx, nodes)``: a fresh database of the backend, with
    ``NODES`` (ratios 1.0 on the rows) and their services."""
    url = request.getfixturevalue(request.param + '_db_url')
    ctx = seed.use_database(url)
    nodes = []
    for host, values, _ in NODES:
        values = dict({'vcpus': 64, 'memory_mb': 8192, 'local_gb': 1000},
                      **values)
        nodes.append(seed.add_compute(ctx, host, **dict(
            values, cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
            disk_allocation_ratio=1.0)))
    yield url, ctx, nodes
    writers.reset_engine()


def _far_future():
    return datetime.datetime(2100, 1, 1)


def _run_threads(target, count=THREADS):
    """Run ``target(index, barrier)`` in ``count`` threads started
    together; return their results; fail on errors or hangs."""
    barrier = threading.Barrier(count)
    results = [None] * count
    errors = []

    def run(index):
        try:
            results[index] = target(index, barrier)
        except Exception as exc:  # reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True)
               for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
        assert not thread.is_alive(), 'a claim thread hangs'
    assert errors == []
    return results


def _claimer(ctx, node_ids, attempts, seed_value):
    """Claim one slot per attempt, cycling over the nodes from a random
    start; return the successful (node id, instance uuid) pairs."""
    rng = random.Random(seed_value)
    start = rng.randrange(len(node_ids))
    won = []
    for attempt in range(attempts):
        node_id = node_ids[(start + attempt) % len(node_ids)]
        instance = str(uuid.uuid4())
        if claims.claim(ctx, node_id, instance, *SLOT, ONE, _far_future()):
            won.append((node_id, instance))
    return won


def _assert_consistent(ctx, nodes):
    assert claims.overcommitted_nodes(ctx, ONE) == []
    assert claims.unbalanced_nodes(ctx) == []
    for node in nodes:
        row = api.compute_node_get(ctx, node['id'])
        count = len(claims.get_claims(ctx, node['id']))
        assert (row['claimed_vcpus'], row['claimed_memory_mb'],
                row['claimed_disk_gb']) == tuple(n * count for n in SLOT)


def _assert_full(ctx, nodes):
    """Every node holds exactly its slots."""
    for node, (_, _, slots) in zip(nodes, NODES, strict=True):
        assert len(claims.get_claims(ctx, node['id'])) == slots
    assert claims.claims_count(ctx) == CAPACITY


def test_threads_claim_exactly_the_capacity(db):
    _, ctx, nodes = db
    node_ids = [node['id'] for node in nodes]
    attempts = CAPACITY * 2  # each thread alone could fill every node

    def work(index, barrier):
        barrier.wait()
        return _claimer(ctx, node_ids, attempts, index)

    started = time.monotonic()
    won = [pair for result in _run_threads(work) for pair in result]
    assert time.monotonic() - started < 30
    assert len(won) == CAPACITY
    _assert_full(ctx, nodes)
    _assert_consistent(ctx, nodes)


def test_concurrent_releases_subtract_each_claim_once(db):
    """Half the threads release the same claims (fanout), the others
    claim the room that frees up and re-claim their own instances on
    other nodes (replacements)."""
    _, ctx, nodes = db
    node_ids = [node['id'] for node in nodes]
    first = _claimer(ctx, node_ids, CAPACITY * 2, 0)
    assert len(first) == CAPACITY
    released_uuids = [instance for _, instance in first]

    def work(index, barrier):
        rng = random.Random(index)
        barrier.wait()
        if index % 2 == 0:
            # The same releases, in another order in every thread.
            uuids = rng.sample(released_uuids, len(released_uuids))
            done = claims.release_many(ctx, uuids[:5])
            return done + sum(claims.release(ctx, u) for u in uuids[5:])
        mine = [str(uuid.uuid4()) for _ in range(3)]
        for _ in range(20):
            claims.claim(ctx, rng.choice(node_ids), rng.choice(mine),
                         *SLOT, ONE, _far_future())
        return 0

    released = _run_threads(work)
    assert sum(released) == CAPACITY
    for instance in released_uuids:
        assert not claims.release(ctx, instance)
    _assert_consistent(ctx, nodes)
    assert claims.claims_count(ctx) <= 3 * (THREADS // 2)
    left = claims.claims_count(ctx)
    later = _far_future() + datetime.timedelta(days=1)
    assert claims.reconcile(ctx, now=later) == {'expired': left,
                                                'superseded': 0}
    assert claims.claims_count(ctx) == 0
    _assert_consistent(ctx, nodes)


_CHILD = r'''
import datetime
import json
import os
import sys
import threading
import time

from scheduler.conf import CONF

CONF([], project='scheduler', default_config_files=[],
     default_config_dirs=[])

from scheduler import context  # noqa: E402
from scheduler.db import api  # noqa: E402
from scheduler.db import claim_sql  # noqa: E402
from scheduler.db import claims  # noqa: E402
from scheduler_tools import writers  # noqa: E402

url, node_ids, attempts, threads, go = sys.argv[1:]
node_ids, attempts, threads = json.loads(node_ids), int(attempts), int(threads)
writers.reset_engine(url)
ctx = context.get_admin_context()
claims.claims_count(ctx)
ratios = dict.fromkeys(claim_sql.RATIO_NAMES, 1.0)
expires = datetime.datetime(2100, 1, 1)
won = []
print('ready', flush=True)
deadline = time.monotonic() + 30
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit('never told to go')
    time.sleep(0.005)


def work(start):
    for attempt in range(attempts):
        node_id = node_ids[(start + attempt) % len(node_ids)]
        instance = '%08d-0000-0000-0000-%012d' % (os.getpid() % 10 ** 8,
                                                  start * attempts + attempt)
        if claims.claim(ctx, node_id, instance, 1, 1024, 1, ratios, expires):
            won.append(instance)


pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
for thread in pool:
    thread.start()
for thread in pool:
    thread.join()
print(json.dumps(won), flush=True)
'''


def test_processes_claim_exactly_the_capacity(db, tmp_path):
    url, ctx, nodes = db
    node_ids = json.dumps([node['id'] for node in nodes])
    go = tmp_path / 'go'
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [REPO, os.environ.get('PYTHONPATH')])))
    command = [sys.executable, '-c', _CHILD, url, node_ids,
               str(CAPACITY * 2), '2', str(go)]
    children = [subprocess.Popen(command, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env,
                                 cwd=str(tmp_path))
                for _ in range(2)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == 'ready', (
                child.stderr.read())
        go.touch()
        outputs = [child.communicate(timeout=60) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    won = []
    for child, (stdout, stderr) in zip(children, outputs, strict=True):
        assert child.returncode == 0, stderr
        won.extend(json.loads(stdout.strip().splitlines()[-1]))
    assert len(won) == len(set(won)) == CAPACITY
    _assert_full(ctx, nodes)
    _assert_consistent(ctx, nodes)
