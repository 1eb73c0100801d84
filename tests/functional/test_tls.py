"""TLS to RabbitMQ and PostgreSQL with the standard options only.

A private RabbitMQ that listens for AMQPS only (no plain listener) and a
private PostgreSQL that refuses TCP clients without TLS (``hostnossl ...
reject``), each with a certificate of its own throwaway CA
(``tests/fixtures/servers.py``, ``tls_only=True``), serve a real
``scheduler-service`` process configured with nothing but the standard
options:

* ``[DEFAULT] transport_url = rabbit://...@127.0.0.1:<TLS port>/`` with
  ``[oslo_messaging_rabbit] ssl = True`` and ``ssl_ca_file``;
* ``[database] connection = postgresql+psycopg2://...`` with
  ``[database] connection_parameters = sslmode=verify-full&sslrootcert=
  <CA>``, which oslo.db appends to the URL's query (libpq then checks the
  chain and the host name).

The tests check that ``select_destinations`` works, that the service's
own connections are TLS as the servers see them (``pg_stat_ssl`` and
``rabbitmqctl list_connections ssl``, matched to the service's sockets),
and that a client trusting another CA, or speaking plain text, is
refused with a clear error rather than falling back to plain text.
"""

import ssl

import kombu.exceptions
import oslo_messaging as messaging
import psutil
import pytest
import servers
import sqlalchemy as sa
from deployment import Deployment
from oslo_config import cfg
from oslo_db import exception as db_exception
from oslo_messaging import conffixture

from scheduler import context as scheduler_context
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler_tools import seed
from scheduler_tools import writers

# Most seconds one test may take (its share of the servers' start
# included); the module takes about 15 s.
TEST_TIMEOUT = 90
HOSTS = ('host0', 'host1', 'host2')
RABBIT = 'oslo_messaging_rabbit'
SSL_OF_THIS_CONNECTION = ('SELECT ssl, version FROM pg_stat_ssl '
                          'WHERE pid = pg_backend_pid()')
CERTIFICATE_REFUSED = 'CERTIFICATE_VERIFY_FAILED'
# oslo.db turns libpq's "could not connect to server" into
# DBConnectionError, but not the "connection to server at ... failed"
# of libpq 14 and later, which stays SQLAlchemy's OperationalError.
CONNECTION_ERRORS = (db_exception.DBConnectionError, sa.exc.OperationalError)

pytestmark = pytest.mark.timeout(TEST_TIMEOUT)


# ------------------------------------------------------------ fixtures --

@pytest.fixture(scope='module')
def tls_rabbitmq(module_server):
    """A RabbitMQ with an AMQPS listener only (``tls_url``)."""
    return module_server('rabbitmq', tls_only=True)


@pytest.fixture(scope='module')
def tls_postgresql(module_server):
    """A PostgreSQL with ``ssl = on`` that refuses TCP without TLS."""
    return module_server('postgresql', tls_only=True)


@pytest.fixture(scope='module')
def other_ca(tmp_path_factory):
    """The CA file of another throwaway CA (which signed neither server's
    certificate)."""
    return servers.make_tls_files(
        str(tmp_path_factory.mktemp('other-ca'))).ca_file


@pytest.fixture
def rabbit_options_registered():
    """The ``[oslo_messaging_rabbit]`` options on ``CONF`` (the rabbit
    driver registers them when a transport is made), so that a test can
    override them."""
    rpc.get_transport(CONF, url='kombu+memory:////').cleanup()


@pytest.fixture
def db_api_reset():
    """Leave ``scheduler.db.api`` unconfigured (its pool closed) after
    a test that configured it."""
    yield
    writers.reset_engine()


def _pg_parameters(ca_file, mode='verify-full'):
    """``[database] connection_parameters`` for libpq: check the server's
    certificate against ``ca_file`` and its name against the URL's host."""
    return 'sslmode=%s&sslrootcert=%s' % (mode, ca_file)


def _configure_db_api(conf, db_url, parameters, **options):
    """Point ``scheduler.db.api`` at ``db_url`` the way the service does:
    ``configure(CONF)`` from ``[database]`` options."""
    conf.set_override('connection', db_url, 'database')
    conf.set_override('connection_parameters', parameters, 'database')
    for name, value in options.items():
        conf.set_override(name, value, 'database')
    writers.reset_engine()
    assert db.configure(CONF)


def _private_conf(**rabbit_options):
    """A fresh ConfigOpts with oslo.messaging's options and these
    ``[oslo_messaging_rabbit]`` values (a client separate from CONF)."""
    conf = cfg.ConfigOpts()
    conffixture.ConfFixture(conf)      # registers oslo.messaging's options
    conf([], project='scheduler-test', default_config_files=[],
         default_config_dirs=[])
    for name, value in rabbit_options.items():
        conf.set_override(name, value, RABBIT)
    return conf


