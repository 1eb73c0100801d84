"""Options of the ``[notifications]`` group that the scheduler reads.

Names, types, choices and defaults are Nova 34.0.0's: ``notification_format``
(``unversioned``, ``versioned`` or ``both``; default ``unversioned``, also
read from ``[DEFAULT]`` as Nova still does) picks which of the two kinds of
``scheduler.select_destinations`` notifications are sent, and
``versioned_notifications_topics`` where the versioned ones go.  Nova's
other options of the group concern instances and are not offered.
Whether anything is sent at all is ``[oslo_messaging_notifications]
driver`` (none configured: nothing).
"""

from oslo_config import cfg

from scheduler.conf import groups

UNVERSIONED = 'unversioned'
VERSIONED = 'versioned'
BOTH = 'both'

notifications_group = cfg.OptGroup(
    name='notifications', title='Notifications options',
    help='Which notifications the scheduler sends and on which topics.')

notifications_opts = [
    cfg.StrOpt(
        'notification_format', default=UNVERSIONED,
        choices=[
            (UNVERSIONED, 'only the legacy notifications, with a plain '
                          'dict payload, on the [oslo_messaging_'
                          'notifications] topics'),
            (VERSIONED, 'only the versioned notifications, whose payload '
                        'is a versioned object, on the '
                        'versioned_notifications_topics'),
            (BOTH, 'the two kinds, each on its topics'),
        ],
        deprecated_group='DEFAULT',
        help='The kind of notifications the scheduler sends for each '
             'select_destinations request (scheduler.select_destinations.'
             'start and .end).  Consumers of the versioned interface (the '
             'RequestSpecPayload) need "versioned" or "both".  Nothing is '
             'sent unless [oslo_messaging_notifications] driver names a '
             'driver.'),
    cfg.ListOpt(
        'versioned_notifications_topics',
        default=['versioned_notifications'],
        help='The topics the versioned notifications are sent to, one '
             'copy per topic (on the control exchange, "nova").  Add a '
             'topic to give another consumer its own queue.'),
]


def register_opts(conf):
    """Register the group and its options on ``conf`` (idempotent: the
    same option objects may be registered again)."""
    groups.register_group(conf, notifications_group)
    conf.register_opts(notifications_opts, group=notifications_group)


def list_opts():
    return {notifications_group: notifications_opts}
