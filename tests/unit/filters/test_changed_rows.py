"""The later instances of a request: filtering only the hosts that changed.

``HostFilterHandler.get_filtered_changed`` gives what filtering every
candidate again gives, without building the candidates' row array while
every filter is ``host_local`` or passes every host for the request
(``passes_all``); the one-row forms of the capacity filters and of
ComputeFilter answer as their array forms.
"""

import fakes
import numpy as np
import pytest
from oslo_utils import timeutils

from scheduler import filters
from scheduler.filters import affinity_filter
from scheduler.filters import availability_zone_filter
from scheduler.filters import claim_capacity
from scheduler.filters import compute_filter
from scheduler.filters import core_filter
from scheduler.filters import disk_filter
from scheduler.filters import ram_filter
from scheduler.filters import retry_filter
from scheduler.view.host_table import HostTable

pytestmark = pytest.mark.timeout(60)


def _states(count=8):
    """Hosts of varied sizes and usage, one node each, all up."""
    states = []
    for i in range(count):
        ram = 2048 * (i + 1)
        states.append(fakes.fake_host_state(
            'host%d' % i, 'node%d' % i, service=fakes.fake_service(
                host='host%d' % i),
            total_usable_ram_mb=ram, free_ram_mb=ram - 512 * i,
            memory_mb_used=512 * i, vcpus_total=4 + i, vcpus_used=i % 3,
            total_usable_disk_gb=100, free_disk_mb=(100 - 7 * i) * 1024,
            local_gb_used=7 * i, ram_allocation_ratio=1.0 + (i % 2) / 2,
            cpu_allocation_ratio=1.0, disk_allocation_ratio=1.0))
    return states


def _filters():
    return [claim_capacity.ClaimCapacityFilter(),
            retry_filter.RetryFilter(),
            availability_zone_filter.AvailabilityZoneFilter(),
            ram_filter.RamFilter(), core_filter.CoreFilter(),
            disk_filter.DiskFilter(), compute_filter.ComputeFilter(),
            affinity_filter.ServerGroupAntiAffinityFilter(),
            affinity_filter.ServerGroupAffinityFilter()]


def _refilter(table, spec, candidates, changed):
    """``get_filtered_changed`` over ``candidates``, counting how often
    it asked for them."""
    asked = []

    def rows():
        asked.append(True)
        return candidates

    found = filters.HostFilterHandler().get_filtered_changed(
        _filters(), table, rows, len(candidates), spec, 1, changed)
    return found, len(asked)


def _consume(table, state, memory_mb):
    state.free_ram_mb -= memory_mb
    state.memory_mb_used += memory_mb
    table.sync([state])


def test_only_the_changed_host_is_filtered_again():
    states = _states()
    table = HostTable(states)
    spec = fakes.fake_spec(memory_mb=2048, vcpus=1, root_gb=10)
    candidates = filters.HostFilterHandler().get_filtered_rows(
        _filters(), table, table.all_rows, spec).rows
    assert len(candidates) > 3
    # The best host is consumed from until it cannot take another.
    taken = states[int(candidates[-1])]
    _consume(table, taken, 2 * taken.total_usable_ram_mb)
    changed = table.rows_of([taken])
    found, asked = _refilter(table, spec, candidates, changed)
    # Every filter is host-local or passes all: no candidate array built.
    assert asked == 0
    assert found.changed.tolist() == []
    assert found.removed.tolist() == changed.tolist()
    full = filters.HostFilterHandler().get_filtered_rows(
        _filters(), table, candidates, spec, index=1)
    kept = [row for row in candidates.tolist()
            if row not in found.removed.tolist()]
    assert kept == full.rows.tolist()
    assert found.passing == len(full.rows)
    assert found.history == full.history


def test_a_host_still_fitting_stays_changed_and_nothing_is_removed():
    states = _states()
    table = HostTable(states)
    spec = fakes.fake_spec(memory_mb=512, vcpus=1, root_gb=1)
    candidates = table.all_rows
    _consume(table, states[5], 512)
    found, asked = _refilter(table, spec, candidates, np.array([5]))
    assert asked == 0
    assert found.changed.tolist() == [5]
    assert found.removed.tolist() == []
    assert found.passing == len(candidates)


