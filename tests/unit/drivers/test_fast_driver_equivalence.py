"""The FilterScheduler's fast path places exactly as Nova's list-based
loop (issue 5: speed never changes an answer).

The oracle, ``ListOracle`` below, is the previous list-based driver
(``git show aab7e9b:scheduler/drivers/filter_scheduler.py``) copied
into this test: per instance, ``get_filtered_hosts`` and
``get_weighed_hosts`` over the HostManager's HostState lists,
``random.choice`` among the best ``host_subset_size``,
``consume_from_request``, ``group.add_host``, alternates up to
``max_attempts``.  Its changes: a failed request drops the chosen
hosts' consumption with ``HostManager.forget_consumption`` instead of
``state.updated = None``, since the HostManager now refreshes only the
rows that changed (the old one re-read every row per request); and, as
Nova's ``_consume_selected_host`` (missing in aab7e9b), the request's
``instance_uuid`` is each instance's in turn (none for the alternates)
and a new instance counts among its host's instances
(``HostManager.consume``), which a failed request drops again.  Every
request names its instances, as Nova's
conductor does, and a group's members include them, as Nova's API adds
them.

A random fleet is seeded into SQLite twice, identically (the fleet
seeder, ``scheduler_tools.seed``); the oracle runs a random sequence of
requests on one database and the fast driver the same sequence on the
other, with the same ``[scheduler] random_seed``, so that both evolve
the same way.  Every
Selection must agree on host, node, limits and availability zone, and a
request must fail (NoValidHost) in both or in neither.  The oracle does
not claim, so this runs with ``[scheduler] claim_resources`` off; a
third run of the fast driver with claims on (no concurrency, capacity
filters all enabled) must place the same as a fourth oracle run, up to
the first failed request (see the test).  The databases are used one
after the other: ``scheduler.db.api`` has one engine at a time.

Forced hosts and the ``rebuild`` check type are not drawn: they hit a
discrepancy already found (the limits of a host the filters skipped),
kept as the deterministic ``test_limits_of_a_host_the_filters_skipped``,
failing until the product is fixed.
"""

import datetime
import itertools
import uuid

import fakes
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_utils import timeutils

from scheduler import exception
from scheduler.conf import CONF
from scheduler.db import api as db
from scheduler.db import claims
from scheduler.drivers import base
from scheduler.drivers import filter_scheduler
from scheduler.engine import live_migration
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance_group as group_obj
from scheduler.objects import selection as selection_obj
from scheduler.view import refresh
from scheduler_tools import seed
from scheduler_tools import writers

NEWTON_AND_CORE = ['RetryFilter', 'AvailabilityZoneFilter', 'RamFilter',
                   'DiskFilter', 'ComputeFilter',
                   'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
                   'ServerGroupAntiAffinityFilter',
                   'ServerGroupAffinityFilter', 'CoreFilter']
EXTRA_FILTERS = ['AggregateCoreFilter', 'AggregateRamFilter',
                 'AggregateDiskFilter', 'IoOpsFilter', 'NumInstancesFilter',
                 'AggregateNumInstancesFilter', 'DifferentHostFilter',
                 'SameHostFilter', 'AggregateMultiTenancyIsolation',
                 'AggregateInstanceExtraSpecsFilter', 'JsonFilter',
                 'TypeAffinityFilter']
HOSTS = ['host%d' % i for i in range(4)]
UUIDS = [str(uuid.UUID(int=i + 1)) for i in range(6)]


# ---------------------------------------------------------------------------
# The oracle: the list-based driver of aab7e9b
# ---------------------------------------------------------------------------


