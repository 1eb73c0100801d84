"""HostTable.memo with a scope: one call per distinct value of the part of
the host the function reads, exact answers, and invalidation."""

import numpy as np

from scheduler.view import host_table
from scheduler.view import ironic_host_manager
from scheduler.view.host_table import HostTable
from tests.unit import fakes


def _counting(fn):
    calls = []

    def wrapped(state):
        calls.append(state.host)
        return fn(state)
    return wrapped, calls


def _states(**per_host):
    """One HostState per item of ``per_host['hypervisor_version']``."""
    versions = per_host['hypervisor_version']
    return [fakes.fake_host_state('host%d' % i, 'node%d' % i,
                                  hypervisor_version=version)
            for i, version in enumerate(versions)]


def test_attribute_scope_calls_once_per_distinct_value():
    table = HostTable(_states(hypervisor_version=[1, 2, 1, 2, 1, 3]))
    fn, calls = _counting(lambda s: s.hypervisor_version > 1)
    got = table.memo('owner', 'key', fn, table.all_rows,
                     scope=('hypervisor_version',))
    assert got.tolist() == [False, True, False, True, False, True]
    assert len(calls) == 3
    # Cached: no call for the same key; a new key pays per value again.
    table.memo('owner', 'key', fn, table.all_rows,
               scope=('hypervisor_version',))
    assert len(calls) == 3
    table.memo('owner', 'other', fn, table.all_rows,
               scope=('hypervisor_version',))
    assert len(calls) == 6


def test_values_equal_in_python_but_of_other_types_are_apart():
    """``1 == 1.0 == True`` and ``0.0 == -0.0``, yet ``str`` tells them
    apart (ComputeCapabilitiesFilter compares ``str(capability)``)."""
    values = [1, 1.0, True, 0.0, -0.0, None]
    table = HostTable(_states(hypervisor_version=values))
    got = table.memo('owner', 'key', lambda s: str(s.hypervisor_version),
                     table.all_rows, dtype=object,
                     scope=('hypervisor_version',))
    assert got.tolist() == [str(v) for v in values]


def test_nested_values_group_by_content():
    states = [fakes.fake_host_state('host%d' % i, 'node%d' % i,
                                    stats=stats)
              for i, stats in enumerate([{'a': '1'}, {'a': '1'},
                                         {'a': '2'}, {'a': 1}])]
    table = HostTable(states)
    fn, calls = _counting(lambda s: repr(s.stats))
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=object,
                     scope=('stats',))
    assert got.tolist() == [repr(s.stats) for s in states]
    assert len(calls) == 3


def test_a_changed_host_is_regrouped_after_sync():
    states = _states(hypervisor_version=[1, 1, 1])
    table = HostTable(states)
    scope = ('hypervisor_version',)
    fn = lambda s: s.hypervisor_version   # noqa: E731
    table.memo('owner', 'key', fn, table.all_rows, dtype=float, scope=scope)
    states[1].hypervisor_version = 7
    table.sync([states[1]])
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=float,
                     scope=scope)
    assert got.tolist() == [1, 7, 1]


def test_aggregate_metadata_scope():
    agg_a = fakes.fake_aggregate(1, ('host0', 'host1'), {'zone': 'a'})
    agg_b = fakes.fake_aggregate(2, ('host2',), {'zone': 'a'})
    states = [fakes.fake_host_state('host%d' % i, 'node%d' % i)
              for i in range(4)]
    for state, aggs in zip(states, ([agg_a], [agg_a], [agg_b], []),
                           strict=True):
        state.aggregates = aggs
    table = HostTable(states)
    scope = host_table.AGGREGATE_METADATA

    def zones(state):
        return ','.join(a.metadata.get('zone', '') for a in state.aggregates)
    fn, calls = _counting(zones)
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=object,
                     scope=scope)
    assert got.tolist() == ['a', 'a', 'a', '']
    # Equal metadata in different aggregates is one value.
    assert len(calls) == 2
    states[3].aggregates = [fakes.fake_aggregate(3, ('host3',),
                                                 {'zone': 'b'})]
    table.sync([states[3]], part='aggregates')
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=object,
                     scope=scope)
    assert got.tolist() == ['a', 'a', 'a', 'b']


