"""Readiness of the service: do RabbitMQ, the databases and Placement
answer?  (``/readyz`` of ``scheduler.observability.server``.)

``Readiness`` runs its probes (one per dependency, named) on daemon
threads of their own, each bounded by ``timeout`` seconds, and keeps
their verdict for ``ttl`` seconds: a scraper polling ``/readyz`` opens
at most one connection per dependency every ``ttl`` seconds, and a
request waits at most ``timeout`` seconds.  A probe that has not
answered by then is reported as such and is not started again until it
ends, so that a dependency that hangs holds one thread, not one per
request.

``from_conf`` builds the probes of a configuration, as the service
uses its dependencies:

* ``rabbitmq``: an AMQP connection opened (and closed) to a host of
  ``[DEFAULT] transport_url`` (any of them: oslo.messaging fails over
  between them), with ``[oslo_messaging_rabbit] ssl``; a transport
  other than ``rabbit`` (``fake://``) is not probed;
* ``database``, ``api_database`` (Nova database mode) and
  ``placement_database`` (``[scheduler] use_placement``): ``SELECT 1``
  on a new connection to their ``connection`` URL (no pool is kept: the
  probes run in the parent process, which forks the workers).  Nova's
  cell databases, read through the API database's ``cell_mappings``,
  are not probed;
* ``placement`` (``[scheduler] use_placement``): ``GET /`` of the
  Placement API through the ``[placement]`` options answers 200.

The probes run in the process serving ``/metrics`` (the launcher's
parent): they say that the dependencies answer this host, not how each
worker's own RPC connection fares (a worker that loses it reconnects by
itself, and one that dies is forked again).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from scheduler import rpc

# Most seconds a probe may take before it is reported as not answering.
TIMEOUT = 2.0
# Seconds a verdict is served again before the probes run anew.
TTL = 2.0

Probe = Callable[[], None]
"""A check of one dependency: returns when it answers, else raises (the
first line of the error is the reason served)."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """``ready`` when every probe answered; ``reasons``: ``'NAME:
    REASON'`` for each probe that did not, in the probes' order."""

    ready: bool
    reasons: tuple[str, ...]


class Readiness:
    """The verdict of ``probes`` (``{name: probe}``), run at most once
    every ``ttl`` seconds, each bounded by ``timeout`` (see the
    module)."""

    def __init__(self, probes: Mapping[str, Probe],
                 timeout: float = TIMEOUT, ttl: float = TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.probes = dict(probes)
        self.timeout = timeout
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._running: dict[str, _Attempt] = {}
        self._last: Verdict | None = None
        self._at = 0.0

    def verdict(self) -> Verdict:
        """The verdict of the probes, at most ``ttl`` seconds old; waits
        at most ``timeout`` seconds (one request runs them, concurrent
        ones wait for its verdict)."""
        with self._lock:
            if (self._last is None
                    or self._clock() - self._at >= self.ttl):
                self._last = self._probe()
                self._at = self._clock()
            return self._last

    def _probe(self) -> Verdict:
        for name, probe in self.probes.items():
            running = self._running.get(name)
            if running is None or running.finished.is_set():
                self._running[name] = _Attempt(name, probe)
        deadline = time.monotonic() + self.timeout
        for attempt in self._running.values():
            attempt.finished.wait(max(0.0, deadline - time.monotonic()))
        reasons = tuple('%s: %s' % (name, reason)
                        for name, reason in (
                            (name, self._reason(attempt))
                            for name, attempt in self._running.items())
                        if reason)
        return Verdict(not reasons, reasons)

    def _reason(self, attempt: _Attempt) -> str | None:
        if not attempt.finished.is_set():
            return 'no answer within %g s' % self.timeout
        return None if attempt.error is None else first_line(attempt.error)


class _Attempt:
    """One run of a probe on a daemon thread of its own (a probe that
    hangs never holds the process at exit)."""

    def __init__(self, name: str, probe: Probe) -> None:
        self.finished = threading.Event()
        self.error: BaseException | None = None
        threading.Thread(target=self._run, args=(probe,), daemon=True,
                         name='readiness-%s' % name).start()

    def _run(self, probe: Probe) -> None:
        try:
            probe()
        except Exception as error:      # any failure is a "not ready"
            self.error = error
        finally:
            self.finished.set()


def first_line(error: BaseException) -> str:
    """The first line of ``error``'s message (its class name when it has
    none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def from_conf(conf: Any, timeout: float = TIMEOUT) -> dict[str, Probe]:
    """The probes of the dependencies ``conf`` configures (see the
    module), by name."""
    probes: dict[str, Probe] = {}
    rabbit = rabbitmq_probe(conf, timeout)
    if rabbit is not None:
        probes['rabbitmq'] = rabbit
    for group in _database_groups(conf):
        probes[group] = database_probe(conf[group].connection, timeout)
    if conf.scheduler.use_placement:
        probes['placement'] = placement_probe(conf, timeout)
    return probes


