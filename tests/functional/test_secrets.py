"""Passwords never reach the logs; the TLS options are there.

The service runs with a ``[database] connection`` and a ``transport_url``
holding the password ``s3cr3t-PASSWORD`` (PostgreSQL runs with ``trust``
authentication, so any password connects; the broker URL carries it in a
second, unreachable host), once in this process and once as a
``scheduler-service`` process started with ``--debug --log-file``.  After
good and bad calls and casts the log files must not contain the password,
and the option dump (``log_opt_values``, which oslo.service's launcher
writes at DEBUG in every worker) must show the secret options masked.
"""

import logging
import os
import re
import socket
import subprocess
import sys

import pytest
import sqlalchemy as sa
from deployment import Deployment

from scheduler import exception
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.filters import attestation  # noqa: F401  (registers its options)
from scheduler_tools import seed

PASSWORD = 's3cr3t-PASSWORD'

SECRET_OPTIONS = [
    (None, 'transport_url'),
    ('database', 'connection'),
    ('database', 'slave_connection'),
    ('oslo_messaging_notifications', 'transport_url'),
    ('trusted_computing', 'attestation_auth_blob'),
]
# Names that look like credentials but hold paths or durations.
NOT_CREDENTIALS = {('oslo_messaging_rabbit', 'ssl_key_file'),
                   ('trusted_computing', 'attestation_api_url'),
                   ('trusted_computing', 'attestation_auth_timeout'),
                   # keystoneauth1's: a plugin name, a section name and
                   # the path of the client's TLS key.
                   ('placement', 'auth_type'),
                   ('placement', 'auth_section'),
                   ('placement', 'keyfile'),
                   ('neutron', 'auth_type'),
                   ('neutron', 'auth_section'),
                   ('neutron', 'keyfile')}
CREDENTIAL_NAME = re.compile(
    r'pass|secret|auth|token|key|blob|cred|connection$|_url$', re.I)
# The standard TLS and connection-hardening options, with their types.
TLS_OPTIONS = [
    ('oslo_messaging_rabbit', 'ssl', bool),
    ('oslo_messaging_rabbit', 'ssl_ca_file', str),
    ('oslo_messaging_rabbit', 'ssl_cert_file', str),
    ('oslo_messaging_rabbit', 'ssl_key_file', str),
    ('oslo_messaging_rabbit', 'ssl_version', str),
    ('oslo_messaging_rabbit', 'ssl_enforce_fips_mode', bool),
    ('oslo_messaging_rabbit', 'rabbit_login_method', str),
    ('database', 'connection_parameters', str),
    ('database', 'mysql_sql_mode', str),
    ('trusted_computing', 'attestation_server_ca_file', (str, type(None))),
    ('trusted_computing', 'attestation_insecure_ssl', bool),
]


@pytest.fixture(scope='module')
def all_options():
    """Register the options a running service adds when it starts: the
    transports' and the notifier's.  (oslo.log's are command-line options
    that cannot be registered once the session parsed CONF; the process
    test checks them.)"""
    transport = rpc.get_transport(CONF, url='kombu+memory:////')
    notification_transport = rpc.get_notification_transport(CONF)
    yield
    transport.cleanup()
    notification_transport.cleanup()


def _opt(group, name):
    return CONF._get_opt_info(name, group)['opt']


def _all_registered():
    yield from ((None, name, info['opt'])
                for name, info in CONF._opts.items())
    for group_name, group in CONF._groups.items():
        yield from ((group_name, name, info['opt'])
                    for name, info in group._opts.items())


# --------------------------------------------------------------- options --

@pytest.mark.parametrize('group,name', SECRET_OPTIONS)
def test_secret_options_are_secret(all_options, group, name):
    assert _opt(group, name).secret


def test_every_credential_like_option_is_secret(all_options):
    """A sweep over every registered option: whatever is named like a
    password, token, key or connection URL is masked when logged."""
    unmasked = sorted(
        '%s.%s' % (group or 'DEFAULT', name)
        for group, name, opt in _all_registered()
        if CREDENTIAL_NAME.search(name) and not opt.secret and
        (group, name) not in NOT_CREDENTIALS)
    assert unmasked == []


@pytest.mark.parametrize('group,name,kind', TLS_OPTIONS)
def test_tls_options_are_registered(all_options, group, name, kind):
    """The standard TLS options exist and can be read (and so set in the
    configuration file)."""
    assert isinstance(getattr(getattr(CONF, group), name), kind)


def test_log_opt_values_masks_the_secrets(all_options, conf, caplog):
    """What the launcher logs at start-up, with secrets set."""
    conf.set_override('transport_url',
                      'rabbit://user:%s@broker:5672/' % PASSWORD)
    conf.set_override('connection', 'postgresql://u:%s@db/x' % PASSWORD,
                      'database')
    conf.set_override('attestation_auth_blob', PASSWORD,
                      'trusted_computing')
    with caplog.at_level(logging.DEBUG, logger='test_secrets'):
        CONF.log_opt_values(logging.getLogger('test_secrets'),
                            logging.DEBUG)
    assert PASSWORD not in caplog.text
    for line in ('transport_url', 'database.connection',
                 'trusted_computing.attestation_auth_blob'):
        assert re.search(r'%s\s+= \*\*\*\*' % re.escape(line),
                         caplog.text), line


