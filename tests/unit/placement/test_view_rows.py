"""PlacementView.passes_rows: the host manager's rows matched to provider
rows once, and the same answers as ``passes`` over the hosts' uuids as
providers fill up, hosts change and providers are read anew."""

import numpy as np

from scheduler.host_table import HostTable
from scheduler.placement import candidates as pc
from scheduler.placement import view as view_lib
from tests.unit import fakes


def _provider(uuid, vcpus, used=0):
    return pc.Provider(uuid, uuid, {'VCPU': pc.Inventory(total=vcpus)},
                       usages={'VCPU': used} if used else {})


def _view(providers, group):
    view = view_lib.PlacementView(engine=None, client=None)
    view.table = pc.ProviderTable(providers)
    view._table_epoch += 1
    view.current = view_lib.Candidates(
        group=group, static=view.table.matches(group))
    return view


def _hosts(uuids):
    return HostTable([fakes.fake_host_state('host%d' % i, 'node%d' % i,
                                            uuid=uuid)
                      for i, uuid in enumerate(uuids)])


def _both(view, hosts, rows):
    by_uuid = view.passes([s.uuid for s in hosts.states_at(rows)])
    by_rows = view.passes_rows(hosts, rows)
    assert by_rows.dtype == bool
    np.testing.assert_array_equal(by_rows, by_uuid)
    return by_rows.tolist()


def test_rows_follow_capacity_hosts_and_new_tables():
    group = pc.RequestGroup({'VCPU': 2})
    view = _view([_provider('a', 4), _provider('b', 2, used=1),
                  _provider('c', 8)], group)
    # 'x' has no provider (not in Placement yet): never a candidate.
    hosts = _hosts(['c', 'x', 'a', 'b'])
    rows = hosts.all_rows
    assert _both(view, hosts, rows) == [True, False, True, False]
    assert _both(view, hosts, rows[[2, 0]]) == [True, True]

    view.consume('a')
    view.consume('a')
    assert _both(view, hosts, rows) == [True, False, False, False]

    # A host synced with another compute node uuid is matched again.
    state = hosts.states[1]
    state.uuid = 'b'
    hosts.sync([state])
    view.table.replace([_provider('b', 4)])
    assert _both(view, hosts, rows) == [True, True, False, True]

    # Providers read anew (a new table, other rows): matched again.
    view = _view([_provider('b', 4), _provider('a', 2),
                  _provider('c', 1)], group)
    assert _both(view, hosts, rows) == [False, True, True, True]


def test_answers_from_placement_are_matched_by_uuid():
    view = view_lib.PlacementView(engine=None, client=None)
    view.current = view_lib.Candidates(requests={'b': [{}], 'c': [{}]})
    hosts = _hosts(['a', 'b', 'c'])
    assert view.passes_rows(hosts, hosts.all_rows).tolist() == [
        False, True, True]
