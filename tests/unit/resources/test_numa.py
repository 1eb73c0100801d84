"""scheduler.resources.numa: host topology parsing, fitting, accounting,
consumption."""

import json
import logging

import fakes
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.objects import numa as numa_obj
from scheduler.objects import pci as pci_obj
from scheduler.resources import numa
from scheduler.resources import numa_topology

SMALL = {'size_kb': 4, 'total': 262144, 'used': 0, 'reserved': 0}   # 1 GiB


def plain_cell(cell_id, cpus, memory=2048, siblings=(), mempages=None,
               **usage):
    cell = {'id': cell_id, 'cpuset': list(cpus), 'memory': memory,
            'cpu_usage': 0, 'memory_usage': 0, 'pinned_cpus': [],
            'siblings': [list(s) for s in siblings],
            'mempages': list(mempages if mempages is not None else [SMALL])}
    cell.update(usage)
    return cell


def plain(*cells):
    return json.dumps({'cells': list(cells)})


def primitive(*cells):
    def obj(name, version, data):
        return {'nova_object.name': name, 'nova_object.namespace': 'nova',
                'nova_object.version': version, 'nova_object.data': data,
                'nova_object.changes': sorted(data)}
    prim_cells = []
    for cell in cells:
        data = dict(cell)
        data['mempages'] = [obj('NUMAPagesTopology', '1.1', p)
                            for p in cell['mempages']]
        prim_cells.append(obj('NUMACell', '1.2', data))
    return json.dumps(obj('NUMATopology', '1.2', {'cells': prim_cells}))


def two_cells(**usage):
    """2 cells of 4 CPUs (2 cores x 2 threads) and 2048 MiB each."""
    return plain(plain_cell(0, [0, 1, 2, 3], siblings=[[0, 1], [2, 3]],
                            **usage),
                 plain_cell(1, [4, 5, 6, 7], siblings=[[4, 5], [6, 7]]))


def icell(cpus, memory, cell_id=0, **kwargs):
    return numa_obj.InstanceNUMACell(id=cell_id, cpuset=set(cpus),
                                     memory=memory, **kwargs)


def itopo(*cells, **kwargs):
    return numa_obj.InstanceNUMATopology(cells=list(cells), **kwargs)


def limits(cpu=16.0, ram=1.5):
    return numa_obj.NUMATopologyLimits(cpu_allocation_ratio=cpu,
                                       ram_allocation_ratio=ram)


def pinning(fitted, index=0):
    return {int(v): p for v, p in fitted.cells[index].cpu_pinning_raw.items()}


# -- parsing ---------------------------------------------------------------

def test_parse_plain_and_primitive_forms_agree():
    cell = plain_cell(0, [0, 1], memory=1024, siblings=[[0, 1]],
                      cpu_usage=1, memory_usage=256, pinned_cpus=[1],
                      mempages=[SMALL, {'size_kb': 2048, 'total': 8,
                                        'used': 2, 'reserved': 1}])
    from_plain = numa_topology.parse_host_topology(plain(cell))
    from_primitive = numa_topology.parse_host_topology(primitive(cell))
    assert from_plain.cells == from_primitive.cells
    assert from_plain.fmt == numa_topology.FORMAT_PLAIN
    assert from_primitive.fmt == numa_topology.FORMAT_PRIMITIVE
    parsed = from_plain.cells[0]
    assert parsed.cpuset == {0, 1}
    assert parsed.memory == 1024
    assert parsed.avail_memory == 768
    assert parsed.pinned_cpus == {1}
    assert parsed.free_pcpus == {0}
    assert parsed.siblings == (frozenset({0, 1}),)
    assert parsed.threads_per_core == 2
    assert parsed.mempages[1] == numa_topology.MemPages(2048, 8, 2, 1)
    assert parsed.mempages[1].free == 5
    assert parsed.mempages[1].free_kb == 5 * 2048
    assert parsed.pcpuset is None


def test_parse_defaults_missing_usage_to_zero():
    topo = numa_topology.parse_host_topology(json.dumps(
        {'cells': [{'id': 3, 'cpuset': [0], 'memory': 64}]}))
    cell = topo.cells[0]
    assert (cell.cpu_usage, cell.memory_usage, cell.pinned_cpus,
            cell.siblings, cell.mempages) == (0, 0, frozenset(), (), ())


