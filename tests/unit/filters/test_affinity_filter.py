"""Affinity filters: hints, CIDR and server groups."""

import uuid

import fakes
import pytest

from scheduler import filters
from scheduler.filters import affinity_filter as af

UUID1, UUID2, UUID3 = (str(uuid.uuid4()) for _ in range(3))


def _host(*uuids, host='host1', **attrs):
    return fakes.fake_host_state(host=host,
                                 instances=fakes.fake_instances(*uuids),
                                 **attrs)


# -- DifferentHostFilter / SameHostFilter ------------------------------


def test_affinity_different_filter_passes():
    spec = fakes.fake_spec(scheduler_hints={'different_host': [UUID2]})
    assert af.DifferentHostFilter().host_passes(_host(UUID1), spec)


def test_affinity_different_filter_fails():
    spec = fakes.fake_spec(scheduler_hints={'different_host': [UUID1,
                                                               UUID3]})
    assert not af.DifferentHostFilter().host_passes(_host(UUID1), spec)


def test_affinity_different_filter_single_uuid():
    spec = fakes.fake_spec(scheduler_hints={'different_host': UUID1})
    assert not af.DifferentHostFilter().host_passes(_host(UUID1), spec)


def test_affinity_different_filter_handles_none():
    assert af.DifferentHostFilter().host_passes(_host(UUID1),
                                                fakes.fake_spec())


def test_affinity_same_filter_passes():
    spec = fakes.fake_spec(scheduler_hints={'same_host': [UUID1, UUID3]})
    assert af.SameHostFilter().host_passes(_host(UUID1), spec)


def test_affinity_same_filter_no_list_passes():
    spec = fakes.fake_spec(scheduler_hints={'same_host': UUID1})
    assert af.SameHostFilter().host_passes(_host(UUID1), spec)


def test_affinity_same_filter_fails():
    spec = fakes.fake_spec(scheduler_hints={'same_host': [UUID2]})
    assert not af.SameHostFilter().host_passes(_host(UUID1), spec)
    assert not af.SameHostFilter().host_passes(_host(), spec)


def test_affinity_same_filter_handles_none():
    assert af.SameHostFilter().host_passes(_host(), fakes.fake_spec())


# -- SimpleCIDRAffinityFilter ------------------------------------------


def _cidr_passes(host_ip, **hints):
    spec = fakes.fake_spec(scheduler_hints=hints)
    host = fakes.fake_host_state(host_ip=host_ip)
    return af.SimpleCIDRAffinityFilter().host_passes(host, spec)


def test_affinity_simple_cidr_filter_passes():
    assert _cidr_passes('10.8.1.1', build_near_host_ip='10.8.1.77',
                        cidr='/24')


def test_affinity_simple_cidr_filter_fails():
    assert not _cidr_passes('10.8.1.1', build_near_host_ip='10.8.2.77',
                            cidr='/24')


def test_affinity_simple_cidr_filter_default_cidr_is_24():
    assert _cidr_passes('10.8.1.200', build_near_host_ip='10.8.1.77')
    assert not _cidr_passes('10.8.2.1', build_near_host_ip='10.8.1.77')


def test_affinity_simple_cidr_filter_wider_network():
    assert _cidr_passes('10.8.200.1', build_near_host_ip='10.8.1.77',
                        cidr='/16')
    assert _cidr_passes('10.8.200.1', build_near_host_ip='10.8.1.77',
                        cidr='16')


def test_affinity_simple_cidr_filter_ipv6():
    assert _cidr_passes('2001:db8::5', build_near_host_ip='2001:db8::1',
                        cidr='/64')
    assert not _cidr_passes('2001:db9::5', build_near_host_ip='2001:db8::1',
                            cidr='/64')
    assert not _cidr_passes('10.0.0.1', build_near_host_ip='2001:db8::1',
                            cidr='/64')


def test_affinity_simple_cidr_filter_handles_none():
    assert _cidr_passes('10.8.1.1')


@pytest.mark.parametrize('host_ip, hints', [
    (None, {'build_near_host_ip': '10.8.1.77'}),
    ('not-an-ip', {'build_near_host_ip': '10.8.1.77'}),
    ('10.8.1.1', {'build_near_host_ip': 'bogus'}),
    ('10.8.1.1', {'build_near_host_ip': '10.8.1.77', 'cidr': '/99'}),
    ('10.8.1.1', {'build_near_host_ip': ['10.8.1.77', '10.8.1.78']}),
])
def test_affinity_simple_cidr_filter_bad_input_fails(host_ip, hints):
    assert not _cidr_passes(host_ip, **hints)


# -- ServerGroupAntiAffinityFilter --------------------------------------


def _group_spec(group, instance_uuid=None):
    kwargs = {'instance_group': group}
    if instance_uuid:
        kwargs['instance_uuid'] = instance_uuid
    return fakes.fake_spec(**kwargs)


@pytest.mark.parametrize('legacy', [False, True])
def test_group_anti_affinity_filter_passes(legacy):
    host_filter = af.ServerGroupAntiAffinityFilter()
    assert host_filter.host_passes(_host(), fakes.fake_spec())
    group = fakes.fake_group('anti-affinity', hosts=[], legacy=legacy)
    assert host_filter.host_passes(_host(), _group_spec(group))
    group = fakes.fake_group('anti-affinity', hosts=['host2'], legacy=legacy)
    assert host_filter.host_passes(_host(), _group_spec(group))


