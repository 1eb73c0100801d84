"""The real Placement the Placement-mode tests talk to: providers written
as nova-compute writes them, candidates and claims as Nova's scheduler
asks for them (``tests/placement_api.py``), on PostgreSQL with two
gunicorn workers, and on SQLite with one.

These pin what our Placement mode must reproduce and rely on: which
providers ``GET /allocation_candidates`` returns for a request
(capacity: total less reserved, times the allocation ratio; one
instance no larger than ``max_unit``; required and forbidden traits),
the allocation request's shape, and a claim's ``consumer_generation``
and 409 rules.
"""

import concurrent.futures
import uuid

import pytest
from placement_api import ComputeProvider
from placement_api import PlacementAPI

PROJECT = str(uuid.uuid4())
USER = str(uuid.uuid4())


@pytest.fixture(params=['postgresql', 'sqlite'])
def placement(request, private_server):
    """A PlacementAPI on this module's Placement (PostgreSQL, two
    workers), or on a private one on SQLite with one worker.  Not the
    session's: other modules nest providers there, and Placement 16.0.0
    then fails a forbidden trait with a 500 (docs/placement.rst)."""
    if request.param == 'postgresql':
        return PlacementAPI(request.getfixturevalue('module_placement').url)
    return PlacementAPI(private_server('placement').url)


def _hosts(reply):
    """The root providers of the allocation requests (compute nodes)."""
    return sorted({rp for request in reply['allocation_requests']
                   for rp in request['allocations']})


def test_candidates_follow_capacity_ratios_reserved_and_traits(placement):
    tag = uuid.uuid4().hex[:8]
    small = ComputeProvider('small-' + tag, vcpus=2, memory_mb=4096,
                            ram_allocation_ratio=1.0)
    large = ComputeProvider('large-' + tag, vcpus=8, memory_mb=16384,
                            traits=('CUSTOM_' + tag.upper(),
                                    'COMPUTE_NET_ATTACH_INTERFACE'))
    for node in (small, large):
        placement.add_compute(node)
    mine = {small.uuid, large.uuid}

    def hosts(**params):
        return sorted(set(_hosts(placement.allocation_candidates(
            **params))) & mine)

    # 4,096 MiB less 512 reserved, ratio 1.0: 3,584 MiB fit, 3,585 not.
    assert hosts(resources='VCPU:1,MEMORY_MB:3584') == sorted(mine)
    assert hosts(resources='VCPU:1,MEMORY_MB:3585') == [large.uuid]
    # One instance gets at most the node's own vCPUs (max_unit, as
    # nova-compute sets it), however far the ratio overcommits them.
    assert hosts(resources='VCPU:2,MEMORY_MB:1') == sorted(mine)
    assert hosts(resources='VCPU:3,MEMORY_MB:1') == [large.uuid]
    assert placement.allocation_candidates(resources='VCPU:1')[
        'provider_summaries'][small.uuid]['resources']['VCPU'] == {
            'capacity': 2 * 16, 'used': 0}
    trait = 'CUSTOM_' + tag.upper()
    assert hosts(resources='VCPU:1', required=trait) == [large.uuid]
    assert hosts(resources='VCPU:1', required='!' + trait) == [small.uuid]
    reply = placement.allocation_candidates(
        resources='VCPU:2,MEMORY_MB:1024,DISK_GB:10', required=trait)
    [request] = [r for r in reply['allocation_requests']
                 if large.uuid in r['allocations']]
    assert request['allocations'] == {large.uuid: {'resources': {
        'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}}}
    assert 'mappings' in request            # microversion 1.34 and later
    summary = reply['provider_summaries'][large.uuid]['resources']
    assert summary['MEMORY_MB'] == {'capacity': int((16384 - 512) * 1.5),
                                    'used': 0}


def test_claims_take_room_and_a_full_provider_refuses(placement):
    node = ComputeProvider('claims-' + uuid.uuid4().hex[:8], vcpus=1,
                           cpu_allocation_ratio=4.0)
    placement.add_compute(node)
    request = {'allocations': {node.uuid: {'resources': {'VCPU': 1}}}}
    consumers = [str(uuid.uuid4()) for _ in range(5)]
    statuses = [placement.claim(c, request, PROJECT, USER)
                for c in consumers]
    assert statuses == [204, 204, 204, 204, 409]
    assert placement.usages(node.uuid)['VCPU'] == 4
    # A consumer that exists must name its generation.
    held = placement.allocations(consumers[0])
    assert placement.claim(consumers[0], request, PROJECT, USER) == 409
    assert placement.claim(consumers[0], request, PROJECT, USER,
                           held['consumer_generation']) == 204


def test_concurrent_claims_never_overcommit(placement):
    """Twenty claims at once for room for eight: exactly eight succeed
    (Placement checks the provider's generation itself)."""
    node = ComputeProvider('race-' + uuid.uuid4().hex[:8], vcpus=8,
                           cpu_allocation_ratio=1.0)
    placement.add_compute(node)
    request = {'allocations': {node.uuid: {'resources': {'VCPU': 1}}}}

    def claim(_):
        client = PlacementAPI(placement.url)
        for _attempt in range(20):      # a concurrent update: try again
            if client.claim(str(uuid.uuid4()), request, PROJECT,
                            USER) == 204:
                return True
            if client.usages(node.uuid).get('VCPU', 0) >= 8:
                return False
        return False

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        won = sum(pool.map(claim, range(20)))
    assert won == 8
    assert placement.usages(node.uuid)['VCPU'] == 8