def test_parse_reads_pcpuset():
    cell = plain_cell(0, [0, 1], pcpuset=[2, 3])
    parsed = numa_topology.parse_host_topology(plain(cell)).cells[0]
    assert parsed.pcpuset == {2, 3}
    assert parsed.usable_cpus(True) == {2, 3}
    assert parsed.usable_cpus(False) == {0, 1}


def test_parse_none_empty_and_objects():
    assert numa_topology.parse_host_topology(None) is None
    assert numa_topology.parse_host_topology('') is None
    assert numa_topology.parse_host_topology('null') is None
    topo = numa_topology.parse_host_topology(two_cells())
    assert numa_topology.parse_host_topology(topo) is topo
    as_dict = json.loads(two_cells())
    assert numa_topology.parse_host_topology(as_dict).cells == topo.cells


def test_parse_caches_by_text():
    text = two_cells()
    assert (numa_topology.parse_host_topology(text)
            is numa_topology.parse_host_topology(text))


@pytest.mark.parametrize('bad', [
    'not json', '[1]', '{"cells": 1}', '{"other": []}',
    '{"cells": [{"cpuset": [0], "memory": 1}]}',
    '{"cells": [{"id": 0, "cpuset": [0], "memory": "lots"}]}',
    '{"cells": [{"id": 0, "cpuset": "0-3", "memory": 1}]}',
    '{"cells": [{"id": 0, "cpuset": [true], "memory": 1}]}',
    '{"cells": [{"id": 0, "cpuset": [0], "memory": 1}, '
    '{"id": 0, "cpuset": [1], "memory": 1}]}',
    '{"cells": [{"id": 0, "cpuset": [0], "memory": 1, "mempages": [1]}]}',
    '{"cells": [{"id": 0, "cpuset": [0], "memory": 1, "siblings": 1}]}',
])
def test_parse_rejects_unreadable_topologies(bad):
    with pytest.raises(numa_topology.InvalidNUMATopology):
        numa_topology.parse_host_topology(bad)


def test_parse_rejects_other_types():
    with pytest.raises(numa_topology.InvalidNUMATopology):
        numa_topology.parse_host_topology(12)


# -- writing back ----------------------------------------------------------

def test_topology_to_raw_keeps_the_primitive_and_unknown_keys():
    raw = json.loads(primitive(plain_cell(0, [0, 1], mempages=[
        SMALL, {'size_kb': 2048, 'total': 4, 'used': 0, 'reserved': 0}])))
    raw['nova_object.data']['cells'][0]['nova_object.data']['socket'] = 7
    text = json.dumps(raw)
    host = numa_topology.parse_host_topology(text)
    fitted = numa.fit_instance_to_host(
        host, itopo(icell([0], 4, pagesize=2048, cpu_policy='dedicated')))
    written = numa_topology.topology_to_raw(
        numa.usage_from_instance(host, fitted), text)
    assert isinstance(written, str)
    value = json.loads(written)
    cell = value['nova_object.data']['cells'][0]
    data = cell['nova_object.data']
    assert data['socket'] == 7
    assert data['pinned_cpus'] == [0]
    assert data['memory_usage'] == 4
    assert data['mempages'][1]['nova_object.data']['used'] == 2
    assert 'pinned_cpus' in cell['nova_object.changes']
    assert value['nova_object.name'] == 'NUMATopology'
    reparsed = numa_topology.parse_host_topology(written)
    assert reparsed.cells == numa.usage_from_instance(host, fitted).cells


def test_topology_to_raw_of_a_dict_is_a_dict_and_of_an_object_the_object():
    as_dict = json.loads(two_cells())
    host = numa_topology.parse_host_topology(as_dict)
    assert numa_topology.topology_to_raw(host, as_dict) == as_dict
    assert numa_topology.topology_to_raw(host, host) is host
    assert numa_topology.topology_to_raw(None, as_dict) is None


def test_topology_to_dict_of_a_built_topology():
    cell = numa_topology.HostNUMACell(
        id=0, cpuset=frozenset({0, 1}), memory=512,
        mempages=(numa_topology.MemPages(4, 10),), pcpuset=frozenset({2}))
    for fmt in (numa_topology.FORMAT_PLAIN, numa_topology.FORMAT_PRIMITIVE):
        topo = numa_topology.HostNUMATopology(cells=(cell,), fmt=fmt)
        as_dict = numa_topology.topology_to_dict(topo)
        assert numa_topology.parse_host_topology(as_dict).cells == (cell,)
    assert as_dict['nova_object.name'] == 'NUMATopology'


