"""Exceptions: Nova's messages, tolerant formatting, remote re-raising."""

import json
import sys
import types

import oslo_messaging as messaging
import pytest
from oslo_messaging._drivers import common as rpc_common

from scheduler import exception
from scheduler import rpc


@pytest.mark.parametrize('cls,kwargs,message', [
    (exception.NoValidHost,
     {'reason': 'There are not enough hosts available.'},
     'No valid host was found. There are not enough hosts available.'),
    (exception.NoValidHost, {'reason': ''}, 'No valid host was found. '),
    (exception.MaxRetriesExceeded, {'reason': 'Tried 3 hosts.'},
     'Exceeded maximum number of retries. Tried 3 hosts.'),
    (exception.SchedulerHostFilterNotFound, {'filter_name': 'FooFilter'},
     'Scheduler Host Filter FooFilter could not be found.'),
    (exception.ClassNotFound, {'class_name': 'a.B', 'exception': 'boom'},
     'Class a.B could not be found: boom'),
    (exception.UnsupportedPolicyException,
     {'reason': 'ServerGroupAffinityFilter not configured'},
     'ServerGroup policy is not supported: ServerGroupAffinityFilter not '
     'configured'),
    (exception.ComputeHostMetricNotFound,
     {'name': 'cpu.percent', 'host': 'h1', 'node': 'n1'},
     'Metric cpu.percent could not be found on the compute host node '
     'h1.n1.'),
    (exception.ComputeHostNotFound, {'host': 'h1'},
     'Compute host h1 could not be found.'),
    (exception.SelectionObjectsWithOldRPCVersionNotSupported,
     {'version': '4.4'},
     'Requests for Selection objects with alternates are not supported in '
     'select_destinations() before RPC version 4.5; version 4.4 '
     'requested.'),
    (exception.Invalid, {'reason': 'bad'},
     'Invalid input received: bad'),
    (exception.SchedulerDriverNotFound, {'driver_name': 'caching_scheduler'},
     'Scheduler driver caching_scheduler could not be found.'),
])
def test_messages_match_nova(cls, kwargs, message):
    exc = cls(**kwargs)
    assert str(exc) == message
    assert exc.format_message() == message
    assert exc.message == message
    assert exc.kwargs == kwargs
    assert exc.args == (message,)


@pytest.mark.parametrize('cls', [
    exception.SchedulerException, exception.Invalid, exception.NotFound,
    exception.NoValidHost, exception.MaxRetriesExceeded,
    exception.InvalidRequestSpec, exception.InvalidObjectPrimitive,
    exception.InvalidCastArguments, exception.SchedulerHostFilterNotFound,
    exception.SchedulerDriverNotFound, exception.ClassNotFound,
    exception.ComputeHostMetricNotFound, exception.ComputeHostNotFound,
    exception.UnsupportedPolicyException,
    exception.SelectionObjectsWithOldRPCVersionNotSupported,
    exception.DatabaseUnavailable,
])
def test_missing_kwargs_do_not_raise(cls):
    exc = cls()
    assert str(exc) == cls.msg_fmt
    exc = cls(unrelated='x')
    assert str(exc) == cls.msg_fmt


def test_partially_missing_kwargs_give_the_unformatted_message():
    exc = exception.ComputeHostMetricNotFound(name='cpu.percent')
    assert str(exc) == exception.ComputeHostMetricNotFound.msg_fmt


def test_extra_kwargs_are_ignored_by_the_message():
    exc = exception.NoValidHost(reason='none left', hosts=['h1'])
    assert str(exc) == 'No valid host was found. none left'
    assert exc.kwargs == {'reason': 'none left', 'hosts': ['h1']}


@pytest.mark.parametrize('reason', ['100% full', '%(reason)s', '%s %d',
                                    None, 42, ['a', 'b']])
def test_odd_reasons_are_formatted_as_given(reason):
    exc = exception.NoValidHost(reason=reason)
    assert str(exc) == 'No valid host was found. %s' % (reason,)


def test_explicit_message_wins():
    exc = exception.NoValidHost('custom text', reason='ignored')
    assert str(exc) == 'custom text'
    assert exc.kwargs == {'reason': 'ignored'}


