"""The scheduler's notifications, as Nova 34.0.0's scheduler sends them:
``scheduler.select_destinations.start`` before a request is placed and
``.end`` after it was (none when it fails), priority INFO, in two kinds
chosen by ``[notifications] notification_format``:

* legacy (``unversioned``, the default, or ``both``): publisher
  ``scheduler.<host>``, payload ``{"request_spec": <legacy request_spec
  dict>}``, through the notifier the service gives the driver, on the
  ``[oslo_messaging_notifications] topics`` (Nova's FilterScheduler
  since Liberty);
* versioned (``versioned`` or ``both``): publisher
  ``nova-scheduler:<host>`` (``[DEFAULT] host``), payload a
  ``RequestSpecPayload`` primitive (``scheduler.objects.notification``),
  on the ``[notifications] versioned_notifications_topics``, through an
  oslo.messaging Notifier made on the same transport (once per service
  notifier, host and topics).

With no ``[oslo_messaging_notifications] driver`` the service's notifier
is disabled and nothing is built.  A request whose versioned payload
cannot be built (a value the payload cannot hold, e.g. no
``instance_uuid``) is still placed: that notification is not sent and an
error is logged, where Nova would fail the request.
"""

import threading
import typing
import weakref

import oslo_messaging as messaging
from oslo_log import log as logging

from scheduler import rpc
from scheduler.conf import CONF
from scheduler.conf import notifications as notifications_conf
from scheduler.objects import notification as payloads

LOG = logging.getLogger(__name__)

EVENT_PREFIX = 'scheduler.select_destinations.'
# Nova's notification source for its scheduler: versioned notifications
# are published as "<source>:<host>".
SOURCE = 'nova-scheduler'

_VERSIONED_NOTIFIERS: weakref.WeakKeyDictionary[typing.Any, typing.Any] = (
    weakref.WeakKeyDictionary())
_LOCK = threading.Lock()


def notify_select_destinations(notifier, context, spec_obj, phase):
    """Send the ``start`` or ``end`` notifications of ``spec_obj`` in the
    kinds ``[notifications] notification_format`` asks for; ``notifier``
    is the service's (legacy) notifier, or None."""
    if notifier is None or not notifier.is_enabled():
        return   # no driver: skip building the payloads
    kind = CONF.notifications.notification_format
    if kind != notifications_conf.VERSIONED:
        _notify_legacy(notifier, context, spec_obj, phase)
    if kind != notifications_conf.UNVERSIONED:
        _notify_versioned(versioned_notifier(notifier), context, spec_obj,
                          phase)


def _notify_legacy(notifier, context, spec_obj, phase):
    payload = {'request_spec': spec_obj.to_legacy_request_spec_dict()}
    notifier.info(context, EVENT_PREFIX + phase, payload)


def _notify_versioned(notifier, context, spec_obj, phase):
    if not notifier.is_enabled():
        return
    try:
        payload = payloads.RequestSpecPayload.from_request_spec(spec_obj)
    except Exception as exc:
        LOG.error('Versioned notification %s%s not sent: its payload '
                  'cannot be built from the request of instance %s: %s',
                  EVENT_PREFIX, phase, spec_obj.obj_get('instance_uuid'),
                  exc)
        return
    notifier.info(context, EVENT_PREFIX + phase, payload.obj_to_primitive())


def versioned_notifier(notifier):
    """The Notifier of the versioned notifications that goes with the
    service's ``notifier``: on its transport, publishing as
    ``nova-scheduler:<[DEFAULT] host>`` on the ``[notifications]
    versioned_notifications_topics``; made again when those change."""
    key = (CONF.host,
           tuple(CONF.notifications.versioned_notifications_topics))
    with _LOCK:
        made = _VERSIONED_NOTIFIERS.get(notifier)
        if made is None or made[0] != key:
            made = (key, _make_versioned_notifier(notifier.transport, *key))
            _VERSIONED_NOTIFIERS[notifier] = made
    return made[1]


def _make_versioned_notifier(transport, host, topics):
    """A Notifier on the ``[oslo_messaging_notifications] driver`` list
    (``noop`` when empty, so that it says it is disabled)."""
    drivers = transport.conf.oslo_messaging_notifications.driver
    return messaging.Notifier(
        transport, publisher_id='%s:%s' % (SOURCE, host),
        driver=None if drivers else 'noop', topics=list(topics),
        serializer=rpc.RequestContextSerializer(
            messaging.JsonPayloadSerializer()))
