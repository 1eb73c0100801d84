"""AvailabilityZoneFilter."""

import fakes

from scheduler.filters import availability_zone_filter

AZ = 'availability_zone'


def _host_in(*zones):
    aggregates = [fakes.fake_aggregate(i, metadata={AZ: zone})
                  for i, zone in enumerate(zones, 1)]
    return fakes.fake_host_state(aggregates=aggregates)


def _passes(host, zone):
    host_filter = availability_zone_filter.AvailabilityZoneFilter()
    return host_filter.host_passes(host, fakes.fake_spec(
        availability_zone=zone))


def test_availability_zone_filter_same():
    assert _passes(_host_in('nova'), 'nova')


def test_availability_zone_filter_same_comma():
    assert _passes(_host_in('nova,nova2'), 'nova')
    assert _passes(_host_in('nova, nova2'), 'nova2')


def test_availability_zone_filter_different():
    assert not _passes(_host_in('nova'), 'bad')


def test_availability_zone_filter_any_of_several_aggregates():
    host = _host_in('az1', 'az2')
    assert _passes(host, 'az2')
    assert not _passes(host, 'az3')


def test_availability_zone_filter_no_zone_requested():
    assert _passes(_host_in('az1'), None)


def test_host_without_zone_is_in_default_zone():
    host = fakes.fake_host_state(
        aggregates=[fakes.fake_aggregate(1, metadata={'ssd': 'true'})])
    assert _passes(host, 'nova')
    assert not _passes(host, 'az1')


def test_default_zone_is_configurable(conf):
    conf.set_override('default_availability_zone', 'zone-a')
    host = fakes.fake_host_state()
    assert _passes(host, 'zone-a')
    assert not _passes(host, 'nova')


def test_host_in_zone_aggregate_is_not_in_default_zone():
    assert not _passes(_host_in('az1'), 'nova')
