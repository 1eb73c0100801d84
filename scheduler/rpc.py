"""oslo.messaging set-up in one place: transports, serializer, servers,
clients and the notifier.

Nothing here is global: callers keep the objects they build.  The
serializer turns versioned objects into Nova-style primitives and the
request context into ``_context_*`` keys.

Exceptions: the service sends its errors under Nova's names
(``nova.exception.NoValidHost``...: ``exception.as_nova``) to a caller
that does not say otherwise, which is what Nova's conductor, scheduler
client and compute services expect.  Our clients (``get_client``) say
otherwise: their context carries ``CALLER_EXMODS_KEY``, the exception
modules they rebuild (``ALLOWED_EXMODS``), so the service sends them
``scheduler.exception`` classes, re-raised on their side as themselves.
``nova_caller(ctxt)`` tells the endpoint which caller it has; a call made
in-process (a context that did not come through the serializer) keeps
our classes too.
"""

import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import objects
from scheduler.conf import CONF
from scheduler.objects import base as objects_base

TOPIC = 'scheduler'
ALLOWED_EXMODS = [exception.__name__]
# The context key in which a client of ours lists the modules it rebuilds
# exceptions from; absent in Nova's messages.
CALLER_EXMODS_KEY = 'scheduler_caller_exmods'
# Nova's exchange, so that Nova's conductor and this service meet.
CONTROL_EXCHANGE = 'nova'
# Default ``[oslo_messaging_rabbit] rabbit_qos_prefetch_count``: the
# messages a process takes from RabbitMQ before it has started them.
# oslo.messaging's default (0) takes a whole backlog at once, which then
# sits in the process (calls queued behind casts, out of reach of the
# other workers, lost for a stop) however long it takes.
PREFETCH_COUNT = 32


def set_defaults(conf=CONF):
    """Set oslo.messaging's defaults for this service: exchange ``nova``
    and a bounded prefetch (``PREFETCH_COUNT``); a configuration file
    still sets either."""
    messaging.set_transport_defaults(control_exchange=CONTROL_EXCHANGE)
    for group, opts in messaging_opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            conf.register_opts(opts, group)
    conf.set_default('rabbit_qos_prefetch_count', PREFETCH_COUNT,
                     'oslo_messaging_rabbit')


class RequestContextSerializer(messaging.Serializer):
    """Serializes the context as a dict and the entities with ``base``.

    ``caller_exmods`` (a list of module names; clients only) is added to
    the context dict under CALLER_EXMODS_KEY.  A received context keeps
    that list as its ``caller_exmods`` attribute (None when absent).
    """

    def __init__(self, base=None, caller_exmods=None):
        self._base = base or objects_base.ObjectSerializer()
        self._caller_exmods = caller_exmods

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        values = context.to_dict()
        if self._caller_exmods is not None:
            values[CALLER_EXMODS_KEY] = list(self._caller_exmods)
        return values

    def deserialize_context(self, context):
        ctxt = scheduler_context.RequestContext.from_dict(context)
        exmods = context.get(CALLER_EXMODS_KEY)
        ctxt.caller_exmods = exmods if isinstance(exmods, list) else None
        return ctxt


def nova_caller(ctxt):
    """Whether ``ctxt`` came with a message from a caller that rebuilds
    Nova's exceptions, not ours: it went through our serializer (which
    gives it ``caller_exmods``) without listing ``scheduler.exception``.
    False for a context made in this process."""
    if not hasattr(ctxt, 'caller_exmods'):
        return False
    return exception.__name__ not in (ctxt.caller_exmods or ())


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
    """An RPC client whose messages ask for ``scheduler.exception``
    errors (CALLER_EXMODS_KEY)."""
    return messaging.get_rpc_client(
        transport, target, version_cap=version_cap, timeout=timeout,
        serializer=RequestContextSerializer(caller_exmods=ALLOWED_EXMODS))


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
