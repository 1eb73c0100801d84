"""``/healthz`` and ``/readyz`` of a real ``scheduler-service`` on
RabbitMQ, beside ``/metrics`` on its ``[prometheus] bind``: ready, then
not ready (naming the database) once its database cannot be opened,
ready again once it can; unknown paths 404."""

import json
import os
import socket
import urllib.error
import urllib.request

import pytest
from deployment import Deployment

# Most seconds for a verdict to change (the kept verdict, two seconds,
# and a probe's timeout, two seconds, with room for a loaded machine).
BOUND = 20


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _get(port, path):
    """``(status, JSON body or text)`` of GET ``path``."""
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d%s' % (port, path),
                                    timeout=10) as reply:
            status, body = reply.status, reply.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    if path == '/metrics':
        return status, body.decode()
    return status, json.loads(body)


@pytest.fixture
def service(tmp_path, rabbit_url):
    port = _free_port()
    database = tmp_path / 'scheduler.sqlite'
    dep = Deployment('sqlite:///%s' % database, 'process', rabbit_url,
                     str(tmp_path), {('prometheus', 'bind'):
                                     '127.0.0.1:%d' % port})
    dep.start()
    yield dep, port, database
    dep.stop()


@pytest.mark.timeout(120)
def test_readiness_follows_the_database(service):
    dep, port, database = service
    assert _get(port, '/healthz') == (200, {'detailed': False,
                                            'reasons': ['OK']})
    assert _get(port, '/readyz') == (200, {'detailed': False,
                                           'reasons': ['OK']})
    status, body = _get(port, '/nope')
    assert status == 404
    assert body['reasons'] == [
        'no such path: /nope (there are /metrics, /healthz and /readyz)']

    # The database cannot be opened: its path is a directory now.
    moved = database.with_suffix('.moved')
    os.rename(database, moved)
    database.mkdir()
    try:
        dep.wait_for(lambda: _get(port, '/readyz')[0] == 503,
                     timeout=BOUND)
        status, body = _get(port, '/readyz')
        assert status == 503, body
        assert body['reasons'] == [
            'database: (sqlite3.OperationalError) unable to open database '
            'file'], body
        # Alive, and the metrics still served.
        assert _get(port, '/healthz')[0] == 200
        status, text = _get(port, '/metrics')
        assert status == 200 and 'scheduler_decisions_total' in text
    finally:
        database.rmdir()
        os.rename(moved, database)
    dep.wait_for(lambda: _get(port, '/readyz')[0] == 200, timeout=BOUND)