def test_missing_attribute_is_its_own_value():
    states = _states(hypervisor_version=[None, None])
    table = HostTable(states)
    fn, calls = _counting(lambda s: hasattr(s, 'no_such_attribute'))
    got = table.memo('owner', 'key', fn, table.all_rows,
                     scope=('no_such_attribute',))
    assert got.tolist() == [False, False]
    assert len(calls) == 1


def test_codes_start_over_when_values_keep_changing():
    """A value that changes at every sync cannot grow the codes without
    bound: past twice the rows, they start over, answers unchanged."""
    states = _states(hypervisor_version=[0, 0])
    table = HostTable(states)
    scope = ('hypervisor_version',)
    fn = lambda s: s.hypervisor_version   # noqa: E731
    for version in range(1, 3 * host_table.MEMO_KEYS):
        states[0].hypervisor_version = version
        table.sync([states[0]])
        got = table.memo('owner', 'key', fn, table.all_rows,
                         dtype=np.int64, scope=scope)
        assert got.tolist() == [version, 0]
    grouping = table._groupings[scope]
    assert grouping.generation >= 1
    assert len(grouping.values) <= grouping.max_values


def test_several_attributes_group_by_all_of_them():
    pairs = [(1, {'a': '1'}), (1, {'a': '1'}), (1, {'a': '2'}),
             (2, {'a': '1'}), (2, {'a': '1'})]
    states = [fakes.fake_host_state('host%d' % i, 'node%d' % i,
                                    hypervisor_version=version, stats=stats)
              for i, (version, stats) in enumerate(pairs)]
    table = HostTable(states)
    scope = ('hypervisor_version', 'stats')
    fn, calls = _counting(lambda s: (s.hypervisor_version, s.stats['a']))
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=object,
                     scope=scope)
    assert got.tolist() == [(v, st['a']) for v, st in pairs]
    assert len(calls) == 3
    states[4].stats = {'a': '3'}
    table.sync([states[4]])
    got = table.memo('owner', 'key', fn, table.all_rows, dtype=object,
                     scope=scope)
    assert got.tolist()[3:] == [(2, '1'), (2, '3')]
    assert len(calls) == 4
    # Each attribute's values are shared with other scopes naming it.
    assert table._grouping(('stats',)) is table._grouping(scope).parts[1]


def _same_columns(table, states):
    fresh = HostTable(states)
    for name, column in fresh.columns.items():
        assert table.columns[name].tolist() == column.tolist(), name


def test_a_consumption_changes_only_the_usage_columns():
    """``HostManager.consume`` copies only ``USAGE_COLUMNS`` after
    ``consume_from_request``: a consumption, of a virtual node or of a
    bare-metal one taken whole, leaves every other column as it was."""
    states = [fakes.fake_host_state('a', 'a', vcpus_total=16,
                                    total_usable_ram_mb=8192,
                                    free_ram_mb=8192, free_disk_mb=102400,
                                    total_usable_disk_gb=100),
              ironic_host_manager.IronicNodeState('b', 'b')]
    for name, value in (('vcpus_total', 8), ('memory_mb', 4096),
                        ('total_usable_ram_mb', 4096), ('free_ram_mb', 4096),
                        ('local_gb', 50), ('free_disk_mb', 51200),
                        ('total_usable_disk_gb', 50)):
        setattr(states[1], name, value)
    table = HostTable(states)
    versions = table.row_version.copy()
    spec = fakes.fake_spec(vcpus=2, memory_mb=1024, root_gb=10)
    for state in states:
        state.consume_from_request(spec)
    table.sync(states, part='usage')
    _same_columns(table, states)
    assert (table.row_version == versions + 1).all()
    assert table.columns['free_ram_mb'].tolist() == [7168, 0]