class ListOracle(base.Scheduler):
    """Nova's FilterScheduler loop over HostState lists (aab7e9b)."""

    def select_destinations(self, context, spec_obj, instance_uuids=None,
                            return_alternates=False):
        with self.host_manager.lock:
            return self._schedule(context, spec_obj, instance_uuids,
                                  return_alternates)

    def _schedule(self, context, spec_obj, instance_uuids,
                  return_alternates):
        hosts = self.host_manager.get_all_host_states(context)
        live_migration.check_requested_destination(hosts, spec_obj)
        num = self.num_instances(spec_obj, instance_uuids)
        selected = []
        for index in range(num):
            spec_obj.instance_uuid = instance_uuids[index]
            hosts = self._get_sorted_hosts(spec_obj, hosts, index)
            if not hosts:
                break
            chosen = hosts[0]
            self.host_manager.consume(chosen, spec_obj,
                                      instance_uuids[index])
            group = spec_obj.get('instance_group')
            if group is not None:
                group.add_host(chosen.host)
            selected.append(chosen)
        spec_obj.instance_uuid = instance_uuids[0]
        if len(selected) < num:
            self._release(selected, spec_obj, num)
        if return_alternates and num > 1:
            # No instance of the request exempted (see the driver).
            del spec_obj._obj_instance_uuid
            hosts = self._get_sorted_hosts(spec_obj, hosts, num - 1,
                                           pick=False)
            spec_obj.instance_uuid = instance_uuids[0]
        return self._selections(selected, hosts, return_alternates)

    def _release(self, selected, spec_obj, num):
        # aab7e9b: ``state.updated = None`` for each; see the docstring.
        self.host_manager.forget_consumption(selected)
        raise exception.NoValidHost(
            reason=filter_scheduler.NOT_ENOUGH_HOSTS)

    def _get_sorted_hosts(self, spec_obj, hosts, index, pick=True):
        filtered = self.pipeline.get_filtered_hosts(hosts, spec_obj, index)
        if not filtered:
            return []
        weighed = self.pipeline.get_weighed_hosts(filtered, spec_obj)
        if CONF.filter_scheduler.shuffle_best_same_weighed_hosts:
            weighed = self._shuffle_best(weighed)
        ordered = [w.obj for w in weighed]
        if not pick:
            return ordered
        subset = min(CONF.filter_scheduler.host_subset_size, len(ordered))
        chosen = self.random.choice(ordered[:subset])
        ordered.remove(chosen)
        return [chosen] + ordered

    def _shuffle_best(self, weighed):
        best = weighed[0].weight
        ties = [w for w in weighed if w.weight == best]
        self.random.shuffle(ties)
        return ties + weighed[len(ties):]

    def _selections(self, selected, hosts, return_alternates):
        max_hosts = CONF.scheduler.max_attempts if return_alternates else 1
        chosen_keys = {(s.host, s.nodename) for s in selected}
        result = []
        for state in selected:
            picks = [selection_obj.Selection.from_host_state(state)]
            for alt in hosts:
                if len(picks) >= max_hosts:
                    break
                if (alt.cell_uuid == state.cell_uuid and
                        (alt.host, alt.nodename) not in chosen_keys):
                    picks.append(selection_obj.Selection.from_host_state(
                        alt))
            result.append(picks)
        return result


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------

