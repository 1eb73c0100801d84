"""PlacementView.passes_rows: the host manager's rows matched to provider
rows once, and the same answers as ``passes`` over the hosts' uuids as
providers fill up, hosts change and providers are read anew; for the
root providers' fast path and for requests over provider trees, each
later instance checked after the earlier ones consumed."""

import numpy as np

from scheduler.placement import candidates as pc
from scheduler.placement import provider_trees
from scheduler.placement import view as view_lib
from scheduler.view.host_table import HostTable
from tests.unit import fakes


def _provider(uuid, vcpus, used=0):
    return pc.Provider(uuid, uuid, {'VCPU': pc.Inventory(total=vcpus)},
                       usages={'VCPU': used} if used else {})


def _load(providers, children=()):
    """A view of ``providers`` (roots) and ``children``, no database."""
    view = view_lib.PlacementView(engine=None)
    view.table = pc.ProviderTable(providers)
    view.children = pc.ProviderTable(children)
    view.forest = provider_trees.Forest(view.table, view.children)
    view._table_epoch += 1
    return view


def _view(providers, group):
    view = _load(providers)
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
    view.forest.replace([_provider('b', 4)])
    assert _both(view, hosts, rows) == [True, True, False, True]

    # Providers read anew (a new table, other rows): matched again.
    view = _view([_provider('b', 4), _provider('a', 2),
                  _provider('c', 1)], group)
    assert _both(view, hosts, rows) == [False, True, True, True]


def test_a_request_over_trees_consumes_child_providers():
    """Two instances each asking a VGPU: the view's candidates follow
    the child providers' use, and each instance's allocation request is
    the one it consumed."""
    def gpu(name, parent):
        return pc.Provider(name, name, {'VGPU': pc.Inventory(total=1)},
                           parent_uuid=parent, root_uuid=parent)

    view = _load([_provider('a', 4), _provider('b', 4)],
                 [gpu('a-gpu0', 'a'), gpu('a-gpu1', 'a'), gpu('b-gpu0', 'b')])
    view.current = view.candidates({'resources': 'VCPU:1,VGPU:1'})
    assert view.current.plan is not None
    hosts = _hosts(['b', 'a', 'x'])
    rows = hosts.all_rows
    assert _both(view, hosts, rows) == [True, True, False]
    view.consume('a')
    view.consume('a')
    assert _both(view, hosts, rows) == [True, False, False]
    assert [sorted(view.allocation_request('a', nth)['allocations'])
            for nth in (0, 1)] == [['a', 'a-gpu0'], ['a', 'a-gpu1']]
    assert view.allocation_request_json('a') is not None
    assert view.allocation_request('b')['mappings'] == {'': ['b', 'b-gpu0']}
    view.consume('b')
    assert _both(view, hosts, rows) == [False, False, False]


def test_a_query_placement_refuses_has_no_candidate():
    view = _load([_provider('a', 4)])
    view.current = view.candidates({'resources': 'VCPU:0'})
    hosts = _hosts(['a'])
    assert _both(view, hosts, hosts.all_rows) == [False]
    assert view.allocation_request_json('a') is None
