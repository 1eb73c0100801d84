"""scheduler.filters.attestation: request building, answer parsing, the cache,
a
real HTTP round trip to 127.0.0.1, and loading from [trusted_computing]."""

import datetime
import http.server
import json
import logging
import ssl
import threading

import pytest

from scheduler.conf import CONF
from scheduler.conf import trusted_computing
from scheduler.filters import attestation


class _OATHandler(http.server.BaseHTTPRequestHandler):
    """A PollHosts endpoint answering from ``server.levels``."""

    def do_POST(self):
        length = int(self.headers.get('Content-Length', 0))
        body = json.loads(self.rfile.read(length))
        self.server.calls.append({'path': self.path,
                                  'headers': dict(self.headers),
                                  'body': body})
        if self.server.status == 204 or self.server.status >= 300:
            self.send_response(self.server.status)
            self.end_headers()
            return
        if self.server.raw_answer is not None:
            answer = self.server.raw_answer
        else:
            answer = json.dumps({'hosts': [
                {'host_name': name, 'trust_lvl': self.server.levels[name],
                 'vtime': '2012-09-09T05:10:40.04'}
                for name in body['hosts'] if name in self.server.levels]
            }).encode()
        self.send_response(self.server.status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def oat_server():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _OATHandler)
    server.calls = []
    server.levels = {}
    server.status = 200
    server.raw_answer = None
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _client(server, clock=None, **kwargs):
    kwargs.setdefault('auth_timeout', 60)
    return attestation.OpenAttestationClient(
        '127.0.0.1', port=server.server_address[1], api_url='/OAT/V1.0',
        scheme='http', clock=clock or _Clock(), **kwargs)


# -- answer parsing --------------------------------------------------------

def test_parse_vtime_iso8601_and_c_locale():
    assert attestation.parse_vtime('2012-09-09T05:10:40.04') == \
        datetime.datetime(2012, 9, 9, 5, 10, 40, 40000)
    assert attestation.parse_vtime('2012-09-09T07:10:40+02:00') == \
        datetime.datetime(2012, 9, 9, 5, 10, 40)
    assert attestation.parse_vtime('Thu Sep 20 14:03:16 2012') == \
        datetime.datetime(2012, 9, 20, 14, 3, 16)
    assert attestation.parse_vtime('yesterday') is None
    assert attestation.parse_vtime(None) is None


def test_parse_poll_response_possible_statuses():
    body = json.dumps({'hosts': [
        {'host_name': 'node1', 'trust_lvl': 'trusted',
         'vtime': '2012-09-09T05:10:40.04'},
        {'host_name': 'node2', 'trust_lvl': 'untrusted',
         'vtime': '2012-09-09T05:10:40.04'},
        {'host_name': 'node3', 'trust_lvl': 'trusted', 'vtime': 'garbage'},
        {'host_name': 'node4', 'vtime': '2012-09-09T05:10:40.04'},
        {'trust_lvl': 'trusted'},
        'junk',
    ]})
    results = attestation.parse_poll_response(body)
    assert {name: level for name, (level, _) in results.items()} == {
        'node1': 'trusted', 'node2': 'untrusted', 'node3': 'unknown',
        'node4': 'unknown'}
    assert results['node3'][1] is None


@pytest.mark.parametrize('body', [b'not json', b'[]', b'{"hosts": 1}',
                                  b'', None])
def test_parse_poll_response_unconvertible_text(body):
    assert attestation.parse_poll_response(body) is None


# -- request building ------------------------------------------------------

def test_build_request():
    client = attestation.OpenAttestationClient(
        'oat.example.org', port=8443,
        api_url='/OpenAttestationWebServices/V1.0', auth_blob='secret')
    request = client.build_request(['node1', 'node2'])
    assert request.full_url == ('https://oat.example.org:8443/'
                                'OpenAttestationWebServices/V1.0/PollHosts')
    assert request.get_method() == 'POST'
    assert json.loads(request.data) == {'count': 2,
                                        'hosts': ['node1', 'node2']}
    headers = {k.lower(): v for k, v in request.header_items()}
    assert headers['content-type'] == 'application/json'
    assert headers['accept'] == 'application/json'
    assert headers['x-auth-blob'] == 'secret'


def test_build_request_without_auth_blob_and_with_ipv6():
    client = attestation.OpenAttestationClient('fd00::1', api_url='/api/')
    request = client.build_request(['n'])
    assert request.full_url == 'https://[fd00::1]:8443/api/PollHosts'
    assert 'x-auth-blob' not in {k.lower() for k, _ in request.header_items()}


def test_ssl_context_verifies_unless_insecure():
    client = attestation.OpenAttestationClient('oat')
    context = client._ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    insecure = attestation.OpenAttestationClient('oat', insecure_ssl=True)
    context = insecure._ssl_context()
    assert context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    with pytest.raises(OSError):
        attestation.OpenAttestationClient(
            'oat', ca_file='/nonexistent/ca.pem')._ssl_context()
    plain_http = attestation.OpenAttestationClient('oat', scheme='http')
    assert plain_http._ssl_context() is None


# -- real round trips ------------------------------------------------------

def test_round_trip_over_http(oat_server):
    oat_server.levels = {'node1': 'trusted', 'node2': 'untrusted'}
    client = _client(oat_server, auth_blob='blob')
    assert client.get_trust_levels(['node1', 'node2', 'node3']) == {
        'node1': 'trusted', 'node2': 'untrusted', 'node3': 'unknown'}
    [call] = oat_server.calls
    assert call['path'] == '/OAT/V1.0/PollHosts'
    assert call['body'] == {'count': 3, 'hosts': ['node1', 'node2', 'node3']}
    headers = {k.lower(): v for k, v in call['headers'].items()}
    assert headers['x-auth-blob'] == 'blob'
    assert headers['content-type'] == 'application/json'


