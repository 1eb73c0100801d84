"""The load mode's floor: a no-op oslo.messaging call on the same broker.

What the message bus itself carries, measured in the same run as the
decisions: a one-process RPC server (``python -m
scheduler_tools.bench.floor TRANSPORT_URL EXCHANGE``, the threading
executor the service uses) whose one method, ``noop``, returns None at
once, called back to back by as many callers as the load has.  A
decision's rate as a share of this call's rate says how much of the bus
the scheduler uses; the gap is the scheduler's own work.

The end-to-end mode sets its single-caller, single-instance row beside
the parts of one decision, each measured alone in the same run: the
in-process decision (``inprocess_part``: the driver in this process on
the same fleet and requests, on the in-process mode's SQLite database),
sequential no-op calls (``time_noop``) and a claim transaction of one
instance on the benchmark's database (``time_commits``: as a decision
commits its claim, ``scheduler.db.claims.claim``, released untimed).
``with_budget`` adds their p50s' sum, the budget, to the row.
"""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

import oslo_messaging as messaging

from scheduler import drivers
from scheduler.conf import CONF
from scheduler.db import claims
from scheduler_tools.bench import ENDTOEND
from scheduler_tools.bench import apply_scheduler_options
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import workload

TOPIC = 'scheduler-bench-noop'
NAMESPACE = 'noop'
VERSION = '1.0'
READY = 'noop server ready'
# Seconds the server may take to answer its first call.
READY_TIMEOUT = 60.0


class NoopEndpoint:
    """The server's endpoint: ``noop()`` does nothing."""

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def noop(self, ctxt: dict) -> None:
        return None


def _target(exchange: str, server: str | None = None) -> messaging.Target:
    return messaging.Target(topic=TOPIC, exchange=exchange, server=server,
                            namespace=NAMESPACE, version=VERSION)


def serve(transport_url: str, exchange: str) -> None:
    """Run the no-op server until SIGTERM (in the child process)."""
    CONF([], project='scheduler-bench-noop', default_config_files=[],
         default_config_dirs=[])
    transport = messaging.get_rpc_transport(CONF, url=transport_url)
    # The threading executor, oslo.messaging's default, as the service's.
    server = messaging.get_rpc_server(
        transport, _target(exchange, server='noop'), [NoopEndpoint()])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    print(READY, flush=True)
    stop.wait()
    server.stop()
    server.wait()
    transport.cleanup()


@contextlib.contextmanager
def noop_call(transport_url: str, exchange: str,
              call_timeout: float) -> Iterator[Callable[[], None]]:
    """In the block, a no-op server runs in a child process on
    ``transport_url`` (its topic in ``exchange``); yields a function
    making one no-op call (thread-safe: one RPC client).  Raises
    RuntimeError when the server does not answer within
    ``READY_TIMEOUT`` s."""
    child = subprocess.Popen(
        [sys.executable, '-m', 'scheduler_tools.bench.floor',
         transport_url, exchange],
        stdout=subprocess.PIPE, text=True)
    transport = None
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != READY:
            raise RuntimeError('the no-op server did not start')
        transport = messaging.get_rpc_transport(CONF, url=transport_url)
        client = messaging.get_rpc_client(transport, _target(exchange),
                                          timeout=call_timeout)
        client.prepare(timeout=READY_TIMEOUT).call({}, 'noop')
        yield lambda: client.call({}, 'noop')
    finally:
        if transport is not None:
            transport.cleanup()
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# What ``time_commits`` claims per instance: vCPUs, RAM (MiB), disk (GiB).
COMMIT_AMOUNTS = (1, 512, 1)


def time_noop(call: Callable[[], None], rounds: int) -> list[float]:
    """Latencies in ms of ``rounds`` sequential calls of ``call`` (one
    untimed call first)."""
    call()
    latencies = []
    for _ in range(rounds):
        begin = time.perf_counter()
        call()
        latencies.append((time.perf_counter() - begin) * 1000.0)
    return latencies


def time_commits(ctx: Any, node_ids: Sequence[int], rounds: int,
                 seed: int = 0) -> list[float]:
    """Latencies in ms of ``rounds`` claim transactions of one instance
    (``COMMIT_AMOUNTS``) each on a node of ``node_ids`` picked at random
    (seeded), on the database the DB API points at; each claim is
    released after it is timed.  A claim that does not fit is timed all
    the same (one transaction either way)."""
    rng = random.Random('commit:%s' % seed)
    latencies = []
    for _ in range(rounds):
        node_id = rng.choice(node_ids)
        instance = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        begin = time.perf_counter()
        claims.claim(ctx, node_id, instance, *COMMIT_AMOUNTS)
        latencies.append((time.perf_counter() - begin) * 1000.0)
        claims.release(ctx, instance)
    return latencies


