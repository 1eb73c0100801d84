"""SchedulerAPI's version logic, over a real ``fake://`` transport.

The servers are real oslo.messaging RPC servers (``scheduler.rpc``) whose
only endpoint is ``Recorder``: it has Nova's method and argument names,
records what it received (after deserialization) and answers a fixed
value.  What went on the wire (target, method, version) is read from the
transport driver, so every assertion is about a message that was really
sent.  Each test gets its own control exchange, so no stale message of
another test can reach it.
"""

import threading
import uuid

import fakes
import oslo_messaging as messaging
import pytest

from scheduler import context as scheduler_context
from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec as rs
from scheduler.objects import selection as selection_obj
from scheduler.server import rpcapi

INSTANCE_UUID = 'f4b1b5d6-2a87-4a0c-8c61-0b4d0a7c3f10'
OTHER_UUID = '0c9f0d87-6c8e-4f7e-b2b6-5f0f6e0c1b2a'
NODE_UUID = '3e1b8f4a-6f0e-4b8c-9a6f-2c1d0e9b8a7f'
DESTINATIONS = [{'host': 'host1', 'nodename': 'node1',
                 'limits': {'memory_mb': 3072}}]
TIMEOUT = 10

_MISSING = object()


class Recorder:
    """A scheduler endpoint that records its calls (Nova's names)."""

    target = messaging.Target(version='4.5')

    def __init__(self):
        self.received = []
        self._cond = threading.Condition()

    def _record(self, method, ctxt, **kwargs):
        with self._cond:
            self.received.append(
                (method, ctxt,
                 {k: v for k, v in kwargs.items() if v is not _MISSING}))
            self._cond.notify_all()

    def wait_for(self, count, timeout=TIMEOUT):
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.received) >= count,
                                       timeout), self.received
        return self.received

    @messaging.expose
    def select_destinations(self, ctxt, request_spec=_MISSING,
                            filter_properties=_MISSING, spec_obj=_MISSING,
                            instance_uuids=_MISSING, return_objects=_MISSING,
                            return_alternates=_MISSING):
        self._record('select_destinations', ctxt, request_spec=request_spec,
                     filter_properties=filter_properties, spec_obj=spec_obj,
                     instance_uuids=instance_uuids,
                     return_objects=return_objects,
                     return_alternates=return_alternates)
        if return_objects is True:
            first = selection_obj.Selection.from_host_state(
                fakes.fake_host_state('host1', 'node1', uuid=NODE_UUID,
                                      limits={'memory_mb': 3072}))
            alternate = selection_obj.Selection.from_host_state(
                fakes.fake_host_state('host2', 'node2', uuid=OTHER_UUID))
            return [[first, alternate]]
        return DESTINATIONS

    @messaging.expose
    def update_aggregates(self, ctxt, aggregates):
        self._record('update_aggregates', ctxt, aggregates=aggregates)

    @messaging.expose
    def delete_aggregate(self, ctxt, aggregate):
        self._record('delete_aggregate', ctxt, aggregate=aggregate)

    @messaging.expose
    def update_instance_info(self, ctxt, host_name, instance_info):
        self._record('update_instance_info', ctxt, host_name=host_name,
                     instance_info=instance_info)

    @messaging.expose
    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        self._record('delete_instance_info', ctxt, host_name=host_name,
                     instance_uuid=instance_uuid)

    @messaging.expose
    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        self._record('sync_instance_info', ctxt, host_name=host_name,
                     instance_uuids=instance_uuids)


class OcataRecorder(Recorder):
    """A scheduler that serves 4.3 at most, like Nova 13.0 to 15.0."""

    target = messaging.Target(version='4.3')


class Wire:
    """Records every message the transport driver is asked to send."""

    def __init__(self, driver):
        self.sent = []
        self._send = driver.send

    def send(self, target, ctxt, message, *args, **kwargs):
        self.sent.append({'topic': target.topic, 'fanout': target.fanout,
                          'server': target.server,
                          'method': message.get('method'),
                          'version': message.get('version'),
                          'args': message.get('args')})
        return self._send(target, ctxt, message, *args, **kwargs)

    @property
    def versions(self):
        return [m['version'] for m in self.sent]


