"""TrustedFilter: the attested trust level equals ``trust:trusted_host``."""

import http.server
import json
import logging
import threading

import fakes
import pytest

from scheduler.conf import CONF
from scheduler.conf import trusted_computing
from scheduler.filters import attestation
from scheduler.filters import trusted_filter


class _FakeClient(attestation.AttestationClient):
    """Levels from a dict; records every batch asked for."""

    def __init__(self, levels):
        self.levels = levels
        self.batches = []

    def get_trust_level(self, nodename):
        return self.get_trust_levels([nodename])[nodename]

    def get_trust_levels(self, nodenames):
        self.batches.append(list(nodenames))
        return {name: self.levels.get(name, attestation.UNKNOWN)
                for name in nodenames}


def _spec(trust=None, **kwargs):
    extra_specs = {'trust:trusted_host': trust} if trust is not None else {}
    return fakes.fake_spec(extra_specs=extra_specs, **kwargs)


def _host(node):
    return fakes.fake_host_state('host-' + node, node)


def _passes(level, trust):
    host_filter = trusted_filter.TrustedFilter(
        client=_FakeClient({'node1': level}))
    return host_filter.host_passes(_host('node1'), _spec(trust))


def test_trusted_filter_default_passes():
    client = _FakeClient({})
    host_filter = trusted_filter.TrustedFilter(client=client)
    assert host_filter.host_passes(_host('node1'), _spec())
    assert host_filter.host_passes(_host('node1'), _spec(''))
    assert client.batches == []


def test_trusted_filter_trusted_and_trusted_passes():
    assert _passes('trusted', 'trusted')


def test_trusted_filter_trusted_and_untrusted_fails():
    assert not _passes('trusted', 'untrusted')


def test_trusted_filter_untrusted_and_trusted_fails():
    assert not _passes('untrusted', 'trusted')


def test_trusted_filter_untrusted_and_untrusted_passes():
    assert _passes('untrusted', 'untrusted')


def test_trusted_filter_unknown_matches_only_unknown():
    assert _passes('unknown', 'unknown')
    assert not _passes('unknown', 'trusted')


def test_trusted_filter_compares_exactly():
    assert not _passes('trusted', 'Trusted')


def test_trusted_filter_uses_the_nodename():
    host_filter = trusted_filter.TrustedFilter(
        client=_FakeClient({'node1': 'trusted'}))
    host = fakes.fake_host_state('node1', 'other-node')
    assert not host_filter.host_passes(host, _spec('trusted'))


def test_trusted_filter_combine_hosts():
    client = _FakeClient({'node1': 'trusted', 'node2': 'untrusted',
                          'node3': 'trusted'})
    host_filter = trusted_filter.TrustedFilter(client=client)
    hosts = [_host('node1'), _host('node2'), _host('node3')]
    passed = list(host_filter.filter_all(iter(hosts), _spec('trusted')))
    assert [h.nodename for h in passed] == ['node1', 'node3']
    # Every candidate is asked for in one batch first.
    assert client.batches[0] == ['node1', 'node2', 'node3']


def test_trusted_filter_filter_all_without_trust_asks_nothing():
    client = _FakeClient({})
    host_filter = trusted_filter.TrustedFilter(client=client)
    hosts = [_host('node1'), _host('node2')]
    assert list(host_filter.filter_all(hosts, _spec())) == hosts
    assert client.batches == []


def test_trusted_filter_is_skipped_on_rebuild():
    client = _FakeClient({})
    host_filter = trusted_filter.TrustedFilter(client=client)
    instance = '6f1b9f1e-0000-4000-8000-000000000002'
    spec = _spec('trusted', scheduler_hints={'_nova_check_type': 'rebuild'},
                 instance_uuid=instance, force_hosts=['host-node1'],
                 force_nodes=['node1'])
    hosts = [_host('node1')]
    hosts[0].instances = fakes.fake_instances(instance)
    assert list(host_filter.filter_all(hosts, spec)) == hosts
    assert client.batches == []


def test_trusted_filter_runs_once_per_request():
    assert trusted_filter.TrustedFilter.run_filter_once_per_request
    host_filter = trusted_filter.TrustedFilter(client=_FakeClient({}))
    assert host_filter.run_filter_for_index(0)
    assert not host_filter.run_filter_for_index(1)


# -- attestation off -------------------------------------------------------

@pytest.fixture
def trusted_conf(conf):
    trusted_computing.register_opts(CONF)
    return conf


def test_trusted_filter_off_fails_trusted_requests_and_warns_once(
        trusted_conf, caplog):
    host_filter = trusted_filter.TrustedFilter()
    hosts = [_host('node1'), _host('node2')]
    with caplog.at_level(logging.WARNING):
        assert list(host_filter.filter_all(hosts, _spec('trusted'))) == []
        assert list(host_filter.filter_all(hosts, _spec('trusted'))) == []
    assert host_filter.client is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert 'attestation_server' in warnings[0].getMessage()


def test_trusted_filter_off_passes_unknown_requests(trusted_conf):
    host_filter = trusted_filter.TrustedFilter()
    assert host_filter.host_passes(_host('node1'), _spec('unknown'))
    assert not host_filter.host_passes(_host('node1'), _spec('untrusted'))


# -- with a real attestation server ----------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(
            int(self.headers['Content-Length'])))
        self.server.polls.append(body['hosts'])
        answer = json.dumps({'hosts': [
            {'host_name': name, 'trust_lvl': self.server.levels[name],
             'vtime': '2024-01-01T00:00:00Z'}
            for name in body['hosts'] if name in self.server.levels]}).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def test_trusted_filter_with_a_real_attestation_server():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    server.polls = []
    server.levels = {'node1': 'trusted', 'node2': 'untrusted'}
    thread = threading.Thread(target=server.serve_forever,
                              kwargs={'poll_interval': 0.05}, daemon=True)
    thread.start()
    try:
        client = attestation.OpenAttestationClient(
            '127.0.0.1', port=server.server_address[1], scheme='http')
        host_filter = trusted_filter.TrustedFilter(client=client)
        hosts = [_host('node1'), _host('node2'), _host('node3')]
        passed = list(host_filter.filter_all(hosts, _spec('trusted')))
        assert [h.nodename for h in passed] == ['node1']
        passed = list(host_filter.filter_all(hosts, _spec('untrusted')))
        assert [h.nodename for h in passed] == ['node2']
        # One poll for the three nodes; the second request used the cache.
        assert server.polls == [['node1', 'node2', 'node3']]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
