"""``scheduler-bench --mode versus-nova``: Nova 34's nova-scheduler and
this service side by side, on the same servers, under the same load.

Per fleet size (``--hosts``, ascending): Nova's own ``nova-manage`` makes
an API, a cell0 and a cell1 database on the PostgreSQL server given
(``--nova-database-server``, an admin URL), and the fleet is written as
nova-compute 34 writes it (``versus_nova_fleet``) there and in the
Placement given (``--placement-url``, ``--placement-database``: noauth2,
empty at the start; a larger size adds its extra providers to those of
the smaller one).  Then each contestant (``versus_nova_contestants``:
Nova's ``nova-scheduler``, this service in Placement mode, this service
in SQL mode) is started on ``--transport-url`` and driven, after a
warm-up, by Nova's own ``SchedulerQueryClient`` in a caller process of
the Nova venv (``versus_nova_caller.py``): a phase per ``--instances``
value and ``--callers`` value, each ``--time-budget`` seconds long (or
``--requests`` calls), the calls in flight then getting up to
``--call-timeout`` more seconds (a contestant that left calls
unanswered or failed is restarted); each phase starts from the seeded state
(``reset``), after untimed calls that no host can take (``settle``), and
ends with the capacity checks (``versus_nova_report``).
While it runs, the benchmark plays nova-compute (``Tracker``).  With
this service in Placement mode still up, the agreement phase sends
``AGREE_REQUESTS`` requests per instances value to Nova's
``SchedulerManager`` in the caller and to the service, on the same
state (``op_agree``), for at most the phase's time budget (at least
``AGREE_MIN_S``).  Both schedulers use their defaults, which agree
on ``host_subset_size = 1`` and no shuffle of equal weights.
"""

import dataclasses
import os
import tempfile
import time

from scheduler import context as scheduler_context
from scheduler import rpc
from scheduler.conf import CONF
from scheduler_tools import databases
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import versus_nova_contestants as contestants
from scheduler_tools.bench import versus_nova_fleet as fleet
from scheduler_tools.bench import versus_nova_report as vreport
from scheduler_tools.bench import versus_nova_venv as nova_venv

# The mode's own defaults (``scheduler-bench`` options not given) and
# those of ``--smoke``.
DEFAULTS = {'hosts': [1000, 10000], 'callers': [1, 8, 32],
            'instances': [1, 10], 'time_budget_s': 60.0,
            'requests': 100000, 'call_timeout': 120}
SMOKE = {'hosts': [20], 'callers': [1, 2], 'instances': [1, 10],
         'time_budget_s': 3.0, 'requests': 200, 'call_timeout': 60}
# Flavors of the requests, in turn: (vCPUs, MiB, GiB).
FLAVORS = [[1, 512, 1], [2, 2048, 20], [4, 8192, 40]]
WARMUP_CALLS = 4
# Before each timed phase, this many untimed calls from two callers for
# a flavor no host has room for (vCPUs, MiB, GiB): each worker of the
# contestant reads what the reset changed then, not in the phase's first
# calls, and nothing is claimed.
SETTLE_CALLS = 8
SETTLE_FLAVOR = [1_000_000, 1_000_000_000, 1_000_000_000]
AGREE_REQUESTS = 10
# Seconds after which the agreement phase starts no new request (at
# least one is decided): the phase's time budget, at least this.
AGREE_MIN_S = 30.0
# Seconds after each agreement request for the views to see the reports.
AGREE_SETTLE_S = 0.2
# Seconds the caller may take beyond a phase's duration and grace.
CALLER_SLACK_S = 120


@dataclasses.dataclass
class Servers:
    """What the mode runs on (none of it is started here)."""

    transport_url: str
    database_server: str
    placement_url: str
    placement_database: str
    nova_venv: str
    plot: str | None = None


