"""Decision: one request's consumption and claims, and the one undo every
failure path takes, over recording stand-ins of the host manager, the
candidate source and the reservation (the driver's tests run it over
the real ones)."""

import logging
import uuid

import fakes
import pytest

from scheduler.engine import decision as decision_lib
from scheduler.engine import reservation
from scheduler.objects import instance_group as group_obj

UUIDS = [str(uuid.UUID(int=n + 1)) for n in range(3)]


class Recorder:
    """Records the calls a Decision makes (the host manager's, the
    Placement view's and the reservation's in one)."""

    def __init__(self, refuse=(), lose=False, release_fails=False):
        self.calls = []
        self.refuse = set(refuse)
        self.lose = lose
        self.release_fails = release_fails

    # host manager
    def consume(self, state, spec_obj, instance_uuid):
        self.calls.append(('consume', state.host, instance_uuid))

    def keep_consumption(self, states):
        self.calls.append(('keep', [s.host for s in states]))

    def forget_consumption(self, states):
        self.calls.append(('forget', [s.host for s in states]))

    # reservation
    def claim(self, context, spec_obj, selected, instance_uuids):
        if self.lose:
            raise reservation.LostRace()
        self.calls.append(('claim', list(instance_uuids)))

    def claim_one(self, context, spec_obj, state, instance_uuid):
        ok = state.host not in self.refuse
        self.calls.append(('claim_one', state.host, ok))
        return ok

    def release(self, context, instance_uuids):
        if self.release_fails:
            raise RuntimeError('database gone')
        self.calls.append(('release', list(instance_uuids)))
        return len(instance_uuids)


class SourceRecorder:
    """A candidate source whose reservation is ``reservation``."""

    def __init__(self, reservation):
        self.reservation = reservation
        self.consumed = []

    def consume(self, state):
        self.consumed.append(state.uuid)


def _decision(recorder, source=None, group=True, count=2):
    spec = fakes.fake_spec(instance_uuid=UUIDS[0])
    if group:
        spec.instance_group = group_obj.InstanceGroup(
            uuid=str(uuid.uuid4()), policies=['anti-affinity'],
            members=UUIDS[:count], hosts=['old'])
    source = source or SourceRecorder(recorder)
    return decision_lib.Decision(recorder, source, None, spec,
                                 UUIDS[:count]), spec


def _hosts(*names):
    return [fakes.fake_host_state(name, name) for name in names]


def test_consume_counts_everywhere_and_undo_puts_it_all_back():
    recorder = Recorder()
    source = SourceRecorder(recorder)
    decision, spec = _decision(recorder, source)
    a, b = _hosts('a', 'b')
    decision.consume(a, 0)
    decision.consume(b, 1)
    assert spec.instance_group.hosts == ['old', 'a', 'b']
    assert source.consumed == [a.uuid, b.uuid]
    decision.undo()
    assert recorder.calls == [('consume', 'a', UUIDS[0]),
                              ('consume', 'b', UUIDS[1]),
                              ('forget', ['a', 'b'])]
    assert spec.instance_group.hosts == ['old']
    assert 'hosts' not in spec.instance_group.obj_what_changed()
    decision.undo()         # a second undo does nothing more
    assert recorder.calls[-1] == ('forget', [])


def test_claims_outside_a_transaction_are_released_by_undo():
    recorder = Recorder()
    decision, _ = _decision(recorder)
    for index, state in enumerate(_hosts('a', 'b')):
        decision.consume(state, index)
    decision.claim(atomic=False)
    decision.undo()
    assert ('release', UUIDS[:2]) in recorder.calls


def test_claims_of_a_transaction_count_once_it_committed():
    """Rolled back with their transaction, the claims are not released
    (an instance holding allocations of its own keeps them); committed,
    they are."""
    recorder = Recorder()
    decision, _ = _decision(recorder)
    decision.consume(_hosts('a')[0], 0)
    decision.claim(atomic=True)
    decision.undo()
    assert not any(call[0] == 'release' for call in recorder.calls)

    recorder = Recorder()
    decision, _ = _decision(recorder, count=1)
    decision.consume(_hosts('a')[0], 0)
    decision.claim(atomic=True)
    decision.committed()
    decision.undo()
    assert ('release', UUIDS[:1]) in recorder.calls


def test_a_lost_race_keeps_no_claim_to_release():
    recorder = Recorder(lose=True)
    decision, _ = _decision(recorder)
    decision.consume(_hosts('a')[0], 0)
    with pytest.raises(reservation.LostRace):
        decision.claim(atomic=False)
    decision.undo()
    assert not any(call[0] == 'release' for call in recorder.calls)


def test_claim_one_records_only_the_claims_taken():
    recorder = Recorder(refuse={'a'})
    decision, _ = _decision(recorder)
    a, b = _hosts('a', 'b')
    assert not decision.claim_one(a, 0)
    assert decision.claim_one(b, 0)
    decision.consume(b, 0)
    decision.undo()
    assert ('release', [UUIDS[0]]) in recorder.calls


def test_keep_keeps_the_consumption_of_the_chosen_hosts():
    recorder = Recorder()
    decision, _ = _decision(recorder, group=False)
    for index, state in enumerate(_hosts('a', 'b')):
        decision.consume(state, index)
    decision.keep()
    assert recorder.calls[-1] == ('keep', ['a', 'b'])


def test_a_release_that_fails_is_logged_and_the_rest_undone(caplog):
    recorder = Recorder(release_fails=True)
    decision, spec = _decision(recorder)
    decision.consume(_hosts('a')[0], 0)
    decision.claim(atomic=False)
    with caplog.at_level(logging.WARNING):
        decision.undo()
    assert 'Could not release the claims of %s' % UUIDS[0] in caplog.text
    assert ('forget', ['a']) in recorder.calls
    assert spec.instance_group.hosts == ['old']


class Ranking:
    """The part of a pipeline Ranking ``claim_best`` uses."""

    def __init__(self, states):
        self.states = list(states)

    def __len__(self):
        return len(self.states)

    def first(self):
        return self.states[0]

    def drop_first(self):
        self.states.pop(0)


def test_claim_best_walks_the_ranking_past_refused_claims():
    recorder = Recorder(refuse={'a', 'b'})
    decision, _ = _decision(recorder, group=False)
    ranking = Ranking(_hosts('a', 'b', 'c'))
    decision.claim_best(ranking, 0)
    assert ranking.first().host == 'c'
    assert decision.claimed == [UUIDS[0]]
    # Each refused node is read again at the next refresh.
    assert ('forget', ['a']) in recorder.calls
    assert ('forget', ['b']) in recorder.calls


def test_settle_keeps_or_abandons_as_the_caller_waits_or_not(caplog):
    recorder = Recorder()
    decision, _ = _decision(recorder, group=False, count=1)
    decision.consume(_hosts('a')[0], 0)
    decision.claim(atomic=False)
    assert decision.settle(True, lambda: True)
    assert recorder.calls[-1] == ('keep', ['a'])
    with caplog.at_level(logging.WARNING):
        assert not decision.settle(True, lambda: False)
    assert ('release', [UUIDS[0]]) in recorder.calls
    assert recorder.calls[-1] == ('forget', ['a'])
    assert 'answered DatabaseUnavailable (decision_timeout): %s' % UUIDS[0] \
        in caplog.text
