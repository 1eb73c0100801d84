"""End-to-end mode: ``scheduler-service`` called through SchedulerAPI.

For each fleet size N, ``run``:

1. takes a database: the ``--database-connection`` given, which must
   hold no compute node (the seeded rows are deleted again afterwards),
   or, called with a server's admin URL, a new one there
   (``scheduler_tools.databases``, dropped afterwards);
2. seeds N hosts (``workload.seed_hosts``) and runs ``ANALYZE`` on
   PostgreSQL, as autovacuum would have by then;
3. starts ``scheduler-service`` as a separate process with a
   configuration file of its own (the benchmark's filters and weighers,
   a control exchange private to the run, log in a temporary directory)
   and waits until it answers a ``ping``;
4. warms up, then times ``SchedulerAPI.select_destinations(...,
   return_objects=True, return_alternates=True)`` - what Nova's
   conductor sends since Queens - from ``--callers`` sequential callers
   (threads), once per ``--callers`` value and ``--instances`` value (a
   row each, the same service): latency at the caller in ms, decisions
   per second, and the service's RSS (its process and any child, from
   ``/proc/<pid>/status``);
5. measures the cost of one compute node update reaching the service's
   view, as in-process (with the first ``--callers`` value);
6. with one caller and single-instance requests, sets that row beside
   the parts of one decision, each measured alone in the same run
   (``scheduler_tools.bench.floor``): the in-process decision's p50 on
   the same fleet and requests (the in-process mode's set-up on its
   SQLite database, before the service starts), the no-op call's p50 on
   the same broker and one claim transaction's p50 on the same database.
   Their sum is the row's budget (``budget_p50_ms``); ``within_budget``
   says whether the end-to-end p50 is at most that.  Every row also has
   the service's CPU time per decision (``service_cpu_ms``, its
   processes' user plus system time over the phase).

The broker must be private to the run or at least the vhost unused by a
real Nova: the service consumes the ``scheduler`` topic queue.
"""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid

import oslo_messaging as messaging
import oslo_messaging.opts as messaging_opts
import sqlalchemy as sa
from oslo_log import log as logging

from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.server import rpcapi
from scheduler_tools import databases
from scheduler_tools import seed
from scheduler_tools.bench import ENDTOEND
from scheduler_tools.bench import QUIET_LOG_LEVELS
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import floor
from scheduler_tools.bench import inprocess
from scheduler_tools.bench import report
from scheduler_tools.bench import scheduler_config_lines
from scheduler_tools.bench import workload

LOG = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30
PING_TIMEOUT_S = 2
CALL_ERRORS = (messaging.MessagingException,)


def start_all(services, transport, ctx, timeout_s):
    """Start every ServiceProcess of ``services``, then wait until each
    answers (``ServiceProcess.wait_ready``); returns the seconds taken.

    :raises BenchError: one exited or did not answer in ``timeout_s``.
    """
    started = time.monotonic()
    for service in services:
        service.start()
    for service in services:
        service.wait_ready(transport, ctx, timeout_s)
    return time.monotonic() - started