# -- fitting: basics -------------------------------------------------------

def test_fit_needs_both_topologies_and_enough_cells():
    request = itopo(icell([0], 512))
    assert numa.fit_instance_to_host(None, request) is None
    assert numa.fit_instance_to_host(two_cells(), None) is None
    assert numa.fit_instance_to_host(two_cells(), itopo()) is None
    three = itopo(icell([0], 64), icell([1], 64, 1), icell([2], 64, 2))
    assert numa.fit_instance_to_host(two_cells(), three) is None


def test_fit_unpinned_goes_on_the_first_cell_that_fits():
    fitted = numa.fit_instance_to_host(two_cells(), itopo(icell([0, 1],
                                                                1024)))
    assert [c.id for c in fitted.cells] == [0]
    assert fitted.cells[0].obj_get('cpu_pinning_raw') is None


def test_fit_puts_instance_cells_on_distinct_host_cells():
    request = itopo(icell([0, 1], 1024), icell([2, 3], 1024, cell_id=1))
    fitted = numa.fit_instance_to_host(two_cells(), request)
    assert [c.id for c in fitted.cells] == [0, 1]


def test_fit_tries_other_permutations():
    # The first instance cell only fits on host cell 1.
    request = itopo(icell([0], 3000), icell([1], 512, cell_id=1))
    host = plain(plain_cell(0, [0, 1], memory=2048),
                 plain_cell(1, [2, 3], memory=4096))
    fitted = numa.fit_instance_to_host(host, request)
    assert [c.id for c in fitted.cells] == [1, 0]


def test_fit_memory_larger_than_a_cell_fails():
    assert numa.fit_instance_to_host(two_cells(),
                                     itopo(icell([0], 2049))) is None


def test_fit_more_vcpus_than_a_cell_fails_even_with_overcommit():
    assert numa.fit_instance_to_host(
        two_cells(), itopo(icell(range(5), 64)), limits=limits()) is None


def test_fit_unpinned_with_limits_checks_usage_against_the_ratios():
    host = two_cells(memory_usage=2048, cpu_usage=6)
    request = itopo(icell([0, 1], 1024))
    # 2048 + 1024 <= 2048 * 1.5 and 6 + 2 <= 4 * 2.
    assert numa.fit_instance_to_host(host, request,
                                     limits=limits(cpu=2.0, ram=1.5))
    fitted = numa.fit_instance_to_host(host, request,
                                       limits=limits(cpu=1.0, ram=1.5))
    assert fitted.cells[0].id == 1
    fitted = numa.fit_instance_to_host(host, request,
                                       limits=limits(cpu=2.0, ram=1.0))
    assert fitted.cells[0].id == 1
    full = plain(plain_cell(0, [0, 1, 2, 3], memory_usage=2048))
    assert numa.fit_instance_to_host(full, request,
                                     limits=limits(ram=1.0)) is None


def test_fit_without_limits_ignores_usage():
    host = plain(plain_cell(0, [0, 1], memory_usage=4096, cpu_usage=100))
    assert numa.fit_instance_to_host(host, itopo(icell([0, 1], 2048)))


def test_fit_accepts_limits_as_a_dict():
    host = plain(plain_cell(0, [0, 1], memory_usage=2048))
    request = itopo(icell([0], 1024))
    assert numa.fit_instance_to_host(
        host, request, limits={'ram_allocation_ratio': 1.0,
                               'cpu_allocation_ratio': 16.0}) is None


def test_fit_does_not_change_the_request():
    request = itopo(icell([0, 1], 1024, pagesize=numa.MEMPAGES_ANY,
                          cpu_policy='dedicated'),
                    emulator_threads_policy=None)
    before = request.obj_to_primitive()
    host = plain(plain_cell(1, [0, 1, 2, 3], mempages=[
        SMALL, {'size_kb': 2048, 'total': 1024, 'used': 0, 'reserved': 0}]))
    fitted = numa.fit_instance_to_host(host, request)
    assert fitted.cells[0].pagesize == 2048
    assert request.obj_to_primitive() == before


def test_fit_refuses_unknown_cpu_policies():
    assert numa.fit_instance_to_host(
        two_cells(), itopo(icell([0], 64, cpu_policy='mixed'))) is None


