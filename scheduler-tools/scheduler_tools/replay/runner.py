"""The replay itself: the run, from the trace to the outputs.

The run (``run``): read the trace and group it into requests, size and
seed the fleet (unless ``--no-seed``), read the compute nodes back,
print the capacity lower bound of the trace on them, and replay
(``replayer.Replay``, an ``loop.EventLoop``: every arrival one
``select_destinations`` call, every departure replayed, also after the
last arrival).  Unless ``--nocompare``, the reference policies
(``policies``) run on the same requests and nodes in a separate process
meanwhile.  Trace time is simulated: with ``--speed X`` the loop sleeps
so that events happen at X times real time, otherwise it never sleeps.
A background thread refreshes every compute service's heartbeat each
``HEARTBEAT_INTERVAL_S`` wall seconds so that ComputeFilter keeps the
hosts up however long the replay takes.

The options and their ``Settings`` are ``options``'s; where the
scheduler runs (embedded, or separate services) is ``deployment``'s.

Why placements are deterministic (same seed and settings give the same
placements CSV, embedded or against one separate service):

* the replay waits for each decision and writes the chosen nodes' rows
  (committed) before it sends the next request, and commits the
  departures due before an arrival before it sends that arrival's
  request;
* the scheduler re-reads every ``compute_nodes`` row on each request, and
  a row written after its virtual consumption replaces it (the row's
  ``updated_at`` is newer; both clocks are the same machine's), so every
  decision sees exactly the usage the agents wrote, whatever the service;
* nodes are seeded in fleet order, so their ids, the order in which the
  scheduler weighs them and the stable sort's tie order are the same on
  every database;
* the driver draws from ``random.Random([scheduler] random_seed)``, once
  per chosen host, in request order;
* the embedded service reads each host's instance list from the
  instance rows the agents commit (its ``[filter_scheduler]
  track_instance_changes`` is False unless configured, so the agents
  send no ``update_instance_info`` / ``delete_instance_info`` casts):
  the lists feed the server-group filters and weighers and the
  MixedFitWeigher, and casts, being asynchronous, could reach the
  service after the next request.  A separate service decides by its
  own configuration; with casts, its placements may vary from run to
  run when a filter or weigher reads the lists.

Several services, or ``[scheduler] workers`` > 1, answer in whatever
order the broker hands requests out, each with its own random source, so
only a single service with sequential calls is reproducible.
"""

import concurrent.futures
import contextlib
import multiprocessing
import sys
import threading
import time

from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import migration
from scheduler_tools import seed
from scheduler_tools.replay import agent
from scheduler_tools.replay import capacity as capacity_mod
from scheduler_tools.replay import fleet
from scheduler_tools.replay import formats
from scheduler_tools.replay import gpu_figures
from scheduler_tools.replay import gpus
from scheduler_tools.replay import metrics
from scheduler_tools.replay import policies
from scheduler_tools.replay import replayer
from scheduler_tools.replay import report
from scheduler_tools.replay import trace
from scheduler_tools.replay.deployment import Deployment

LOG = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = 10.0
PROGRESS_EVERY = 25

ReplayError = replayer.ReplayError


class Heartbeat:
    """Refreshes every compute service's heartbeat every ``interval_s``
    wall seconds from a daemon thread, until stopped."""

    def __init__(self, ctx, interval_s=HEARTBEAT_INTERVAL_S):
        self.ctx = ctx
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='replay-heartbeat')

    def beat(self):
        try:
            seed.heartbeat_services(self.ctx)
        except Exception:
            LOG.exception('Compute service heartbeat failed')

    def _run(self):
        while not self._stop.wait(self.interval_s):
            self.beat()

    def __enter__(self):
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def seed_database(ctx, settings, requests=()):
    """Create the schema and seed the fleet; returns the HostSpecs."""
    migration.db_sync(db.get_engine())
    specs = settings.fleet_specs(requests)
    seed.seed_fleet(ctx, specs)
    return specs


def load_requests(settings):
    """The trace's requests (see ``trace``, ``formats``); warns when
    ``--group-window`` has no project id to group by.  When they ask for
    GPUs, PciPassthroughFilter is made to run (``gpus.require_filter``).
    """
    vms = formats.read_vms(settings.trace, settings.trace_format,
                           settings.limit)
    gpus.require_filter(CONF, vms, settings.embedded)
    if not vms:
        raise ReplayError('the trace %s has no VM' % settings.trace)
    if settings.group_window_s and not any(vm.project_id for vm in vms):
        LOG.warning('--group-window %g: the trace %s has no project_id, '
                    'so no VMs are grouped; every VM is a request of its '
                    'own', settings.group_window_s, settings.trace)
    return trace.group_requests(vms, settings.group_window_s)


