"""Multi-instance requests rank incrementally with the same answers.

Between two instances of a request the Ranking filters and weighs again
only the hosts consumed from (``scheduler.engine.pipeline.Ranking``,
``scheduler.weights.weighing``).  For fleets from the benchmark's
generator (``scheduler_tools.bench.workload``, seeded into SQLite) and
requests of up to 40 instances (with hosts small enough to fill up and
leave the candidates), under random weigher multipliers
(spreading, stacking, best fit), ``host_subset_size`` and the shuffle of
ties, the FilterScheduler must return exactly the same Selections
(hosts, nodes, alternates, limits) as when every instance filters and
weighs every candidate again (the Ranking's own full path, which the
list-based oracle of ``test_fast_driver_equivalence`` checks against
Nova's loop).  Both runs use the same ``[scheduler] random_seed`` on
identical databases.

The parts are checked too: ``HostTable.rows_changed_since``, which
filters and weighers are ``host_local`` (a plug-in overriding a built-in
is not), and the fall back to a full ranking on a NaN weight.
"""

import contextlib
import itertools

import fakes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler import drivers
from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.engine import pipeline
from scheduler.filters import ram_filter
from scheduler.view.host_table import HostTable
from scheduler.weights import ram as ram_weigher
from scheduler.weights import weighing
from scheduler_tools import seed
from scheduler_tools import writers
from scheduler_tools.bench import load_fleet
from scheduler_tools.bench import workload

MULTIPLIERS = st.fixed_dictionaries({
    'ram_weight_multiplier': st.sampled_from([1.0, -1.0, 0.0, 2.5]),
    'cpu_weight_multiplier': st.sampled_from([1.0, -1.0, 0.0]),
    'disk_weight_multiplier': st.sampled_from([1.0, 0.0, -0.5]),
    'io_ops_weight_multiplier': st.sampled_from([-1.0, 0.0, 3.0]),
    'best_fit_weight_multiplier': st.sampled_from([0.0, 0.0, 10.0]),
    'num_instances_weight_multiplier': st.sampled_from([0.0, -1.0]),
    'host_subset_size': st.integers(1, 3),
    'shuffle_best_same_weighed_hosts': st.booleans(),
})
CASE = st.fixed_dictionaries({
    'hosts': st.integers(2, 60),
    'fleet_seed': st.integers(0, 1000),
    # RAM divided by this: hosts that fill up and leave the candidates.
    'ram_divisor': st.sampled_from([1, 8, 16, 32]),
    'instances': st.lists(st.integers(1, 40), min_size=1, max_size=4),
    'kind': st.sampled_from([None, None, 'plain', 'anti_affinity',
                             'affinity', 'az', 'extra_specs']),
    'filter_scheduler': MULTIPLIERS,
    'random_seed': st.integers(0, 2 ** 16),
    'claim_resources': st.booleans(),
})


@pytest.fixture(scope='module')
def database_urls(tmp_path_factory):
    """``database_urls()``: the URL of a new SQLite file."""
    directory = tmp_path_factory.mktemp('incremental')
    urls = ('sqlite:///%s' % (directory / ('db%d.sqlite' % i))
            for i in itertools.count())
    yield lambda: next(urls)
    writers.reset_engine()


@contextlib.contextmanager
def full_ranking():
    """Every instance ranks every candidate again (the Ranking never
    keeps its Weighing)."""
    original = pipeline.Ranking.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self._may_update = False
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline.Ranking, '__init__', init)
        yield


def _outcome(selections):
    return [[(s.service_host, s.nodename, s.limits and s.limits.to_dict())
             for s in alternates] for alternates in selections]


def _run(url, case):
    ctx = seed.use_database(url)
    hosts = load_fleet.load_hosts(case['hosts'], case['fleet_seed'],
                            case.get('ram_divisor', 1))
    workload.seed_hosts(ctx, hosts)
    driver = drivers.load_driver(ctx, name='filter_scheduler')
    bench = workload.Workload(hosts, case['fleet_seed'])
    outcomes = []
    for instances in case['instances']:
        request = bench.requests(instances, 1, 'incremental',
                                 case['kind'])[0]
        try:
            outcomes.append(_outcome(driver.select_destinations(
                ctx, request.spec, request.instance_uuids,
                return_alternates=True)))
        except exception.NoValidHost:
            outcomes.append('NoValidHost')
    return outcomes


@settings(max_examples=60, deadline=None)
@given(case=CASE)
def test_incremental_ranking_places_as_the_full_ranking(database_urls,
                                                        case):
    with fakes.conf_overrides('filter_scheduler',
                              **case['filter_scheduler']), \
            fakes.conf_overrides('scheduler',
                                 random_seed=case['random_seed'],
                                 claim_resources=case['claim_resources']):
        with full_ranking():
            expected = _run(database_urls(), case)
        assert _run(database_urls(), case) == expected