def test_a_filter_that_looks_at_every_host_gets_the_candidates():
    """Affinity with a host chosen: not host-local, every candidate is
    filtered (and the failed changed host is not counted twice)."""
    states = _states()
    table = HostTable(states)
    spec = fakes.fake_spec(memory_mb=2048, vcpus=1, root_gb=10,
                           instance_group=fakes.fake_group(
                               policy='affinity', hosts=['host6']))
    candidates = np.arange(3, 8, dtype=np.intp)
    _consume(table, states[6], 2 * states[6].total_usable_ram_mb)
    found, asked = _refilter(table, spec, candidates, np.array([6]))
    assert asked >= 1
    # host6 ran out of RAM; the others are not the group's host.
    assert found.changed.tolist() == []
    assert sorted(found.removed.tolist()) == [3, 4, 5, 6, 7]
    assert found.passing == 0
    full = filters.HostFilterHandler().get_filtered_rows(
        _filters(), table, candidates, spec, index=1)
    assert full.history == found.history


@pytest.mark.parametrize('host_filter', [
    claim_capacity.ClaimCapacityFilter(), ram_filter.RamFilter(),
    core_filter.CoreFilter(), disk_filter.DiskFilter(),
    compute_filter.ComputeFilter()], ids=lambda f: type(f).__name__)
def test_one_row_answers_as_the_array(host_filter):
    states = _states()
    states[2].service = fakes.fake_service(disabled=True)
    states[3].vcpus_total = 0
    table = HostTable(states)
    seen = set()
    for memory_mb, vcpus, root_gb in ((256, 1, 1), (4096, 3, 60),
                                      (9000, 9, 90)):
        spec = fakes.fake_spec(memory_mb=memory_mb, vcpus=vcpus,
                               root_gb=root_gb)
        whole = host_filter.host_mask(table, table.all_rows, spec)
        one = [bool(host_filter.host_mask(table, np.array([row]), spec)[0])
               for row in table.all_rows.tolist()]
        assert one == whole.tolist()
        seen |= set(one)
    # Some hosts passed and some failed: the rule was exercised.
    assert seen == {True, False}


def test_passes_all_only_when_every_host_passes():
    table = HostTable(_states())
    plain = fakes.fake_spec()
    grouped = fakes.fake_spec(instance_group=fakes.fake_group(
        policy='anti-affinity', hosts=['host1']))
    affinity = fakes.fake_spec(instance_group=fakes.fake_group(
        policy='affinity', hosts=['host1']))
    for host_filter in (affinity_filter.ServerGroupAntiAffinityFilter(),
                        affinity_filter.ServerGroupAffinityFilter(),
                        availability_zone_filter.AvailabilityZoneFilter(),
                        retry_filter.RetryFilter()):
        for spec in (plain, grouped, affinity):
            mask = host_filter.host_mask(table, table.all_rows, spec)
            if host_filter.passes_all(spec):
                assert mask.all()
    assert not affinity_filter.ServerGroupAntiAffinityFilter().passes_all(
        grouped)
    assert not affinity_filter.ServerGroupAffinityFilter().passes_all(
        affinity)


def test_a_plugin_overriding_host_passes_is_not_assumed_to_pass_all():
    class Picky(affinity_filter.ServerGroupAffinityFilter):
        def host_passes(self, host_state, spec_obj):
            return host_state.host == 'host1'

    table = HostTable(_states(3))
    rows = filters.HostFilterHandler().get_filtered_rows(
        [Picky()], table, table.all_rows, fakes.fake_spec()).rows
    assert rows.tolist() == [1]


def test_up_mask_of_some_rows_is_that_of_all():
    states = _states()
    states[1].service = fakes.fake_service(forced_down=True)
    states[4].service = fakes.fake_service(
        last_seen_up=timeutils.utcnow().replace(year=2000))
    table = HostTable(states)
    now = timeutils.utcnow()
    rows = np.array([4, 1, 0], dtype=np.intp)
    assert (table.up_mask(now, rows).tolist() ==
            table.up_mask(now)[rows].tolist() == [False, False, True])
    assert table.host_rows({'host3'}).tolist() == [3]
    assert table.host_rows({'host3', 'host1'}).tolist() == [1, 3]
    assert table.host_rows({'nowhere'}).tolist() == []
