"""Smoke tests for the real-server fixtures in tests/conftest.py.

They prove that RabbitMQ, PostgreSQL and MariaDB actually start and are
usable the way the rest of the functional suite uses them: oslo.messaging
RPC over ``rabbit_url`` and SQLAlchemy on fresh databases.
"""

import threading
import uuid

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa
from oslo_config import cfg
from oslo_messaging import conffixture

WAIT = 30  # seconds; generous for a loaded 2-core CI machine


class _Endpoint:
    target = messaging.Target(version="1.0")

    def __init__(self, name):
        self.name = name
        self.pings = []
        self.pinged = threading.Event()

    def echo(self, ctxt, value):
        return {"server": self.name, "value": value}

    def fail(self, ctxt):
        raise ValueError("boom from %s" % self.name)

    def ping(self, ctxt, token):
        self.pings.append(token)
        self.pinged.set()


@pytest.fixture
def rpc_env(rabbit_url):
    """A private ConfigOpts + RPC transport on the session's broker."""
    conf = cfg.ConfigOpts()
    # Registers every oslo.messaging option group on the private conf
    # (needed since oslo.messaging 18.x, see conventions doc 6.3.1).
    conffixture.ConfFixture(conf)
    conf([], project="scheduler-test", default_config_files=[],
         default_config_dirs=[])
    transport = messaging.get_rpc_transport(conf, url=rabbit_url)
    servers = []
    yield conf, transport, servers
    for server in servers:
        server.stop()
    for server in servers:
        server.wait()
    transport.cleanup()


def test_rabbit_url_shape(rabbit_url):
    url = messaging.TransportURL.parse(cfg.CONF, rabbit_url)
    assert url.transport == "rabbit"
    (host,) = url.hosts
    assert host.hostname == "127.0.0.1"
    assert host.port and host.username and host.password


def test_kombu_round_trip(rabbit_url):
    import kombu

    name = "scheduler-test-%s" % uuid.uuid4().hex
    url = rabbit_url.replace("rabbit://", "amqp://", 1)
    with kombu.Connection(url, connect_timeout=10) as conn:
        queue = kombu.Queue(name, exchange=kombu.Exchange(name),
                            routing_key=name, auto_delete=True)
        with conn.Producer() as producer:
            producer.publish({"hello": "world"}, exchange=queue.exchange,
                             routing_key=name, declare=[queue])
        simple = conn.SimpleQueue(queue)
        try:
            msg = simple.get(timeout=WAIT)
            msg.ack()
            assert msg.payload == {"hello": "world"}
        finally:
            simple.close()


def test_oslo_messaging_rpc_call_and_fanout(rpc_env):
    conf, transport, servers = rpc_env
    topic = "scheduler-test-%s" % uuid.uuid4().hex
    endpoints = {}
    for name in ("s1", "s2"):
        endpoints[name] = _Endpoint(name)
        server = messaging.get_rpc_server(
            transport, messaging.Target(topic=topic, server=name),
            [endpoints[name]],
            access_policy=messaging.DefaultRPCAccessPolicy)
        server.start()
        servers.append(server)

    client = messaging.get_rpc_client(
        transport, messaging.Target(topic=topic, version="1.0"),
        timeout=WAIT)

    # call: reaches one of the two servers and returns its value
    reply = client.call({}, "echo", value=42)
    assert reply["value"] == 42
    assert reply["server"] in ("s1", "s2")

    # directed call reaches exactly that server
    reply = client.prepare(server="s2").call({}, "echo", value="x")
    assert reply == {"server": "s2", "value": "x"}

    # a remote exception comes back as the same type
    with pytest.raises(ValueError, match="boom"):
        client.call({}, "fail")

    # fanout cast reaches every server
    client.prepare(fanout=True).cast({}, "ping", token="t1")
    for name, endpoint in endpoints.items():
        assert endpoint.pinged.wait(WAIT), "fanout did not reach %s" % name
        assert endpoint.pings == ["t1"]


def _sql_round_trip(db_url):
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    try:
        meta = sa.MetaData()
        hosts = sa.Table(
            "hosts", meta,
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("name", sa.String(255), nullable=False, unique=True),
            sa.Column("free_ram_mb", sa.Integer, nullable=False))
        meta.create_all(engine)
        with engine.begin() as conn:
            conn.execute(hosts.insert(), [
                {"name": "node1", "free_ram_mb": 1024},
                {"name": "node2", "free_ram_mb": 4096},
            ])
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(hosts.c.name).where(hosts.c.free_ram_mb > 2048)
            ).all()
            assert [r.name for r in rows] == ["node2"]
            assert sa.inspect(conn).get_table_names() == ["hosts"]
    finally:
        engine.dispose()


def test_postgresql_fresh_database(postgresql_url, fresh_database):
    assert postgresql_url.startswith("postgresql+psycopg2://")
    db_url = fresh_database(postgresql_url)
    assert sa.engine.make_url(db_url).database != "postgres"
    _sql_round_trip(db_url)
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        version = conn.execute(sa.text("SHOW server_version_num")).scalar()
    engine.dispose()
    assert int(version) >= 150000


def test_mysql_fresh_database(mysql_url, fresh_database):
    assert mysql_url.startswith("mysql+pymysql://")
    db_url = fresh_database(mysql_url)
    _sql_round_trip(db_url)
    engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        version = conn.execute(sa.text("SELECT VERSION()")).scalar()
    engine.dispose()
    assert "MariaDB" in version


def test_fresh_databases_are_isolated_and_dropped(postgresql_url,
                                                  mysql_url,
                                                  fresh_database):
    for admin_url in (postgresql_url, mysql_url):
        first = fresh_database(admin_url)
        second = fresh_database(admin_url)
        assert first != second
        _sql_round_trip(first)
        _sql_round_trip(second)  # would clash if they were shared
        # dropping works even while a connection is still open
        engine = sa.create_engine(first)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        fresh_database.drop(first)
        engine.dispose()
        fresh_database.drop(second)
        admin = sa.create_engine(admin_url, poolclass=sa.pool.NullPool)
        with admin.connect() as conn:
            if admin.dialect.name == "postgresql":
                names = conn.execute(sa.text(
                    "SELECT datname FROM pg_database")).scalars().all()
            else:
                names = conn.execute(sa.text(
                    "SHOW DATABASES")).scalars().all()
        admin.dispose()
        for db_url in (first, second):
            assert sa.engine.make_url(db_url).database not in names


def test_db_url_is_parametrized(db_url):
    _sql_round_trip(db_url)