NODE = st.fixed_dictionaries({
    'host': st.sampled_from(HOSTS),
    'vcpus': st.sampled_from([0, 4, 8, 16]),
    'vcpus_used': st.integers(0, 6),
    'memory_mb': st.sampled_from([2048, 4096, 8192, 16384]),
    'memory_mb_used': st.sampled_from([0, 0, 512, 1024, 3072]),
    'local_gb': st.sampled_from([20, 40, 100]),
    'local_gb_used': st.sampled_from([0, 5, 20]),
    'cpu_allocation_ratio': st.sampled_from([None, 0.0, 1.0, 4.0]),
    'ram_allocation_ratio': st.sampled_from([None, 1.0, 1.5]),
    'disk_allocation_ratio': st.sampled_from([None, 1.0, 2.0]),
    'hypervisor_version': st.sampled_from([None, 2011000, 6002000]),
    'stats': st.fixed_dictionaries({
        'num_instances': st.integers(0, 6),
        'io_workload': st.integers(0, 9),
        'failed_builds': st.sampled_from([0, 0, 2])}),
})
SERVICE = st.fixed_dictionaries({
    'disabled': st.sampled_from([False] * 7 + [True]),
    # seconds since the heartbeat
    'age': st.sampled_from([0, 0, 5, 10, 20, 3600]),
})
AGGREGATE = st.fixed_dictionaries({
    'hosts': st.sets(st.sampled_from(HOSTS), max_size=3),
    'metadata': st.dictionaries(st.sampled_from([
        'availability_zone', 'ram_allocation_ratio', 'cpu_allocation_ratio',
        'ram_weight_multiplier', 'io_ops_weight_multiplier',
        'cpu_weight_multiplier', 'max_instances_per_host',
        'filter_tenant_id', 'ssd']), st.sampled_from([
            'az1', 'az2', '0.5', '2.0', '-1.0', '3', 'abc', 'p1', 'true']),
        max_size=3),
})
REQUEST = st.fixed_dictionaries({
    'num_instances': st.integers(1, 4),
    'return_alternates': st.sampled_from([False, True, True]),
    'memory_mb': st.sampled_from([256, 512, 512, 1024, 2048, 4096]),
    'vcpus': st.sampled_from([1, 1, 2, 4]),
    'root_gb': st.sampled_from([1, 1, 10, 30]),
    'availability_zone': st.sampled_from([None] * 4 + ['nova', 'az1']),
    'project_id': st.sampled_from(['p1', 'p2']),
    'extra_specs': st.sampled_from([
        {}, {}, {}, {}, {'ssd': 'true'}, {'capabilities:hypervisor_version':
                                  '>= 6000000'},
        {'capabilities:stats:failed_builds': '== 0'}]),
    'hints': st.sampled_from([
        {}, {}, {}, {}, {}, {}, {}, {'different_host': UUIDS[:2]},
        {'same_host': UUIDS[0]},
        {'query': '[">=", "$free_ram_mb", 2048]'},
        {'query': '["<", "$num_io_ops", 5]'}]),
    'group': st.one_of(st.none(), st.fixed_dictionaries({
        'policy': st.sampled_from(['affinity', 'anti-affinity',
                                   'soft-affinity', 'soft-anti-affinity']),
        'members': st.lists(st.sampled_from(UUIDS), unique=True,
                            max_size=3),
        'rules': st.sampled_from([{}, {}, {'max_server_per_host': '2'}]),
    })),
    'ignore_hosts': st.sampled_from([None, None, None, ['host1']]),
    # Not drawn, see test_limits_of_a_host_the_filters_skipped: forced
    # hosts and the 'rebuild' check type (the filters do not run).
    # An instance already on a host is a move: its source host goes.
    'instance_uuid': st.sampled_from([None] * 3 + UUIDS[:2]),
    'check_type': st.sampled_from([None] * 5 + ['migrate', 'resize']),
    'retry': st.sampled_from([None, None, None, [('host0', 'node0')]]),
})
OPERATION = st.one_of(
    st.none(),
    st.tuples(st.just('report'), st.integers(0, 5),
              st.sampled_from([0, 1024, 4096])),
    st.tuples(st.just('disable'), st.integers(0, 3), st.booleans()),
    st.tuples(st.just('aggregate'), st.integers(0, 2), st.sampled_from([
        {'ram_weight_multiplier': '-2.0'}, {'availability_zone': 'az2'},
        {'cpu_allocation_ratio': '0.5'}, {'ram_weight_multiplier': None}])),
    st.tuples(st.just('instance'), st.integers(0, 5),
              st.sampled_from(UUIDS)),
)
SCENARIO = st.fixed_dictionaries({
    'nodes': st.lists(NODE, min_size=2, max_size=7),
    'services': st.lists(SERVICE, min_size=len(HOSTS),
                         max_size=len(HOSTS)),
    'aggregates': st.lists(AGGREGATE, max_size=3),
    'instances': st.dictionaries(st.sampled_from(UUIDS), st.integers(0, 5),
                                 max_size=4),
    'steps': st.lists(st.tuples(REQUEST, OPERATION), min_size=1,
                      max_size=6),
    'extra_filters': st.lists(st.sampled_from(EXTRA_FILTERS), unique=True,
                              max_size=3),
    'host_subset_size': st.integers(1, 3),
    'shuffle': st.booleans(),
    'random_seed': st.integers(0, 2 ** 16),
    'max_attempts': st.sampled_from([1, 3, 4]),
    'full_refresh_interval': st.sampled_from([0, 300]),
})


# ---------------------------------------------------------------------------
# Seeding, operations and requests
# ---------------------------------------------------------------------------


def _node_name(index):
    return 'node%d' % index


