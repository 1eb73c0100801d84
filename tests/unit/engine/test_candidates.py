"""Both candidate sources: every host with database claims, and
Placement's candidates (over a recording stand-in of the PlacementView;
tests/functional/test_placement_mode.py runs it over the real one)."""

import fakes
import sqlalchemy as sa

from scheduler.drivers import base
from scheduler.engine import candidates
from scheduler.engine import reservation
from scheduler.filters import claim_capacity
from scheduler.filters import placement_candidates
from scheduler.placement import reservation as placement_reservation
from scheduler.placement import source as placement_source
from scheduler.placement import view as view_lib

REBUILT = '0e2c1a52-5d0b-4f7e-9a55-000000000001'


def _rebuild():
    """Nova's rebuild of REBUILT, forced to its host h1 and node n1."""
    return fakes.fake_spec(scheduler_hints={'_nova_check_type': 'rebuild'},
                           instance_uuid=REBUILT, force_hosts=['h1'],
                           force_nodes=['n1'])


def _allocations_engine():
    """Placement's allocations of REBUILT on provider n1 (SQLite)."""
    engine = sa.create_engine('sqlite://')
    with engine.begin() as connection:
        connection.exec_driver_sql(
            'CREATE TABLE resource_providers (id INTEGER PRIMARY KEY, '
            'name TEXT, root_provider_id INTEGER)')
        connection.exec_driver_sql(
            'CREATE TABLE allocations (resource_provider_id INTEGER, '
            'consumer_id TEXT)')
        connection.exec_driver_sql(
            "INSERT INTO resource_providers VALUES (1, 'n1', 1)")
        connection.exec_driver_sql(
            "INSERT INTO allocations VALUES (1, '%s')" % REBUILT)
    return engine


def test_all_hosts_checks_and_claims_with_claim_resources(conf):
    source = base.candidate_source(conf)
    assert isinstance(source, candidates.AllHosts)
    assert isinstance(source.reservation, reservation.SqlReservation)
    assert source.batches and not source.claims_when_placed
    assert isinstance(source.check(), claim_capacity.ClaimCapacityFilter)
    assert source.claiming(fakes.fake_spec())
    assert not source.claiming(fakes.fake_spec(force_hosts=['h1']))
    state = fakes.fake_host_state()
    source.select(fakes.fake_spec(), [state], [])
    source.consume(state)
    assert source.allocation_request(state) is None
    conf.set_override('claim_resources', False, 'scheduler')
    assert source.check() is None
    assert not source.claiming(fakes.fake_spec())


class ViewRecorder:
    """What PlacementSource asks of its PlacementView."""

    def __init__(self):
        self.calls = []
        self.engine = _allocations_engine()

    def refresh(self):
        self.calls.append('refresh')

    def select(self, spec_obj, find_nodes, aggregates, lookups=None):
        self.calls.append(('select', find_nodes('h1', None, None)))

    def consume(self, uuid, surviving=None):
        self.calls.append(('consume', uuid))

    def allocation_request_json(self, uuid, surviving=None, nth=0):
        return '{"allocations": {}}' if uuid == 'known' else None

    def close(self):
        self.calls.append('close')


def test_placement_source_candidates_claims_and_selections():
    view = ViewRecorder()
    source = placement_source.PlacementSource(view, client=None)
    assert isinstance(source.reservation,
                      placement_reservation.PlacementReservation)
    assert source.batches and source.claims_when_placed
    assert isinstance(source.check(),
                      placement_candidates.PlacementCandidatesFilter)
    assert source.claiming(fakes.fake_spec())
    assert not source.claiming(_rebuild())
    h1, h2 = fakes.fake_host_state('h1', 'n1'), fakes.fake_host_state(
        'h2', 'n2')
    source.select(fakes.fake_spec(), [h1, h2], [])
    assert view.calls == ['refresh', ('select', [h1])]
    source.select(_rebuild(), [h1, h2], [])        # a rebuild asks nothing
    source.select(None, [h1, h2], [])               # a batch's first read
    assert view.calls[2:] == ['refresh']
    source.select(fakes.fake_spec(), [h1, h2], [], refresh=False)
    assert view.calls[3:] == [('select', [h1])]     # its next request
    source.consume(h2)
    assert view.calls[-1] == ('consume', h2.uuid)
    h2.uuid = 'known'
    assert source.allocation_request(h2) == (
        '{"allocations": {}}', view_lib.ALLOCATION_REQUEST_VERSION)
    assert source.allocation_request(h1) is None
    source.stop()
    assert view.calls[-1] == 'close'
