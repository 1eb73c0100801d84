"""scheduler.placement.bulk_claims.lanes: no provider in two lanes."""

from hypothesis import given
from hypothesis import strategies as st

from scheduler.placement import bulk_claims


def _request(*providers):
    return {'allocations': {rp: {'resources': {'VCPU': 1}}
                            for rp in providers}}


def test_hosts_are_spread_over_the_lanes_in_order():
    requests = {'i%d' % i: _request('host%d' % (i % 4)) for i in range(8)}
    laned = bulk_claims.lanes(requests, 2)
    assert sorted(map(len, laned)) == [4, 4]
    for lane in laned:
        assert lane == sorted(lane, key=list(requests).index)
    assert sorted(sum(laned, [])) == sorted(requests)


def test_a_shared_provider_joins_its_hosts_in_one_lane():
    requests = {'a': _request('host1', 'shared-disk'),
                'b': _request('host2', 'shared-disk'),
                'c': _request('host3')}
    laned = bulk_claims.lanes(requests, 2)
    assert sorted(laned) == [['a', 'b'], ['c']]


def test_one_host_is_one_lane():
    requests = {'i%d' % i: _request('host') for i in range(5)}
    assert bulk_claims.lanes(requests, 2) == [list(requests)]


@given(st.lists(st.sets(st.integers(0, 9), min_size=1, max_size=3),
                min_size=1, max_size=40), st.integers(1, 4))
def test_no_provider_is_in_two_lanes(provider_sets, count):
    requests = {'i%d' % i: _request(*('rp%d' % rp for rp in rps))
                for i, rps in enumerate(provider_sets)}
    laned = bulk_claims.lanes(requests, count)
    assert len(laned) <= count
    assert sorted(sum(laned, [])) == sorted(requests)
    seen = {}
    for number, lane in enumerate(laned):
        for consumer in lane:
            for rp in requests[consumer]['allocations']:
                assert seen.setdefault(rp, number) == number