def _cast_once(conf, url):
    """One cast through ``scheduler.rpc``'s transport, without retrying
    the connection (a call would wait for its reply queue's connection
    forever)."""
    transport = rpc.get_transport(conf, url=url)
    try:
        client = rpc.get_client(
            transport, messaging.Target(topic='scheduler-tls-test',
                                        version='1.0'), timeout=5)
        client.prepare(retry=0).cast(scheduler_context.get_admin_context(),
                                     'nothing', value=1)
    finally:
        transport.cleanup()


def _client_ports(pid, server_port):
    """The local ports of the established TCP connections of process
    ``pid`` (and its children, the workers) to ``server_port``."""
    parent = psutil.Process(pid)
    ports = set()
    for proc in [parent] + parent.children(recursive=True):
        for conn in proc.net_connections(kind='tcp'):
            if (conn.raddr and conn.raddr.port == server_port and
                    conn.status == psutil.CONN_ESTABLISHED):
                ports.add(conn.laddr.port)
    return ports


def _pg_ssl_by_client_port(admin_url, ports):
    """``{client port: (ssl, version)}`` of the server's backends for
    these client ports, as PostgreSQL sees them."""
    engine = sa.create_engine(admin_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(sa.text(
                'SELECT a.client_port, s.ssl, s.version '
                'FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) '
                'WHERE a.client_port = ANY(:ports)'),
                {'ports': sorted(ports)}).all()
    finally:
        engine.dispose()
    return {port: (tls, version) for port, tls, version in rows}


def _rabbit_ssl_by_peer_port(rabbitmq):
    """``{client port: (ssl, protocol)}`` of the broker's connections, as
    ``rabbitmqctl list_connections`` shows them."""
    out = rabbitmq.ctl('list_connections', 'peer_port', 'ssl',
                       'ssl_protocol', '--quiet', '--no-table-headers')
    found = {}
    for line in out.splitlines():
        fields = line.split('\t')
        if len(fields) == 3 and fields[0].isdigit():
            found[int(fields[0])] = (fields[1], fields[2])
    return found


# ------------------------------------------------------- the service --

def test_service_runs_over_tls_with_standard_options(
        rabbit_options_registered, db_api_reset, conf, tls_rabbitmq,
        tls_postgresql, fresh_database, tmp_path):
    """``select_destinations`` through ``SchedulerAPI`` on a service that
    reaches the broker and the database over TLS only, its certificates
    checked against the CAs given in the standard options."""
    assert tls_rabbitmq.amqp_port is None          # no plain listener
    db_url = fresh_database(tls_postgresql.url)
    parameters = _pg_parameters(tls_postgresql.tls.ca_file)
    options = {(RABBIT, 'ssl'): True,
               (RABBIT, 'ssl_ca_file'): tls_rabbitmq.tls.ca_file,
               ('database', 'connection_parameters'): parameters}
    # This process's client: the same [oslo_messaging_rabbit] options.
    conf.set_override('ssl', True, RABBIT)
    conf.set_override('ssl_ca_file', tls_rabbitmq.tls.ca_file, RABBIT)
    dep = Deployment(db_url, 'process', tls_rabbitmq.tls_url,
                     str(tmp_path), options)
    try:
        config_text = dep._config_text()
        assert 'ssl = True' in config_text
        assert 'connection_parameters = ' + parameters in config_text
        assert 'sslmode' not in db_url        # only through the option

        # The database API of this process, from the same [database]
        # options as the service: oslo.db appends the parameters to the
        # URL, and the connection is TLS with the certificate checked.
        _configure_db_api(conf, db_url, parameters)
        engine = db.get_engine()
        assert engine.url.query['sslmode'] == 'verify-full'
        assert engine.url.query['sslrootcert'] == tls_postgresql.tls.ca_file
        with engine.connect() as connection:
            tls, version = connection.execute(
                sa.text(SSL_OF_THIS_CONNECTION)).one()
        assert tls is True and version.startswith('TLS'), version
        for i, host in enumerate(HOSTS):
            seed.add_compute(dep.ctx, host, vcpus=8,
                             memory_mb=4096 * (i + 1), local_gb=100)

        dep.start()
        chosen = dep.api.select_destinations(
            dep.ctx, seed.make_spec(num_instances=2, memory_mb=512))
        assert len(chosen) == 2
        assert {dest['host'] for dest in chosen} <= set(HOSTS)

        # The service's own connections, as the servers see them.
        db_ports = _client_ports(dep.pid, tls_postgresql.port)
        assert db_ports, 'the service holds no database connection'
        seen = _pg_ssl_by_client_port(tls_postgresql.url, db_ports)
        assert set(seen) == db_ports
        assert all(tls for tls, _ in seen.values()), seen
        amqp_ports = _client_ports(dep.pid, tls_rabbitmq.tls_port)
        assert amqp_ports, 'the service holds no broker connection'
        seen = _rabbit_ssl_by_peer_port(tls_rabbitmq)
        assert amqp_ports <= set(seen), (amqp_ports, seen)
        assert all(seen[port][0] == 'true' for port in amqp_ports), seen
    finally:
        status = dep.stop()
    assert status == 0, dep.log()


# -------------------------------------------------------- refusals --

def test_broker_refuses_other_ca_and_plain_text(tls_rabbitmq, other_ca):
    """Through ``scheduler.rpc``'s transport: a client trusting another
    CA fails on the certificate, a client without ``ssl`` is cut off by
    the TLS listener; the same client with the right CA gets through."""
    url = tls_rabbitmq.tls_url
    with pytest.raises(kombu.exceptions.OperationalError,
                       match=CERTIFICATE_REFUSED):
        _cast_once(_private_conf(ssl=True, ssl_ca_file=other_ca), url)
    with pytest.raises(kombu.exceptions.OperationalError) as plain:
        _cast_once(_private_conf(ssl=False), url)
    assert CERTIFICATE_REFUSED not in str(plain.value)
    _cast_once(_private_conf(ssl=True,
                             ssl_ca_file=tls_rabbitmq.tls.ca_file), url)


def test_database_refuses_other_ca_and_plain_text(
        db_api_reset, conf, tls_postgresql, other_ca, fresh_database):
    """Through ``scheduler.db.api`` configured from ``[database]``: with
    the other CA in ``connection_parameters`` libpq refuses the server's
    certificate; with ``sslmode=disable`` the server refuses the
    client."""
    db_url = fresh_database(tls_postgresql.url)
    ctx = seed.use_database(db_url)
    cases = [(_pg_parameters(other_ca), 'certificate verify failed'),
             ('sslmode=disable', 'no encryption')]
    for parameters, error in cases:
        _configure_db_api(conf, db_url, parameters, max_retries=0)
        with pytest.raises(CONNECTION_ERRORS, match=error):
            db.compute_node_get_all(ctx)
    _configure_db_api(conf, db_url,
                      _pg_parameters(tls_postgresql.tls.ca_file),
                      max_retries=0)
    assert db.compute_node_get_all(ctx) == []


# --------------------------------------------- without servers --

def _handshake(tls, ca_file, server_hostname):
    """A TLS handshake in memory between a server with ``tls``'s
    certificate and a client trusting ``ca_file`` only."""
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tls.cert_file, tls.key_file)
    client_context = ssl.create_default_context(cafile=ca_file)
    bios = [ssl.MemoryBIO() for _ in range(4)]
    client = client_context.wrap_bio(bios[0], bios[1],
                                     server_hostname=server_hostname)
    server = server_context.wrap_bio(bios[2], bios[3], server_side=True)
    for _ in range(10):
        for end in (client, server):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        bios[2].write(bios[1].read())
        bios[0].write(bios[3].read())
    return client.version()