class ServiceProcess:
    """A ``scheduler-service`` process on its own configuration file
    (in a session of its own when ``new_session`` is set)."""

    new_session = False

    def __init__(self, workdir, config_text):
        self.workdir = workdir
        self.config_path = os.path.join(workdir, 'scheduler.conf')
        self.log_path = os.path.join(workdir, 'service.log')
        with open(self.config_path, 'w') as stream:
            stream.write(config_text)
        self.process = None

    def start(self):
        with open(self.log_path, 'wb') as log:
            self.process = subprocess.Popen(
                [sys.executable, '-m', 'scheduler.cmd.service',
                 '--config-file', self.config_path],
                stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.workdir,
                start_new_session=self.new_session)

    def log_tail(self, chars=4000):
        try:
            with open(self.log_path, errors='replace') as stream:
                return stream.read()[-chars:]
        except OSError:
            return ''

    def wait_ready(self, transport, ctx, timeout_s):
        """Ping the ``baseapi`` namespace until the service answers.

        :raises BenchError: it exited or did not answer in ``timeout_s``.
        """
        client = rpc.get_client(
            transport, messaging.Target(topic=rpc.TOPIC, namespace='baseapi',
                                        version='1.1'),
            timeout=PING_TIMEOUT_S)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise BenchError('scheduler-service exited with status %s:'
                                 '\n%s' % (self.process.returncode,
                                           self.log_tail()))
            try:
                return client.call(ctx, 'ping', arg='bench')
            except messaging.MessagingTimeout:
                if time.monotonic() > deadline:
                    raise BenchError(
                        'scheduler-service did not answer within %.0f s:\n%s'
                        % (timeout_s, self.log_tail())) from None

    def rss_mb(self, field='VmRSS'):
        """The service's resident memory in MiB (children included)."""
        if self.process is None or self.process.poll() is not None:
            return None
        return report.rss_mb(self.process.pid, field)

    def stop(self):
        """SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``; the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def service_config(transport_url, db_url, host, exchange, seed=None,
                   scheduler_lines=(), log_file=None, log_levels=()):
    """The configuration file text of a benchmarked service: the
    benchmark's filters and weighers, ``[scheduler] random_seed`` when
    ``seed`` is given plus ``scheduler_lines`` (``name = value`` texts),
    logging to ``log_file`` when given, with ``log_levels``
    (``logger=LEVEL`` texts) added to the quiet defaults."""
    levels = ','.join(logging.get_default_log_levels() + QUIET_LOG_LEVELS
                      + list(log_levels))
    text = textwrap.dedent('''\
        [DEFAULT]
        host = %s
        transport_url = %s
        control_exchange = %s
        debug = false
        default_log_levels = %s
        ''') % (host, transport_url, exchange, levels)
    if log_file:
        text += 'log_file = %s\n' % log_file
    text += textwrap.dedent('''\
        [database]
        connection = %s
        [oslo_messaging_rabbit]
        heartbeat_timeout_threshold = 0
        ''') % db_url
    groups = scheduler_config_lines(CONF)
    extra = list(scheduler_lines)
    if seed is not None:
        extra.append('random_seed = %d' % seed)
    groups.setdefault('scheduler', []).extend(extra)
    for group, lines in groups.items():
        if group == 'oslo_messaging_rabbit':
            continue
        text += '[%s]\n%s\n' % (group, '\n'.join(lines))
    return text


# ------------------------------------------------------------- databases --

@contextlib.contextmanager
def database_for(admin_url=None, db_url=None):
    """Yield ``(url, given)``: a new database on the PostgreSQL server of
    ``admin_url`` (dropped on exit), or the database ``db_url``."""
    if db_url:
        yield db_url, True
        return
    url = databases.create_database(admin_url, prefix='bench')
    try:
        yield url, False
    finally:
        db.context_manager.dispose_pool()
        databases.drop_database(url)


def analyze(url):
    """``ANALYZE`` the tables on PostgreSQL (errors ignored)."""
    if sa.engine.make_url(url).get_backend_name() != 'postgresql':
        return
    engine = sa.create_engine(url, isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text('ANALYZE'))
    except sa.exc.SQLAlchemyError as exc:
        LOG.warning('ANALYZE failed: %s', exc)
    finally:
        engine.dispose()


# --------------------------------------------------------------- callers --

def time_callers(decide, requests, callers, heartbeat, budget_s,
                 progress=None):
    """``inprocess.time_decisions`` from ``callers`` threads, each with
    every ``callers``-th request; with several, decisions per second
    are over the phase's wall time.  The first caller keeps the
    heartbeat."""
    if callers <= 1:
        return inprocess.time_decisions(decide, requests, heartbeat,
                                        budget_s, errors=CALL_ERRORS,
                                        progress=progress)
    results = [None] * callers
    failures = []

    def caller(index):
        try:
            results[index] = inprocess.time_decisions(
                decide, requests[index::callers],
                heartbeat if index == 0 else None, budget_s,
                minimum=1, errors=CALL_ERRORS, progress=progress)
        except Exception as exc:
            failures.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=caller, args=(index,),
                                name='bench-caller-%d' % index)
               for index in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    total = inprocess.Timings()
    for timings in results:
        total.merge(timings)
    total.busy_s = time.monotonic() - started
    return total


@contextlib.contextmanager
def client_pool(callers, conf=CONF):
    """In the block, this process's oslo.messaging connection pool
    (``[oslo_messaging_rabbit] rpc_conn_pool_size``, 30 by default) has
    room for ``callers`` concurrent calls, so that the callers - of the
    no-op call and of the load alike - never wait for a connection to
    send on."""
    rpc.set_defaults(conf)
    group = 'oslo_messaging_rabbit'
    size = conf[group].rpc_conn_pool_size
    if callers <= size:
        yield size
        return
    conf.set_override('rpc_conn_pool_size', callers, group)
    try:
        yield callers
    finally:
        conf.clear_override('rpc_conn_pool_size', group)


def _register_transport_opts():
    """Register oslo.messaging's ``[DEFAULT]`` options (the transport
    does it when first made) so ``control_exchange`` can be set first."""
    if 'control_exchange' in CONF:
        return
    for group, opts in messaging_opts.list_opts():
        if group is None:
            CONF.register_opts(opts)


# ---------------------------------------------------------------- the run --

def run(hosts_count, settings, transport_url, admin_url=None, emit=None):
    """Measure the end-to-end figures for ``hosts_count`` hosts.

    ``transport_url`` is the broker; the database is a new one on
    ``admin_url`` (a PostgreSQL superuser URL) or, without it,
    ``settings.database_connection``.  Returns the rows, one per
    ``callers`` value and ``instances`` value; ``emit(row)`` is called as
    each is measured.
    """
    parts = {}
    if floor.wants_parts(settings):
        parts.update(floor.inprocess_part(hosts_count, settings))
    with database_for(admin_url, settings.database_connection) as (
            db_url, given), client_pool(max(settings.callers)):
        ctx = seed.use_database(db_url)
        started = time.monotonic()
        hosts = workload.generate_hosts(hosts_count, settings.seed)
        seeded = workload.seed_hosts(ctx, hosts)
        try:
            analyze(db_url)
            seed_s = time.monotonic() - started
            return _measure(ctx, hosts, seeded, seed_s, settings,
                            transport_url, db_url, emit, parts)
        finally:
            if given:
                seed.remove_seeded(ctx, seeded)
            db.context_manager.dispose_pool()


def _measure(ctx, hosts, seeded, seed_s, settings, transport_url, db_url,
             emit, parts):
    hosts_count = len(hosts)
    name = 'bench-%s' % uuid.uuid4().hex[:8]
    # The transport takes the run's exchange when it is made.
    _register_transport_opts()
    CONF.set_override('control_exchange', name)
    workdir = tempfile.mkdtemp(prefix='scheduler-bench-service-')
    transport = service = None
    try:
        transport = rpc.get_transport(CONF, url=transport_url)
        service = ServiceProcess(workdir, service_config(
            transport_url, db_url, name, name, settings.seed))
        started = time.monotonic()
        service.start()
        service.wait_ready(transport, ctx, settings.server_timeout)
        api = rpcapi.SchedulerAPI(transport, timeout=settings.call_timeout)
        bench = workload.Workload(hosts, settings.seed)
        heartbeat = inprocess.Heartbeat(ctx)

        def decide(request):
            api.select_destinations(ctx, request.spec,
                                    request.instance_uuids,
                                    return_objects=True,
                                    return_alternates=True)

        label = '%s %s hosts' % (ENDTOEND, '{:,}'.format(hosts_count))
        inprocess.warm_up(decide, bench, settings, heartbeat, label,
                          started, errors=CALL_ERRORS)
        warmup_s = time.monotonic() - started
        rows = []
        phases = [(callers, instances) for callers in settings.callers
                  for instances in settings.instances]
        for callers, instances in phases:
            count = settings.requests_for(instances)
            name = '%s x%d' % (label, instances)
            if len(settings.callers) > 1:
                name += ', %d callers' % callers
            cpu = report.cpu_s(service.process.pid)
            with inprocess.progress_bar(count, name,
                                        settings.progress) as bar:
                timings = time_callers(
                    decide, bench.requests(instances, count),
                    callers, heartbeat, settings.time_budget_s,
                    progress=bar)
            cpu = floor.difference(report.cpu_s(service.process.pid), cpu)
            extra = {'seed_s': round(seed_s, 2),
                     'warmup_s': round(warmup_s, 2),
                     'callers': callers,
                     'service_cpu_ms': floor.per_decision(cpu, timings)}
            # The node update cost once, with the first callers value.
            if (instances == 1 and settings.update_rounds and
                    callers == settings.callers[0]):
                extra.update(inprocess.measure_node_update(
                    ctx, decide,
                    bench.requests(1, 3 * settings.update_rounds, 'update',
                                   'plain'),
                    inprocess.live_node_ids(hosts, seeded),
                    settings.update_rounds, heartbeat,
                    settings.time_budget_s, settings.seed))
            row = report.make_row(
                ENDTOEND, hosts_count, instances, timings,
                rss=service.rss_mb(), peak_rss=service.rss_mb('VmHWM'),
                **extra)
            if parts and callers == 1 and instances == 1:
                parts.update(floor.measure_parts(
                    ctx, transport_url,
                    inprocess.live_node_ids(hosts, seeded), settings))
                floor.with_budget(row, parts)
            rows.append(row)
            if emit is not None:
                emit(row)
        return rows
    finally:
        if service is not None:
            service.stop()
        if transport is not None:
            transport.cleanup()
        CONF.clear_override('control_exchange')
        shutil.rmtree(workdir, ignore_errors=True)