@pytest.fixture
def transport(conf):
    if 'control_exchange' not in CONF:
        # Registers oslo.messaging's transport options on CONF.
        rpc.get_transport(CONF, url='fake://')
    conf.set_override('control_exchange',
                      'test-rpcapi-%s' % uuid.uuid4().hex)
    return rpc.get_transport(CONF, url='fake://')


@pytest.fixture
def wire(transport, monkeypatch):
    recorder = Wire(transport._driver)
    monkeypatch.setattr(transport._driver, 'send', recorder.send)
    return recorder


@pytest.fixture
def start_server(transport):
    servers = []

    def _start(endpoint_cls=Recorder):
        endpoint = endpoint_cls()
        server = rpc.get_server(
            transport,
            messaging.Target(topic=rpc.TOPIC,
                             server='scheduler-%d' % len(servers)),
            [endpoint])
        server.start()
        servers.append(server)
        return endpoint

    yield _start
    for server in servers:
        server.stop()
    for server in servers:
        server.wait()


@pytest.fixture
def client(transport, conf, wire):
    def _client(cap=None):
        if cap is not None:
            conf.set_override('scheduler', cap, group='upgrade_levels')
        return rpcapi.SchedulerAPI(transport=transport, timeout=TIMEOUT)
    return _client


@pytest.fixture
def ctxt():
    return scheduler_context.RequestContext(user_id='u1', project_id='p1',
                                            request_id='req-rpcapi-test')


def _spec():
    return fakes.fake_spec(
        instance_uuid=INSTANCE_UUID, project_id='p1',
        availability_zone='az1', num_instances=1, memory_mb=2048,
        vcpus=2, root_gb=20, image_props={'hw_architecture': 'x86_64'},
        ignore_hosts=['host3'],
        retry=fakes.fake_retry([('host2', 'node2')], num_attempts=2),
        instance_group=fakes.fake_group('anti-affinity', hosts=['host5'],
                                        members=[OTHER_UUID], legacy=True),
        scheduler_hints={'group': 'g1', 'same_host': ['a', 'b']})


def _only_call(endpoint):
    [(method, ctxt, kwargs)] = endpoint.received
    assert method == 'select_destinations'
    return ctxt, kwargs


# -- select_destinations ------------------------------------------------------

def test_no_cap_sends_4_5_with_every_argument(start_server, client, wire,
                                              ctxt):
    endpoint = start_server()
    result = client().select_destinations(
        ctxt, _spec(), instance_uuids=[INSTANCE_UUID])

    assert result == DESTINATIONS
    assert wire.versions == ['4.5']
    assert wire.sent[0]['topic'] == 'scheduler'
    assert not wire.sent[0]['fanout']
    assert wire.sent[0]['method'] == 'select_destinations'
    received_ctxt, kwargs = _only_call(endpoint)
    assert set(kwargs) == {'spec_obj', 'instance_uuids', 'return_objects',
                           'return_alternates'}
    assert isinstance(kwargs['spec_obj'], rs.RequestSpec)
    assert kwargs['spec_obj'].memory_mb == 2048
    assert kwargs['spec_obj'].get_scheduler_hint('group') == 'g1'
    assert kwargs['instance_uuids'] == [INSTANCE_UUID]
    assert kwargs['return_objects'] is False
    assert kwargs['return_alternates'] is False
    assert received_ctxt.request_id == 'req-rpcapi-test'
    assert received_ctxt.project_id == 'p1'


def test_selection_objects_come_back_as_objects(start_server, client, wire,
                                                ctxt):
    endpoint = start_server()
    result = client('4.5').select_destinations(
        ctxt, _spec(), instance_uuids=[INSTANCE_UUID], return_objects=True,
        return_alternates=True)

    assert wire.versions == ['4.5']
    _, kwargs = _only_call(endpoint)
    assert kwargs['return_objects'] is True
    assert kwargs['return_alternates'] is True
    [[first, alternate]] = result
    assert isinstance(first, selection_obj.Selection)
    assert (first.service_host, first.nodename) == ('host1', 'node1')
    assert first.compute_node_uuid == NODE_UUID
    assert first.limits.to_dict() == {'memory_mb': 3072}
    assert alternate.service_host == 'host2'


