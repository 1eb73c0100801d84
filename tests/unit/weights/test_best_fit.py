"""BestFitWeigher: the host whose tightest resource the request leaves
smallest weighs most."""

import fakes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.view.host_table import HostTable
from scheduler.weights import best_fit


def _host(i, vcpus_used, memory_mb_used, vcpus=80, memory_mb=184320,
          local_gb=1000, local_gb_used=0, ratio=1.0):
    return fakes.fake_host_state(
        host='host%d' % i, node='node%d' % i, vcpus_total=vcpus,
        vcpus_used=vcpus_used, total_usable_ram_mb=memory_mb,
        memory_mb_used=memory_mb_used,
        free_ram_mb=memory_mb - memory_mb_used,
        total_usable_disk_gb=local_gb, local_gb_used=local_gb_used,
        cpu_allocation_ratio=ratio, ram_allocation_ratio=ratio,
        disk_allocation_ratio=1.0)


def _spec(vcpus=8, memory_mb=16384, root_gb=0):
    return fakes.fake_spec(vcpus=vcpus, memory_mb=memory_mb,
                           root_gb=root_gb)


def _weighed(hosts, spec):
    return weights.HostWeightHandler().get_weighed_objects(
        [best_fit.BestFitWeigher()], hosts, spec)


def test_raw_weight_is_minus_the_tightest_leftover_share():
    weigher = best_fit.BestFitWeigher()
    # vCPUs: (80 - 64 - 8) / 80 = 0.1; RAM: (184320 - 0 - 16384) / 184320.
    assert weigher._weigh_object(_host(1, 64, 0), _spec()) == -0.1
    # RAM is the tightest: (184320 - 163840 - 16384) / 184320.
    raw = weigher._weigh_object(_host(2, 0, 163840), _spec())
    assert np.isclose(raw, -4096 / 184320)


def test_off_by_default():
    result = _weighed([_host(1, 0, 0), _host(2, 64, 0)], _spec())
    assert [w.weight for w in result] == [0.0, 0.0]
    assert [w.obj.host for w in result] == ['host1', 'host2']


def test_positive_multiplier_packs_by_the_scarcest_resource(conf):
    conf.set_override('best_fit_weight_multiplier', 1.0, 'filter_scheduler')
    hosts = [_host(1, 0, 0),            # empty
             _host(2, 64, 0),           # vCPUs nearly full
             _host(3, 16, 147456),      # RAM nearly full
             _host(4, 40, 90000)]       # half full in both
    result = _weighed(hosts, _spec())
    # Leftover shares: host3 RAM 0.111, host2 vCPUs 0.1 -> host2 first.
    assert [w.obj.host for w in result] == ['host2', 'host3', 'host4',
                                            'host1']


def test_ratio_counts_in_the_capacity(conf):
    conf.set_override('best_fit_weight_multiplier', 1.0, 'filter_scheduler')
    hosts = [_host(1, 64, 0, ratio=2.0), _host(2, 40, 0)]
    # host1: (160 - 64 - 8) / 160 = 0.55; host2: (80 - 48) / 80 = 0.4.
    assert _weighed(hosts, _spec())[0].obj.host == 'host2'


def test_a_host_without_totals_weighs_zero():
    host = _host(1, 0, 0, vcpus=0, memory_mb=0, local_gb=0)
    assert best_fit.BestFitWeigher()._weigh_object(host, _spec()) == 0.0


_used = st.tuples(st.integers(0, 90), st.integers(0, 200000),
                  st.integers(0, 1200), st.sampled_from([0.5, 1.0, 16.0]))


@given(st.lists(_used, min_size=1, max_size=8),
       st.tuples(st.integers(0, 16), st.integers(0, 65536),
                 st.integers(0, 100)))
def test_table_form_equals_host_form(used, asked):
    hosts = [_host(i, cpu, ram, local_gb_used=disk, ratio=ratio)
             for i, (cpu, ram, disk, ratio) in enumerate(used)]
    spec = _spec(*asked)
    weigher = best_fit.BestFitWeigher()
    table = HostTable(hosts)
    rows = weigher.weigh_rows(table, table.all_rows, spec)
    per_host = [weigher._weigh_object(h, spec) for h in hosts]
    assert rows.tolist() == per_host
