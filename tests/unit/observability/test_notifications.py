"""Sending the ``scheduler.select_destinations`` notifications: the kinds
``[notifications] notification_format`` asks for (Nova 34.0.0's option),
their publishers, priority and topics, nothing built without a driver,
and the FilterScheduler's start / end pair (oslo.messaging's ``test``
driver records what is sent)."""

import textwrap

import oslo_messaging as messaging
import pytest
from oslo_config import cfg
from oslo_messaging.notify import _impl_test
from test_notifications_payload import rich_spec

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.conf import notifications as notifications_conf
from scheduler.drivers import filter_scheduler
from scheduler.objects import instance_group as group_obj
from scheduler.objects import notification as payloads
from scheduler.objects import request_spec
from scheduler.observability import notifications
from scheduler_tools import seed

START = 'scheduler.select_destinations.start'
END = 'scheduler.select_destinations.end'
LEGACY = 'scheduler.sched-1'
VERSIONED = 'nova-scheduler:sched-1'


@pytest.fixture
def transport():
    transport = messaging.get_notification_transport(CONF, url='fake://')
    yield transport
    transport.cleanup()


@pytest.fixture
def sent(conf, transport):
    """What the ``test`` driver records: ``[(publisher, event, priority,
    payload)]``; the host is ``sched-1``."""
    conf.set_override('driver', ['test'], group='oslo_messaging_notifications')
    conf.set_override('host', 'sched-1')
    _impl_test.reset()
    records = []

    def _sent():
        records[:] = [(message['publisher_id'], message['event_type'],
                       message['priority'], message['payload'])
                      for _ctxt, message, _priority, _retry
                      in _impl_test.NOTIFICATIONS]
        return records
    yield _sent
    _impl_test.reset()


def _notifier(transport):
    return rpc.get_notifier(transport, 'sched-1')


def _send(notifier, spec, phase='start'):
    notifications.notify_select_destinations(
        notifier, scheduler_context.get_admin_context(), spec, phase)


def _summary(records):
    return [(publisher, event, priority)
            for publisher, event, priority, _payload in records]


def _versioned_payload(spec):
    primitive = payloads.RequestSpecPayload.from_request_spec(
        spec).obj_to_primitive()
    return messaging.JsonPayloadSerializer().serialize_entity(None,
                                                               primitive)


# -- formats ---------------------------------------------------------------

def test_options_have_nova_34_defaults():
    assert CONF.notifications.notification_format == 'unversioned'
    assert CONF.notifications.versioned_notifications_topics == [
        'versioned_notifications']


def test_unversioned_sends_the_legacy_notification_only(sent, transport):
    spec = rich_spec()
    _send(_notifier(transport), spec)
    assert _summary(sent()) == [(LEGACY, START, 'INFO')]
    assert sent()[0][3] == {
        'request_spec': messaging.JsonPayloadSerializer().serialize_entity(
            None, spec.to_legacy_request_spec_dict())}


def test_versioned_sends_the_versioned_notification_only(sent, transport,
                                                         conf):
    conf.set_override('notification_format', 'versioned',
                      group='notifications')
    spec = rich_spec()
    _send(_notifier(transport), spec, 'end')
    assert _summary(sent()) == [(VERSIONED, END, 'INFO')]
    payload = sent()[0][3]
    assert payload == _versioned_payload(spec)
    assert payload['nova_object.name'] == 'RequestSpecPayload'


def test_both_sends_legacy_then_versioned(sent, transport, conf):
    conf.set_override('notification_format', 'both', group='notifications')
    notifier = _notifier(transport)
    spec = rich_spec()
    _send(notifier, spec, 'start')
    _send(notifier, spec, 'end')
    assert _summary(sent()) == [
        (LEGACY, START, 'INFO'), (VERSIONED, START, 'INFO'),
        (LEGACY, END, 'INFO'), (VERSIONED, END, 'INFO')]
    assert 'request_spec' in sent()[0][3]
    assert sent()[1][3] == _versioned_payload(spec)


# -- the versioned notifier -------------------------------------------------

def test_versioned_notifier_topics_and_publisher(conf, transport):
    conf.set_override('host', 'sched-1')
    conf.set_override('driver', ['test'], group='oslo_messaging_notifications')
    notifier = _notifier(transport)
    versioned = notifications.versioned_notifier(notifier)
    assert versioned.publisher_id == VERSIONED
    assert versioned._topics == ['versioned_notifications']
    assert versioned.is_enabled()
    assert notifications.versioned_notifier(notifier) is versioned


def test_versioned_notifier_follows_topics_and_host(conf, transport):
    notifier = _notifier(transport)
    first = notifications.versioned_notifier(notifier)
    conf.set_override('versioned_notifications_topics', ['a', 'b'],
                      group='notifications')
    conf.set_override('host', 'sched-2')
    again = notifications.versioned_notifier(notifier)
    assert again is not first
    assert again._topics == ['a', 'b']
    assert again.publisher_id == 'nova-scheduler:sched-2'