def announce(requests, capacity, stream=None):
    """Tell the user (on stderr) what will be replayed and the trace's
    capacity lower bound on the fleet (every VM placed, mean over the
    arrival window), to size fleets by; returns the bound's ``{'peak',
    'mean', 'end'}``."""
    times, held = capacity_mod.trace_demand(requests)
    window = metrics.arrival_window(requests) or (0.0, 0.0)
    bound = metrics.bound_figures(times, held, capacity, window)
    vms = sum(request.num_instances for request in requests)
    print('scheduler-replay: %s VMs in %s requests arriving over %.1f h '
          '(the last departure at %.1f h) on %s nodes; capacity lower '
          'bound of the trace on them: peak %s, mean %.1f nodes'
          % (format(vms, ','), format(len(requests), ','),
             (window[1] - window[0]) / 3600.0,
             (times[-1] - window[0]) / 3600.0 if len(times) else 0.0,
             format(capacity.size, ','), format(bound['peak'], ','),
             bound['mean']), file=stream or sys.stderr)
    return bound


@contextlib.contextmanager
def _progress_bar(total, enabled, decisions):
    """A callable moving a tqdm bar by each request's instances, so that
    it shows VMs per second and the time left, with the ``decisions``'
    (a DecisionStats) placements and NoValidHost; None when disabled."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, unit='VM', desc='replay', smoothing=0.05)

    def advance(request):
        bar.update(request.num_instances)
        if decisions.requests % PROGRESS_EVERY == 0:
            bar.set_postfix(placed=decisions.instances_placed,
                            novalidhost=decisions.no_valid_host,
                            refresh=False)

    try:
        yield advance
    finally:
        # the last counts, as the table gives them
        bar.set_postfix(placed=decisions.instances_placed,
                        novalidhost=decisions.no_valid_host)
        bar.close()


@contextlib.contextmanager
def _reference_runs(requests, capacity, mix, enabled):
    """With ``enabled``, the reference policies' ``policies.simulate_all``
    running in a separate process (a Future), else None."""
    if not enabled:
        yield None
        return
    executor = concurrent.futures.ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context('spawn'))
    with executor:
        yield executor.submit(policies.simulate_all, requests, capacity,
                              mix)


def run(settings):
    """Seed and/or replay as ``settings`` say.

    Returns the summary dict (``metrics.summarize``, with ``compare``
    and ``reference_runs`` under ``--compare``), or with ``seed_only``
    ``{'seeded_nodes': N}``.  The planning modes are ``planning.run``'s.
    """
    requests = load_requests(settings) if settings.needs_trace else ()
    with Deployment(settings) as deployment:
        ctx = deployment.ctx
        if not settings.no_seed:
            specs = seed_database(ctx, settings, requests)
            if settings.seed_only:
                return {'seeded_nodes': len(specs)}
        print('scheduler-replay: fleet: %s' % settings.fleet_origin(),
              file=sys.stderr)
        agents, capacity = fleet_agents(ctx)
        mix = capacity_mod.FlavorMix.from_requests(requests)
        trace_bound = announce(requests, capacity)
        agents.api = deployment.start()   # before any thread: it forks
        with _reference_runs(requests, capacity, mix,
                             settings.compare) as references:
            with Heartbeat(ctx):
                summary, ledger = _replay(ctx, agents, requests, capacity,
                                          mix, settings)
            summary['trace_bound'] = trace_bound
            others = _compare(summary, references)
    _write_outputs(settings, summary, ledger, capacity, others)
    return summary


def fleet_agents(ctx):
    """The agents of the database's compute nodes (no API yet) and the
    fleet's FleetCapacity."""
    agents = agent.ComputeAgents(
        ctx, None, fleet.load_nodes(ctx),
        CONF.filter_scheduler.track_instance_changes)
    return agents, capacity_mod.FleetCapacity.from_nodes(agents.ordered)


def _replay(ctx, agents, requests, capacity, mix, settings):
    ledger = metrics.Ledger(capacity, mix, metrics.arrival_window(requests))
    placements = replayer.PlacementsWriter(settings.placements)
    replay = replayer.Replay(ctx, agents.api, agents, requests, ledger,
                             settings.speed, placements)
    started = time.monotonic()
    try:
        total = sum(request.num_instances for request in requests)
        with _progress_bar(total, settings.progress,
                           replay.decisions) as progress:
            replay.run(progress)
    finally:
        placements.close()
    description = settings.describe()
    description['fleet_nodes'] = capacity.size
    description['allocation_ratios'] = capacity.effective_ratios()
    description['trace_vms'] = sum(r.num_instances for r in requests)
    summary = metrics.summarize(replay.decisions, ledger, description,
                                time.monotonic() - started)
    gpu_figures.add_figures(summary, ledger, [
        vm for request in requests for vm in request.vms])
    return summary, ledger


def _compare(summary, references):
    """Add the reference runs (a Future, or None) to ``summary``; returns
    their series for the plot (or None)."""
    if references is None:
        return None
    results = references.result()
    summary['compare'] = {'service': metrics.comparison(summary)}
    summary['reference_runs'] = {}
    for policy, result in results.items():
        summary['compare'][policy] = metrics.comparison(result['summary'])
        summary['reference_runs'][policy] = result['summary']
    return {policy: result['series'] for policy, result in results.items()}


def _write_outputs(settings, summary, ledger, capacity, others):
    settings.outputs()   # their folders
    if settings.output:
        report.write_json(settings.output, summary)
    if settings.plot:
        report.plot(settings.plot, ledger.series.arrays(), capacity,
                    ledger.moments, others, ledger.window)