# ------------------------------------------------------------- the logs --

def _with_password(url):
    return sa.engine.make_url(url).set(password=PASSWORD).render_as_string(
        hide_password=False)


def _exercise(dep):
    """Good and bad calls and casts, so that every path logs."""
    assert dep.api.select_destinations(dep.ctx, seed.make_spec())
    with pytest.raises(exception.NoValidHost):
        dep.api.select_destinations(dep.ctx, seed.make_spec(memory_mb=10**6))
    with pytest.raises(exception.InvalidRequestSpec):
        dep.api.select_destinations(dep.ctx, seed.make_spec(memory_mb=-1))
    with pytest.raises(exception.InvalidObjectPrimitive):
        dep.api.client.prepare(version='4.5').call(
            dep.ctx, 'select_destinations',
            spec_obj={'nova_object.name': 'RequestSpec',
                      'nova_object.namespace': 'nova',
                      'nova_object.version': '9.9',
                      'nova_object.data': {}})
    fanout = dep.api.client.prepare(fanout=True, version='4.2')
    fanout.cast(dep.ctx, 'update_instance_info', host_name=42,
                instance_info='nope')
    fanout.cast(dep.ctx, 'no_such_method')
    dep.api.sync_instance_info(dep.ctx, 'host0', [])
    assert dep.api.select_destinations(dep.ctx, seed.make_spec())


def _seed(ctx):
    for i in range(4):
        seed.add_compute(ctx, 'host%d' % i, vcpus=4, memory_mb=4096,
                         local_gb=100)


@pytest.fixture
def log_to_file(tmp_path):
    """Every log record of this process, at DEBUG, with tracebacks, in a
    file (oslo.log's own options cannot be registered once the test
    session parsed CONF; the process test below uses ``--log-file``)."""
    log_file = tmp_path / 'scheduler.log'
    handler = logging.FileHandler(log_file, encoding='utf-8',
                                  errors='backslashreplace')
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(name)s %(message)s'))
    root = logging.getLogger()
    saved_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield log_file
    root.removeHandler(handler)
    root.setLevel(saved_level)
    handler.close()


def test_in_process_service_never_logs_passwords(
        log_to_file, all_options, conf, tmp_path, postgresql_url,
        fresh_database):
    db_url = _with_password(fresh_database(postgresql_url))
    transport_url = 'kombu+memory://scheduler:%s@localhost:5672/' % PASSWORD
    conf.set_override('transport_url', transport_url)
    conf.set_override('connection', db_url, 'database')
    dep = Deployment(db_url, 'in-process', transport_url, str(tmp_path))
    _seed(dep.ctx)
    try:
        dep.start()
        CONF.log_opt_values(logging.getLogger('scheduler.server.service'),
                            logging.DEBUG)
        _exercise(dep)
    finally:
        dep.stop()
    text = log_to_file.read_text(errors='replace')
    assert 'select_destinations' in text     # DEBUG lines were written
    for option in ('transport_url', 'database.connection'):
        assert re.search(r'%s\s+= \*\*\*\*' % re.escape(option), text), (
            option)
    assert PASSWORD not in text


class _DebugProcessDeployment(Deployment):
    """``scheduler-service --config-file F --debug --log-file L``."""

    def _start_process(self):
        conf_path = os.path.join(self.workdir, 'scheduler.conf')
        with open(conf_path, 'w') as f:
            f.write(self._config_text())
        self.log_file = os.path.join(self.workdir, 'scheduler.log')
        output = open(os.path.join(self.workdir, 'service.log'), 'w')
        self._process = subprocess.Popen(
            [sys.executable, '-m', 'scheduler.cmd.service',
             '--config-file', conf_path, '--debug',
             '--log-file', self.log_file],
            stdout=output, stderr=subprocess.STDOUT, cwd=self.workdir)


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_debug_process_never_logs_passwords(tmp_path, rabbit_url,
                                            postgresql_url, fresh_database):
    db_url = _with_password(fresh_database(postgresql_url))
    # The fixture's broker has one user; the password to hide travels in a
    # second (unreachable) host of the same URL.
    transport_url = rabbit_url.rstrip('/') + (
        ',scheduler:%s@127.0.0.1:%d/' % (PASSWORD, _closed_port()))
    dep = _DebugProcessDeployment(db_url, 'process', transport_url,
                                  str(tmp_path))
    _seed(dep.ctx)
    try:
        dep.start()
        _exercise(dep)
    finally:
        status = dep.stop()
    assert status == 0
    with open(dep.log_file, errors='replace') as f:
        text = f.read()
    with open(os.path.join(dep.workdir, 'service.log'),
              errors='replace') as f:
        output = f.read()
    assert 'DEBUG' in text
    # The launcher dumps the options at DEBUG, secrets masked (before
    # oslo.messaging registers transport_url in the worker: not listed).
    assert 'Full set of CONF' in text, (
        'the service does not log its options at start-up')
    assert re.search(r'database\.connection\s+= \*\*\*\*', text)
    for where in (text, output):
        assert PASSWORD not in where
        assert 'scheduler:secret@' not in where     # the broker's password
