"""CrossCellWeigher: prefer the preferred (source) cell of a move."""

import uuid

import fakes
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import weights
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec
from scheduler.weights import cross_cell

SINGLE = cell_mapping.SINGLE_CELL_UUID
OTHER = str(uuid.uuid5(uuid.NAMESPACE_URL, 'scheduler:cell2'))


def _spec(cell_uuid=SINGLE, allow=True, with_cell=True):
    destination = request_spec.Destination(host='dest', node=None,
                                           allow_cross_cell_move=allow)
    if with_cell:
        destination.cell = (None if cell_uuid is None else
                            cell_mapping.CellMapping(uuid=cell_uuid))
    return fakes.fake_spec(requested_destination=destination)


def _hosts(*cells):
    return [fakes.fake_host_state(host='host%d' % i, node='node%d' % i,
                                  cell_uuid=cell)
            for i, cell in enumerate(cells, 1)]


def _weighed(hosts, spec):
    return weights.HostWeightHandler().get_weighed_objects(
        [cross_cell.CrossCellWeigher()], hosts, spec)


def _by_host(result):
    return {w.obj.host: w.weight for w in result}


def _raw(spec, cells=(SINGLE, OTHER)):
    weigher = cross_cell.CrossCellWeigher()
    return [weigher._weigh_object(h, spec) for h in _hosts(*cells)]


def test_preferred_cell_plus_one_other_cells_minus_one():
    assert _raw(_spec(SINGLE)) == [1, -1]
    assert _raw(_spec(OTHER)) == [-1, 1]


def test_host_state_without_cell_is_in_the_single_cell():
    assert _raw(_spec(SINGLE), cells=(None,)) == [1]
    assert _raw(_spec(OTHER), cells=(None,)) == [-1]


@pytest.mark.parametrize('spec', [
    fakes.fake_spec(),
    _spec(allow=False),
    _spec(cell_uuid=None),
    _spec(with_cell=False),
    fakes.fake_spec(requested_destination=request_spec.Destination(
        host='dest')),
], ids=['no-destination', 'cross-cell-not-allowed', 'cell-none',
        'cell-unset', 'allow-unset'])
def test_zero_for_other_requests(spec):
    assert _raw(spec) == [0, 0]


def test_single_cell_deployment_has_no_effect():
    # Every host of this service is in SINGLE_CELL_UUID: equal raw
    # weights normalise to 0 whatever the request.
    hosts = _hosts(SINGLE, SINGLE, None)
    for spec in (_spec(SINGLE), _spec(OTHER), fakes.fake_spec()):
        assert set(_by_host(_weighed(hosts, spec)).values()) == {0.0}


def test_default_multiplier_prefers_source_cell():
    assert cross_cell.CrossCellWeigher().weight_multiplier(
        fakes.fake_host_state()) == 1000000.0
    result = _weighed(_hosts(OTHER, SINGLE), _spec(SINGLE))
    assert [w.obj.host for w in result] == ['host2', 'host1']
    assert result[0].weight == 1000000.0


def test_configured_multiplier(conf):
    conf.set_override('cross_cell_move_weight_multiplier', -1.0,
                      'filter_scheduler')
    result = _weighed(_hosts(OTHER, SINGLE), _spec(SINGLE))
    assert result[0].obj.host == 'host1'


def test_aggregate_override_min():
    hosts = _hosts(SINGLE, OTHER)
    hosts[0].aggregates = [
        fakes.fake_aggregate(1, metadata={
            'cross_cell_move_weight_multiplier': '2'}),
        fakes.fake_aggregate(2, metadata={
            'cross_cell_move_weight_multiplier': '7'})]
    assert _by_host(_weighed(hosts, _spec(SINGLE))) == {'host1': 2.0,
                                                        'host2': 0.0}


@given(cells=st.lists(st.sampled_from([SINGLE, OTHER, None]), min_size=2,
                      max_size=8),
       preferred=st.sampled_from([SINGLE, OTHER]),
       seed=st.randoms(use_true_random=False))
def test_weights_invariant_under_permutation(cells, preferred, seed):
    hosts = _hosts(*cells)
    spec = _spec(preferred)
    before = _by_host(_weighed(hosts, spec))
    seed.shuffle(hosts)
    assert _by_host(_weighed(hosts, spec)) == before
