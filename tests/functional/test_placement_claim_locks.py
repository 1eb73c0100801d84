"""Two processes of one service claiming on one resource provider at once,
against a real Placement: with the claim locks
(``scheduler.placement.claim_locks``) their writes never meet inside
Placement, which so answers no 409 ``placement.concurrent_update``.

Each process is a ``python -c`` of its own (as the service's forked
workers are processes of their own) with a ``PlacementClient`` on this
module's Placement (configured as the benchmark's Placement mode is,
``placement_decisions.placement_mode``) and the same
``[oslo_concurrency] lock_path``; both
wait for a start file, then send ``ROUNDS`` claims of new consumers
back to back, each a ``POST /allocations`` on the same provider.  The
replies are counted in Placement's own request log.  Without the locks
the same run met 11, 18 and 11 such conflicts in three tries here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from placement_api import ComputeProvider
from placement_api import PlacementAPI

pytestmark = pytest.mark.timeout(180)

PROCESSES = 2
ROUNDS = 20
# The most seconds both processes may take to claim.
WAIT = 120

CLAIMER = r'''
import json, os, sys, time, uuid
from oslo_concurrency import lockutils
from scheduler.conf import CONF
from scheduler.placement import client as client_lib
from scheduler_tools.bench import placement_decisions
endpoint, database, lock_path, provider, start, rounds = sys.argv[1:]
CONF([], project='scheduler')
lockutils.set_defaults(lock_path)
with placement_decisions.placement_mode(endpoint, database):
    client = client_lib.PlacementClient(conf=CONF)
    while not os.path.exists(start):
        time.sleep(0.005)
    taken = [client.claim_all(
        {str(uuid.uuid4()): {'allocations': {provider: {'resources': {
            'VCPU': 1, 'MEMORY_MB': 64}}}}}, 'project-locks', 'user-locks')
        for _ in range(int(rounds))]
print(json.dumps(taken))
'''


def _replies(log_path: str, offset: int) -> dict[int, int]:
    """``{status: count}`` of the ``POST /allocations`` Placement logged
    after ``offset`` bytes of its log."""
    with open(log_path, 'rb') as log:
        log.seek(offset)
        text = log.read().decode(errors='replace')
    counts: dict[int, int] = {}
    for line in text.splitlines():
        if '"POST /allocations" status: ' in line:
            status = int(line.split('status: ')[1].split()[0])
            counts[status] = counts.get(status, 0) + 1
    return counts


def test_claims_of_two_processes_on_one_provider_never_conflict(
        tmp_path, module_placement):
    node = ComputeProvider('claim-locks-node', vcpus=1024,
                           memory_mb=1024 * 1024)
    api = PlacementAPI(module_placement.url)
    api.add_compute(node)
    start = tmp_path / 'start'
    offset = os.path.getsize(module_placement.log_path)
    claimers = [subprocess.Popen(
        [sys.executable, '-c', CLAIMER, module_placement.url,
         module_placement.database_url, str(tmp_path / 'locks'),
         node.uuid, str(start), str(ROUNDS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)]
    time.sleep(3)       # both import and build their client
    start.touch()
    outputs = [claimer.communicate(timeout=WAIT) for claimer in claimers]
    for claimer, (out, err) in zip(claimers, outputs, strict=True):
        assert claimer.returncode == 0, err[-3000:]
        assert json.loads(out) == [True] * ROUNDS
    # Every claim was written at its first attempt: none met another.
    assert _replies(module_placement.log_path, offset) == {
        204: PROCESSES * ROUNDS}
    assert api.usages(node.uuid)['VCPU'] == PROCESSES * ROUNDS