def test_fit_gives_up_after_the_search_budget(monkeypatch):
    monkeypatch.setattr(numa, 'MAX_SEARCH_STEPS', 1)
    request = itopo(icell([0], 64), icell([1], 64, cell_id=1))
    assert numa.fit_instance_to_host(two_cells(), request) is None


# -- fitting: pinning and thread policies ----------------------------------

def test_pinned_prefer_packs_sibling_threads():
    fitted = numa.fit_instance_to_host(
        two_cells(), itopo(icell([0, 1], 512, cpu_policy='dedicated')))
    assert pinning(fitted) == {0: 0, 1: 1}


def test_pinned_skips_pinned_cpus():
    host = two_cells(pinned_cpus=[0])
    fitted = numa.fit_instance_to_host(
        host, itopo(icell([0, 1], 512, cpu_policy='dedicated')))
    # Core (2, 3) is whole: the two vCPUs share it.
    assert pinning(fitted) == {0: 2, 1: 3}


def test_pinned_prefer_falls_back_to_any_free_cpus():
    host = plain(plain_cell(0, [0, 1, 2, 3], siblings=[[0, 1], [2, 3]],
                            pinned_cpus=[0, 2]))
    fitted = numa.fit_instance_to_host(
        host, itopo(icell([0, 1], 512, cpu_policy='dedicated',
                          cpu_thread_policy='prefer')))
    assert pinning(fitted) == {0: 1, 1: 3}


def test_pinned_without_enough_free_cpus_fails():
    host = plain(plain_cell(0, [0, 1, 2, 3], pinned_cpus=[0, 1, 2]))
    assert numa.fit_instance_to_host(
        host, itopo(icell([0, 1], 512, cpu_policy='dedicated'))) is None


def test_pinned_is_never_overcommitted():
    host = plain(plain_cell(0, [0, 1], memory=2048, memory_usage=1536))
    request = itopo(icell([0], 1024, cpu_policy='dedicated'))
    assert numa.fit_instance_to_host(host, request,
                                     limits=limits(ram=16.0)) is None
    unpinned = itopo(icell([0], 1024))
    assert numa.fit_instance_to_host(host, unpinned, limits=limits(ram=1.5))


def test_require_fails_without_hyperthreading():
    host = plain(plain_cell(0, [0, 1, 2, 3]))
    request = itopo(icell([0, 1], 512, cpu_policy='dedicated',
                          cpu_thread_policy='require'))
    assert numa.fit_instance_to_host(host, request) is None
    fitted = numa.fit_instance_to_host(two_cells(), request)
    assert pinning(fitted) == {0: 0, 1: 1}


def test_require_uses_only_cores_with_free_siblings():
    host = plain(plain_cell(0, [0, 1, 2, 3, 4, 5],
                            siblings=[[0, 1], [2, 3], [4, 5]],
                            pinned_cpus=[0, 2]))
    request = itopo(icell([0, 1], 512, cpu_policy='dedicated',
                          cpu_thread_policy='require'))
    assert pinning(numa.fit_instance_to_host(host, request)) == {0: 4, 1: 5}
    bigger = itopo(icell([0, 1, 2], 512, cpu_policy='dedicated',
                         cpu_thread_policy='require'))
    assert numa.fit_instance_to_host(host, bigger) is None
    prefer = itopo(icell([0, 1, 2], 512, cpu_policy='dedicated'))
    assert sorted(pinning(numa.fit_instance_to_host(host, prefer))
                  .values()) == [1, 3, 4]


def test_isolate_takes_whole_cores_and_blocks_their_siblings():
    request = itopo(icell([0, 1], 512, cpu_policy='dedicated',
                          cpu_thread_policy='isolate'))
    host = numa_topology.parse_host_topology(two_cells())
    fitted = numa.fit_instance_to_host(host, request)
    assert pinning(fitted) == {0: 0, 1: 2}
    used = numa.usage_from_instance(host, fitted).cells[0]
    assert used.pinned_cpus == {0, 1, 2, 3}
    assert used.cpu_usage == 4          # 2 vCPUs x 2 threads per core
    # Nothing is left for another isolated (or any pinned) guest.
    assert numa.fit_instance_to_host(
        numa.usage_from_instance(host, fitted),
        itopo(icell([0], 64, cpu_policy='dedicated'))).cells[0].id == 1


