"""Nova's versioned ``scheduler.select_destinations`` notifications from a
``scheduler-service`` process on the session's RabbitMQ, checked against
Nova 34.0.0 itself.

The test listens on the versioned topic (and on the legacy one) with
oslo.messaging, sends requests with SchedulerAPI, and checks each
notification: publisher ``nova-scheduler:<host>``, event type, priority
INFO, a ``RequestSpecPayload`` 1.1 envelope.  Then a helper process
(``nova_payloads/nova_payloads.py``) run with the python of the Nova venv
(``$SCHEDULER_NOVA_VENV``, default ``~/.cache/scheduler-tests/
nova-34.0.0``, made by ``tools/test-setup.sh``; ``python -I``, never
importing this repository) rebuilds every received payload with Nova's
own classes (``obj_from_primitive``), and builds the payload Nova's
RequestSpecPayload makes from the RequestSpec primitive the service
received: both must equal what was sent.  The payload classes' fields
are compared with Nova's too.

Without the venv the tests fail with a hint, or are skipped when
``SCHEDULER_TEST_SKIP_NOVA=1``.
"""

import json
import os
import queue
import subprocess
import uuid

import oslo_messaging as messaging
import pytest
from deployment import Deployment
from nova_venv import NOVA_VERSION
from nova_venv import load_helper_module
from nova_venv import nova_python
from test_notifications_payload import AGGREGATE_UUID
from test_notifications_payload import NOVA_34_PAYLOADS
from test_notifications_payload import rich_spec

from scheduler import exception
from scheduler.conf import CONF
from scheduler.objects import base
from scheduler.objects import notification
from scheduler_tools import seed
from scheduler_tools import writers

HELPER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'nova_payloads')
HOST = 'scheduler-notify'
PUBLISHER = 'nova-scheduler:' + HOST
LEGACY_PUBLISHER = 'scheduler.' + HOST
START = 'scheduler.select_destinations.start'
END = 'scheduler.select_destinations.end'
VERSIONED_TOPIC = 'versioned_notifications'
LEGACY_TOPIC = 'notifications'
FILTERS = ['RetryFilter', 'RamFilter', 'ComputeFilter',
           'ServerGroupAntiAffinityFilter']
WAIT = 30
# How long to wait for a notification that must not come.
QUIET = 3


schema = load_helper_module(os.path.join(HELPER_DIR, 'schema.py'),
                            'nova_payloads_schema')


# -- Nova's side ------------------------------------------------------------



class NovaPayloads:
    """The helper process: ``call(op, **args)`` returns its result or
    raises AssertionError with Nova's traceback."""

    def __init__(self, python, log_path):
        self._log = open(log_path, 'w')
        env = {key: value for key, value in os.environ.items()
               if not key.startswith('PYTHON')}
        self._process = subprocess.Popen(
            [python, '-I', os.path.join(HELPER_DIR, 'nova_payloads.py')],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, env=env, cwd=os.path.dirname(log_path))
        assert self._answer() == {'ok': 'ready'}

    def _answer(self):
        line = self._process.stdout.readline()
        if not line:
            with open(self._log.name) as log:
                raise AssertionError('the Nova helper exited:\n%s'
                                     % log.read()[-5000:])
        return json.loads(line)

    def call(self, op, **args):
        self._process.stdin.write(json.dumps(dict(args, op=op)) + '\n')
        self._process.stdin.flush()
        answer = self._answer()
        assert 'ok' in answer, answer.get('error')
        return answer['ok']

    def close(self):
        self._process.stdin.close()
        self._process.wait(timeout=30)
        self._log.close()


@pytest.fixture(scope='module')
def nova(tmp_path_factory):
    helper = NovaPayloads(nova_python(), str(
        tmp_path_factory.mktemp('nova') / 'nova_payloads.log'))
    assert helper.call('version') == NOVA_VERSION
    yield helper
    helper.close()


# -- the listener ---------------------------------------------------------

