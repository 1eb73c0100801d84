"""Exceptions: Nova's messages, tolerant formatting, remote re-raising."""

import sys

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
