"""What a claim takes for one instance, read once per decision step."""

import threading
from unittest import mock

from scheduler.drivers import filter_scheduler
from scheduler.resources import capacity
from scheduler_tools import seed
from scheduler_tools import writers


def _spec(**kwargs):
    return seed.make_spec(vcpus=2, memory_mb=2048, root_gb=20, **kwargs)


def test_the_amounts_are_the_flavors():
    spec = _spec()
    spec.flavor.ephemeral_gb = 5
    assert capacity.claim_amounts(spec) == capacity.Amounts(2, 2048, 25)


def test_within_fixed_amounts_the_request_is_read_once():
    spec = _spec()
    with capacity.fixed_amounts(spec):
        first = capacity.claim_amounts(spec)
        spec.flavor.vcpus = 8
        assert capacity.claim_amounts(spec) is first
    # Outside, the request is read as it is now.
    assert capacity.claim_amounts(spec).vcpus == 8


def test_other_requests_nested_scopes_and_other_threads_read_as_ever():
    spec, other = _spec(), _spec()
    with capacity.fixed_amounts(spec):
        capacity.claim_amounts(spec)
        spec.flavor.vcpus = 4
        other.flavor.vcpus = 6
        assert capacity.claim_amounts(other).vcpus == 6
        with capacity.fixed_amounts(other):
            assert capacity.claim_amounts(other).vcpus == 6
            assert capacity.claim_amounts(spec).vcpus == 4
        # The outer scope is back, with what it had read.
        assert capacity.claim_amounts(spec).vcpus == 2
        seen = []
        thread = threading.Thread(
            target=lambda: seen.append(capacity.claim_amounts(spec)))
        thread.start()
        thread.join()
        assert seen[0].vcpus == 4


def test_a_decision_reads_its_request_once_to_place_and_once_to_claim(
        tmp_path):
    """Five instances: the filter, the consumption and the claim of each
    ask for the amounts; the request is read once while placing and once
    while claiming, not three times per instance."""
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'amounts.sqlite'))
    try:
        for index in range(3):
            seed.add_compute(ctx, 'compute-%d' % index, vcpus=16,
                             memory_mb=32768, local_gb=500)
        driver = filter_scheduler.FilterScheduler(ctx)
        with mock.patch.object(capacity, '_read_amounts',
                               wraps=capacity._read_amounts) as read:
            selections = driver.select_destinations(
                ctx, _spec(num_instances=5))
        assert len(selections) == 5
        assert read.call_count == 2
    finally:
        writers.reset_engine()