class Recorder:
    """A notification endpoint: every notification, whatever its
    priority, as ``(priority, publisher, event_type, payload)``."""

    PRIORITIES = ('audit', 'debug', 'info', 'warn', 'error', 'critical',
                  'sample')

    def __init__(self):
        self.received = queue.Queue()
        for priority in self.PRIORITIES:
            setattr(self, priority, self._recorder(priority.upper()))

    def _recorder(self, priority):
        def record(ctxt, publisher_id, event_type, payload, metadata):
            self.received.put((priority, publisher_id, event_type, payload))
        return record


class Listener:
    """Notifications of one topic on exchange ``nova``; ``of(uuid, n)``
    waits for the ``n`` notifications about instance ``uuid``."""

    def __init__(self, transport, topic):
        self.recorder = Recorder()
        self._kept = []
        self._listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic=topic, exchange='nova')],
            [self.recorder], executor='threading')
        self._listener.start()

    def of(self, instance_uuid, count, timeout=WAIT):
        found = []
        while len(found) < count:
            try:
                record = self.recorder.received.get(timeout=timeout)
            except queue.Empty:
                break
            if _instance_of(record[3]) == instance_uuid:
                found.append(record)
        return found

    def stop(self):
        self._listener.stop()
        self._listener.wait()


def _instance_of(payload):
    """The instance uuid of a versioned or a legacy payload."""
    if 'nova_object.data' in payload:
        return payload['nova_object.data'].get('instance_uuid')
    return payload['request_spec']['instance_properties'].get('uuid')


@pytest.fixture
def listen(rabbit_url):
    """``listen(topic)``: a Listener, stopped at the end of the test."""
    transport = messaging.get_notification_transport(CONF, url=rabbit_url)
    listeners = []

    def _listen(topic):
        listeners.append(Listener(transport, topic))
        return listeners[-1]
    yield _listen
    for listener in listeners:
        listener.stop()
    transport.cleanup()


# -- the service ------------------------------------------------------------

def _hosts(ctx):
    for i in range(3):
        seed.add_compute(ctx, 'host%d' % i, memory_mb=8192)
    aggregate = writers.aggregate_create(ctx, 'agg', uuid=AGGREGATE_UUID)
    writers.aggregate_add_host(ctx, aggregate['id'], 'host0')


@pytest.fixture
def deploy(rabbit_url, tmp_path):
    """``deploy(**notification_options)``: the service as a process with
    the ``messagingv2`` notification driver and those ``[notifications]``
    options."""
    started = []

    def _deploy(**options):
        all_options = {
            ('filter_scheduler', 'enabled_filters'): FILTERS,
            ('oslo_messaging_notifications', 'driver'): ['messagingv2']}
        all_options.update({('notifications', name): value
                            for name, value in options.items()})
        deployment = Deployment(
            'sqlite:///%s' % (tmp_path / 'scheduler.sqlite'), 'process',
            rabbit_url, str(tmp_path), all_options, host=HOST)
        _hosts(deployment.ctx)
        started.append(deployment)
        return deployment.start()
    yield _deploy
    for deployment in started:
        deployment.stop()


def _wire(spec):
    """The RequestSpec primitive the service receives for ``spec``."""
    primitive = base.ObjectSerializer().serialize_entity(None, spec)
    return json.loads(json.dumps(primitive))


def _new_rich_spec():
    """A rich request as Nova sends it, for a new instance."""
    return rich_spec(instance_uuid=str(uuid.uuid4()), received=False)


# -- checks -----------------------------------------------------------------

def _check_envelope(record, event_type):
    priority, publisher, event, payload = record
    assert (priority, publisher, event) == ('INFO', PUBLISHER, event_type)
    assert payload['nova_object.name'] == 'RequestSpecPayload'
    assert payload['nova_object.version'] == '1.1'
    assert payload['nova_object.namespace'] == 'nova'
    assert 'nova_object.changes' not in json.dumps(payload)