def test_isolate_fails_when_no_core_is_whole():
    host = two_cells(pinned_cpus=[0, 2])
    request = itopo(icell([0], 64, cpu_policy='dedicated',
                          cpu_thread_policy='isolate'))
    assert numa.fit_instance_to_host(host, request).cells[0].id == 1
    single = plain(plain_cell(0, [0, 1, 2, 3], siblings=[[0, 1], [2, 3]],
                              pinned_cpus=[0, 2]))
    assert numa.fit_instance_to_host(single, request) is None


def test_isolate_on_a_host_without_siblings_is_plain_pinning():
    host = plain(plain_cell(0, [0, 1]))
    request = itopo(icell([0, 1], 64, cpu_policy='dedicated',
                          cpu_thread_policy='isolate'))
    assert pinning(numa.fit_instance_to_host(host, request)) == {0: 0, 1: 1}


def test_pcpuset_is_used_for_pinned_and_cpuset_for_shared():
    host = numa_topology.parse_host_topology(plain(
        plain_cell(0, [0, 1], pcpuset=[2, 3], siblings=[])))
    pinned = itopo(icell([0, 1], 64, cpu_policy='dedicated'))
    fitted = numa.fit_instance_to_host(host, pinned)
    assert pinning(fitted) == {0: 2, 1: 3}
    used = numa.usage_from_instance(host, fitted)
    # Train+: pinned guests do not count in cpu_usage when pcpuset exists.
    assert used.cells[0].cpu_usage == 0
    assert used.cells[0].pinned_cpus == {2, 3}
    assert numa.fit_instance_to_host(used, pinned) is None
    shared = itopo(icell([0, 1], 64))
    assert numa.fit_instance_to_host(used, shared, limits=limits(cpu=1.0))
    three = itopo(icell([0, 1, 2], 64, cpu_policy='dedicated'))
    assert numa.fit_instance_to_host(host, three) is None


def test_emulator_threads_isolate_reserves_a_cpu_on_the_first_cell():
    request = itopo(icell([0, 1], 64, cpu_policy='dedicated'),
                    icell([2], 64, cell_id=1, cpu_policy='dedicated'),
                    emulator_threads_policy='isolate')
    host = numa_topology.parse_host_topology(two_cells())
    fitted = numa.fit_instance_to_host(host, request)
    assert set(fitted.cells[0].cpuset_reserved) == {2}
    assert fitted.cells[1].cpuset_reserved is None
    used = numa.usage_from_instance(host, fitted)
    assert used.cells[0].pinned_cpus == {0, 1, 2}
    assert used.cells[0].cpu_usage == 3
    full = itopo(icell([0, 1, 2, 3], 64, cpu_policy='dedicated'),
                 emulator_threads_policy='isolate')
    assert numa.fit_instance_to_host(host, full) is None


# -- fitting: page sizes ---------------------------------------------------

HUGE = {'size_kb': 2048, 'total': 512, 'used': 0, 'reserved': 0}     # 1 GiB
GIANT = {'size_kb': 1048576, 'total': 1, 'used': 0, 'reserved': 0}  # 1 GiB


def _paged_host(*pages, memory=4096):
    return plain(plain_cell(0, [0, 1, 2, 3], memory=memory,
                            mempages=list(pages)))


@pytest.mark.parametrize('wanted, expected', [
    (numa.MEMPAGES_SMALL, 4),
    (numa.MEMPAGES_LARGE, 1048576),
    (numa.MEMPAGES_ANY, 1048576),
    (2048, 2048),
    (4, 4),
])
def test_page_size_choice(wanted, expected):
    fitted = numa.fit_instance_to_host(
        _paged_host(SMALL, HUGE, GIANT), itopo(icell([0], 1024,
                                                     pagesize=wanted)))
    assert fitted.cells[0].pagesize == expected


def test_large_pages_fall_back_to_a_smaller_large_size():
    used_giant = dict(GIANT, used=1)
    fitted = numa.fit_instance_to_host(
        _paged_host(SMALL, HUGE, used_giant),
        itopo(icell([0], 1024, pagesize=numa.MEMPAGES_LARGE)))
    assert fitted.cells[0].pagesize == 2048