def test_cap_4_4_drops_the_return_arguments(start_server, client, wire,
                                            ctxt):
    endpoint = start_server()
    result = client('4.4').select_destinations(
        ctxt, _spec(), instance_uuids=[INSTANCE_UUID])

    assert result == DESTINATIONS
    assert wire.versions == ['4.4']
    _, kwargs = _only_call(endpoint)
    assert set(kwargs) == {'spec_obj', 'instance_uuids'}
    assert kwargs['instance_uuids'] == [INSTANCE_UUID]


@pytest.mark.parametrize('cap', ['4.4', '4.3', '4.0', 'pike', 'ocata'])
@pytest.mark.parametrize('flags', [
    {'return_objects': True},
    {'return_alternates': True},
    {'return_objects': True, 'return_alternates': True},
])
def test_selection_objects_below_4_5_are_refused(cap, flags, client, wire,
                                                 ctxt):
    api = client(cap)
    with pytest.raises(
            exception.SelectionObjectsWithOldRPCVersionNotSupported) as info:
        api.select_destinations(ctxt, _spec(),
                                instance_uuids=[INSTANCE_UUID], **flags)
    assert wire.sent == []
    assert 'before RPC version 4.5' in str(info.value)
    assert 'version %s requested' % rpcapi.VERSION_ALIASES.get(cap, cap) in (
        str(info.value))


def test_cap_4_3_drops_instance_uuids(start_server, client, wire, ctxt):
    endpoint = start_server()
    result = client('4.3').select_destinations(
        ctxt, _spec(), instance_uuids=[INSTANCE_UUID])

    assert result == DESTINATIONS
    assert wire.versions == ['4.3']
    _, kwargs = _only_call(endpoint)
    assert set(kwargs) == {'spec_obj'}
    assert kwargs['spec_obj'].instance_uuid == INSTANCE_UUID


@pytest.mark.parametrize('cap', ['4.0', 'liberty'])
def test_old_caps_send_the_legacy_dicts(cap, start_server, client, wire,
                                        ctxt):
    endpoint = start_server()
    spec = _spec()
    result = client(cap).select_destinations(
        ctxt, spec, instance_uuids=[INSTANCE_UUID])

    assert result == DESTINATIONS
    assert wire.versions == ['4.0']
    _, kwargs = _only_call(endpoint)
    assert set(kwargs) == {'request_spec', 'filter_properties'}

    request = kwargs['request_spec']
    assert request['num_instances'] == 1
    assert isinstance(request['instance_type'], flavor_obj.Flavor)
    assert request['instance_type'].memory_mb == 2048
    assert request['instance_properties']['uuid'] == INSTANCE_UUID
    assert request['instance_properties']['project_id'] == 'p1'
    assert request['instance_properties']['availability_zone'] == 'az1'
    assert request['image']['properties'] == {'hw_architecture': 'x86_64'}

    filters = kwargs['filter_properties']
    assert filters['ignore_hosts'] == ['host3']
    assert filters['retry'] == {'num_attempts': 2,
                                'hosts': [['host2', 'node2']]}
    assert filters['group_updated'] is True
    assert filters['group_policies'] == ['anti-affinity']
    assert filters['group_hosts'] == ['host5']
    assert filters['group_members'] == [OTHER_UUID]
    assert filters['scheduler_hints'] == {'group': 'g1',
                                          'same_host': ['a', 'b']}

    # What the server received converts back into the same request.
    back = rs.RequestSpec.from_primitives(ctxt, request, filters)
    back.validate()
    assert back.memory_mb == 2048
    assert back.instance_uuid == INSTANCE_UUID
    assert back.scheduler_hints == spec.scheduler_hints
    assert back.retry.host_node_pairs() == {('host2', 'node2')}
    assert back.instance_group.policy_name == 'anti-affinity'