def seed_scenario(url, scenario):
    """A fresh database at ``url`` holding the scenario's fleet; returns
    its admin context."""
    ctx = seed.use_database(url)
    now = timeutils.utcnow()
    hosts = {node['host'] for node in scenario['nodes']}
    for host in sorted(hosts):
        service = scenario['services'][HOSTS.index(host)]
        writers.service_create(ctx, {
            'host': host, 'binary': 'nova-compute', 'topic': 'compute',
            'report_count': 1, 'disabled': service['disabled'],
            'last_seen_up': now - datetime.timedelta(
                seconds=service['age'])})
    for index, node in enumerate(scenario['nodes']):
        seed.add_compute(
            ctx, node['host'], node=_node_name(index), service=False,
            vcpus=node['vcpus'], vcpus_used=node['vcpus_used'],
            memory_mb=node['memory_mb'],
            memory_mb_used=node['memory_mb_used'],
            local_gb=node['local_gb'], local_gb_used=node['local_gb_used'],
            cpu_allocation_ratio=node['cpu_allocation_ratio'],
            ram_allocation_ratio=node['ram_allocation_ratio'],
            disk_allocation_ratio=node['disk_allocation_ratio'],
            hypervisor_version=node['hypervisor_version'] or 0,
            stats=node['stats'])
    for index, agg in enumerate(scenario['aggregates']):
        seed.add_aggregate(ctx, 'agg%d' % index, sorted(agg['hosts']),
                           agg['metadata'])
    for instance_uuid, index in sorted(scenario['instances'].items()):
        _add_instance(ctx, scenario, instance_uuid, index)
    return ctx


def _add_instance(ctx, scenario, instance_uuid, index):
    node_index = index % len(scenario['nodes'])
    writers.instance_create(ctx, {
        'uuid': instance_uuid,
        'host': scenario['nodes'][node_index]['host'],
        'node': _node_name(node_index), 'instance_type_id': 1})


def apply_operation(ctx, driver, scenario, operation, added):
    """Change the database (and the HostManager, for the aggregate casts)
    between two requests, as compute services and the API do."""
    if operation is None:
        return
    kind, index, value = operation
    manager = driver.host_manager
    if kind == 'report':
        node_index = index % len(scenario['nodes'])
        node = scenario['nodes'][node_index]
        used = min(value, node['memory_mb'])
        writers.compute_node_update(ctx, node_index + 1, {
            'memory_mb_used': used,
            'free_ram_mb': node['memory_mb'] - used})
    elif kind == 'disable':
        services = {svc['host']: svc for svc in
                    db.service_get_all_by_binary(ctx, 'nova-compute')}
        service = services.get(HOSTS[index])
        if service is not None:
            writers.service_update(ctx, service['id'], {'disabled': value})
    elif kind == 'aggregate':
        aggregates = db.aggregate_get_all(ctx)
        if aggregates:
            agg = aggregates[index % len(aggregates)]
            writers.aggregate_update_metadata(ctx, agg['id'], value)
            manager.update_aggregates(aggregate_obj.Aggregate.from_db(
                db.aggregate_get(ctx, agg['id'])))
    elif value not in scenario['instances'] and value not in added:
        added.add(value)
        _add_instance(ctx, scenario, value, index)


def build_request(request, scenario):
    kwargs = {
        'num_instances': request['num_instances'],
        'memory_mb': request['memory_mb'], 'vcpus': request['vcpus'],
        'root_gb': request['root_gb'],
        'extra_specs': dict(request['extra_specs']),
        'project_id': request['project_id'],
    }
    if request['availability_zone']:
        kwargs['availability_zone'] = request['availability_zone']
    if request['hints']:
        kwargs['scheduler_hints'] = {
            key: value if isinstance(value, list) else [value]
            for key, value in request['hints'].items()}
    if request['ignore_hosts']:
        kwargs['ignore_hosts'] = list(request['ignore_hosts'])
    if request.get('force_hosts'):
        kwargs['force_hosts'] = list(request['force_hosts'])
    if request.get('force_nodes'):
        kwargs['force_nodes'] = list(request['force_nodes'])
    if request['instance_uuid']:
        kwargs['instance_uuid'] = request['instance_uuid']
    if request['check_type']:
        hints = kwargs.setdefault('scheduler_hints', {})
        hints['_nova_check_type'] = [request['check_type']]
    if request['retry']:
        kwargs['retry'] = fakes.fake_retry(request['retry'])
    group = request['group']
    if group is not None:
        members = group['members']
        # The API fills ``hosts`` with the hosts of the members.
        hosts = sorted({
            scenario['nodes'][scenario['instances'][m] %
                              len(scenario['nodes'])]['host']
            for m in members if m in scenario['instances']})
        kwargs['instance_group'] = group_obj.InstanceGroup(
            uuid=str(uuid.UUID(int=4242)), policy=group['policy'],
            members=list(members), hosts=hosts,
            _rules=dict(group['rules']))
    return seed.make_spec(**kwargs)