def test_default_message():
    assert str(exception.SchedulerException()) == (
        'An unknown exception occurred.')


@pytest.mark.parametrize('cls,base,code', [
    (exception.NoValidHost, exception.SchedulerException, 500),
    (exception.MaxRetriesExceeded, exception.NoValidHost, 500),
    (exception.InvalidRequestSpec, exception.Invalid, 400),
    (exception.InvalidObjectPrimitive, exception.Invalid, 400),
    (exception.InvalidCastArguments, exception.Invalid, 400),
    (exception.UnsupportedPolicyException, exception.Invalid, 400),
    (exception.SchedulerHostFilterNotFound, exception.NotFound, 404),
    (exception.ClassNotFound, exception.NotFound, 404),
    (exception.ComputeHostNotFound, exception.NotFound, 404),
    (exception.ComputeHostMetricNotFound, exception.NotFound, 404),
    (exception.SelectionObjectsWithOldRPCVersionNotSupported,
     exception.SchedulerException, 500),
    (exception.DatabaseUnavailable, exception.SchedulerException, 503),
])
def test_hierarchy_and_codes(cls, base, code):
    assert issubclass(cls, base)
    assert issubclass(cls, Exception)
    assert cls.code == code


def test_max_retries_is_caught_as_no_valid_host():
    with pytest.raises(exception.NoValidHost):
        raise exception.MaxRetriesExceeded(reason='3 attempts')


@pytest.mark.parametrize('exc', [
    exception.NoValidHost(reason='There are not enough hosts available.'),
    exception.InvalidRequestSpec(reason='the flavor is missing'),
    exception.SelectionObjectsWithOldRPCVersionNotSupported(version='4.3'),
])
def test_remote_error_is_re_raised_as_the_same_class(exc):
    """What a caller of SchedulerAPI gets back from oslo.messaging."""
    try:
        raise exc
    except exception.SchedulerException:
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    remote = rpc_common.deserialize_remote_exception(data,
                                                     rpc.ALLOWED_EXMODS)
    assert isinstance(remote, type(exc))
    assert remote.kwargs == exc.kwargs
    assert str(remote).startswith(str(exc))


def test_remote_error_without_allowed_module_is_a_remote_error():
    try:
        raise exception.NoValidHost(reason='none')
    except exception.NoValidHost:
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    remote = rpc_common.deserialize_remote_exception(data, [])
    assert isinstance(remote, messaging.RemoteError)
    assert remote.exc_type == 'NoValidHost'
    assert 'No valid host was found. none' in remote.value


# -- Nova's names on the wire -------------------------------------------------

def _wire(exc):
    """The failure oslo.messaging sends for ``exc``, decoded."""
    try:
        raise exc
    except Exception:
        return json.loads(rpc_common.serialize_remote_exception(
            sys.exc_info()))


@pytest.mark.parametrize('exc,name', [
    (exception.NoValidHost(reason='none'), 'NoValidHost'),
    (exception.MaxRetriesExceeded(reason='3'), 'MaxRetriesExceeded'),
    (exception.PlacementRequired(reason='VGPU'), 'NoValidHost'),
    (exception.ComputeHostNotFound(host='h1'), 'ComputeHostNotFound'),
    (exception.UnsupportedPolicyException(reason='x'),
     'UnsupportedPolicyException'),
    (exception.MigrationPreCheckError(reason='down'),
     'MigrationPreCheckError'),
    (exception.SelectionObjectsWithOldRPCVersionNotSupported(version='4.4'),
     'SelectionObjectsWithOldRPCVersionNotSupported'),
    (exception.Invalid(reason='bad'), 'InvalidInput'),
])
def test_errors_travel_under_novas_names(exc, name):
    cls = type(exc)
    message = str(exc)
    assert exception.as_nova(exc) is exc
    assert isinstance(exc, cls)
    assert str(exc) == message
    failure = _wire(exc)
    assert (failure['module'], failure['class']) == ('nova.exception', name)
    assert failure['args'] == [message]
    assert failure['kwargs'] == exc.kwargs


