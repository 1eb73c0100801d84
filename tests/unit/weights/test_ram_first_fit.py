"""RamFirstFitWeigher: the host whose RAM the request leaves smallest
weighs most, ties going to the tightest other resource."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.view.host_table import HostTable
from scheduler.weights import ram_first_fit
from tests.unit.weights.test_best_fit import _host
from tests.unit.weights.test_best_fit import _spec


def _weighed(hosts, spec):
    return weights.HostWeightHandler().get_weighed_objects(
        [ram_first_fit.RamFirstFitWeigher()], hosts, spec)


def _raw(host, spec):
    return ram_first_fit.RamFirstFitWeigher()._weigh_object(host, spec)


def test_raw_weight_is_minus_the_ram_leftover_and_a_tie_break():
    # RAM: (184320 - 92160 - 16384) / 184320; vCPUs: (80 - 64 - 8) / 80;
    # disk: (1000 - 0 - 0) / 1000.
    ram, vcpus = 75776 / 184320, 0.1
    expected = -(ram + ram_first_fit.TIE_BREAK * vcpus)
    assert np.isclose(_raw(_host(1, 64, 92160), _spec()), expected)


def test_off_by_default():
    result = _weighed([_host(1, 0, 0), _host(2, 64, 163840)], _spec())
    assert [w.weight for w in result] == [0.0, 0.0]
    assert [w.obj.host for w in result] == ['host1', 'host2']


def test_ram_ranks_first_not_the_tightest_resource(conf):
    conf.set_override('ram_first_fit_weight_multiplier', 1.0,
                      'filter_scheduler')
    hosts = [_host(1, 0, 0),            # empty
             _host(2, 70, 40000),       # vCPUs nearly full, RAM free
             _host(3, 16, 147456),      # RAM nearly full
             _host(4, 40, 90000)]       # half full in both
    result = _weighed(hosts, _spec())
    # Best fit would take host2 (its vCPUs are tightest); RAM first
    # leaves host2's RAM for RAM-heavy requests.
    assert [w.obj.host for w in result] == ['host3', 'host4', 'host2',
                                            'host1']


def test_equal_ram_goes_to_the_tightest_other_resource(conf):
    conf.set_override('ram_first_fit_weight_multiplier', 1.0,
                      'filter_scheduler')
    hosts = [_host(1, 10, 90000), _host(2, 60, 90000),
             _host(3, 30, 90000, local_gb_used=990)]
    # Leftovers of the others: host1 vCPUs 0.775, host2 vCPUs 0.15,
    # host3 disk 0.01.
    assert [w.obj.host for w in _weighed(hosts, _spec())] == [
        'host3', 'host2', 'host1']


def test_ratio_counts_in_the_capacity(conf):
    conf.set_override('ram_first_fit_weight_multiplier', 1.0,
                      'filter_scheduler')
    hosts = [_host(1, 0, 163840, ratio=1.5), _host(2, 0, 131072)]
    # host1: (276480 - 163840 - 16384) / 276480 = 0.35;
    # host2: (184320 - 131072 - 16384) / 184320 = 0.2.
    assert _weighed(hosts, _spec())[0].obj.host == 'host2'


def test_a_host_without_totals_weighs_zero():
    host = _host(1, 0, 0, vcpus=0, memory_mb=0, local_gb=0)
    assert _raw(host, _spec()) == 0.0


def test_a_host_without_ram_ranks_by_the_other_resources():
    host = _host(1, 40, 0, memory_mb=0, local_gb=0)
    # vCPUs: (80 - 40 - 8) / 80 = 0.4.
    assert np.isclose(_raw(host, _spec()), -ram_first_fit.TIE_BREAK * 0.4)


_used = st.tuples(st.integers(0, 90), st.integers(0, 200000),
                  st.integers(0, 1200), st.sampled_from([0.5, 1.0, 16.0]),
                  st.sampled_from([0, 184320]))


@given(st.lists(_used, min_size=1, max_size=8),
       st.tuples(st.integers(0, 16), st.integers(0, 65536),
                 st.integers(0, 100)))
def test_table_form_equals_host_form(used, asked):
    hosts = [_host(i, cpu, ram, local_gb_used=disk, ratio=ratio,
                   memory_mb=memory_mb)
             for i, (cpu, ram, disk, ratio, memory_mb) in enumerate(used)]
    spec = _spec(*asked)
    weigher = ram_first_fit.RamFirstFitWeigher()
    table = HostTable(hosts)
    rows = weigher.weigh_rows(table, table.all_rows, spec)
    per_host = [weigher._weigh_object(h, spec) for h in hosts]
    assert rows.tolist() == per_host