@pytest.mark.parametrize('backend', ['openssl', 'cryptography'])
def test_tls_files_make_a_chain_that_verifies(backend, tmp_path):
    """Either way of making the certificates gives a server certificate
    for 127.0.0.1 and localhost that only its own CA vouches for."""
    if backend == 'cryptography':
        pytest.importorskip('cryptography')
    elif servers.tls_backend() != 'openssl':
        pytest.skip('no openssl command')
    tls = servers.make_tls_files(str(tmp_path / 'a'), backend=backend)
    other = servers.make_tls_files(str(tmp_path / 'b'), backend=backend)
    for host in servers.TLS_HOSTS:
        assert _handshake(tls, tls.ca_file, host).startswith('TLS')
    with pytest.raises(ssl.SSLCertVerificationError, match='verify failed'):
        _handshake(tls, other.ca_file, '127.0.0.1')
    with pytest.raises(ssl.SSLCertVerificationError, match='mismatch'):
        _handshake(tls, tls.ca_file, '127.0.0.2')


def test_mysql_connection_parameters_reach_pymysql(
        db_api_reset, conf, tmp_path):
    """The MySQL form of the README's example: ``ssl_ca`` in
    ``connection_parameters`` becomes PyMySQL's ``ssl`` argument (which
    then checks the certificate and the host name)."""
    ca_file = str(tmp_path / 'ca.pem')
    _configure_db_api(conf, 'mysql+pymysql://scheduler@127.0.0.1/nova',
                      'ssl_ca=%s' % ca_file, max_retries=0)
    engine = db.get_engine()           # max_retries 0: not connected
    _args, kwargs = engine.dialect.create_connect_args(engine.url)
    assert kwargs['ssl'] == {'ca': ca_file}
