"""HostFilterHandler and load_filters with the real filters."""

import fakes
import pytest

from scheduler import exception
from scheduler import filters
from scheduler.conf import scheduler as scheduler_opts


class RecordingFilter(filters.BaseHostFilter):
    """Keeps hosts not named in ``reject`` and records what it saw."""

    reject = ()

    def __init__(self):
        self.seen = []

    def host_passes(self, host_state, spec_obj):
        self.seen.append(host_state.host)
        return host_state.host not in self.reject


class OncePerRequestFilter(RecordingFilter):
    run_filter_once_per_request = True
    reject = ('host2',)


class RejectHost3Filter(RecordingFilter):
    reject = ('host3',)


class RejectAllFilter(RecordingFilter):
    reject = ('host1', 'host2', 'host3')


def _hosts():
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i)
            for i in (1, 2, 3)]


def _names(hosts):
    return [h.host for h in hosts]


def test_filters_run_in_order_over_survivors():
    first, second = OncePerRequestFilter(), RejectHost3Filter()
    result = filters.HostFilterHandler().get_filtered_objects(
        [first, second], _hosts(), fakes.fake_spec())
    assert _names(result) == ['host1']
    assert first.seen == ['host1', 'host2', 'host3']
    assert second.seen == ['host1', 'host3']


def test_once_per_request_filter_skipped_after_first_instance():
    once, every = OncePerRequestFilter(), RejectHost3Filter()
    handler = filters.HostFilterHandler()
    result = handler.get_filtered_objects([once, every], _hosts(),
                                          fakes.fake_spec(), index=1)
    assert _names(result) == ['host1', 'host2']
    assert once.seen == []


def test_filtering_stops_when_no_host_is_left(caplog):
    reject_all, after = RejectAllFilter(), RejectHost3Filter()
    with caplog.at_level('INFO'):
        result = filters.HostFilterHandler().get_filtered_objects(
            [reject_all, after], _hosts(), fakes.fake_spec())
    assert result == []
    assert after.seen == []
    assert 'RejectAllFilter returned 0 hosts' in caplog.text


def test_filters_skipped_on_rebuild_unless_run_on_rebuild():
    # Nova's rebuild: forced to the host and node the instance is on.
    instance = '6f1b9f1e-0000-4000-8000-000000000001'
    spec = fakes.fake_spec(scheduler_hints={'_nova_check_type': 'rebuild'},
                           instance_uuid=instance, force_hosts=['host1'],
                           force_nodes=['node1'])
    host = fakes.fake_host_state(host='host1', node='node1',
                                 instances=fakes.fake_instances(instance))
    reject_all = RejectAllFilter()
    result = filters.HostFilterHandler().get_filtered_objects(
        [reject_all], [host], spec)
    assert result == [host]
    assert reject_all.seen == []
    # The same request where the view has no such instance is filtered.
    result = filters.HostFilterHandler().get_filtered_objects(
        [reject_all], _hosts()[:1], spec)
    assert result == [] and len(reject_all.seen) == 1


def test_load_filters_newton_defaults_in_order():
    loaded = filters.load_filters(['scheduler.filters.all_filters'],
                                  scheduler_opts.NEWTON_DEFAULT_FILTERS)
    assert [type(f).__name__ for f in loaded] == \
        scheduler_opts.NEWTON_DEFAULT_FILTERS


def test_load_filters_instantiates_each_once():
    loaded = filters.load_filters(['scheduler.filters.all_filters'],
                                  ['RamFilter', 'ComputeFilter'])
    again = filters.load_filters(['scheduler.filters.all_filters'],
                                 ['RamFilter'])
    assert loaded[0] is not again[0]
    assert len({id(f) for f in loaded}) == 2


def test_load_filters_by_registered_name():
    loaded = filters.load_filters(['AllHostsFilter', 'RetryFilter'],
                                  ['RetryFilter', 'AllHostsFilter'])
    assert [type(f).__name__ for f in loaded] == ['RetryFilter',
                                                  'AllHostsFilter']


def test_unknown_filter_name_raises():
    with pytest.raises(exception.SchedulerHostFilterNotFound) as info:
        filters.load_filters(['scheduler.filters.all_filters'],
                             ['RamFilter', 'NoSuchFilter', 'OtherMissing'])
    assert 'NoSuchFilter, OtherMissing' in str(info.value)


def test_enabled_filter_must_be_available():
    with pytest.raises(exception.SchedulerHostFilterNotFound):
        filters.load_filters(['RamFilter'], ['CoreFilter'])


def test_third_party_class_path_in_available_filters():
    path = '%s.%s' % (__name__, RejectHost3Filter.__name__)
    loaded = filters.load_filters(
        ['scheduler.filters.all_filters', path],
        ['ComputeFilter', 'RejectHost3Filter'])
    assert isinstance(loaded[1], RejectHost3Filter)
    result = filters.HostFilterHandler().get_filtered_objects(
        loaded[1:], _hosts(), fakes.fake_spec())
    assert _names(result) == ['host1', 'host2']


def test_nova_path_is_mapped():
    loaded = filters.load_filters(['nova.scheduler.filters.all_filters'],
                                  ['RetryFilter'])
    assert type(loaded[0]).__name__ == 'RetryFilter'


def test_all_registered_filters_are_host_filters():
    classes = filters.all_filters()
    assert len(classes) >= 11
    for cls in classes:
        assert issubclass(cls, filters.BaseHostFilter)
        assert not cls.__name__.startswith('_')
        assert cls.__doc__


def test_real_filters_end_to_end():
    loaded = filters.load_filters(
        ['scheduler.filters.all_filters'],
        ['RetryFilter', 'ComputeFilter', 'RamFilter', 'CoreFilter',
         'DiskFilter'])
    hosts = []
    for i, free_ram in enumerate((256, 2048, 4096), 1):
        hosts.append(fakes.fake_host_state(
            host='host%d' % i, node='node%d' % i,
            service=fakes.fake_service(host='host%d' % i),
            total_usable_ram_mb=4096, free_ram_mb=free_ram,
            ram_allocation_ratio=1.0, vcpus_total=4, vcpus_used=0,
            cpu_allocation_ratio=1.0, total_usable_disk_gb=10,
            free_disk_mb=10240, disk_allocation_ratio=1.0))
    spec = fakes.fake_spec(memory_mb=1024,
                           retry=fakes.fake_retry([('host3', 'node3')]))
    result = filters.HostFilterHandler().get_filtered_objects(
        loaded, hosts, spec)
    assert _names(result) == ['host2']
    assert result[0].limits == {'memory_mb': 4096.0, 'vcpu': 4.0,
                                'disk_gb': 10.0}