def _outcome(selections):
    return [[(s.service_host, s.nodename, s.limits.to_dict(),
              s.availability_zone) for s in picks]
            for picks in selections]


def _instance_uuids(spec, step):
    """The uuids of a request's instances, as Nova's conductor sends
    them: the request's own first, then new ones (the same in every
    run)."""
    return [spec.instance_uuid] + [
        str(uuid.UUID(int=10 ** 6 * (step + 1) + index))
        for index in range(1, spec.num_instances)]


def run_scenario(url, scenario, driver_class, operations=True):
    """Seed ``url``, build a driver and run every step.  Returns one
    outcome per request (the Selections' fields, or 'NoValidHost') and
    the number of claims left in the database."""
    ctx = seed_scenario(url, scenario)
    driver = driver_class(ctx)
    outcomes = []
    added = set()
    for step, (request, operation) in enumerate(scenario['steps']):
        spec = build_request(request, scenario)
        uuids = _instance_uuids(spec, step)
        if spec.obj_get('instance_group') is not None:
            # Nova's API adds a boot's instances to the group first.
            spec.instance_group.members = list(dict.fromkeys(
                spec.instance_group.members + uuids))
        try:
            outcomes.append(_outcome(driver.select_destinations(
                ctx, spec, uuids,
                return_alternates=request['return_alternates'])))
        except (exception.NoValidHost,
                exception.ComputeHostNotFound) as exc:
            outcomes.append(type(exc).__name__)
        if operations:
            apply_operation(ctx, driver, scenario, operation, added)
    return outcomes, claims.claims_count(ctx)


def _overrides(scenario, filter_names, claims):
    return [
        fakes.conf_overrides(
            'filter_scheduler', enabled_filters=filter_names,
            host_subset_size=scenario['host_subset_size'],
            shuffle_best_same_weighed_hosts=scenario['shuffle']),
        fakes.conf_overrides(
            'scheduler', random_seed=scenario['random_seed'],
            max_attempts=scenario['max_attempts'],
            claim_resources=claims,
            full_refresh_interval=scenario['full_refresh_interval']),
    ]


def _with_overrides(managers, fn, *args, **kwargs):
    for manager in managers:
        manager.__enter__()
    try:
        return fn(*args, **kwargs)
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


# ---------------------------------------------------------------------------
# The property
# ---------------------------------------------------------------------------


@pytest.fixture(scope='module', autouse=True)
def no_timed_sweep():
    """No sweep for late rows during the runs: it comes once a second
    of wall time, so the oracle (slower) and the fast driver would meet
    it at different requests, and a sweep re-applies the instance rows
    of its window, which drops the virtual consumption of their hosts.
    Nothing here is written late, so the sweep has nothing to find."""
    interval = refresh.SWEEP_INTERVAL
    refresh.SWEEP_INTERVAL = float('inf')
    yield
    refresh.SWEEP_INTERVAL = interval


@pytest.fixture(scope='module')
def database_urls(tmp_path_factory):
    """``database_urls()``: the URL of a new SQLite file."""
    directory = tmp_path_factory.mktemp('fast-driver')
    urls = ('sqlite:///%s' % (directory / ('db%d.sqlite' % i))
            for i in itertools.count())
    yield lambda: next(urls)
    writers.reset_engine()


