"""Soak: an hour of mixed load on one fleet, sampled every minute.

``run`` seeds a fleet (``load_fleet.load_hosts``: 10,000 hosts by
default), starts ``--services`` ``scheduler-service`` processes of
``--workers`` workers each (``load_services.LoadService``, with
``[prometheus] bind`` on a free loopback port each), then for
``--duration`` seconds keeps up a mixed load on them, and checks the
database at the end:

boots
    ``--callers`` threads (``load_callers.drive`` over a
    ``load_callers.RequestFeed`` of the ``workload.Workload`` request
    mix) call ``select_destinations(...,
    return_objects=True, return_alternates=True)``.  Each instance placed
    is then recorded as its compute service records it: its
    ``instances`` row (host, node, flavor sizes) is written and
    ``update_instance_info`` is cast to its host.  No usage report is
    written and no periodic task runs (``[scheduler]
    periodic_task_interval = -1``, as in every benchmark): as in the load
    mode, the claim alone counts the instance against its node for its
    whole life, so every live instance must keep exactly its claim.
deletes
    Before each boot a caller deletes a random live instance, always
    once the live instances reach ``--live-instances`` (default: one per
    host) and otherwise with probability ``--delete-share``, so that
    deletes balance boots and the fleet never fills up.  A delete is what
    a compute service does: the ``instances`` row is soft-deleted, then
    ``delete_instance_info`` is cast, whose handler releases the claim
    (``Reservation.release_deleted``).
casts
    A thread casts, every second, ``sync_instance_info`` (the full list
    of a random host's live instances) and ``update_instance_info`` (a
    random host's instances again), and every ``AGGREGATE_EVERY`` seconds
    changes an aggregate of its own as the API does: creates one (with
    metadata and a few hosts), adds a host to one, or deletes the oldest,
    in the database (``scheduler.db.host_aggregates``) and then by
    ``update_aggregates`` / ``delete_aggregate`` with real ``Aggregate``
    objects read back from the database.
heartbeats
    ``load_callers.heartbeats`` keeps every compute service up.
the staleness probe
    A thread measures, from outside, how long a change in the database
    takes to reach the decisions (``StalenessProbe``): it disables the
    compute service of one host (``hosts.set_compute_service_disabled``,
    what ``openstack compute service set --disable`` writes), then asks
    ``select_destinations`` for that host (``requested_destination``, so
    the filters run on it alone) back to back until ``confirm`` answers
    in a row (twice the workers, plus one: enough for every worker to
    have answered) are NoValidHost; it then enables the service again and
    waits for as many Selections (whose claims it releases at once, as a
    caller that gives up does).  The staleness of one change is the time
    from its commit to the end of the first call of that final run of
    agreeing answers: an upper bound of how long a decision may still
    use the old state, which includes one call's latency (queueing behind
    the callers' requests included).  ``staleness_floor_s`` is the lower
    bound: when the last call that still saw the old state began.

Every ``--sample-interval`` seconds (and once before the load starts)
the sampler writes one JSON line (``Sample`` fields, see ``sample``):
the summed RSS of every service process and its forked workers (walking
``/proc/<pid>/task/*/children``), their open file descriptors and
sockets and their TCP connections to the database and to the broker,
the ``pg_stat_activity`` rows of the database (every client: the
services and this process), the decisions at the caller over the
interval (p50, p99, max, decisions per second, NoValidHost, errors),
boots, deletes, casts, live instances and claims, the probe's staleness
(the largest of the interval) and the service's own view age (its
Prometheus gauge ``scheduler_view_staleness_seconds``: seconds since the
view was last read when a decision used it, the largest over the
services), with the service's decision count and mean duration.

At the end the callers, casts and probe stop; the services then get
``--drain-timeout`` seconds to handle the casts still queued, until the
claims are exactly the live instances' (``audit_claims``): no live
instance without its claim (*lost*), no claim without a live instance
(*leaked*), but for the instances of calls the soak gave up on
(*abandoned*: a time-out, a failed write; their claims are released
then), no claim on another host than its instance's (*misplaced*).  The
services are stopped and the database checked (``load_fleet.verify``):
``claims.overcommitted_nodes`` and ``claims.unbalanced_nodes`` must be
empty.  ``verdict`` adds the checks up (``CHECKS``): the issue's two
targets, RSS growth under ``--rss-growth-limit`` percent after the
warm-up (``warmup_for``: 600 s, or a third of a shorter run;
``rss_growth``) and zero overcommit, plus no lost claim, balanced
claims, every call answered, no service died, no growth of the
connections and file descriptors, and every staleness probe answered.
``plot`` draws the samples (RSS, connections, p99, staleness) into one
PNG.  The output directory gets ``samples.jsonl``, ``soak.png`` and
``summary.json``.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import uuid

from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.server import rpcapi
from scheduler_tools import seed
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import load_fleet
from scheduler_tools.bench import load_services
from scheduler_tools.bench import soak_audit
from scheduler_tools.bench import soak_load
from scheduler_tools.bench import soak_measure
from scheduler_tools.bench import soak_report
from scheduler_tools.bench import workload

# --------------------------------------------------------------- services --

def free_port():
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class SoakService(load_services.LoadService):
    """``load_services.LoadService`` serving its Prometheus metrics on
    ``127.0.0.1:metrics_port`` when it is given."""

    def __init__(self, workdir, transport_url, db_url, host, exchange,
                 workers, metrics_port=None):
        super().__init__(workdir, transport_url, db_url, host, exchange,
                         workers)
        self.metrics_url = None
        if metrics_port:
            with open(self.config_path, 'a') as stream:
                stream.write('[prometheus]\nbind = 127.0.0.1:%d\n'
                             % metrics_port)
            self.metrics_url = 'http://127.0.0.1:%d/metrics' % metrics_port

    def pids(self):
        if not self.alive:
            return []
        return soak_measure.process_tree(self.process.pid)


# ---------------------------------------------------------------- the run --

def run(settings):
    """Run the soak; return the summary (also written to
    ``summary.json`` with the samples and the plot in
    ``settings.output_dir``).

    :raises BenchError: the servers are missing or the services did not
        start.
    """
    if not settings.transport_url:
        raise BenchError('the soak needs a RabbitMQ: --transport-url')
    if not (settings.database_connection or settings.admin_connection):
        raise BenchError('the soak needs a PostgreSQL: '
                         '--database-connection (an empty database) or '
                         '--admin-connection (a superuser URL)')
    os.makedirs(settings.output_dir, exist_ok=True)
    with endtoend.database_for(settings.admin_connection,
                               settings.database_connection) as (
            db_url, given):
        ctx = seed.use_database(db_url)
        started = time.monotonic()
        hosts = load_fleet.load_hosts(settings.hosts, settings.seed)
        seeded = workload.seed_hosts(ctx, hosts)
        casts = None
        try:
            endtoend.analyze(db_url)
            seed_s = time.monotonic() - started
            summary, casts = _soak(ctx, hosts, seed_s, settings, db_url)
            return summary
        finally:
            if given:
                if casts is not None:
                    casts.remove_all(ctx)
                soak_audit.remove_soak_rows(ctx)
                load_fleet.remove_load(ctx, seeded)
            db.context_manager.dispose_pool()


def _soak(ctx, hosts, seed_s, settings, db_url):
    tag = uuid.uuid4().hex[:8]
    exchange = 'soak-%s' % tag
    endtoend._register_transport_opts()
    CONF.set_override('control_exchange', exchange)
    services, transport, keep = [], None, False
    count_db, engine = soak_measure.db_connections(db_url)
    casts = None
    try:
        transport = rpc.get_transport(CONF, url=settings.transport_url)
        for index in range(settings.services):
            workdir = tempfile.mkdtemp(prefix='scheduler-soak-')
            services.append(SoakService(
                workdir, settings.transport_url, db_url,
                'soak-%s-%d' % (tag, index), exchange, settings.workers,
                free_port() if settings.metrics else None))
        start_s = endtoend.start_all(services, transport, ctx,
                                     settings.server_timeout)
        api = rpcapi.SchedulerAPI(transport, timeout=settings.call_timeout)
        summary, casts = soak_load.run(ctx, api, hosts, services, settings,
                                       count_db, db_url)
        summary.update(seed_s=round(seed_s, 2), start_s=round(start_s, 2))
        keep = not summary['verified']
        if keep:
            summary['log_dirs'] = [service.workdir for service in services]
        soak_report.write_summary(settings, summary)
        return summary, casts
    finally:
        load_services.stop_all(services, keep)
        if transport is not None:
            transport.cleanup()
        if engine is not None:
            engine.dispose()
        CONF.clear_override('control_exchange')
