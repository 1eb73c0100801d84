"""scheduler.placement.host_candidates: a compute node's allocation
candidates in the view's order, read lazily and bounded; the claim,
the Selection and the consumption take the first one the filters left
(Nova 34), and the next instance's list is read anew."""

import fakes
import pytest

from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.objects import request_group as group_obj
from scheduler.placement import candidates as pc
from scheduler.placement import host_candidates
from scheduler.placement import provider_trees
from scheduler.placement import query
from scheduler.placement import trees
from scheduler.placement import view as view_lib

PCI = 'CUSTOM_PCI_8086_1520'
GROUP = 'req-1-0'


def _provider(name, parent=None, **inventories):
    return pc.Provider(name, name, {rc: pc.Inventory(total)
                                    for rc, total in inventories.items()},
                       parent_uuid=parent, root_uuid=parent)


def _view(*providers):
    """A view of ``providers``, no database."""
    view = view_lib.PlacementView(engine=None)
    view.table = pc.ProviderTable([p for p in providers
                                   if not p.parent_uuid])
    view.children = pc.ProviderTable([p for p in providers
                                      if p.parent_uuid])
    view.forest = provider_trees.Forest(view.table, view.children)
    return view


def _pci_view():
    """cn1 with two PCI providers of one device each; cn2 without."""
    view = _view(_provider('cn1', VCPU=4), _provider('pci-a', 'cn1', **{
        PCI: 1}), _provider('pci-b', 'cn1', **{PCI: 1}),
        _provider('cn2', VCPU=4))
    view.current = view_lib.Candidates(plan=trees.Plan(
        view.forest, query.Request.from_query(
            {'resources': 'VCPU:1', 'resources' + GROUP: PCI + ':1'})))
    return view


def _pci_of(request):
    return request['mappings'][GROUP]


def test_a_nodes_candidates_in_order_and_lazily():
    view = _pci_view()
    found = host_candidates.HostCandidates(view, 'cn1')
    assert found[0] == view.allocation_request('cn1')
    assert 'more maybe' in repr(found)          # only the first was read
    assert [_pci_of(request) for request in found] == [['pci-a'],
                                                       ['pci-b']]
    assert len(found) == 2 and 'more maybe' not in repr(found)
    assert found[0]['allocations'] == {'cn1': {'resources': {'VCPU': 1}},
                                       'pci-a': {'resources': {PCI: 1}}}
    # A node without the device, and one Placement does not know.
    assert not host_candidates.HostCandidates(view, 'cn2')
    assert list(host_candidates.HostCandidates(view, 'unknown')) == []


def test_the_first_surviving_candidate_is_claimed_and_consumed():
    view = _pci_view()
    found = list(host_candidates.HostCandidates(view, 'cn1'))
    surviving = found[1:]                   # the filters dropped pci-a
    assert view.allocation_request('cn1', None, surviving) == found[1]
    assert view.allocation_request_json('cn1', surviving) is not None
    with pytest.raises(KeyError):
        view.allocation_request('cn1', None, [])
    assert view.allocation_request_json('cn1', []) is None
    view.consume('cn1', surviving)
    # The claim of the instance placed is the one it consumed...
    assert view.allocation_request('cn1', 0, []) == found[1]
    assert view.forest.provider(view.forest.index_of('pci-b')).usages == {
        PCI: 1}
    # ... and the next instance's list is the view's after it.
    assert [_pci_of(request) for request in
            host_candidates.HostCandidates(view, 'cn1')] == [['pci-a']]
    view.consume('cn1', None)               # no filter narrowed it
    assert view.allocation_request('cn1', 1) == found[0]
    assert not host_candidates.HostCandidates(view, 'cn1')


def test_the_root_providers_fast_path_has_one_candidate():
    view = _view(_provider('cn1', VCPU=4), _provider('cn2', VCPU=1))
    group = pc.RequestGroup({'VCPU': 2})
    view.current = view_lib.Candidates(group=group,
                                       static=view.table.matches(group))
    assert list(host_candidates.HostCandidates(view, 'cn1')) == [{
        'allocations': {'cn1': {'resources': {'VCPU': 2}}},
        'mappings': {'': ['cn1']}}]
    assert list(host_candidates.HostCandidates(view, 'cn2')) == []
    assert list(host_candidates.HostCandidates(
        view_lib.PlacementView(engine=None), 'cn1')) == []


def test_a_nodes_list_is_bounded(monkeypatch):
    providers = [_provider('cn1', VCPU=4)] + [
        _provider('pci-%d' % i, 'cn1', **{PCI: 1}) for i in range(5)]
    view = _view(*providers)
    view.current = view_lib.Candidates(plan=trees.Plan(
        view.forest, query.Request.from_query(
            {'resources': 'VCPU:1', 'resources' + GROUP: PCI + ':1'})))
    assert len(host_candidates.HostCandidates(view, 'cn1')) == 5
    monkeypatch.setattr(host_candidates, 'MAX_PER_HOST', 2)
    assert len(host_candidates.HostCandidates(view, 'cn1')) == 2
    monkeypatch.setattr(host_candidates, 'MAX_PER_HOST', 1000)
    # The plan's limit of combinations bounds the listing too.
    view.current.plan.limit = 6
    assert len(host_candidates.HostCandidates(view, 'cn1')) == 2


def test_only_requests_with_pci_in_placement_want_the_lists():
    request_id = '5f1c1b7e-0d5e-4a44-9f5e-6a7a3c0b9d11'
    pci = pci_obj.InstancePCIRequests(requests=[pci_obj.InstancePCIRequest(
        count=1, spec=[{}], alias_name='nic', request_id=request_id)])
    numa = numa_obj.InstanceNUMATopology(cells=[
        numa_obj.InstanceNUMACell(id=0, cpuset={0}, memory=512)])
    assert not host_candidates.wanted(fakes.fake_spec())
    # NUMA, or PCI without Placement groups: every candidate alike.
    assert not host_candidates.wanted(fakes.fake_spec(numa_topology=numa))
    assert not host_candidates.wanted(fakes.fake_spec(pci_requests=pci))
    assert host_candidates.wanted(fakes.fake_spec(
        numa_topology=numa, pci_requests=pci,
        requested_resources=[group_obj.RequestGroup(
            requester_id=request_id + '-0', resources={PCI: 1},
            use_same_provider=True)]))