def test_page_size_not_on_the_host_fails():
    assert numa.fit_instance_to_host(
        _paged_host(SMALL), itopo(icell([0], 1024, pagesize=2048))) is None
    assert numa.fit_instance_to_host(
        _paged_host(SMALL),
        itopo(icell([0], 1024, pagesize=numa.MEMPAGES_LARGE))) is None
    assert numa.fit_instance_to_host(
        _paged_host(), itopo(icell([0], 1024,
                                   pagesize=numa.MEMPAGES_SMALL))) is None


def test_pages_must_be_free_and_whole():
    reserved = dict(HUGE, used=256, reserved=1)     # 255 free = 510 MiB
    request = itopo(icell([0], 512, pagesize=2048))
    assert numa.fit_instance_to_host(_paged_host(SMALL, reserved),
                                     request) is None
    assert numa.fit_instance_to_host(_paged_host(SMALL, HUGE), request)
    assert numa.fit_instance_to_host(
        _paged_host(SMALL, GIANT), itopo(icell([0], 1536,
                                               pagesize=1048576))) is None


def test_explicit_pages_may_exceed_the_cell_memory_figure():
    # Nova skips the total-memory check when a page size is asked.
    host = _paged_host(SMALL, HUGE, memory=512)
    assert numa.fit_instance_to_host(host, itopo(icell([0], 1024,
                                                       pagesize=2048)))


def test_page_usage_is_recorded_and_freed():
    host = numa_topology.parse_host_topology(_paged_host(SMALL, HUGE))
    fitted = numa.fit_instance_to_host(host, itopo(icell([0], 1024,
                                                         pagesize=2048)))
    used = numa.usage_from_instance(host, fitted)
    assert used.cells[0].mempages[1].used == 512
    assert used.cells[0].mempages[0].used == 0
    assert used.cells[0].memory_usage == 1024
    assert numa.fit_instance_to_host(used, itopo(icell([0], 2,
                                                       pagesize=2048))) is None
    freed = numa.usage_from_instance(used, fitted, free=True)
    assert freed.cells == host.cells


# -- fitting with PCI ------------------------------------------------------

def _pci_requests(count=1, **spec):
    return pci_obj.InstancePCIRequests(requests=[
        pci_obj.InstancePCIRequest(count=count, spec=[spec or
                                                      {'vendor_id': '8086'}])])


def test_fit_puts_the_instance_near_its_pci_devices():
    pools = [{'vendor_id': '8086', 'product_id': '1', 'numa_node': 1,
              'count': 1}]
    request = itopo(icell([0], 512))
    fitted = numa.fit_instance_to_host(two_cells(), request,
                                       pci_requests=_pci_requests(),
                                       pci_stats=pools)
    assert fitted.cells[0].id == 1
    assert numa.fit_instance_to_host(
        two_cells(), request, pci_requests=_pci_requests(2),
        pci_stats=pools) is None


def test_fit_with_pci_requests_and_no_pools_fails():
    assert numa.fit_instance_to_host(
        two_cells(), itopo(icell([0], 512)), pci_requests=_pci_requests(),
        pci_stats=None) is None
    assert numa.fit_instance_to_host(
        two_cells(), itopo(icell([0], 512)), pci_requests=[],
        pci_stats=None)


# -- accounting ------------------------------------------------------------

def test_usage_of_an_unpinned_instance():
    host = numa_topology.parse_host_topology(two_cells())
    fitted = numa.fit_instance_to_host(host, itopo(icell([0, 1], 1024)))
    used = numa.usage_from_instance(host, fitted)
    assert (used.cells[0].cpu_usage, used.cells[0].memory_usage) == (2, 1024)
    assert used.cells[0].pinned_cpus == frozenset()
    assert used.cells[1] == host.cells[1]
    assert numa.usage_from_instance(used, fitted, free=True) == host


def test_usage_of_a_pinned_instance_on_a_legacy_host_counts_cpu_usage():
    host = numa_topology.parse_host_topology(two_cells())
    fitted = numa.fit_instance_to_host(
        host, itopo(icell([0, 1], 1024, cpu_policy='dedicated')))
    used = numa.usage_from_instance(host, fitted).cells[0]
    assert (used.cpu_usage, used.pinned_cpus) == (2, {0, 1})


def test_usage_with_nothing_to_add():
    host = numa_topology.parse_host_topology(two_cells())
    assert numa.usage_from_instance(host, None) is host
    assert numa.usage_from_instance(None, None) is None