@settings(max_examples=60)
@given(scenario=SCENARIO)
def test_fast_driver_places_as_the_list_oracle(database_urls, scenario):
    filter_names = NEWTON_AND_CORE + scenario['extra_filters']
    oracle = _with_overrides(_overrides(scenario, filter_names, False),
                             run_scenario, database_urls(), scenario,
                             ListOracle)
    fast = _with_overrides(_overrides(scenario, filter_names, False),
                           run_scenario, database_urls(), scenario,
                           filter_scheduler.FilterScheduler)
    assert fast == oracle
    assert fast[1] == 0
    # Claims on: without concurrency nothing is lost to another
    # scheduler, so the placements stay the same.  No operations: a
    # usage report would count the claimed instances twice until the
    # claims are reconciled, which the oracle does not model.  New
    # instances only: a request for an instance that has a claim is a
    # re-schedule, which gives the room of its old claim back.
    scenario = dict(scenario, steps=[
        (dict(request, instance_uuid=None), operation)
        for request, operation in scenario['steps']])
    oracle = _with_overrides(_overrides(scenario, NEWTON_AND_CORE, False),
                             run_scenario, database_urls(), scenario,
                             ListOracle, operations=False)
    claimed = _with_overrides(_overrides(scenario, NEWTON_AND_CORE, True),
                              run_scenario, database_urls(), scenario,
                              filter_scheduler.FilterScheduler,
                              operations=False)
    # Up to the first failed request: its chosen hosts are re-read from
    # the database, which without claims drops the consumption of the
    # earlier requests on them too (Nova), and with claims keeps it.
    failed = [i for i, outcome in enumerate(oracle[0])
              if not isinstance(outcome, list)]
    compared = failed[0] + 1 if failed else len(oracle[0])
    assert claimed[0][:compared] == oracle[0][:compared]
    # The claims were taken: one per instance placed, none left by the
    # failed requests.
    assert claimed[1] == sum(len(outcome) for outcome in claimed[0]
                             if isinstance(outcome, list))


# ---------------------------------------------------------------------------
# A discrepancy found by the property, kept as a deterministic example
# (its inputs are left out of the strategy so that the property keeps
# looking for new ones)
# ---------------------------------------------------------------------------


def _request(**fields):
    request = {'num_instances': 1, 'return_alternates': False,
               'memory_mb': 512, 'vcpus': 1, 'root_gb': 1,
               'availability_zone': None, 'project_id': 'p1',
               'extra_specs': {}, 'hints': {}, 'group': None,
               'ignore_hosts': None, 'retry': None, 'instance_uuid': None,
               'check_type': None}
    request.update(fields)
    return request


def _node(host):
    return {'host': host, 'vcpus': 8, 'vcpus_used': 0, 'memory_mb': 4096,
            'memory_mb_used': 0, 'local_gb': 40, 'local_gb_used': 0,
            'cpu_allocation_ratio': None, 'ram_allocation_ratio': None,
            'disk_allocation_ratio': None, 'hypervisor_version': 2011000,
            'stats': {}}


@pytest.mark.xfail(strict=True, reason=(
    'Known deviation: Selection limits of a host the limit-writing filters '
    'did not examine in this request (forced host, rebuild) are Nova\'s '
    'leftovers of any earlier request in the per-host path, but only those '
    'of requests that returned the host in the vectorised path.  Placements '
    'are the same.'))
@pytest.mark.parametrize('second', [
    _request(force_hosts=['host1']),
    # Nova's rebuild of the instance on host1 (node1): forced there.
    _request(check_type='rebuild', instance_uuid=UUIDS[0],
             force_hosts=['host1'], force_nodes=['node1']),
], ids=['forced-host', 'rebuild'])
def test_limits_of_a_host_the_filters_skipped(database_urls, second):
    """Two equal hosts.  A first request fails (three instances of an
    anti-affinity group), then a second one returns host1 without
    running the filters that write limits (forced host1, or Nova's
    rebuild of the instance on host1).  The list-based driver returns
    the host with the limits RamFilter, DiskFilter and CoreFilter wrote
    on it while filtering the first request (HostState.limits
    persists); the fast
    driver writes limits only through ``apply_limits``, for the hosts a
    successful request returns, so it has none."""
    scenario = {
        'nodes': [_node('host0'), _node('host1')],
        'services': [{'disabled': False, 'age': 0}] * len(HOSTS),
        'aggregates': [], 'instances': {UUIDS[0]: 1},
        'steps': [(_request(num_instances=3, group={
            'policy': 'anti-affinity', 'members': [], 'rules': {}}), None),
            (second, None)],
        'extra_filters': [], 'host_subset_size': 1, 'shuffle': False,
        'random_seed': 1, 'max_attempts': 1, 'full_refresh_interval': 300,
    }
    outcomes = [
        _with_overrides(_overrides(scenario, NEWTON_AND_CORE, False),
                        run_scenario, database_urls(), scenario,
                        driver_class)[0]
        for driver_class in (ListOracle, filter_scheduler.FilterScheduler)]
    assert outcomes[0][0] == 'NoValidHost'
    assert len(outcomes[0][1]) == 1   # placed
    assert outcomes[1] == outcomes[0]
