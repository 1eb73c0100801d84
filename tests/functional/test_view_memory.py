"""The memory a real ``scheduler-service`` process keeps of aggregates
that were deleted (issue 31, item 8b).

Valid but enormous ``update_aggregates`` casts (thousands of metadata
keys), each followed by requests that read the aggregates' metadata
(the AvailabilityZoneFilter and the weighers' multipliers, through the
host table's ``AGGREGATE_METADATA`` memo), then ``delete_aggregate``:
the host table's memo kept a copy of every metadata it had seen as its
signature (``scheduler.view.memo_scopes``), up to twice the hosts plus
64 of them, long after the aggregates were gone (100 -> 447 MiB per
worker in the fault campaign).

Python may keep freed memory for itself rather than give it back to the
system, so the test does not ask the RSS to come back to where it was:
it runs four rounds of the same casts and deletions, and asks that the
last leaves the RSS no higher than the first two did (memory kept would
add one round's signatures each time, some 55 MiB), within what one
round's casts carry.  The figures (RSS before and after each round) are
printed at the end of the module, as ``test_faults.py`` prints its own.
The same service run in the test's process, its memory traced, shows
what it keeps without the allocator's say: nothing from one round to the
next.  The signature itself (now a digest of the metadata) is checked
without a service.
"""

import functools
import gc
import time
import tracemalloc

import figures
import psutil
import pytest
from deployment import Deployment
from oslo_utils import uuidutils

from scheduler import exception
from scheduler.objects import aggregate as aggregate_obj
from scheduler.view import memo_scopes
from scheduler_tools import seed

HOSTS = ('host0', 'host1', 'host2')
# One aggregate holding every host, replaced by each cast of a round
# and deleted at its end.
AGGREGATE_ID = 4242
# Metadata keys per cast, the length of each value, casts per round:
# about 15 MiB of metadata per round (the memo kept three times that),
# and rounds: 60 casts in all, fewer than the memo kept before it
# started over (twice the hosts plus 64 signatures).
KEYS = 8000
VALUE_LENGTH = 120
CASTS = 15
ROUNDS = 4
# What one round's casts carry (MiB): keys and values.
CARRIED = CASTS * KEYS * (len('key-00000') + VALUE_LENGTH) / 2 ** 20
# Seconds a cast may take to reach the view (it is polled for).
CAST_BOUND = 30
TEST_TIMEOUT = 600

FIGURES = []

pytestmark = pytest.mark.timeout(TEST_TIMEOUT)


_print_figures = figures.reported(FIGURES)


def _deploy(tmp_path, mode, transport_url, db_url):
    """A started service (``mode``: ``process``, one worker, or
    ``in-process``) over three roomy hosts."""
    tmp_path.mkdir()
    dep = Deployment(db_url, mode, transport_url, str(tmp_path),
                     {(None, 'service_down_time'): 3600},
                     host='view-memory-%s' % mode)
    for host in HOSTS:
        seed.add_compute(dep.ctx, host, vcpus=4096, memory_mb=10 ** 6,
                         local_gb=10 ** 5)
    return dep.start()


@pytest.fixture
def deploy(tmp_path, rabbit_url, postgresql_url, fresh_database):
    """``deploy(mode)``: a service on the session's RabbitMQ and a fresh
    PostgreSQL database; stopped at teardown."""
    started = []

    def make(mode):
        started.append(_deploy(tmp_path / mode, mode, rabbit_url,
                               fresh_database(postgresql_url)))
        return started[-1]

    yield make
    for dep in started:
        dep.stop()


def _serving_process(dep):
    """The process that serves (the service's own, or its one
    worker)."""
    parent = psutil.Process(dep.pid)
    children = parent.children()
    return children[0] if children else parent


def _rss_mib(process):
    return process.memory_info().rss / 2 ** 20


def _aggregate(zone, cast):
    """The aggregate of every host, in availability zone ``zone``, with
    ``KEYS`` metadata keys whose values are new to cast ``cast``."""
    metadata = {'key-%05d' % key: ('%d-%d-' % (cast, key)).ljust(
        VALUE_LENGTH, 'x') for key in range(KEYS)}
    metadata['availability_zone'] = zone
    return aggregate_obj.Aggregate(
        id=AGGREGATE_ID, uuid=uuidutils.generate_uuid(), name=zone,
        hosts=list(HOSTS), metadata=metadata)


def _placed_in(dep, zone):
    """Whether a request for availability zone ``zone`` gets a host
    (its aggregate's cast has reached the view); None when refused."""
    spec = seed.make_spec(memory_mb=1, vcpus=1, root_gb=1,
                          availability_zone=zone)
    try:
        dep.api.select_destinations(dep.ctx, spec)
    except exception.NoValidHost:
        return None
    return True


def _round(dep, number):
    """``CASTS`` casts replacing the aggregate, each read by a request
    in its zone, then the aggregate deleted (until no request finds its
    zone)."""
    zone = None
    for cast in range(CASTS):
        zone = 'memory-%d-%d' % (number, cast)
        dep.api.update_aggregates(dep.ctx, [_aggregate(
            zone, number * CASTS + cast)])
        dep.wait_for(functools.partial(_placed_in, dep, zone),
                     timeout=CAST_BOUND, interval=0.05)
    dep.api.delete_aggregate(dep.ctx, aggregate_obj.Aggregate(
        id=AGGREGATE_ID))
    dep.wait_for(lambda: not _placed_in(dep, zone), timeout=CAST_BOUND,
                 interval=0.05)