@pytest.mark.parametrize('legacy', [False, True])
def test_group_anti_affinity_filter_fails(legacy):
    group = fakes.fake_group('anti-affinity', hosts=['host1'], legacy=legacy)
    assert not af.ServerGroupAntiAffinityFilter().host_passes(
        _host(), _group_spec(group))


def test_group_anti_affinity_filter_ignores_other_policies():
    group = fakes.fake_group('affinity', hosts=['host1'])
    assert af.ServerGroupAntiAffinityFilter().host_passes(
        _host(), _group_spec(group))
    group = fakes.fake_group('soft-anti-affinity', hosts=['host1'])
    assert af.ServerGroupAntiAffinityFilter().host_passes(
        _host(), _group_spec(group))


def test_group_anti_affinity_filter_allows_instance_to_same_host():
    group = fakes.fake_group('anti-affinity', members=[UUID1],
                             hosts=['host1'])
    spec = _group_spec(group, instance_uuid=UUID1)
    assert af.ServerGroupAntiAffinityFilter().host_passes(_host(UUID1), spec)
    assert not af.ServerGroupAntiAffinityFilter().host_passes(
        _host(UUID2), spec)


def test_max_server_per_host_counts_members_on_host():
    group = fakes.fake_group('anti-affinity', members=[UUID1, UUID2],
                             hosts=['host1'],
                             rules={'max_server_per_host': 2})
    host_filter = af.ServerGroupAntiAffinityFilter()
    # One member (UUID1) there, one more allowed; UUID3 is not a member.
    assert host_filter.host_passes(_host(UUID1, UUID3), _group_spec(group))
    assert not host_filter.host_passes(_host(UUID1, UUID2),
                                       _group_spec(group))
    assert host_filter.host_passes(_host(host='host2'), _group_spec(group))


def test_max_server_per_host_of_one_is_strict_anti_affinity():
    group = fakes.fake_group('anti-affinity', members=[UUID1],
                             rules={'max_server_per_host': 1})
    host_filter = af.ServerGroupAntiAffinityFilter()
    assert not host_filter.host_passes(_host(UUID1), _group_spec(group))
    assert host_filter.host_passes(_host(UUID2), _group_spec(group))


def test_max_server_per_host_move_exception():
    group = fakes.fake_group('anti-affinity', members=[UUID1, UUID2],
                             rules={'max_server_per_host': 1})
    spec = _group_spec(group, instance_uuid=UUID1)
    assert af.ServerGroupAntiAffinityFilter().host_passes(
        _host(UUID1, UUID2), spec)


@pytest.mark.parametrize('value', ['0', '-3', 'many', ''])
def test_invalid_max_server_per_host_counts_as_one(value):
    group = fakes.fake_group('anti-affinity', members=[UUID1],
                             rules={'max_server_per_host': value})
    host_filter = af.ServerGroupAntiAffinityFilter()
    assert not host_filter.host_passes(_host(UUID1), _group_spec(group))
    assert host_filter.host_passes(_host(), _group_spec(group))


# -- ServerGroupAffinityFilter --------------------------------------------


@pytest.mark.parametrize('legacy', [False, True])
def test_group_affinity_filter_passes(legacy):
    host_filter = af.ServerGroupAffinityFilter()
    assert host_filter.host_passes(_host(), fakes.fake_spec())
    group = fakes.fake_group('affinity', hosts=[], legacy=legacy)
    assert host_filter.host_passes(_host(), _group_spec(group))
    group = fakes.fake_group('affinity', hosts=['host1'], legacy=legacy)
    assert host_filter.host_passes(_host(), _group_spec(group))


@pytest.mark.parametrize('legacy', [False, True])
def test_group_affinity_filter_fails(legacy):
    group = fakes.fake_group('affinity', hosts=['host2'], legacy=legacy)
    assert not af.ServerGroupAffinityFilter().host_passes(
        _host(), _group_spec(group))


def test_group_affinity_filter_ignores_other_policies():
    group = fakes.fake_group('anti-affinity', hosts=['host2'])
    assert af.ServerGroupAffinityFilter().host_passes(_host(),
                                                      _group_spec(group))


def test_group_affinity_filter_has_no_move_exception():
    group = fakes.fake_group('affinity', members=[UUID1], hosts=['host2'])
    spec = _group_spec(group, instance_uuid=UUID1)
    assert not af.ServerGroupAffinityFilter().host_passes(_host(UUID1), spec)


def test_group_filters_run_for_every_instance():
    assert af.ServerGroupAffinityFilter().run_filter_for_index(3)
    assert af.ServerGroupAntiAffinityFilter().run_filter_for_index(3)
    assert not af.DifferentHostFilter().run_filter_for_index(1)
    assert not af.SameHostFilter().run_filter_for_index(1)
    assert not af.SimpleCIDRAffinityFilter().run_filter_for_index(1)


def test_private_bases_are_not_loadable_by_name():
    names = {cls.__name__ for cls in filters.all_filters()}
    assert {'ServerGroupAffinityFilter',
            'ServerGroupAntiAffinityFilter'} <= names
    assert not {'_GroupAffinityFilter', '_GroupAntiAffinityFilter'} & names