@pytest.mark.parametrize('exc', [
    exception.InvalidRequestSpec(reason='x'),
    exception.InvalidObjectPrimitive(reason='x'),
    exception.ObjectVersionNotSupported(objname='RequestSpec', objver='1.16',
                                        supported='1.15'),
    exception.DatabaseUnavailable(reason='x'),
    exception.InvalidCastArguments(method='m', reason='x'),
])
def test_errors_nova_has_no_class_for_keep_our_module(exc):
    cls = type(exc)
    exception.as_nova(exc)
    assert type(exc) is cls
    failure = _wire(exc)
    assert failure['module'] == 'scheduler.exception'
    assert failure['class'] == cls.__name__


@pytest.fixture
def nova_exception_module(monkeypatch):
    """A stand-in ``nova.exception`` (Nova is not a dependency): classes
    taking ``(message=None, **kwargs)`` as Nova's do."""
    module = types.ModuleType('nova.exception')

    class NovaException(Exception):
        def __init__(self, message=None, **kwargs):
            self.kwargs = kwargs
            super().__init__(message)

    module.NovaException = NovaException
    for name in set(exception.NOVA_NAMES.values()):
        setattr(module, name, type(name, (NovaException,), {}))
    monkeypatch.setitem(sys.modules, 'nova', types.ModuleType('nova'))
    monkeypatch.setitem(sys.modules, 'nova.exception', module)
    return module


def test_a_nova_caller_rebuilds_its_own_class(nova_exception_module):
    """What Nova's RPC client (allowed modules: nova.exception) does with
    the failure."""
    exc = exception.as_nova(exception.PlacementRequired(
        reason='This scheduler has no Placement service.'))
    data = rpc_common.serialize_remote_exception((type(exc), exc, None))
    remote = rpc_common.deserialize_remote_exception(data,
                                                     ['nova.exception'])
    assert isinstance(remote, nova_exception_module.NoValidHost)
    assert remote.kwargs == {'reason': 'This scheduler has no Placement '
                                       'service.'}
    assert str(remote).startswith('No valid host was found. This scheduler')


def test_our_client_rebuilds_ours_from_novas_names():
    exc = exception.as_nova(exception.NoValidHost(reason='full'))
    data = rpc_common.serialize_remote_exception((type(exc), exc, None))
    remote = rpc_common.deserialize_remote_exception(data, rpc.ALLOWED_EXMODS)
    assert isinstance(remote, messaging.RemoteError)
    ours = exception.from_remote_error(remote)
    assert type(ours) is exception.NoValidHost
    assert str(ours) == 'No valid host was found. full'


@pytest.mark.parametrize('exc_type,cls', [
    ('NoValidHost', exception.NoValidHost),
    ('MaxRetriesExceeded', exception.MaxRetriesExceeded),
    ('InvalidInput', exception.Invalid),
    ('ComputeHostNotFound', exception.ComputeHostNotFound),
])
def test_remote_errors_with_novas_names_become_ours(exc_type, cls):
    ours = exception.from_remote_error(
        messaging.RemoteError(exc_type, 'the message', []))
    assert type(ours) is cls
    assert str(ours) == 'the message'


@pytest.mark.parametrize('error', [
    messaging.RemoteError('NoSuchMethod', 'x', []),
    messaging.RemoteError(None, None, None),
    ValueError('not a remote error'),
])
def test_other_errors_are_returned_as_they_are(error):
    assert exception.from_remote_error(error) is error


def test_object_version_error_names_the_object_and_both_versions():
    exc = exception.ObjectVersionNotSupported(
        objname='ImageMetaProps', objver='1.45', supported='1.44')
    assert isinstance(exc, exception.InvalidObjectPrimitive)
    assert str(exc) == (
        'Cannot read a versioned object from the message: ImageMetaProps '
        'version 1.45 is not supported; this scheduler reads ImageMetaProps '
        'up to version 1.44.')


def test_placement_required_is_a_no_valid_host():
    exc = exception.PlacementRequired(reason='needs VGPU')
    assert isinstance(exc, exception.NoValidHost)
    assert str(exc) == 'No valid host was found. needs VGPU'
