"""The cell of each host in the view, on the standalone schema.

Every node of the standalone schema is in the cell ``[scheduler]
cell_uuid`` names (unset: ``cell_mapping.SINGLE_CELL_UUID``), and a
``requested_destination`` naming a cell keeps the hosts of that cell
only, as Nova (Pike and later) does.  Nova database mode, where each host
has the cell it was read from, is tested on Nova's own databases in
``tests/functional/test_nova_databases.py``.
"""

import pytest

from scheduler.engine import pipeline
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec
from scheduler.view import host_manager
from scheduler_tools import seed

NOVA_CELL = '6f1c3a3e-2f43-4c4e-9d1e-0a7c9b1d2e3f'


@pytest.fixture
def ctx(tmp_path, conf):
    conf.set_override('enabled_filters', ['ComputeFilter'],
                      'filter_scheduler')
    conf.set_override('weight_classes', [], 'filter_scheduler')
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'cells.sqlite'))
    seed.add_compute(ctx, 'h1')
    seed.add_compute(ctx, 'h2')
    return ctx


def _destination(cell_uuid, host=None):
    spec = seed.make_spec()
    destination = request_spec.Destination(
        cell=cell_mapping.CellMapping(uuid=cell_uuid))
    if host:
        destination.host = host
    spec.requested_destination = destination
    return spec


def test_hosts_are_in_the_fixed_cell_by_default(ctx):
    states = host_manager.HostManager(ctx).get_all_host_states(ctx)
    assert {state.cell_uuid for state in states} == {
        cell_mapping.SINGLE_CELL_UUID}


def test_the_configured_cell_uuid_names_the_hosts_cell(ctx, conf):
    conf.set_override('cell_uuid', NOVA_CELL, 'scheduler')
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    assert {state.cell_uuid for state in states} == {NOVA_CELL}
    kept = pipeline.Pipeline(manager).get_filtered_hosts(
        states, _destination(NOVA_CELL, 'h2'))
    assert [state.host for state in kept] == ['h2']


def test_a_requested_cell_the_hosts_are_not_in_matches_nothing(ctx, conf):
    conf.set_override('cell_uuid', NOVA_CELL, 'scheduler')
    manager = host_manager.HostManager(ctx)
    states = manager.get_all_host_states(ctx)
    assert pipeline.Pipeline(manager).get_filtered_hosts(
        states, _destination(cell_mapping.SINGLE_CELL_UUID)) == []
