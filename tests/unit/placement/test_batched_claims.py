"""Placement mode in the batcher: the claims of a decision's requests in
one round trip (``PlacementReservation.decision``), all or none, each
consumer its own request's; and the view a batch's requests share
(``PlacementSource``: candidates computed without a refresh, what a
failed request consumed given back).

Placement is an in-memory stand-in behind a real ``PlacementClient``
(its keystoneauth Adapter): every HTTP request it gets is counted.
"""

import json

import fakes
import pytest

from scheduler import exception
from scheduler.engine import reservation
from scheduler.placement import candidates as pc
from scheduler.placement import client as client_lib
from scheduler.placement import provider_trees
from scheduler.placement import reservation as reservation_lib
from scheduler.placement import source as source_lib
from scheduler.placement import view as view_lib

pytestmark = pytest.mark.timeout(60)

NO_ROOM = {'errors': [{'code': 'placement.undefined_code',
                       'detail': 'Unable to allocate inventory: no room'}]}
HELD = {'errors': [{'code': 'placement.concurrent_update',
                    'detail': 'consumer generation conflict - expected '
                              'null but got 1'}]}


class _Reply:
    def __init__(self, status, body=None):
        self.status_code = status
        self._body = body or {}
        self.text = json.dumps(self._body)

    def json(self):
        return self._body


class FakePlacement:
    """A keystoneauth Adapter standing for Placement: records every
    request; writes answer ``answer`` (a status; 204 writes them, and
    ``lose`` writes them and answers 502, as a balancer after
    forwarding); reads answer what was written."""

    def __init__(self):
        self.requests = []
        self.held = {}          # consumer: its body as written
        self.answer = 204
        self.answer_body = None
        self.lose = False

    def request(self, path, method, timeout=None, json=None, **kwargs):
        self.requests.append((method, path, json))
        consumer = path.rsplit('/', 1)[1] if path.count('/') > 1 else None
        if method == 'GET':
            body = self.held.get(consumer)
            return _Reply(200, {
                'allocations': body['allocations'] if body else {},
                **({'consumer_generation': 1} if body else {})})
        if method == 'DELETE':
            return _Reply(204 if self.held.pop(consumer, None) else 404)
        bodies = json if consumer is None else {consumer: json}
        if method == 'POST' and all(body['consumer_generation'] == 1
                                    for body in bodies.values()):
            for name, body in bodies.items():     # settling's undo
                if not body['allocations']:
                    self.held.pop(name, None)
            return _Reply(204)
        if self.answer == 204 or self.lose:
            self.held.update(bodies)
        if self.lose:
            return _Reply(502)
        return _Reply(self.answer, self.answer_body)

    def writes(self):
        return [(method, path) for method, path, _ in self.requests
                if method in ('PUT', 'POST')]


def _view(*names):
    """A view of compute nodes ``names`` (4 VCPU, 4096 MB each), no
    database, with the candidates of a 1 VCPU, 1024 MB request."""
    view = view_lib.PlacementView(engine=None)
    view.table = pc.ProviderTable([pc.Provider(name, name, {
        'VCPU': pc.Inventory(4), 'MEMORY_MB': pc.Inventory(4096)})
        for name in names])
    view.children = pc.ProviderTable([])
    view.forest = provider_trees.Forest(view.table, view.children)
    return view


def _select(view):
    """What ``PlacementView.select`` keeps for a 1 VCPU, 1024 MB
    request."""
    view.current = view.candidates({'resources': 'VCPU:1,MEMORY_MB:1024'})


def _state(name):
    return fakes.fake_host_state(name, name, uuid=name)


def _reservation(*names):
    placement = FakePlacement()
    view = _view(*names)
    forgotten = []
    view.forget = forgotten.extend
    client = client_lib.PlacementClient(adapter=placement)
    return (reservation_lib.PlacementReservation(view, client), view,
            placement, forgotten)


def _place(res, view, spec, hosts, uuids):
    """One request placed and claimed as the driver does in a batch: its
    candidates, each instance consumed, its claims taken at once."""
    _select(view)
    states = [_state(host) for host in hosts]
    for state in states:
        view.consume(state.uuid)
    res.claim(None, spec, states, uuids)


def _spec(project):
    return fakes.fake_spec(project_id=project, user_id='user-' + project)


def test_a_batchs_requests_are_claimed_in_one_post(conf):
    res, view, placement, _ = _reservation('cn1', 'cn2')
    with res.decision(None) as together:
        assert together
        _place(res, view, _spec('p1'), ['cn1'], ['i1'])
        _place(res, view, _spec('p2'), ['cn1', 'cn2'], ['i2', 'i3'])
        assert placement.requests == []         # collected, not sent
    assert placement.writes() == [('POST', '/allocations')]
    body = placement.requests[0][2]
    assert {consumer: (sent['project_id'], sent['user_id'],
                       sent['consumer_generation'])
            for consumer, sent in body.items()} == {
        'i1': ('p1', 'user-p1', None), 'i2': ('p2', 'user-p2', None),
        'i3': ('p2', 'user-p2', None)}
    # Each instance claims what it consumed, on its own host.
    assert {consumer: sent['allocations'] for consumer, sent
            in body.items()} == {
        consumer: {host: {'resources': {'VCPU': 1, 'MEMORY_MB': 1024}}}
        for consumer, host in (('i1', 'cn1'), ('i2', 'cn1'),
                               ('i3', 'cn2'))}


