"""Legacy (unversioned) scheduler notifications, as Nova's FilterScheduler
sends them (reference 7.1).

``scheduler.select_destinations.start`` and ``.end``, priority INFO,
publisher ``scheduler.<host>``, payload ``{"request_spec": <legacy
request_spec dict>}``.  They go through the oslo.messaging Notifier built
by ``scheduler.rpc.get_notifier``; with no ``[oslo_messaging_notifications]
driver`` configured they are dropped by oslo.messaging.
"""

EVENT_PREFIX = 'scheduler.select_destinations.'


def notify_select_destinations(notifier, context, spec_obj, phase):
    """Send the ``start`` or ``end`` notification for ``spec_obj``."""
    if notifier is None or not notifier.is_enabled():
        return   # no driver: skip building the payload
    payload = {'request_spec': spec_obj.to_legacy_request_spec_dict()}
    notifier.info(context, EVENT_PREFIX + phase, payload)
