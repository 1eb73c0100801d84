"""The parent's ``/metrics`` endpoint: ``[prometheus] bind``, the
workers' directory, serving, and the gauges of workers that died."""

import glob
import os
import socket
import urllib.request

import pytest
from prometheus_client import parser

from scheduler.observability import metrics
from scheduler.observability import server


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _scrape(port):
    """``{sample name: value}`` of the unlabelled samples served, and
    the text."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=5) as reply:
        text = reply.read().decode()
    return {sample.name: sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples if not sample.labels}, text


@pytest.mark.parametrize('value, expected', [
    ('127.0.0.1:9180', ('127.0.0.1', 9180)),
    ('localhost:1', ('localhost', 1)),
    ('[::1]:65535', ('::1', 65535)),
])
def test_parse_bind(value, expected):
    assert server.parse_bind(value) == expected


@pytest.mark.parametrize('value', [
    '9180', '127.0.0.1', '127.0.0.1:', ':9180', '127.0.0.1:0',
    '127.0.0.1:65536', '127.0.0.1:http', '::1:9180', '[::1]'])
def test_parse_bind_refuses(value):
    with pytest.raises(server.BindError) as info:
        server.parse_bind(value)
    assert str(info.value) == (
        '%r is not HOST:PORT with a port from 1 to 65535 (e.g. '
        '127.0.0.1:9180)' % value)


def test_bind_problem():
    port = _free_port()
    assert server.bind_problem('127.0.0.1:%d' % port) is None
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', port))
        taken.listen()
        assert server.bind_problem('127.0.0.1:%d' % port) == (
            'cannot listen on 127.0.0.1:%d: Address already in use' % port)
    assert server.bind_problem('no-such-host.invalid:9180').startswith(
        'cannot listen on no-such-host.invalid:9180: ')
    assert 'is not HOST:PORT' in server.bind_problem('nonsense')


@pytest.fixture
def no_directory(monkeypatch, restore_prometheus):
    monkeypatch.delenv(metrics.MULTIPROC_ENV, raising=False)


def test_off_when_bind_is_empty(no_directory):
    assert server.start('') is None
    assert metrics.MULTIPROC_ENV not in os.environ


def test_a_bad_bind_leaves_nothing(no_directory):
    port = _free_port()
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', port))
        taken.listen()
        with pytest.raises(server.BindError, match='already in use'):
            server.start('127.0.0.1:%d' % port)
    assert metrics.MULTIPROC_ENV not in os.environ


def test_serves_a_directory_of_its_own_and_removes_it(no_directory):
    port = _free_port()
    endpoint = server.start('127.0.0.1:%d' % port)
    try:
        directory = os.environ[metrics.MULTIPROC_ENV]
        assert directory == endpoint.directory and os.listdir(directory) == []
        metrics.enable()        # this process is the worker
        metrics.decision(metrics.SUCCESS, 0.002, placed=1)
        served, text = _scrape(port)
    finally:
        endpoint.stop()
    assert 'scheduler_decisions_total{outcome="success"} 1.0' in text
    assert served['scheduler_instances_placed_total'] == 1
    assert not os.path.exists(directory)
    assert metrics.MULTIPROC_ENV not in os.environ
    assert server.bind_problem('127.0.0.1:%d' % port) is None


def test_a_named_directory_is_emptied_and_kept(tmp_path, monkeypatch,
                                               restore_prometheus):
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path))
    (tmp_path / 'counter_1.db').write_bytes(b'an earlier run')
    (tmp_path / 'notes.txt').write_text('not ours')
    endpoint = server.start('127.0.0.1:%d' % _free_port())
    endpoint.stop()
    assert sorted(os.listdir(tmp_path)) == ['notes.txt']
    assert os.environ[metrics.MULTIPROC_ENV] == str(tmp_path)


def test_a_dead_worker_keeps_its_counters_not_its_gauges(no_directory):
    port = _free_port()
    endpoint = server.start('127.0.0.1:%d' % port)
    try:
        child = os.fork()
        if child == 0:      # pragma: no cover - the worker
            metrics.enable()
            metrics.decision(metrics.SUCCESS, 0.002, placed=1)
            metrics.host_view(7, 7, 0, 0.0)
            os._exit(0)
        assert os.waitpid(child, 0)[1] == 0
        gauges = os.path.join(endpoint.directory, 'gauge_live*_%d.db' % child)
        assert glob.glob(gauges)
        served, _text = _scrape(port)
    finally:
        endpoint.stop()
    assert not glob.glob(gauges)
    assert 'scheduler_hosts_known' not in served
    assert served['scheduler_instances_placed_total'] == 1


def test_a_forked_worker_does_not_hold_the_port(no_directory):
    endpoint = server.start('127.0.0.1:%d' % _free_port())
    try:
        child = os.fork()
        if child == 0:      # pragma: no cover - the worker
            os._exit(0 if endpoint.httpd.socket.fileno() == -1 else 1)
        assert os.waitpid(child, 0)[1] == 0
    finally:
        endpoint.stop()


def test_a_named_directory_that_cannot_be_used(tmp_path, monkeypatch,
                                               restore_prometheus):
    (tmp_path / 'file').write_text('not a directory')
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(tmp_path / 'file' / 'x'))
    with pytest.raises(server.BindError, match='cannot be used'):
        server.start('127.0.0.1:%d' % _free_port())
