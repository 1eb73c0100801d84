"""scheduler.engine.live_migration: pre-checks of a requested destination."""

import datetime
import logging
import uuid

import fakes
import pytest
from oslo_utils import timeutils

from scheduler import exception
from scheduler.engine import live_migration as lm
from scheduler.objects import request_spec

INSTANCE = str(uuid.uuid4())


def _host(host='dest', node='dest', ram=4096, free_ram=4096, disk_gb=100,
          free_disk_gb=100, ram_ratio=1.0, disk_ratio=1.0, service=None,
          instances=()):
    return fakes.fake_host_state(
        host=host, node=node, total_usable_ram_mb=ram, free_ram_mb=free_ram,
        total_usable_disk_gb=disk_gb, free_disk_mb=free_disk_gb * 1024,
        ram_allocation_ratio=ram_ratio, disk_allocation_ratio=disk_ratio,
        service=fakes.fake_service(host=host) if service is None else service,
        instances=fakes.fake_instances(*instances))


def _spec(dest='dest', node=None, check_type='live_migrate', **kwargs):
    hints = {'_nova_check_type': check_type} if check_type else {}
    if dest is not None:
        kwargs['requested_destination'] = request_spec.Destination(
            host=dest, node=node)
    kwargs.setdefault('memory_mb', 1024)
    kwargs.setdefault('root_gb', 10)
    return fakes.fake_spec(instance_uuid=INSTANCE, scheduler_hints=hints,
                           **kwargs)


def _reason(func, *args):
    with pytest.raises(exception.MigrationPreCheckError) as err:
        func(*args)
    assert str(err.value).startswith('Migration pre-check error: ')
    assert err.value.code == 400
    return err.value.kwargs['reason']


# -- service -----------------------------------------------------------------

def test_up_and_enabled_passes():
    assert lm.check_host_is_up(_host()) is None


def test_disabled_is_refused():
    state = _host(service=fakes.fake_service(
        disabled=True, disabled_reason='maintenance'))
    reason = _reason(lm.check_host_is_up, state)
    assert 'disabled' in reason and 'maintenance' in reason
    assert 'dest:dest' in reason


def test_down_is_refused():
    old = timeutils.utcnow() - datetime.timedelta(hours=1)
    state = _host(service=fakes.fake_service(last_seen_up=old,
                                             created_at=old))
    assert 'is down' in _reason(lm.check_host_is_up, state)


def test_forced_down_is_refused():
    state = _host(service=fakes.fake_service(forced_down=True))
    assert 'is down' in _reason(lm.check_host_is_up, state)


def test_no_service_is_refused():
    state = _host()
    state.service = None
    assert 'no compute service' in _reason(lm.check_host_is_up, state)


# -- memory (MiB) -------------------------------------------------------------

def test_memory_under_ratio():
    # 4096 * 1.5 - (4096 - 512) = 2560 MiB free under the ratio.
    state = _host(free_ram=512, ram_ratio=1.5)
    assert lm.free_memory_mb(state) == 2560
    lm.assert_compute_node_has_enough_memory(state, _spec(memory_mb=2560))
    reason = _reason(lm.assert_compute_node_has_enough_memory, state,
                     _spec(memory_mb=2561))
    assert 'lacks memory' in reason
    assert '2560 MiB free, 2561 MiB needed' in reason


def test_memory_unset_ratio_uses_the_default():
    state = _host(free_ram=0)
    state.ram_allocation_ratio = None
    # initial_ram_allocation_ratio: 1.0 (Nova since Stein).
    assert lm.free_memory_mb(state) == 0


# -- disk (MiB) ---------------------------------------------------------------

def test_disk_counts_root_ephemeral_and_swap():
    state = _host(disk_gb=20, free_disk_gb=12)
    assert lm.free_disk_mb(state) == 12 * 1024
    spec = _spec(root_gb=10, ephemeral_gb=1, swap=1024)
    lm.assert_compute_node_has_enough_disk(state, spec)
    spec = _spec(root_gb=10, ephemeral_gb=1, swap=1025)
    reason = _reason(lm.assert_compute_node_has_enough_disk, state, spec)
    assert 'lacks disk' in reason
    assert '12288 MiB free, 12289 MiB needed' in reason


def test_disk_under_ratio():
    state = _host(disk_gb=10, free_disk_gb=0, disk_ratio=2.0)
    lm.assert_compute_node_has_enough_disk(state, _spec(root_gb=10))
    _reason(lm.assert_compute_node_has_enough_disk, state,
            _spec(root_gb=11))


def test_no_local_disk_always_passes():
    state = _host(disk_gb=10, free_disk_gb=-5)
    lm.assert_compute_node_has_enough_disk(state, _spec(root_gb=0))


def test_resources_checks_memory_then_disk():
    state = _host(free_ram=0, free_disk_gb=0)
    assert 'memory' in _reason(lm.assert_compute_node_has_enough_resources,
                               state, _spec())
    state = _host(free_disk_gb=0)
    assert 'disk' in _reason(lm.assert_compute_node_has_enough_resources,
                             state, _spec())


def test_check_destination_order_service_first():
    state = _host(free_ram=0, service=fakes.fake_service(disabled=True))
    assert 'disabled' in _reason(lm.check_destination, state, _spec())
    assert lm.check_destination(_host(), _spec()) is None


# -- requested_destination / check_requested_destination -----------------

def test_requested_destination():
    assert lm.requested_destination(_spec()) == ('dest', None)
    assert lm.requested_destination(_spec(node='n1')) == ('dest', 'n1')
    assert lm.requested_destination(_spec(check_type='migrate')) is None
    assert lm.requested_destination(_spec(check_type=None)) is None
    assert lm.requested_destination(_spec(dest=None)) is None


def test_other_requests_are_not_checked():
    # A cold migration to an unknown host is left to the pre-filters.
    lm.check_requested_destination([], _spec(check_type='migrate'))
    lm.check_requested_destination([], _spec(dest=None))


def test_unknown_destination():
    with pytest.raises(exception.ComputeHostNotFound) as err:
        lm.check_requested_destination([_host(host='other')], _spec())
    assert str(err.value) == 'Compute host dest could not be found.'
    with pytest.raises(exception.ComputeHostNotFound) as err:
        lm.check_requested_destination([_host()], _spec(node='n9'))
    assert 'dest:n9' in str(err.value)


def test_good_destination_passes():
    assert lm.check_requested_destination(
        [_host(host='src', instances=[INSTANCE]), _host()], _spec()) is None


def test_failed_destination_gives_no_valid_host_with_reason(caplog):
    with caplog.at_level(logging.INFO), \
            pytest.raises(exception.NoValidHost) as err:
        lm.check_requested_destination([_host(free_ram=0)], _spec())
    assert str(err.value).startswith('No valid host was found. ')
    assert 'lacks memory' in str(err.value)
    assert 'lacks memory' in caplog.text


def test_destination_is_the_source():
    states = [_host(instances=[INSTANCE])]
    with pytest.raises(exception.NoValidHost) as err:
        lm.check_requested_destination(states, _spec())
    assert 'current host of the instance' in str(err.value)


def test_one_good_node_is_enough():
    states = [_host(node='n1', free_ram=0), _host(node='n2')]
    assert lm.check_requested_destination(states, _spec()) is None
    with pytest.raises(exception.NoValidHost) as err:
        lm.check_requested_destination(states, _spec(node='n1'))
    assert 'dest:n1' in str(err.value)