def test_host_has_hyperthreading():
    assert numa.host_has_hyperthreading(two_cells())
    assert not numa.host_has_hyperthreading(plain(plain_cell(0, [0, 1])))
    assert not numa.host_has_hyperthreading(
        plain(plain_cell(0, [0, 1], siblings=[[0], [1]])))
    assert not numa.host_has_hyperthreading(None)


# -- consumption -----------------------------------------------------------

def _consume_spec(topology=None, pci_requests=None):
    return fakes.fake_spec(numa_topology=topology, pci_requests=pci_requests)


def test_consume_records_numa_usage_in_the_stored_shape():
    text = primitive(plain_cell(0, [0, 1, 2, 3]))
    host_state = fakes.fake_host_state(numa_topology=text)
    host_state.limits['numa_topology'] = limits()
    spec = _consume_spec(itopo(icell([0, 1], 1024, cpu_policy='dedicated')))
    before = spec.numa_topology.obj_to_primitive()
    fitted = numa.consume_numa_and_pci(host_state, spec)
    assert pinning(fitted) == {0: 0, 1: 1}
    assert isinstance(host_state.numa_topology, str)
    cell = numa_topology.parse_host_topology(host_state.numa_topology).cells[0]
    assert (cell.pinned_cpus, cell.memory_usage) == ({0, 1}, 1024)
    assert json.loads(host_state.numa_topology)['nova_object.name'] == \
        'NUMATopology'
    assert spec.numa_topology.obj_to_primitive() == before
    # The next instance of the request sees the consumption.
    numa.consume_numa_and_pci(host_state, spec)
    cell = numa_topology.parse_host_topology(host_state.numa_topology).cells[0]
    assert cell.pinned_cpus == {0, 1, 2, 3}


def test_consume_takes_pci_devices_on_the_fitted_cells():
    pools = [{'vendor_id': '8086', 'product_id': '1', 'numa_node': 0,
              'count': 2},
             {'vendor_id': '8086', 'product_id': '1', 'numa_node': 1,
              'count': 2}]
    host_state = fakes.fake_host_state(numa_topology=two_cells(),
                                       pci_stats=pools)
    # With limits, the second instance no longer fits on cell 0.
    host_state.limits['numa_topology'] = limits(ram=1.0)
    spec = _consume_spec(itopo(icell([0], 2048)), _pci_requests(1))
    spec_two = _consume_spec(itopo(icell([0], 2048)), _pci_requests(1))
    numa.consume_numa_and_pci(host_state, spec)
    numa.consume_numa_and_pci(host_state, spec_two)
    assert [p['count'] for p in host_state.pci_stats] == [1, 1]
    assert pools[0]['count'] == 2


def test_consume_pci_without_numa():
    pools = [{'vendor_id': '8086', 'product_id': '1', 'count': 2}]
    host_state = fakes.fake_host_state(pci_stats=pools)
    assert numa.consume_numa_and_pci(
        host_state, _consume_spec(pci_requests=_pci_requests(2))) is None
    assert host_state.pci_stats[0]['count'] == 0
    assert host_state.numa_topology is None


def test_consume_without_host_pools_ignores_pci_requests():
    host_state = fakes.fake_host_state(numa_topology=two_cells())
    fitted = numa.consume_numa_and_pci(
        host_state, _consume_spec(itopo(icell([0], 64)), _pci_requests(1)))
    assert fitted.cells[0].id == 0
    assert host_state.pci_stats is None


def test_consume_of_a_request_without_topology_leaves_numa_alone():
    text = two_cells()
    host_state = fakes.fake_host_state(numa_topology=text)
    assert numa.consume_numa_and_pci(host_state, _consume_spec()) is None
    assert host_state.numa_topology is text


def test_consume_that_no_longer_fits_warns_and_does_not_raise(caplog):
    host_state = fakes.fake_host_state(
        numa_topology=two_cells(),
        pci_stats=[{'vendor_id': '8086', 'product_id': '1', 'count': 1}])
    spec = _consume_spec(itopo(icell(range(8), 64)), _pci_requests(2))
    with caplog.at_level(logging.WARNING):
        assert numa.consume_numa_and_pci(host_state, spec) is None
    assert 'no longer fits' in caplog.text
    assert 'could not record' in caplog.text
    assert host_state.pci_stats[0]['count'] == 1


