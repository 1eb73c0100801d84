"""Nova 34.0.0's own notification payload classes, as a line-oriented
JSON service for the tests.

Run with the python of a virtualenv holding Nova (``python -I``), never
with this repository on ``sys.path``: only Nova, oslo and ``schema.py``
(next to this file) are imported.  One JSON request per line on stdin,
one JSON answer per line on stdout: ``{"ok": result}`` or ``{"error":
traceback}``.  Requests (``{"op": ..., ...}``):

``version``   Nova's version string.
``schemas``   ``names``: payload class names -> ``schema.describe`` of
              Nova's class of that name.
``rebuild``   ``payload``: a received ``RequestSpecPayload`` primitive,
              rebuilt with ``obj_from_primitive`` of Nova's class.  The
              result: ``objects``, ``[name, module, version]`` of every
              object of the rebuilt tree (Nova's classes), and
              ``primitive``, the rebuilt object written again.
              (Nova's payload classes take their source object when
              made, which ``obj_from_primitive`` cannot give: made
              without arguments they are initialised by Nova's payload
              base class only, then filled from the primitive by
              oslo.versionedobjects with Nova's field definitions.)
``expected``  ``spec``: a RequestSpec primitive as the scheduler received
              it, read with Nova's RequestSpec; ``group_hosts``: hosts to
              add to its server group (what scheduling adds before
              ``.end``).  The result: the primitive of the payload Nova's
              RequestSpecPayload builds from it, as Nova's scheduler
              sends it.
"""

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nova.conf  # noqa: E402
import oslo_messaging as messaging  # noqa: E402
import schema  # noqa: E402
from nova import objects  # noqa: E402
from nova import rpc  # noqa: E402
from nova import version as nova_version  # noqa: E402
from nova.notifications.objects import base as notification_base  # noqa
from nova.notifications.objects import request_spec as payloads  # noqa
from nova.objects import base as nova_base  # noqa: E402

CONF = nova.conf.CONF


def setup():
    """Nova's objects and notification payloads registered; versioned
    notifications enabled (a ``test`` driver on ``fake://``), as Nova's
    payloads are filled only then."""
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    CONF.set_override('notification_format', 'versioned',
                      group='notifications')
    objects.register_all()
    nova_base.NovaObjectRegistry.register_notification_objects()
    for cls in nova_base.NovaObjectRegistry.notification_classes:
        if issubclass(cls, notification_base.NotificationPayloadBase):
            cls.__init__ = _readable_init(cls.__init__)
    transport = messaging.get_notification_transport(CONF, url='fake://')
    rpc.NOTIFIER = messaging.Notifier(transport, driver='test')


def _readable_init(init):
    """``init``, or the payload base class's when called without
    arguments (as ``obj_from_primitive`` makes an object)."""
    def __init__(self, *args, **kwargs):
        if args or kwargs:
            init(self, *args, **kwargs)
        else:
            notification_base.NotificationPayloadBase.__init__(self)
    return __init__


def nova_class(name):
    return nova_base.NovaObjectRegistry.obj_classes()[name][0]


def objects_of(obj):
    """``[name, module, version]`` of ``obj`` and of every object in its
    set fields, depth first."""
    found = [[obj.obj_name(), type(obj).__module__, obj.VERSION]]
    for name in obj.fields:
        if obj.obj_attr_is_set(name):
            found += _objects_in(getattr(obj, name))
    return found


def _objects_in(value):
    if isinstance(value, nova_base.NovaObject):
        return objects_of(value)
    if isinstance(value, (list, tuple)):
        return [item for element in value for item in _objects_in(element)]
    return []


def op_version(request):
    return nova_version.version_string()


def op_schemas(request):
    return {name: schema.describe(nova_class(name))
            for name in request['names']}


def op_rebuild(request):
    rebuilt = payloads.RequestSpecPayload.obj_from_primitive(
        request['payload'])
    return {'objects': objects_of(rebuilt),
            'primitive': rebuilt.obj_to_primitive()}


def op_expected(request):
    spec = objects.RequestSpec.obj_from_primitive(request['spec'])
    if request.get('group_hosts'):
        spec.instance_group.hosts = (list(spec.instance_group.hosts or []) +
                                     request['group_hosts'])
    payload = payloads.RequestSpecPayload(request_spec=spec)
    payload.obj_reset_changes(recursive=True)
    return payload.obj_to_primitive()


OPS = {'version': op_version, 'schemas': op_schemas,
       'rebuild': op_rebuild, 'expected': op_expected}


def answer(line):
    try:
        request = json.loads(line)
        return {'ok': OPS[request['op']](request)}
    except Exception:
        return {'error': traceback.format_exc()}


def main():
    setup()
    print(json.dumps({'ok': 'ready'}), flush=True)
    for line in sys.stdin:
        print(json.dumps(answer(line)), flush=True)


if __name__ == '__main__':
    main()