@pytest.mark.parametrize('cap,expected', sorted(
    rpcapi.VERSION_ALIASES.items()) + [('4.1', '4.1'), ('4.5', '4.5')])
def test_release_names_map_through_the_aliases(cap, expected, client):
    assert client(cap).client.version_cap == expected


def test_no_cap_means_no_version_cap(client):
    assert CONF.upgrade_levels.scheduler is None
    assert client().client.version_cap is None


def test_alias_table_matches_nova():
    assert rpcapi.VERSION_ALIASES == {
        'grizzly': '2.6', 'havana': '2.9', 'icehouse': '3.0',
        'juno': '3.0', 'kilo': '4.2', 'liberty': '4.2', 'mitaka': '4.3',
        'newton': '4.3', 'ocata': '4.3', 'pike': '4.4', 'queens': '4.5'}
    assert rpcapi.LATEST_VERSION == '4.5'


@pytest.mark.parametrize('cap,version,arguments', [
    ('ocata', '4.3', {'spec_obj'}),
    ('queens', '4.5', {'spec_obj', 'instance_uuids', 'return_objects',
                       'return_alternates'}),
])
def test_release_caps_send_that_release_version(cap, version, arguments,
                                                start_server, client, wire,
                                                ctxt):
    endpoint = start_server()
    client(cap).select_destinations(ctxt, _spec(),
                                    instance_uuids=[INSTANCE_UUID])
    assert wire.versions == [version]
    _, kwargs = _only_call(endpoint)
    assert set(kwargs) == arguments


def test_ocata_server_answers_a_client_capped_at_ocata(start_server, client,
                                                       wire, ctxt):
    endpoint = start_server(OcataRecorder)
    result = client('ocata').select_destinations(
        ctxt, _spec(), instance_uuids=[INSTANCE_UUID])
    assert result == DESTINATIONS
    _, kwargs = _only_call(endpoint)
    assert set(kwargs) == {'spec_obj'}


def test_ocata_server_refuses_an_uncapped_client(start_server, client, ctxt):
    endpoint = start_server(OcataRecorder)
    with pytest.raises((messaging.UnsupportedVersion, messaging.RemoteError)):
        client().select_destinations(ctxt, _spec())
    assert endpoint.received == []


# -- fanout casts -------------------------------------------------------------

def test_fanout_casts_reach_every_server(start_server, client, wire, ctxt):
    first, second = start_server(), start_server()
    api = client()
    aggregate = fakes.fake_aggregate(4, ['host1', 'host2'],
                                     {'availability_zone': 'az1'})
    instances = instance_obj.InstanceList(objects=[
        instance_obj.Instance(uuid=INSTANCE_UUID, host='host1',
                              node='node1')])

    api.update_aggregates(ctxt, [aggregate])
    api.delete_aggregate(ctxt, aggregate)
    api.update_instance_info(ctxt, 'host1', instances)
    api.delete_instance_info(ctxt, 'host1', INSTANCE_UUID)
    api.sync_instance_info(ctxt, 'host1', [INSTANCE_UUID, OTHER_UUID])

    assert [(m['method'], m['version'], m['fanout']) for m in wire.sent] == [
        ('update_aggregates', '4.1', True),
        ('delete_aggregate', '4.1', True),
        ('update_instance_info', '4.2', True),
        ('delete_instance_info', '4.2', True),
        ('sync_instance_info', '4.2', True),
    ]
    for endpoint in (first, second):
        received = endpoint.wait_for(5)
        by_method = {method: kwargs for method, _, kwargs in received}
        assert len(by_method) == 5

        [agg] = by_method['update_aggregates']['aggregates']
        assert agg.id == 4
        assert agg.hosts == ['host1', 'host2']
        assert agg.availability_zone == 'az1'
        assert by_method['delete_aggregate']['aggregate'].uuid == (
            aggregate.uuid)

        info = by_method['update_instance_info']
        assert info['host_name'] == 'host1'
        assert isinstance(info['instance_info'], instance_obj.InstanceList)
        assert [i.uuid for i in info['instance_info'].objects] == [
            INSTANCE_UUID]
        assert by_method['delete_instance_info'] == {
            'host_name': 'host1', 'instance_uuid': INSTANCE_UUID}
        assert by_method['sync_instance_info'] == {
            'host_name': 'host1',
            'instance_uuids': [INSTANCE_UUID, OTHER_UUID]}