# ----------------------------------------------------- one decision's parts --

# No-op calls and claim transactions timed for a row's parts.
PART_ROUNDS = 200


def wants_parts(settings: Any) -> bool:
    """Whether the run has a row to set beside its parts: one caller,
    single-instance requests."""
    return 1 in settings.callers and 1 in settings.instances


def inprocess_part(hosts_count: int, settings: Any) -> dict[str, Any]:
    """The in-process decision on the fleet and the single-instance
    requests of the end-to-end phase (the same seed), set up as the
    in-process mode sets it up: the driver in this process on a
    temporary SQLite database, warmed up alike.  Returns
    ``{'inprocess_p50_ms', 'inprocess_cpu_ms'}``: its p50 and the CPU
    time of this process per decision (the heartbeats written between
    decisions included), in ms."""
    apply_scheduler_options(CONF)
    with inprocess.temporary_sqlite() as ctx:
        started = time.monotonic()
        hosts = workload.generate_hosts(hosts_count, settings.seed)
        workload.seed_hosts(ctx, hosts)
        driver = drivers.load_driver(ctx, name='filter_scheduler',
                                     notifier=inprocess.service_notifier())
        try:
            def decide(request: workload.BenchRequest) -> None:
                driver.select_destinations(ctx, request.spec,
                                           request.instance_uuids,
                                           return_alternates=True)

            bench = workload.Workload(hosts, settings.seed)
            heartbeat = inprocess.Heartbeat(ctx)
            label = '%s %s hosts, in-process part' % (
                ENDTOEND, '{:,}'.format(hosts_count))
            inprocess.warm_up(decide, bench, settings, heartbeat, label,
                              started)
            count = settings.requests_for(1)
            cpu = time.process_time()
            with inprocess.progress_bar(count, label,
                                        settings.progress) as bar:
                timings = inprocess.time_decisions(
                    decide, bench.requests(1, count), heartbeat,
                    settings.time_budget_s, progress=bar)
            cpu = time.process_time() - cpu
        finally:
            driver.stop()
    return {'inprocess_p50_ms':
            report.percentiles_ms(timings.latencies_ms)['p50_ms'],
            'inprocess_cpu_ms': per_decision(cpu, timings)}


def per_decision(seconds: float | None, timings: inprocess.Timings
                 ) -> float | None:
    """``seconds`` per decision of ``timings`` in ms (None without
    either)."""
    if seconds is None or not timings.latencies_ms:
        return None
    return round(seconds * 1000.0 / len(timings.latencies_ms), 3)


def measure_parts(ctx: Any, transport_url: str, node_ids: Sequence[int],
                  settings: Any, rounds: int | None = None
                  ) -> dict[str, Any]:
    """The no-op call's and one claim transaction's p50 in ms, each
    timed alone ``rounds`` times (default: as many as the phase's
    single-instance requests, at most ``PART_ROUNDS``): ``{'noop_p50_ms',
    'commit_p50_ms', 'part_rounds'}``.  The no-op server runs on
    ``transport_url`` in an exchange of its own."""
    rounds = rounds or min(PART_ROUNDS, settings.requests_for(1))
    exchange = 'endtoend-noop-%s' % uuid.uuid4().hex[:8]
    with noop_call(transport_url, exchange, settings.call_timeout) as call:
        noop = time_noop(call, rounds)
    commits = time_commits(ctx, node_ids, rounds, settings.seed)
    return {'noop_p50_ms': report.percentiles_ms(noop)['p50_ms'],
            'commit_p50_ms': report.percentiles_ms(commits)['p50_ms'],
            'part_rounds': rounds}


def difference(after: float | None, before: float | None
               ) -> float | None:
    """``after - before``, or None when either is None."""
    return None if after is None or before is None else after - before


def with_budget(row: dict[str, Any], parts: dict[str, Any]
                ) -> dict[str, Any]:
    """``row`` with its ``parts`` (``inprocess_p50_ms``, ``noop_p50_ms``,
    ``commit_p50_ms``), their sum ``budget_p50_ms`` and
    ``within_budget`` (the row's p50 at most that; None when a part or
    the p50 is missing)."""
    row.update(parts)
    values = [float(parts[name]) for name in report.PARTS
              if parts.get(name) is not None]
    if len(values) < len(report.PARTS):
        row['budget_p50_ms'] = row['within_budget'] = None
        return row
    row['budget_p50_ms'] = round(sum(values), 3)
    row['within_budget'] = (row.get('p50_ms') is not None and
                            row['p50_ms'] <= row['budget_p50_ms'])
    return row


if __name__ == '__main__':
    serve(sys.argv[1], sys.argv[2])
