"""The paths of the Prometheus port: what each answers, in the
application and over a real socket (where ``/metrics`` does not wait for
a slow ``/readyz``)."""

import json
import threading
import time
import urllib.error
import urllib.request
from wsgiref import util

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client import Counter

from scheduler.observability import health
from scheduler.observability import routes


def _registry():
    registry = CollectorRegistry()
    Counter('scheduler_example', 'An example.', registry=registry).inc()
    return registry


def _call(app, path, method='GET'):
    """``(status line, headers, body bytes)`` of one request."""
    environ = {'PATH_INFO': path, 'REQUEST_METHOD': method}
    util.setup_testing_defaults(environ)
    replies = []
    body = b''.join(app(environ, lambda status, headers, exc_info=None:
                        replies.append((status, dict(headers)))))
    return replies[0][0], replies[0][1], body


def _down():
    raise ConnectionRefusedError('Connection refused')


@pytest.fixture
def app():
    readiness = health.Readiness({'database': lambda: None,
                                  'rabbitmq': lambda: None})
    return routes.application(_registry(), readiness)


def test_healthz_is_ok(app):
    status, headers, body = _call(app, '/healthz')
    assert status == '200 OK'
    assert headers['Content-Type'] == 'application/json'
    assert json.loads(body) == {'detailed': False, 'reasons': ['OK']}


def test_readyz_is_ok_when_everything_answers(app):
    status, _, body = _call(app, '/readyz')
    assert status == '200 OK'
    assert json.loads(body) == {'detailed': False, 'reasons': ['OK']}


def test_readyz_names_what_is_not_ready():
    readiness = health.Readiness({'database': lambda: None,
                                  'rabbitmq': _down, 'placement': _down})
    status, _, body = _call(routes.application(_registry(), readiness),
                            '/readyz')
    assert status == '503 Service Unavailable'
    assert json.loads(body) == {'detailed': False, 'reasons': [
        'rabbitmq: Connection refused', 'placement: Connection refused']}


def test_metrics_are_served_on_metrics_only(app):
    status, headers, body = _call(app, '/metrics')
    assert status == '200 OK'
    assert b'scheduler_example_total 1.0' in body
    status, _, body = _call(app, '/')
    assert status == '404 Not Found'
    assert b'scheduler_example' not in body


@pytest.mark.parametrize('path', ['/nope', '/', '/healthz/', '/metricsx'])
def test_unknown_paths_are_404(app, path):
    status, _, body = _call(app, path)
    assert status == '404 Not Found'
    assert json.loads(body)['reasons'] == [
        'no such path: %s (there are /metrics, /healthz and /readyz)'
        % path]


def test_head_has_the_status_without_a_body(app):
    status, headers, body = _call(app, '/readyz', 'HEAD')
    assert (status, body) == ('200 OK', b'')
    assert int(headers['Content-Length']) > 0


def test_other_methods_are_refused(app):
    status, _, _ = _call(app, '/healthz', 'POST')
    assert status == '405 Method Not Allowed'


def _get(port, path):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d%s' % (port, path),
                                    timeout=5) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.timeout(30)
def test_a_slow_readyz_never_holds_a_scrape():
    release = threading.Event()
    readiness = health.Readiness({'database': lambda: release.wait(10)},
                                 timeout=1.5)
    httpd, thread = routes.serve(
        '127.0.0.1', 0, routes.application(_registry(), readiness))
    port = httpd.server_address[1]
    waiting = {}
    slow = threading.Thread(target=lambda: waiting.update(
        reply=_get(port, '/readyz')))
    try:
        slow.start()
        time.sleep(0.2)         # /readyz is waiting for its probe
        begun = time.monotonic()
        status, body = _get(port, '/metrics')
        assert time.monotonic() - begun < 1
        assert status == 200 and b'scheduler_example_total' in body
        slow.join(10)
        assert waiting['reply'][0] == 503
        assert json.loads(waiting['reply'][1])['reasons'] == [
            'database: no answer within 1.5 s']
        assert _get(port, '/nope')[0] == 404
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