def test_a_lone_request_is_one_put_as_before(conf):
    res, view, placement, _ = _reservation('cn1')
    with res.decision(None):
        _place(res, view, _spec('p1'), ['cn1'], ['i1'])
    assert placement.writes() == [('PUT', '/allocations/i1')]
    # Outside a decision a claim is sent at once.
    _place(res, view, _spec('p1'), ['cn1'], ['i2'])
    assert placement.writes()[1:] == [('PUT', '/allocations/i2')]


def test_a_refused_batch_keeps_nothing_and_is_a_lost_race(conf):
    res, view, placement, forgotten = _reservation('cn1', 'cn2')
    placement.answer, placement.answer_body = 409, NO_ROOM
    with pytest.raises(reservation.LostRace):
        with res.decision(None):
            _place(res, view, _spec('p1'), ['cn1'], ['i1'])
            _place(res, view, _spec('p2'), ['cn2'], ['i2'])
            del forgotten[:]            # consumed: forgotten already
    assert placement.writes() == [('POST', '/allocations')]
    assert placement.held == {}
    assert sorted(forgotten) == ['cn1', 'cn2']   # read again


def test_a_consumer_holding_allocations_sends_the_batch_one_by_one(conf):
    res, view, placement, forgotten = _reservation('cn1', 'cn2')
    placement.answer, placement.answer_body = 409, HELD
    with pytest.raises(reservation.LostRace):
        with res.decision(None):
            _place(res, view, _spec('p1'), ['cn1'], ['i1'])
            _place(res, view, _spec('p2'), ['cn2'], ['i2'])
            del forgotten[:]
    assert placement.writes() == [('POST', '/allocations')]
    assert placement.held == {}
    assert forgotten == []          # no race lost: decided one by one


def test_an_uncertain_batch_is_read_back_and_undone_per_owner(conf):
    res, view, placement, _ = _reservation('cn1', 'cn2')
    placement.lose = True
    with pytest.raises(exception.PlacementUnavailable):
        with res.decision(None):
            _place(res, view, _spec('p1'), ['cn1'], ['i1'])
            _place(res, view, _spec('p2'), ['cn2'], ['i2'])
    assert placement.held == {}                 # nothing leaked
    undone = {consumer: (body['project_id'], body['user_id'])
              for method, path, sent in placement.requests
              if method == 'POST' and sent is not None
              for consumer, body in sent.items()
              if body['consumer_generation'] == 1}
    assert undone == {'i1': ('p1', 'user-p1'), 'i2': ('p2', 'user-p2')}
    assert res.unsettled.settle() == 0


def test_a_decision_left_by_an_error_sends_nothing(conf):
    res, view, placement, _ = _reservation('cn1', 'cn2')
    with pytest.raises(reservation.LostRace):     # a caller given up
        with res.decision(None):
            _place(res, view, _spec('p1'), ['cn1'], ['i1'])
            raise reservation.LostRace()
    assert placement.requests == []
    # The next decision starts empty.
    with res.decision(None):
        _place(res, view, _spec('p2'), ['cn2'], ['i2'])
    assert placement.writes() == [('PUT', '/allocations/i2')]


def test_a_forced_host_placement_does_not_offer_loses_the_batch(conf):
    res, view, placement, _ = _reservation('cn1', 'cn2')
    with pytest.raises(reservation.LostRace):
        with res.decision(None):
            _place(res, view, _spec('p1'), ['cn1'], ['i1'])
            _select(view)
            res.claim(None, _spec('p2'), [_state('elsewhere')], ['i2'])
    assert placement.requests == []


def test_a_batchs_requests_see_each_others_consumption(conf):
    """Two requests on one view without a refresh: the second sees what
    the first consumed; a failed one gives back what it consumed."""
    view = _view('cn1')
    source = source_lib.PlacementSource(view, client=None,
                                        lookups=None)
    _select(view)
    for _ in range(3):
        view.consume('cn1')                     # request 1: 3 GiB
    _select(view)                               # request 2
    assert view.passes(['cn1']).tolist() == [True]
    view.consume('cn1')                         # 4 GiB: full
    assert view.passes(['cn1']).tolist() == [False]
    source.unconsume()                          # request 2 failed
    assert view.current.chosen == {}
    assert view.passes(['cn1']).tolist() == [True]
    usages = view.forest.provider(view.forest.index_of('cn1')).usages
    assert usages == {'VCPU': 3, 'MEMORY_MB': 3072}