def _check_with_nova(nova, payload, spec, group_hosts=()):
    """Nova's classes rebuild ``payload`` (every object a Nova 34 payload
    class of the same version), and Nova builds the same payload from
    the request ``spec`` (the group's hosts plus ``group_hosts``)."""
    rebuilt = nova.call('rebuild', payload=payload)
    for name, module, version in rebuilt['objects']:
        assert module.startswith('nova.notifications.objects.'), module
        assert NOVA_34_PAYLOADS[name] == version, name
    assert rebuilt['primitive'] == payload
    expected = nova.call('expected', spec=_wire(spec),
                         group_hosts=list(group_hosts))
    assert payload == expected
    return rebuilt['objects']


def _select(dep, spec):
    return [row['host'] for row in dep.api.select_destinations(dep.ctx,
                                                                spec)]


# -- tests ------------------------------------------------------------------

def test_payload_classes_have_novas_fields(nova):
    names = sorted(NOVA_34_PAYLOADS)
    expected = nova.call('schemas', names=names)
    assert {name: schema.describe(getattr(notification, name))
            for name in names} == expected


def test_both_kinds_for_a_rich_request(nova, listen, deploy):
    versioned = listen(VERSIONED_TOPIC)
    legacy = listen(LEGACY_TOPIC)
    dep = deploy(notification_format='both')
    spec = _new_rich_spec()
    assert _select(dep, spec) == ['host0']

    start, end = versioned.of(spec.instance_uuid, 2)
    _check_envelope(start, START)
    _check_envelope(end, END)
    objects = _check_with_nova(nova, start[3], spec)
    assert {name for name, _module, _version in objects} == (
        set(NOVA_34_PAYLOADS) - {'VirtCPUTopologyPayload'})
    # Scheduling added the chosen host to the group before ``.end``.
    _check_with_nova(nova, end[3], spec, group_hosts=['host0'])

    assert [record[:3] for record in legacy.of(spec.instance_uuid, 2)] == [
        ('INFO', LEGACY_PUBLISHER, START), ('INFO', LEGACY_PUBLISHER, END)]


def test_forced_host_and_a_failed_request(nova, listen, deploy):
    versioned = listen(VERSIONED_TOPIC)
    dep = deploy(notification_format='versioned')
    forced = seed.make_spec(force_hosts=['host1'], force_nodes=['host1'])
    assert _select(dep, forced) == ['host1']
    records = versioned.of(forced.instance_uuid, 2)
    assert [record[2] for record in records] == [START, END]
    for record in records:
        _check_with_nova(nova, record[3], forced)
    assert records[0][3]['nova_object.data']['force_hosts'] == 'host1'

    # Nothing fits: ``.start`` only, as Nova.
    too_big = seed.make_spec(memory_mb=10 ** 6)
    with pytest.raises(exception.NoValidHost):
        dep.api.select_destinations(dep.ctx, too_big)
    [record] = versioned.of(too_big.instance_uuid, 1)
    _check_envelope(record, START)
    _check_with_nova(nova, record[3], too_big)
    assert versioned.of(too_big.instance_uuid, 1, timeout=QUIET) == []


def test_versioned_only_on_every_configured_topic(nova, listen, deploy):
    extra_topic = 'audit-%s' % uuid.uuid4().hex
    versioned = listen(VERSIONED_TOPIC)
    extra = listen(extra_topic)
    legacy = listen(LEGACY_TOPIC)
    dep = deploy(notification_format='versioned',
                 versioned_notifications_topics=[VERSIONED_TOPIC,
                                                 extra_topic])
    spec = _new_rich_spec()
    assert _select(dep, spec) == ['host0']
    for listener in (versioned, extra):
        start, end = listener.of(spec.instance_uuid, 2)
        _check_envelope(start, START)
        _check_envelope(end, END)
    _check_with_nova(nova, start[3], spec)
    assert legacy.of(spec.instance_uuid, 1, timeout=QUIET) == []


def test_default_format_sends_no_versioned_notification(listen, deploy):
    versioned = listen(VERSIONED_TOPIC)
    legacy = listen(LEGACY_TOPIC)
    dep = deploy()
    spec = seed.make_spec()
    assert _select(dep, spec)
    assert len(legacy.of(spec.instance_uuid, 2)) == 2
    assert versioned.of(spec.instance_uuid, 1, timeout=QUIET) == []