class Size:
    """One fleet size's databases, fleet, tracker and phases."""

    def __init__(self, hosts, settings, servers, emit, workdir):
        self.hosts = hosts
        self.settings = settings
        self.servers = servers
        self.emit = emit
        self.workdir = workdir
        self.venv = nova_venv.NovaVenv(servers.nova_venv, workdir)
        self.urls = {}
        self.own_dbs = {}
        self.tracker = None
        self.picks = []
        self.seeded = set()

    def setup(self):
        self.urls = nova_venv.make_databases(
            self.venv, self.servers.database_server, self.workdir)
        for name in (contestants.OURS_PLACEMENT, contestants.OURS_SQL):
            self.own_dbs[name] = databases.create_database(
                self.servers.database_server, 'versus_ours')
        nodes = fleet.write_fleet(
            self.urls, self.servers.placement_url,
            self.servers.placement_database,
            nova_venv.empty_pci_stats(self.venv), self.hosts,
            self.settings.seed, self.settings.progress)
        self.nodes = nodes
        _, self.seeded = fleet.placement_usage(
            self.servers.placement_database)
        self.tracker = fleet.Tracker(self.urls, nodes)
        self.caller_conf = contestants.nova_conf(
            os.path.join(self.workdir, 'caller.conf'), self.workdir,
            self.urls, self.servers.transport_url,
            self.servers.placement_url, self.settings.call_timeout)

    def close(self):
        if self.tracker is not None:
            self.tracker.close()
        nova_venv.drop_databases(self.urls)
        nova_venv.drop_databases(self.own_dbs)

    # -- contestants -----------------------------------------------------

    def start(self, name):
        """Start contestant ``name`` and its caller; wait until it
        answers a ping.  Returns ``(service, caller)``."""
        workdir = os.path.join(self.workdir, name)
        os.makedirs(workdir, exist_ok=True)
        if name == contestants.NOVA:
            service = contestants.NovaScheduler(
                self.venv, workdir, contestants.nova_conf(
                    os.path.join(workdir, 'nova.conf'), workdir, self.urls,
                    self.servers.transport_url, self.servers.placement_url))
            service.start()
        else:
            service = contestants.start_ours(
                name, workdir, self.own_dbs[name], self.urls,
                self.servers.transport_url, self.servers.placement_url,
                self.servers.placement_database)
        try:
            transport = rpc.get_transport(CONF,
                                          url=self.servers.transport_url)
            try:
                service.wait_ready(transport,
                                   scheduler_context.get_admin_context(),
                                   self.settings.server_timeout)
            finally:
                transport.cleanup()
            caller = contestants.Caller(
                self.venv, self.caller_conf,
                os.path.join(workdir, 'caller.log'), self._placed)
        except BaseException:
            service.stop()
            raise
        return service, caller

    def _placed(self, picks):
        self.picks.extend(picks)
        self.tracker.placed(picks)

    def _run(self, caller, callers, instances, duration, calls, grace,
             flavors=FLAVORS):
        return caller.request(
            'run', duration + grace + CALLER_SLACK_S, callers=callers,
            instances=instances, duration=duration, max_calls=calls,
            grace=grace, flavors=flavors)

    def settle(self, caller):
        """``SETTLE_CALLS`` untimed calls for ``SETTLE_FLAVOR`` from two
        callers, after a reset: every provider and compute node the
        previous phase used changed, and a contestant reads them on its
        next call (this service's workers each refresh their view,
        nova-scheduler its host states), which a running cloud never
        asks of it at once.  Returns ``{'settle_no_valid_host',
        'settle_errors'}`` (calls answered NoValidHost; calls failed or
        unanswered) for the phase's row.

        :raises BenchError: a settle call placed an instance.
        """
        tally = self._run(caller, 2, 1, self.settings.server_timeout,
                          SETTLE_CALLS, self.settings.call_timeout,
                          flavors=[SETTLE_FLAVOR])
        if tally['placed']:
            raise BenchError('a settle call placed %d instance(s) of %s'
                             % (tally['placed'], SETTLE_FLAVOR))
        return {'settle_no_valid_host': tally['novalidhost'],
                'settle_errors': tally['errors'] + tally['unfinished']}

    def reset(self, consumers, name):
        """Back to the seeded state (see ``versus_nova_fleet``)."""
        fleet.release(self.servers.placement_url, consumers)
        self.tracker.reset()
        if name in self.own_dbs:
            fleet.forget_claims(self.own_dbs[name])
        self.picks = []

    def checks(self, name, tally):
        """The capacity checks after a phase of contestant ``name``."""
        self.tracker.drain()
        if name == contestants.OURS_SQL:
            return {'overcommitted': vreport.overcommitted(
                vreport.node_usage_rows(self.nodes, self.picks)),
                'allocations_held': None, 'allocations_expected': None}
        rows, consumers = fleet.placement_usage(
            self.servers.placement_database)
        placed = {pick[1] for pick in self.picks}
        held = consumers - self.seeded
        return {'overcommitted': vreport.overcommitted(rows),
                'allocations_held': len(held),
                'allocations_expected': len(placed),
                'allocations_missing': len(placed - held),
                'allocations_of_failed_calls': len(
                    held & set(tally['failed_consumers'])),
                'allocations_unexplained': len(
                    held - placed - set(tally['failed_consumers']))}

    def contestant(self, name):
        """Every phase of contestant ``name`` (and, for this service in
        Placement mode, the agreement phase)."""
        service, caller = self.start(name)
        settings = self.settings
        try:
            warm = self._run(caller, 2, 1, settings.server_timeout,
                             WARMUP_CALLS, settings.call_timeout)
            self.tracker.drain()
            self.reset(warm['consumers'], name)
            for instances in settings.instances:
                for callers in settings.callers:
                    settled = self.settle(caller)
                    tally = self._run(
                        caller, callers, instances, settings.time_budget_s,
                        settings.requests_for(instances),
                        settings.call_timeout)
                    row = vreport.phase_row(name, self.hosts, callers,
                                            instances, tally,
                                            self.checks(name, tally))
                    row['call_timeout_s'] = settings.call_timeout
                    row.update(settled)
                    self.emit(row)
                    if tally['unfinished'] or tally['errors']:
                        # Calls in flight, or queued after the caller
                        # gave up on them, would claim in the next
                        # phase: start the contestant again.
                        caller.close()
                        service.stop()
                        self.tracker.drain()
                        self.reset(tally['consumers'], name)
                        service, caller = self.start(name)
                    else:
                        self.reset(tally['consumers'], name)
            if name == contestants.OURS_PLACEMENT:
                self.agreement(caller)
        finally:
            caller.close()
            service.stop()

    def agreement(self, caller):
        for instances in self.settings.instances:
            budget = max(AGREE_MIN_S, self.settings.time_budget_s or 0.0)
            pairs = caller.request(
                'agree', budget + 2 * self.settings.call_timeout +
                CALLER_SLACK_S, requests=AGREE_REQUESTS,
                instances=instances, flavors=FLAVORS,
                settle=AGREE_SETTLE_S, duration=budget)
            self.emit(vreport.agreement_row(self.hosts, instances, pairs))


def run(settings, servers, emit):
    """Every fleet size of ``settings.hosts`` (ascending), then the
    ratio rows and, with ``servers.plot``, the plot.  Emits each row."""
    missing = [option for option, value in (
        ('--transport-url', servers.transport_url),
        ('--nova-database-server', servers.database_server),
        ('--placement-url', servers.placement_url),
        ('--placement-database', servers.placement_database))
        if not value]
    if missing:
        raise BenchError('versus-nova needs %s' % ', '.join(missing))
    rows = []

    def keep(row):
        rows.append(row)
        emit(row)

    for hosts in sorted(settings.hosts):
        workdir = tempfile.mkdtemp(prefix='versus-nova-%d-' % hosts)
        size = Size(hosts, settings, servers, keep, workdir)
        started = time.monotonic()
        try:
            size.setup()
            print('versus-nova: %d hosts written in %.1f s (%s)' % (
                hosts, time.monotonic() - started, workdir))
            for name in contestants.CONTESTANTS:
                size.contestant(name)
        finally:
            size.close()
        print('versus-nova: logs of %d hosts in %s' % (hosts, workdir))
    for row in vreport.ratio_rows(rows):
        keep(row)
    if servers.plot:
        vreport.plot(rows, servers.plot)
    return rows
