"""Both candidate sources: every host with database claims, and
Placement's candidates (over a recording stand-in of the PlacementView;
tests/functional/test_placement_mode.py runs it over the real one)."""

import fakes

from scheduler.drivers import base
from scheduler.engine import candidates
from scheduler.engine import reservation
from scheduler.filters import claim_capacity
from scheduler.filters import placement_candidates
from scheduler.placement import reservation as placement_reservation
from scheduler.placement import source as placement_source
from scheduler.placement import view as view_lib


def _rebuild():
    return fakes.fake_spec(scheduler_hints={'_nova_check_type': 'rebuild'})


def test_all_hosts_checks_and_claims_with_claim_resources(conf):
    source = base.candidate_source(conf)
    assert isinstance(source, candidates.AllHosts)
    assert isinstance(source.reservation, reservation.SqlReservation)
    assert source.batches
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

    def refresh(self):
        self.calls.append('refresh')

    def select(self, spec_obj, find_nodes, aggregates):
        self.calls.append(('select', find_nodes('h1', None, None)))

    def consume(self, uuid):
        self.calls.append(('consume', uuid))

    def allocation_request_json(self, uuid):
        return '{"allocations": {}}' if uuid == 'known' else None

    def close(self):
        self.calls.append('close')


def test_placement_source_candidates_claims_and_selections():
    view = ViewRecorder()
    source = placement_source.PlacementSource(view, client=None)
    assert isinstance(source.reservation,
                      placement_reservation.PlacementReservation)
    assert not source.batches
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
    source.consume(h2)
    assert view.calls[-1] == ('consume', h2.uuid)
    h2.uuid = 'known'
    assert source.allocation_request(h2) == (
        '{"allocations": {}}', view_lib.ALLOCATION_REQUEST_VERSION)
    assert source.allocation_request(h1) is None
    source.stop()
    assert view.calls[-1] == 'close'