def test_versioned_notifier_is_disabled_without_a_configured_driver(
        conf, transport, sent):
    """A service notifier given its driver explicitly, no driver in the
    configuration: the versioned notifier is disabled, only the legacy
    notification goes."""
    conf.set_override('driver', [], group='oslo_messaging_notifications')
    conf.set_override('notification_format', 'both', group='notifications')
    notifier = messaging.Notifier(transport, publisher_id=LEGACY,
                                  driver='test')
    assert not notifications.versioned_notifier(notifier).is_enabled()
    _send(notifier, rich_spec())
    assert _summary(sent()) == [(LEGACY, START, 'INFO')]


# -- nothing built, errors ----------------------------------------------------

@pytest.mark.parametrize('kind', ['unversioned', 'versioned', 'both'])
def test_nothing_is_built_without_a_driver(conf, transport, monkeypatch,
                                           kind):
    conf.set_override('driver', [], group='oslo_messaging_notifications')
    conf.set_override('notification_format', kind, group='notifications')

    def _fail(*args, **kwargs):
        raise AssertionError('a payload was built')
    monkeypatch.setattr(payloads.RequestSpecPayload, 'from_request_spec',
                        _fail)
    monkeypatch.setattr(request_spec.RequestSpec,
                        'to_legacy_request_spec_dict', _fail)
    _send(_notifier(transport), rich_spec())
    _send(None, rich_spec())


def test_a_payload_that_cannot_be_built_is_logged_not_raised(
        sent, transport, conf, caplog):
    conf.set_override('notification_format', 'both', group='notifications')
    spec = rich_spec()
    spec.instance_group._rules = {'max_server_per_host': 'many'}
    _send(_notifier(transport), spec)
    assert _summary(sent()) == [(LEGACY, START, 'INFO')]
    assert ('Versioned notification scheduler.select_destinations.start '
            'not sent' in caplog.text)
    assert spec.instance_uuid in caplog.text


# -- options --------------------------------------------------------------

def _parsed(tmp_path, text):
    conf = cfg.ConfigOpts()
    notifications_conf.register_opts(conf)
    notifications_conf.register_opts(conf)   # again: no error
    path = tmp_path / 'scheduler.conf'
    path.write_text(textwrap.dedent(text))
    conf(args=[], project='scheduler', default_config_files=[str(path)],
         default_config_dirs=[])
    return conf


def test_format_is_read_from_default_as_nova_does(tmp_path):
    conf = _parsed(tmp_path, """
        [DEFAULT]
        notification_format = both
    """)
    assert conf.notifications.notification_format == 'both'


def test_options_are_read_from_their_group(tmp_path):
    conf = _parsed(tmp_path, """
        [notifications]
        notification_format = versioned
        versioned_notifications_topics = versioned_notifications,audit
    """)
    assert conf.notifications.notification_format == 'versioned'
    assert conf.notifications.versioned_notifications_topics == [
        'versioned_notifications', 'audit']


def test_an_unknown_format_is_refused(tmp_path):
    conf = _parsed(tmp_path, """
        [notifications]
        notification_format = json
    """)
    with pytest.raises(ValueError):
        assert conf.notifications.notification_format


def test_list_opts_has_every_option_with_help():
    [(group, opts)] = notifications_conf.list_opts().items()
    assert group.name == 'notifications' and group.help
    assert [opt.name for opt in opts] == [
        'notification_format', 'versioned_notifications_topics']
    assert all(opt.help for opt in opts)


# -- the filter scheduler -------------------------------------------------

@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters', [
        'RamFilter', 'ComputeFilter', 'ServerGroupAntiAffinityFilter'],
        group='filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'],
                      group='filter_scheduler')
    return seed.use_database('sqlite:///%s' % (tmp_path / 'ns.sqlite'))


def _group_hosts(payload):
    group = payload['nova_object.data']['instance_group']
    return group['nova_object.data']['hosts']


def test_filter_scheduler_sends_start_and_end(ctx, sent, transport, conf):
    """The end payload has the hosts scheduling added to the group, as
    Nova's (it sends the request as it is then)."""
    conf.set_override('notification_format', 'versioned',
                      group='notifications')
    seed.add_compute(ctx, 'host0', memory_mb=4096)
    seed.add_compute(ctx, 'host1', memory_mb=8192)
    group = group_obj.InstanceGroup(uuid=seed.uuid.uuid4().hex,
                                    policy='anti-affinity', hosts=[],
                                    members=[])
    spec = seed.make_spec(num_instances=2, instance_group=group)
    driver = filter_scheduler.FilterScheduler(ctx,
                                              notifier=_notifier(transport))
    driver.select_destinations(ctx, spec)
    assert _summary(sent()) == [(VERSIONED, START, 'INFO'),
                                (VERSIONED, END, 'INFO')]
    assert _group_hosts(sent()[0][3]) == []
    assert _group_hosts(sent()[1][3]) == ['host1', 'host0']


def test_filter_scheduler_sends_no_end_when_nothing_fits(ctx, sent,
                                                         transport, conf):
    conf.set_override('notification_format', 'both', group='notifications')
    driver = filter_scheduler.FilterScheduler(ctx,
                                              notifier=_notifier(transport))
    with pytest.raises(exception.NoValidHost):
        driver.select_destinations(ctx, seed.make_spec())
    assert _summary(sent()) == [(LEGACY, START, 'INFO'),
                                (VERSIONED, START, 'INFO')]
