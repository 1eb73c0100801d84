"""Weighing.update's cheap paths give exactly the full weighing.

One changed candidate and nothing removed (the usual later instance of a
request) is updated on Python floats; only removals (an anti-affinity
request's chosen host) re-rank without a sort.  Totals and order must be
bit for bit those of weighing the same candidates again.
"""

import random

import numpy as np
import pytest

from scheduler import weights
from scheduler.weights import weighing

pytestmark = pytest.mark.timeout(60)


class _Weigher(weights.BaseHostWeigher):
    """Raw weights read from a dict, row -> value."""

    def __init__(self, values, minval=None, maxval=None):
        self.values = values
        self.minval = minval
        self.maxval = maxval


def _raw(weigher, table, rows, spec):
    return np.asarray([weigher.values[row] for row in rows], dtype=float)


class _Table:
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size


def _weighing(weighers, factors, rows, size):
    """``factors``: per weigher, a scalar or an array over every row (as
    ``weights._multipliers`` indexes a table's)."""
    rows = np.asarray(rows, dtype=np.intp)
    found = weighing.Weighing(weighers, _Table(size), rows, None, [
        factor if np.ndim(factor) == 0 else factor[rows]
        for factor in factors], _raw)
    found.sort()
    return found


def _same(kept, before, weighers, factors, size):
    """``kept`` is the stable sort of the candidates in their order
    ``before`` the update (Nova's loop weighs the survivors of the
    previous instance in that order)."""
    live = set(kept.rows.tolist())
    fresh = _weighing(weighers, factors,
                      [row for row in before if row in live], size)
    assert kept.rows.tolist() == fresh.rows.tolist()
    assert kept.sorted_totals.tolist() == fresh.sorted_totals.tolist()


@pytest.mark.parametrize('seed', range(20))
def test_one_changed_candidate_updates_as_a_full_weighing(seed):
    rng = random.Random(seed)
    size = 40
    weighers = [_Weigher({row: rng.choice([0.0, 1.5, 3.0, rng.random()])
                          for row in range(size)}),
                _Weigher({row: rng.uniform(-5, 5) for row in range(size)},
                         minval=-2.0, maxval=4),
                _Weigher({row: float(rng.randrange(3))
                          for row in range(size)})]
    factors = [1.0, -0.7, np.asarray([rng.choice([0.5, 2.0])
                                      for _ in range(size)])]
    kept = _weighing(weighers, factors, range(size), size)
    original_update = weighing._Term.update
    calls = []

    def spy(term, *args):
        calls.append(True)
        return original_update(term, *args)

    weighing._Term.update = spy
    try:
        for _ in range(60):
            # The best is consumed from: its raw weights move, as a
            # consumption moves them (sometimes not at all).
            row = int(kept.rows[0])
            before = kept.rows.tolist()
            for weigher in weighers:
                if rng.random() < 0.7:
                    weigher.values[row] -= rng.choice([0.0, 0.25, 1.0, 7.0])
            assert kept.update(np.array([row]), np.zeros(0, dtype=np.intp))
            _same(kept, before, weighers, factors, size)
    finally:
        weighing._Term.update = original_update
    # Every update took the one-candidate path.
    assert not calls


def test_removals_alone_keep_the_order_without_a_sort(monkeypatch):
    size = 30
    weighers = [_Weigher({row: float(row % 7) for row in range(size)}),
                _Weigher({row: float(row % 5) for row in range(size)})]
    factors = [1.0, 2.0]
    kept = _weighing(weighers, factors, range(size), size)
    sorts = []
    monkeypatch.setattr(kept, 'sort', lambda: sorts.append(True))
    for row in (12, 3, 26):   # none the only holder of a bound
        before = kept.rows.tolist()
        assert kept.update(np.zeros(0, dtype=np.intp), np.array([row]))
        _same(kept, before, weighers, factors, size)
    assert not sorts


def test_one_candidate_with_a_nan_weight_is_refused():
    weigher = _Weigher({0: 5.0, 1: 1.0, 2: 4.0})
    kept = _weighing([weigher], [1.0], range(3), 3)
    weigher.values[0] = float('nan')
    before = kept.rows.tolist()
    assert not kept.update(np.array([0]), np.zeros(0, dtype=np.intp))
    assert kept.rows.tolist() == before