def test_a_long_request_keeps_its_weighing(database_urls, monkeypatch):
    """The incremental path is the one taken: a 30-instance request on a
    spread fleet re-ranks 29 times through ``Weighing.update``, and once
    more for the alternates."""
    updates = []
    original = weighing.Weighing.update

    def counting(self, changed, removed):
        updates.append(len(changed))
        return original(self, changed, removed)
    monkeypatch.setattr(weighing.Weighing, 'update', counting)
    outcome = _run(database_urls(), {'hosts': 50, 'fleet_seed': 3,
                                     'instances': [30], 'kind': 'plain'})
    assert len(outcome[0]) == 30
    assert len(updates) == 30 and set(updates) == {1}


# -- the parts ---------------------------------------------------------------


def test_rows_changed_since():
    states = [fakes.fake_host_state('host%d' % i, 'node%d' % i)
              for i in range(3)]
    table = HostTable(states)
    stamp = table.stamp
    assert list(table.rows_changed_since(stamp)) == []
    table.sync([states[2]])
    table.sync([states[0]])
    table.sync([states[1]], part='service')      # no version change
    assert sorted(table.rows_changed_since(stamp)) == [0, 2]
    assert table.rows_changed_since(stamp + 5) is None


def test_rows_changed_since_forgets_beyond_its_log(monkeypatch):
    states = [fakes.fake_host_state('host0', 'node0')]
    table = HostTable(states)
    stamp = table.stamp
    for _ in range(table._changes.maxlen + 1):
        table.sync(states)
    assert table.rows_changed_since(stamp) is None
    assert list(table.rows_changed_since(stamp + 1)) == [0] * (
        table._changes.maxlen)


NOT_LOCAL_FILTERS = {'ServerGroupAffinityFilter'}


def test_built_in_filters_say_whether_they_are_host_local():
    for cls in filters.all_filters():
        assert filters.host_local(cls()) == (
            cls.__name__ not in NOT_LOCAL_FILTERS), cls.__name__


def test_built_in_weighers_are_host_local():
    for cls in weights.all_weighers():
        assert weights.host_local(cls()), cls.__name__


class GlobalRamFilter(ram_filter.RamFilter):
    """A plug-in reading more than its host: not assumed local."""

    def host_passes(self, host_state, spec_obj):
        return True


class GlobalRamWeigher(ram_weigher.RAMWeigher):
    def weigh_object(self, host_state, weight_properties):
        return 1.0


def test_a_plug_in_overriding_a_built_in_is_not_host_local():
    assert filters.host_local(ram_filter.RamFilter())
    assert not filters.host_local(GlobalRamFilter())
    assert weights.host_local(ram_weigher.RAMWeigher())
    assert not weights.host_local(GlobalRamWeigher())


class _Weigher(weights.BaseHostWeigher):
    """Raw weights read from a dict, row -> value."""

    def __init__(self, values):
        self.values = values


def _raw(weigher, table, rows, spec):
    return np.asarray([weigher.values[row] for row in rows], dtype=float)


class _Table:
    def __len__(self):
        return 4


def test_weighing_update_gives_the_full_weighing():
    weigher = _Weigher({0: 5.0, 1: 1.0, 2: 5.0, 3: 3.0})
    rows = np.arange(4, dtype=np.intp)
    kept = weighing.Weighing([weigher], _Table(), rows, None, [2.0], _raw)
    kept.sort()
    # The best (row 0, tied with row 2) was chosen and lost 4.
    weigher.values[0] = 1.0
    assert kept.update(np.array([0]), np.array([3]))
    fresh = weighing.Weighing([weigher], _Table(), np.array([0, 2, 1]),
                              None, [2.0], _raw)
    fresh.sort()
    assert list(kept.rows) == list(fresh.slot_rows[fresh.order]) == [2, 0, 1]
    assert list(kept.sorted_totals) == list(fresh.sorted_totals)


def test_weighing_update_refuses_a_nan_weight():
    weigher = _Weigher({0: 5.0, 1: 1.0, 2: 4.0})
    rows = np.arange(3, dtype=np.intp)
    kept = weighing.Weighing([weigher], _Table(), rows, None, [1.0], _raw)
    kept.sort()
    order = list(kept.rows)
    weigher.values[0] = float('nan')
    assert not kept.update(np.array([0]), np.array([], dtype=np.intp))
    assert list(kept.rows) == order     # nothing changed