@pytest.mark.parametrize('cap', ['4.0', '4.1'])
def test_instance_info_casts_need_4_2(cap, client, wire, ctxt):
    with pytest.raises(messaging.RPCVersionCapError):
        client(cap).sync_instance_info(ctxt, 'host1', [INSTANCE_UUID])
    assert wire.sent == []


def test_aggregate_casts_need_4_1(client, wire, ctxt):
    with pytest.raises(messaging.RPCVersionCapError):
        client('4.0').delete_aggregate(ctxt, fakes.fake_aggregate())
    assert wire.sent == []


def test_aggregate_casts_are_sent_at_4_1_under_a_liberty_cap(
        start_server, client, wire, ctxt):
    endpoint = start_server()
    client('liberty').update_aggregates(ctxt, [fakes.fake_aggregate(7)])
    [(method, _, kwargs)] = endpoint.wait_for(1)
    assert method == 'update_aggregates'
    assert kwargs['aggregates'][0].id == 7
    assert wire.versions == ['4.1']


# -- errors: both forms -----------------------------------------------------

class FailingRecorder(Recorder):
    """A scheduler whose select_destinations fails with ``self.error``."""

    error = None

    @messaging.expose
    def select_destinations(self, ctxt, **kwargs):
        self._record('select_destinations', ctxt, **kwargs)
        raise type(self).error


def test_our_client_says_which_exceptions_it_rebuilds(start_server, client,
                                                      ctxt):
    endpoint = start_server()
    client().select_destinations(ctxt, _spec())
    received_ctxt, _ = _only_call(endpoint)
    assert received_ctxt.caller_exmods == rpc.ALLOWED_EXMODS
    assert not rpc.nova_caller(received_ctxt)


def test_a_context_without_the_key_is_a_nova_caller():
    serializer = rpc.RequestContextSerializer()
    values = serializer.serialize_context(
        scheduler_context.RequestContext(user_id='u1'))
    assert rpc.CALLER_EXMODS_KEY not in values
    received = serializer.deserialize_context(values)
    assert received.caller_exmods is None
    assert rpc.nova_caller(received)


def test_a_context_made_in_process_is_not_a_nova_caller(ctxt):
    assert not rpc.nova_caller(ctxt)


@pytest.mark.parametrize('error,cls', [
    # A failure sent under Nova's name reaches us as a RemoteError.
    (messaging.RemoteError('NoValidHost', 'No valid host was found. full',
                           []), exception.NoValidHost),
    (messaging.RemoteError('MaxRetriesExceeded', 'Exceeded 3', []),
     exception.MaxRetriesExceeded),
    # One sent under ours is rebuilt by oslo.messaging itself.
    (exception.InvalidRequestSpec(reason='bad'), exception.InvalidRequestSpec),
    (exception.as_nova(exception.NoValidHost(reason='full')),
     exception.NoValidHost),
])
def test_errors_come_back_as_our_classes(start_server, client, ctxt,
                                         monkeypatch, error, cls):
    monkeypatch.setattr(FailingRecorder, 'error', error)
    start_server(FailingRecorder)
    with pytest.raises(cls) as info:
        client().select_destinations(ctxt, _spec())
    assert str(info.value).startswith(
        getattr(error, 'value', None) or str(error))


def test_other_remote_errors_stay_remote_errors(start_server, client, ctxt,
                                                monkeypatch):
    monkeypatch.setattr(FailingRecorder, 'error',
                        messaging.RemoteError('NoSuchMethod', 'nope', []))
    start_server(FailingRecorder)
    with pytest.raises(messaging.RemoteError) as info:
        client().select_destinations(ctxt, _spec())
    assert info.value.exc_type == 'NoSuchMethod'
