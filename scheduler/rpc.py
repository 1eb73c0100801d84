"""oslo.messaging set-up in one place: transports, serializer, servers,
clients and the notifier.

Nothing here is global: callers keep the objects they build.  The
serializer turns versioned objects into Nova-style primitives and the
request context into ``_context_*`` keys.  Exceptions from
``scheduler.exception`` are re-raised on the caller's side as themselves.
"""

import oslo_messaging as messaging

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler.objects import base as objects_base

TOPIC = 'scheduler'
ALLOWED_EXMODS = ['scheduler.exception']
# Nova's exchange, so that Nova's conductor and this service meet.
CONTROL_EXCHANGE = 'nova'


def set_defaults():
    """Set oslo.messaging's defaults for this service (exchange ``nova``)."""
    messaging.set_transport_defaults(control_exchange=CONTROL_EXCHANGE)


class RequestContextSerializer(messaging.Serializer):
    """Serializes the context as a dict and the entities with ``base``."""

    def __init__(self, base=None):
        self._base = base or objects_base.ObjectSerializer()

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return scheduler_context.RequestContext.from_dict(context)


def get_transport(conf, url=None):
    """An RPC transport for ``url`` (default ``[DEFAULT] transport_url``),
    on the ``control_exchange`` (default ``nova``)."""
    objects.register_all()
    set_defaults()
    return messaging.get_rpc_transport(
        conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)


def get_notification_transport(conf):
    set_defaults()
    return messaging.get_notification_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)


def get_server(transport, target, endpoints):
    """A threading RPC server for ``endpoints`` on ``target``.

    Only methods marked ``@messaging.expose`` can be called: an endpoint's
    other attributes are not part of the API.
    """
    return messaging.get_rpc_server(
        transport, target, endpoints,
        serializer=RequestContextSerializer(),
        access_policy=messaging.ExplicitRPCAccessPolicy)


def get_client(transport, target, version_cap=None, timeout=None):
    return messaging.get_rpc_client(
        transport, target, version_cap=version_cap, timeout=timeout,
        serializer=RequestContextSerializer())


def get_notifier(transport, host):
    """A notifier publishing as ``scheduler.<host>``, through the
    ``[oslo_messaging_notifications] driver`` list of ``transport.conf``.

    With no driver configured it is given the ``noop`` driver explicitly,
    so that ``is_enabled()`` says False (oslo.messaging answers True for
    an empty list) and callers can skip building payloads.
    """
    drivers = transport.conf.oslo_messaging_notifications.driver
    return messaging.Notifier(
        transport, publisher_id='scheduler.%s' % host,
        driver=None if drivers else 'noop',
        serializer=RequestContextSerializer(messaging.JsonPayloadSerializer()))