def _figures(name, values, seconds):
    FIGURES.append(
        'view memory, %s: %d rounds of %d update_aggregates casts of %d '
        'metadata keys (%.0f MiB a round), each read by a request, then '
        'delete_aggregate, in %.0f s: %s MiB' % (
            name, ROUNDS, CASTS, KEYS, CARRIED, seconds,
            ' -> '.join('%.1f' % value for value in values)))


def test_a_service_process_keeps_no_memory_of_deleted_aggregates(deploy):
    """A ``scheduler-service`` process: after the first two rounds, the
    RSS grows no more (within one round's metadata); the memo kept
    about three times each round's metadata (100 -> 164 -> 220 -> 272
    -> 321 MiB before)."""
    dep = deploy('process')
    process = _serving_process(dep)
    _placed_in(dep, 'nova')     # its first decision
    rss = [_rss_mib(process)]
    started = time.monotonic()
    for number in range(ROUNDS):
        _round(dep, number)
        time.sleep(0.5)
        rss.append(_rss_mib(process))
    _figures('RSS of a service process before and after each round', rss,
             time.monotonic() - started)
    # The allocator's high-water mark of the first two rounds, which
    # the next ones reuse rather than grow.
    assert rss[ROUNDS] - max(rss[1:3]) < CARRIED, rss
    assert dep.returncode is None, dep.log()


def test_the_view_keeps_nothing_of_deleted_aggregates(deploy):
    """The same service in this process (on the same RabbitMQ), its
    memory traced: once a round has warmed it, the next rounds leave
    nothing behind (less than a tenth of a round's metadata), where the
    memo kept about three times each round's metadata."""
    dep = deploy('in-process')
    _placed_in(dep, 'nova')
    started = time.monotonic()
    traced = []
    tracemalloc.start()
    try:
        for number in range(ROUNDS):
            _round(dep, number)
            gc.collect()
            traced.append(tracemalloc.get_traced_memory()[0] / 2 ** 20)
    finally:
        tracemalloc.stop()
    _figures('memory traced in a service in this process (from the first '
             'round on) after each round', traced,
             time.monotonic() - started)
    assert traced[-1] - traced[1] < CARRIED / 10, traced


# -- the signature, without a service -----------------------------------------

class _State:
    """What ``memo_scopes.aggregate_metadata`` reads of a HostState."""

    def __init__(self, *metadata):
        self.aggregates = [aggregate_obj.Aggregate(id=index, metadata=value)
                           for index, value in enumerate(metadata)]


def test_the_signature_is_a_digest_that_keeps_no_metadata():
    """Equal metadata (in the host's order) give one signature, any
    other content, order of aggregates or key order another; the
    signature is a few bytes whatever the metadata's size."""
    big = {'key-%05d' % key: 'x' * VALUE_LENGTH for key in range(KEYS)}
    signature = memo_scopes.aggregate_metadata(_State(big, {'a': '1'}))
    assert signature == memo_scopes.aggregate_metadata(
        _State(dict(big), {'a': '1'}))
    assert isinstance(signature, bytes)
    assert len(signature) == memo_scopes.DIGEST_SIZE
    others = [_State({'a': '1'}, big), _State(big, {'a': '2'}),
              _State(big, {'b': '1'}), _State(big), _State(big, {}, {}),
              _State(dict(reversed(big.items())), {'a': '1'}),
              _State(big, {'a': '1', 'b': ''}), _State()]
    signatures = {memo_scopes.aggregate_metadata(state)
                  for state in others}
    assert len(signatures) == len(others)
    assert signature not in signatures


VALUES = [1, 1.0, True, '1', b'1', None, 0.0, -0.0, [1], (1,), {'a': 1},
          {'a': '1'}, {'a': 1, 'b': 2}, {'b': 2, 'a': 1}, {1, 2},
          frozenset([1, 2]), [{'a': [1, {2}]}], [{'a': [1, {2.0}]}], '',
          'a;b', ['a', 'b'], 'str:1;a', {'ab': 'c'}, {'a': 'bc'},
          {'a': 'b', 'c': 'd'}, {'c': 'd', 'a': 'b'}, {'a': 'b\udc80'},
          {'a': 'b\u00e9'}]


def _digest(value):
    digest = memo_scopes._Digest()
    assert digest.feed(value)
    return digest.hasher.digest()


@pytest.mark.parametrize('left', range(len(VALUES)))
def test_digests_are_equal_exactly_when_frozen_values_are(left):
    """The digest tells values apart as ``_frozen`` does (types and
    contents throughout; a set's order does not count)."""
    for right in range(len(VALUES)):
        frozen_equal = (memo_scopes._frozen(VALUES[left]) ==
                        memo_scopes._frozen(VALUES[right]))
        assert (_digest(VALUES[left]) == _digest(VALUES[right])) is (
            frozen_equal), (VALUES[left], VALUES[right])
    assert _digest({2, 1}) == _digest({1, 2})
    assert not memo_scopes._Digest().feed(object())
