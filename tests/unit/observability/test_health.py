"""Readiness: the probes' verdict, bounded in time and kept for a
while; the probes a configuration asks for; and the probes themselves
against what answers (SQLite) and what does not (a closed port)."""

import socket
import threading
import time

import pytest
from oslo_config import cfg

from scheduler.conf import CONF
from scheduler.conf import placement as conf_placement
from scheduler.observability import health


def _ok():
    return None


def _refused():
    raise ConnectionRefusedError('Connection refused\nsecond line')


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_ready_when_every_probe_answers():
    verdict = health.Readiness({'database': _ok, 'rabbitmq': _ok}).verdict()
    assert verdict == health.Verdict(True, ())


def test_each_failure_is_named_with_the_first_line_of_its_error():
    readiness = health.Readiness(
        {'rabbitmq': _refused, 'database': _ok,
         'placement': lambda: (_ for _ in ()).throw(RuntimeError())})
    assert readiness.verdict() == health.Verdict(False, (
        'rabbitmq: Connection refused', 'placement: RuntimeError'))


def test_the_verdict_is_kept_for_ttl_seconds():
    calls = []
    clock = _Clock()
    readiness = health.Readiness({'database': lambda: calls.append(1)},
                                 ttl=2.0, clock=clock)
    readiness.verdict()
    clock.now += 1.9
    readiness.verdict()
    assert len(calls) == 1
    clock.now += 0.1
    readiness.verdict()
    assert len(calls) == 2


def test_a_probe_that_hangs_is_bounded_and_not_started_again():
    release = threading.Event()
    started = []

    def hangs():
        started.append(1)
        release.wait(10)

    clock = _Clock()
    readiness = health.Readiness({'database': hangs, 'rabbitmq': _ok},
                                 timeout=0.2, ttl=0, clock=clock)
    try:
        for _ in range(3):
            begun = time.monotonic()
            verdict = readiness.verdict()
            assert time.monotonic() - begun < 1.5
            assert verdict == health.Verdict(
                False, ('database: no answer within 0.2 s',))
        assert started == [1]
        release.set()
        time.sleep(0.1)
        assert readiness.verdict() == health.Verdict(True, ())
        assert started == [1, 1]
    finally:
        release.set()


def test_no_probes_is_ready():
    assert health.Readiness({}).verdict() == health.Verdict(True, ())


def test_database_probe(tmp_path):
    health.database_probe('sqlite:///%s' % (tmp_path / 'db.sqlite'), 1)()
    # A database that cannot be opened (its path is a directory).
    (tmp_path / 'gone').mkdir()
    probe = health.database_probe('sqlite:///%s' % (tmp_path / 'gone'), 1)
    with pytest.raises(Exception, match='unable to open database file'):
        probe()


def test_database_probe_of_a_bad_url_fails_at_the_probe():
    probe = health.database_probe('nonsense', 1)
    with pytest.raises(Exception, match='Could not parse'):
        probe()


def _closed_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture
def messaging_opts():
    health.register_opts(CONF)


def test_rabbitmq_probe_of_a_closed_port_fails_fast(messaging_opts, conf):
    port = _closed_port()
    conf.set_override('transport_url',
                      'rabbit://guest:secret@127.0.0.1:%d/' % port)
    probe = health.rabbitmq_probe(CONF, 1.0)
    begun = time.monotonic()
    with pytest.raises(ConnectionError) as info:
        probe()
    assert time.monotonic() - begun < 5
    assert str(info.value).startswith('127.0.0.1:%d: ' % port)
    assert 'secret' not in str(info.value)


def test_fake_transport_is_not_probed(messaging_opts, conf):
    conf.set_override('transport_url', 'fake://')
    assert health.rabbitmq_probe(CONF, 1.0) is None
    assert 'rabbitmq' not in health.from_conf(CONF)


def test_from_conf_names_what_is_configured(messaging_opts, conf):
    conf.set_override('transport_url', 'rabbit://127.0.0.1:5672/')
    conf.set_override('connection', 'sqlite://', 'database')
    assert list(health.from_conf(CONF)) == ['rabbitmq', 'database']
    conf.set_override('connection', 'sqlite://', 'api_database')
    conf.set_override('use_placement', True, 'scheduler')
    conf.set_override('connection', 'sqlite://', 'placement_database')
    assert list(health.from_conf(CONF)) == [
        'rabbitmq', 'database', 'api_database', 'placement_database',
        'placement']


@pytest.fixture
def placement_api():
    """A stand-in Placement API on loopback: ``GET /`` answers the status
    in ``state['status']``; yields ``(url, state)``."""
    from wsgiref import simple_server

    state = {'status': '200 OK', 'paths': []}

    def app(environ, start_response):
        state['paths'].append(environ['PATH_INFO'])
        start_response(state['status'], [('Content-Type', 'text/plain')])
        return [b'{}']

    class Quiet(simple_server.WSGIRequestHandler):
        def log_message(self, *args):
            pass

    httpd = simple_server.make_server('127.0.0.1', 0, app,
                                      handler_class=Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1], state
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def test_placement_probe(placement_api):
    url, state = placement_api
    # A configuration of its own: keystoneauth registers the options of
    # the auth plugin it loads in the group, and another plugin's
    # (admin_token's ``endpoint``) may already be in the global CONF's.
    own = cfg.ConfigOpts()
    conf_placement.register_opts(own)
    conf_placement.register_client_opts(own)
    own([], default_config_files=[], default_config_dirs=[])
    own.set_override('auth_type', 'none', 'placement')
    own.set_override('endpoint_override', url, 'placement')
    probe = health.placement_probe(own, 1.0)
    probe()
    state['status'] = '503 Service Unavailable'
    with pytest.raises(ConnectionError, match='GET / answered 503'):
        probe()
    assert state['paths'] == ['/', '/']


def test_a_transport_url_that_does_not_parse_is_not_ready(messaging_opts,
                                                         conf):
    conf.set_override('transport_url', 'rabbit://host:notaport/')
    probe = health.rabbitmq_probe(CONF, 1.0)
    with pytest.raises(ConnectionError) as info:
        probe()
    assert str(info.value).startswith('transport_url does not parse: ')