def test_results_are_cached_per_node(oat_server):
    oat_server.levels = {'node1': 'trusted', 'node2': 'untrusted'}
    clock = _Clock()
    client = _client(oat_server, clock=clock)
    assert client.get_trust_level('node1') == 'trusted'
    assert client.get_trust_level('node1') == 'trusted'
    assert len(oat_server.calls) == 1
    # Only the stale node is asked for.
    assert client.get_trust_levels(['node1', 'node2']) == {
        'node1': 'trusted', 'node2': 'untrusted'}
    assert oat_server.calls[1]['body']['hosts'] == ['node2']
    oat_server.levels['node1'] = 'untrusted'
    clock.now += 59
    assert client.get_trust_level('node1') == 'trusted'
    clock.now += 1
    assert client.get_trust_level('node1') == 'untrusted'
    assert len(oat_server.calls) == 3


def test_zero_timeout_asks_every_time(oat_server):
    oat_server.levels = {'node1': 'trusted'}
    client = _client(oat_server, auth_timeout=0)
    client.get_trust_level('node1')
    client.get_trust_level('node1')
    assert len(oat_server.calls) == 2
    assert client.request_timeout == 1


def test_invalidate_forgets_results(oat_server):
    oat_server.levels = {'node1': 'trusted'}
    client = _client(oat_server)
    client.get_trust_level('node1')
    client.invalidate()
    client.get_trust_level('node1')
    assert len(oat_server.calls) == 2


def test_http_error_gives_unknown_for_a_short_time(oat_server, caplog):
    oat_server.levels = {'node1': 'trusted'}
    oat_server.status = 500
    clock = _Clock()
    client = _client(oat_server, clock=clock)
    with caplog.at_level(logging.WARNING):
        assert client.get_trust_level('node1') == 'unknown'
    assert 'HTTP 500' in caplog.text
    oat_server.status = 200
    clock.now += attestation.FAILURE_RETRY_SECONDS - 1
    assert client.get_trust_level('node1') == 'unknown'
    clock.now += 1
    assert client.get_trust_level('node1') == 'trusted'
    assert len(oat_server.calls) == 2


@pytest.mark.parametrize('status', [201, 202])
def test_other_success_statuses_are_read(oat_server, status):
    oat_server.levels = {'node1': 'trusted'}
    oat_server.status = status
    assert _client(oat_server).get_trust_level('node1') == 'trusted'


def test_no_content_answer_gives_unknown(oat_server):
    oat_server.status = 204
    client = _client(oat_server)
    assert client.poll(['node1']) is None
    assert client.get_trust_level('node1') == 'unknown'


def test_unreadable_answer_gives_unknown(oat_server, caplog):
    oat_server.raw_answer = b'<html>maintenance</html>'
    client = _client(oat_server)
    with caplog.at_level(logging.WARNING):
        assert client.get_trust_level('node1') == 'unknown'
    assert 'Unreadable answer' in caplog.text


def test_unreachable_server_gives_unknown(oat_server, caplog):
    port = oat_server.server_address[1]
    oat_server.shutdown()
    oat_server.server_close()
    client = attestation.OpenAttestationClient(
        '127.0.0.1', port=port, scheme='http', auth_timeout=2)
    with caplog.at_level(logging.WARNING):
        assert client.get_trust_level('node1') == 'unknown'
    assert 'Cannot reach' in caplog.text


def test_https_to_a_plain_http_server_gives_unknown(oat_server):
    client = attestation.OpenAttestationClient(
        '127.0.0.1', port=oat_server.server_address[1], auth_timeout=2)
    assert client.get_trust_level('node1') == 'unknown'


def test_the_base_client_is_an_interface():
    with pytest.raises(NotImplementedError):
        attestation.AttestationClient().get_trust_level('node1')

    class Fixed(attestation.AttestationClient):
        def get_trust_level(self, nodename):
            return 'trusted' if nodename == 'a' else 'untrusted'

    assert Fixed().get_trust_levels(['a', 'b']) == {'a': 'trusted',
                                                    'b': 'untrusted'}


# -- configuration ---------------------------------------------------------

@pytest.fixture
def trusted_conf(conf):
    trusted_computing.register_opts(CONF)
    return conf


def test_options_have_nova_names_and_defaults(trusted_conf):
    group = trusted_conf.trusted_computing
    assert group.attestation_server is None
    assert group.attestation_server_ca_file is None
    assert group.attestation_port == 8443
    assert group.attestation_api_url == '/OpenAttestationWebServices/V1.0'
    assert group.attestation_auth_blob is None
    assert group.attestation_auth_timeout == 60
    assert group.attestation_insecure_ssl is False
    [(group_obj, opts)] = trusted_computing.list_opts().items()
    assert group_obj.name == 'trusted_computing'
    assert len(opts) == 7
    assert all(opt.help for opt in opts)


def test_load_client_is_off_unless_configured(trusted_conf):
    assert attestation.load_client() is None


def test_load_client_from_options(trusted_conf):
    for name, value in (('attestation_server', 'oat.example.org'),
                        ('attestation_port', 9443),
                        ('attestation_api_url', '/api'),
                        ('attestation_auth_blob', 'blob'),
                        ('attestation_auth_timeout', 30),
                        ('attestation_insecure_ssl', True)):
        trusted_conf.set_override(name, value, 'trusted_computing')
    client = attestation.load_client()
    assert isinstance(client, attestation.OpenAttestationClient)
    assert client.url == 'https://oat.example.org:9443/api/PollHosts'
    assert (client.auth_blob, client.auth_timeout, client.insecure_ssl) == \
        ('blob', 30, True)