def test_consume_with_an_unreadable_topology_warns(caplog):
    host_state = fakes.fake_host_state(numa_topology='{broken')
    with caplog.at_level(logging.WARNING):
        assert numa.consume_numa_and_pci(
            host_state, _consume_spec(itopo(icell([0], 64)))) is None
    assert host_state.numa_topology == '{broken'
    assert 'could not record' in caplog.text


# -- property: a fitted instance never exceeds a host cell's limits ---------

@st.composite
def _hosts(draw):
    cells = []
    next_cpu = 0
    for cell_id in range(draw(st.integers(1, 3))):
        cores = draw(st.integers(1, 4))
        threads = draw(st.sampled_from([1, 2]))
        cpus = list(range(next_cpu, next_cpu + cores * threads))
        next_cpu += len(cpus)
        siblings = ([cpus[i:i + threads] for i in range(0, len(cpus),
                                                        threads)]
                    if threads > 1 else [])
        memory = draw(st.integers(1, 8)) * 512
        pinned = draw(st.lists(st.sampled_from(cpus), unique=True,
                               max_size=len(cpus)))
        huge_total = draw(st.integers(0, 8))
        cells.append(plain_cell(
            cell_id, cpus, memory=memory, siblings=siblings,
            cpu_usage=draw(st.integers(0, len(cpus))),
            memory_usage=draw(st.integers(0, memory)),
            pinned_cpus=pinned,
            mempages=[{'size_kb': 4, 'total': memory * 256,
                       'used': 0, 'reserved': 0},
                      {'size_kb': 2048, 'total': huge_total,
                       'used': draw(st.integers(0, huge_total)),
                       'reserved': 0}]))
    return plain(*cells)


@st.composite
def _requests(draw):
    cells = []
    vcpu = 0
    for cell_id in range(draw(st.integers(1, 2))):
        count = draw(st.integers(1, 4))
        policy = draw(st.sampled_from([None, 'shared', 'dedicated']))
        kwargs = {'cpu_policy': policy} if policy else {}
        if policy == 'dedicated':
            thread = draw(st.sampled_from([None, 'prefer', 'isolate',
                                           'require']))
            if thread:
                kwargs['cpu_thread_policy'] = thread
        pagesize = draw(st.sampled_from([None, -1, -2, -3, 2048]))
        if pagesize:
            kwargs['pagesize'] = pagesize
        cells.append(icell(range(vcpu, vcpu + count),
                           draw(st.integers(1, 8)) * 256, cell_id=cell_id,
                           **kwargs))
        vcpu += count
    return itopo(*cells)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300,
          deadline=None)
@given(_hosts(), _requests(), st.floats(1.0, 4.0), st.floats(1.0, 2.0))
def test_a_fitted_instance_never_exceeds_a_host_cell(host_text, request,
                                                     cpu_ratio, ram_ratio):
    host = numa_topology.parse_host_topology(host_text)
    lim = limits(cpu=cpu_ratio, ram=ram_ratio)
    fitted = numa.fit_instance_to_host(host, request, limits=lim)
    if fitted is None:
        return
    ids = [cell.id for cell in fitted.cells]
    assert len(set(ids)) == len(ids)
    after = {cell.id: cell
             for cell in numa.usage_from_instance(host, fitted).cells}
    before = {cell.id: cell for cell in host.cells}
    for cell in fitted.cells:
        old, new = before[cell.id], after[cell.id]
        memory = cell.memory
        assert len(cell.cpuset) <= len(old.cpuset)
        for page in new.mempages:
            assert 0 <= page.used + page.reserved <= page.total
        if cell.obj_get('pagesize') is None:
            assert memory <= old.memory
        if numa.is_pinned(cell):
            pcpus = list(cell.cpu_pinning_raw.values())
            assert len(set(pcpus)) == len(cell.cpuset)
            assert set(pcpus) <= old.free_pcpus
            assert new.pinned_cpus <= old.cpuset
            assert new.memory_usage <= old.memory
            if cell.obj_get('cpu_thread_policy') == 'isolate':
                for cpu in pcpus:
                    assert old.core_of(cpu) <= old.free_pcpus
            if cell.obj_get('cpu_thread_policy') == 'require':
                assert old.threads_per_core > 1
        else:
            assert new.memory_usage <= old.memory * ram_ratio
            assert new.cpu_usage <= len(old.cpuset) * cpu_ratio
            assert new.pinned_cpus == old.pinned_cpus