def _database_groups(conf: Any) -> list[str]:
    groups = ['database']
    if conf.api_database.connection:
        groups.append('api_database')
    if conf.scheduler.use_placement and conf.placement_database.connection:
        groups.append('placement_database')
    return groups


def _refuse(error: Exception) -> None:
    raise error


def register_opts(conf: Any) -> None:
    """Register the oslo.messaging options the RabbitMQ probe reads
    (``transport_url``, ``[oslo_messaging_rabbit]``) if they are not."""
    from oslo_messaging import opts

    rpc.set_defaults(conf)
    for group, options in opts.list_opts():
        if group in (None, 'DEFAULT'):
            conf.register_opts(options)


def rabbitmq_probe(conf: Any, timeout: float) -> Probe | None:
    """A probe of ``[DEFAULT] transport_url``'s RabbitMQ (None for
    another transport; one that fails, for a URL that does not parse)."""
    import oslo_messaging

    register_opts(conf)
    try:
        url = oslo_messaging.TransportURL.parse(conf)
    except (oslo_messaging.InvalidTransportURL, ValueError) as invalid:
        # Reported by /readyz (the workers fail on it too), not raised
        # at start.
        return functools.partial(_refuse, ConnectionError(
            'transport_url does not parse: %s' % first_line(invalid)))
    if url.transport not in ('rabbit', 'amqp'):
        return None
    hosts = url.hosts or [oslo_messaging.TransportHost(hostname='localhost')]
    use_ssl = bool(conf.oslo_messaging_rabbit.ssl)

    def probe() -> None:
        import kombu

        errors = []
        for host in hosts:
            connection = kombu.Connection(
                hostname=host.hostname or 'localhost',
                port=host.port or (5671 if use_ssl else 5672),
                userid=host.username or 'guest',
                password=host.password or 'guest',
                virtual_host=url.virtual_host or '/',
                ssl=use_ssl, transport='pyamqp', connect_timeout=timeout)
            try:
                # One attempt, no back-off (``connect`` retries).
                connection.ensure_connection(
                    max_retries=1, interval_start=0, interval_step=0,
                    timeout=timeout)
                return
            except Exception as error:     # noqa: BLE001 - any is a no
                errors.append('%s:%s: %s' % (
                    host.hostname, host.port, first_line(error)))
            finally:
                connection.release()
        raise ConnectionError('; '.join(errors))

    return probe


# The connection arguments that bound a connection and its reads, in
# whole seconds, by DB-API driver.
_TIMEOUT_ARGUMENTS = {
    'psycopg2': ('connect_timeout',), 'psycopg': ('connect_timeout',),
    'pymysql': ('connect_timeout', 'read_timeout'),
    'mysqldb': ('connect_timeout', 'read_timeout')}


def database_probe(url: str, timeout: float) -> Probe:
    """``SELECT 1`` on a new connection to ``url`` (the engine is built
    at the first probe; a bad URL is that probe's failure)."""
    engines: list[Any] = []

    def probe() -> None:
        import sqlalchemy as sa
        from sqlalchemy import pool

        if not engines:
            parsed = sa.engine.make_url(url)
            connect_args = dict.fromkeys(
                _TIMEOUT_ARGUMENTS.get(parsed.get_driver_name(), ()),
                max(1, round(timeout)))
            engines.append(sa.create_engine(
                parsed, poolclass=pool.NullPool, connect_args=connect_args))
        with engines[0].connect() as connection:
            connection.execute(sa.text('SELECT 1'))

    return probe


def placement_probe(conf: Any, timeout: float) -> Probe:
    """``GET /`` of the Placement API answers 200 (the keystoneauth
    session, and so its token, is built once and kept; each of its
    requests, the token's included, is bounded by ``timeout``)."""
    adapters: list[Any] = []

    def probe() -> None:
        from keystoneauth1 import loading

        from scheduler.conf import placement

        if not adapters:
            placement.register_client_opts(conf)
            auth = loading.load_auth_from_conf_options(conf, 'placement')
            session = loading.load_session_from_conf_options(
                conf, 'placement', auth=auth, timeout=timeout)
            adapters.append(loading.load_adapter_from_conf_options(
                conf, 'placement', session=session, auth=auth,
                raise_exc=False))
        reply = adapters[0].get('/')
        if reply.status_code != 200:
            raise ConnectionError('GET / answered %d' % reply.status_code)

    return probe
