"""Weighing: the weights of one request's candidates, kept between its
instances.

Nova weighs every candidate again for each instance of a request.  Between
two instances only the hosts the request consumed from change, so a
``Weighing`` keeps each weigher's raw weights and normalised term per
candidate and ``update`` recomputes the raw weights of those hosts only;
a weigher's term is recomputed over every candidate only when its
observed minimum or maximum moved (its normalisation changed).  Totals
and order are those a full weighing of the same candidates in the same
input order gives: the same floating-point operations in the same order
(``(raw - min) / (max - min)``, times the multiplier, summed weigher after
weigher from 0.0) and a stable sort, best first.

Candidates are numbered once, in the order of the first weighing
("slots"); ``order`` is the current ranking as slots.  A candidate that
stops passing the filters is removed (its raw weights become NaN, which
the minimum and maximum ignore).
"""

import typing

import numpy as np
import numpy.typing as npt

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_table import HostTable
    from scheduler.weights import BaseHostWeigher

_Rows = npt.NDArray[np.intp]
_Floats = npt.NDArray[np.float64]
# (weigher, table, rows, spec) -> float64 raw weights, unclamped.
RawWeights = typing.Callable[['BaseHostWeigher', 'HostTable', _Rows,
                              'RequestSpec'], _Floats]


def normalized_term(raw: _Floats, lo: float, hi: float,
                    factors: typing.Any) -> _Floats:
    """``factors`` x ``raw`` normalised to [0, 1] between ``lo`` and ``hi``
    (zeros when they are equal), as Nova's ``normalize`` (Victoria and
    later) followed by the weigher's multiplier."""
    if lo == hi:
        return factors * np.zeros(len(raw))
    return factors * ((raw - lo) / float(hi - lo))


class _Term:
    """One weigher's part of the totals: its clamped raw weight and its
    multiplied, normalised term per slot.  The observed bounds are kept
    with how many live slots hold each, so that a bound is looked for
    again over every slot only when its last holder changed."""

    def __init__(self, weigher: 'BaseHostWeigher', raw: _Floats,
                 factors: typing.Any) -> None:
        self.weigher = weigher
        self.raw = np.array(self.clamp(raw), dtype=np.float64)
        self.factors = factors
        self.scalar_factors = np.ndim(factors) == 0
        # As Nova's min() and max(): a NaN weight makes the bound NaN
        # (and the Weighing not updatable); after removals the removed
        # slots' NaN are ignored instead (``update``).
        self.lo, self.lo_count = self._observe(np.minimum, weigher.minval)
        self.hi, self.hi_count = self._observe(np.maximum, weigher.maxval)
        self.values = normalized_term(self.raw, self.lo, self.hi, factors)

    def clamp(self, raw: _Floats) -> _Floats:
        """``raw`` within the weigher class's ``minval`` / ``maxval``."""
        if self.weigher.minval is not None:
            raw = np.maximum(raw, self.weigher.minval)
        if self.weigher.maxval is not None:
            raw = np.minimum(raw, self.weigher.maxval)
        return raw

    def _observe(self, reduce: np.ufunc,
                 fixed: float | None) -> tuple[typing.Any, int]:
        """A bound and how many live slots hold it: the class's fixed
        one, else the minimum or maximum over the slots (``reduce``:
        ``np.fmin`` / ``np.fmax`` ignore the NaN of removed ones)."""
        if fixed is not None:
            return fixed, 1
        bound = reduce.reduce(self.raw)
        return bound, int(np.count_nonzero(self.raw == bound))

    def updatable(self) -> bool:
        """Whether ``update`` gives what a full weighing would: no NaN
        bound (a NaN raw weight)."""
        return self.lo == self.lo and self.hi == self.hi

    def _track_bounds(self, gone: list[float], added: list[float]) -> bool:
        """Follow the open bounds (those the weigher does not fix) as the
        raw weights ``gone`` are replaced by ``added``, observing them
        again when the last value at a bound went; whether one moved."""
        lo, hi = self.lo, self.hi
        if self.weigher.minval is None:
            self.lo, self.lo_count = _track(lo, self.lo_count, gone, added,
                                            float.__lt__)
            if not self.lo_count:
                self.lo, self.lo_count = self._observe(np.fmin, None)
        if self.weigher.maxval is None:
            self.hi, self.hi_count = _track(hi, self.hi_count, gone, added,
                                            float.__gt__)
            if not self.hi_count:
                self.hi, self.hi_count = self._observe(np.fmax, None)
        return self.lo != lo or self.hi != hi

    def update(self, slots: _Rows, raw: _Floats, removed: _Rows) -> bool:
        """Set the raw weights of ``slots`` (no NaN) and remove
        ``removed``.
        Returns whether every slot's term was recomputed (a bound moved);
        otherwise only those of ``slots`` were."""
        raw = self.clamp(raw)
        before = self.raw[slots].tolist()
        added = raw.tolist()
        if before == added and not len(removed):
            return False    # a weight the consumption does not change
        gone = before + self.raw[removed].tolist()
        self.raw[slots] = raw
        self.raw[removed] = np.nan
        lo, hi = self.lo, self.hi
        if self._track_bounds(gone, added):
            self.values = normalized_term(self.raw, self.lo, self.hi,
                                          self.factors)
            return True
        factors = (self.factors if np.ndim(self.factors) == 0
                   else self.factors[slots])
        self.values[slots] = normalized_term(raw, lo, hi, factors)
        return False

    def update_one(self, slot: int, raw: float) -> bool:
        """``update`` of one slot, nothing removed, with the same
        floating-point operations on Python floats (IEEE doubles, as the
        arrays' elements)."""
        weigher = self.weigher
        if weigher.minval is not None and raw < weigher.minval:
            raw = float(weigher.minval)
        if weigher.maxval is not None and raw > weigher.maxval:
            raw = float(weigher.maxval)
        before = float(self.raw[slot])
        if before == raw:
            return False    # a weight the consumption does not change
        self.raw[slot] = raw
        lo, hi = self.lo, self.hi
        if self._track_bounds([before], [raw]):
            self.values = normalized_term(self.raw, self.lo, self.hi,
                                          self.factors)
            return True
        factor = (self.factors if self.scalar_factors
                  else self.factors[slot])
        self.values[slot] = (factor * 0.0 if lo == hi else
                             factor * ((raw - lo) / float(hi - lo)))
        return False


def _track(bound: typing.Any, count: int, gone: list[float],
           added: list[float],
           beyond: typing.Callable[[float, float], bool]
           ) -> tuple[typing.Any, int]:
    """A bound held by ``count`` slots after the values ``gone`` left and
    ``added`` came; ``beyond(a, b)``: ``a`` is past ``b``.  A count of 0
    means the bound must be observed again."""
    count -= sum(1 for value in gone if value == bound)
    for value in added:
        if beyond(value, float(bound)):
            bound, count = value, 1
        elif value == bound:
            count += 1
    return bound, max(count, 0)


class Weighing:
    """The weighing of the candidate ``rows`` of ``table`` for one request.

    ``totals`` holds each slot's total weight (in ``rows`` order);
    ``sort`` ranks them (``order``; ``keys``: minus the totals, in that
    order), as a caller that needs the whole order asks (one wanting only
    the best sorts the totals itself).  ``weighers`` with their
    ``multipliers`` (per weigher: a scalar or a float array over
    ``rows``; a weigher whose multiplier is a scalar 0.0 adds nothing
    and is only asked once); ``raw_weights`` gives a weigher's raw
    weights of some rows.  A weigher may raise (Nova's MetricsWeigher
    does when a required metric is missing): the exception propagates.
    """

    def __init__(self, weighers: typing.Sequence['BaseHostWeigher'],
                 table: 'HostTable', rows: _Rows, spec_obj: 'RequestSpec',
                 multipliers: typing.Sequence[typing.Any],
                 raw_weights: RawWeights) -> None:
        self.table = table
        self.spec_obj = spec_obj
        self.raw_weights = raw_weights
        self.slot_rows = rows
        size = len(rows)
        self.order = np.arange(size, dtype=np.intp)
        self.live = np.ones(size, dtype=bool)
        self.slot_of = np.full(len(table), -1, dtype=np.intp)
        self.slot_of[rows] = self.order
        self.terms: list[_Term] = []
        self.totals = np.zeros(size)
        self.keys = np.zeros(size)
        if size <= 1:
            return
        for weigher, factors in zip(weighers, multipliers, strict=True):
            raw = raw_weights(weigher, table, rows, spec_obj)
            if np.ndim(factors) == 0 and factors == 0.0:
                continue   # adds 0 x (a value in [0, 1]) to every host
            self.terms.append(_Term(weigher, raw, factors))
        self._sum_all()

    def __len__(self) -> int:
        return len(self.order)

    @property
    def rows(self) -> _Rows:
        """The candidate rows, best first."""
        return self.slot_rows[self.order]

    @property
    def sorted_totals(self) -> _Floats:
        """The total weights, best first."""
        return -self.keys

    def head(self, count: int) -> _Rows:
        """The best ``count`` candidate rows."""
        return self.slot_rows[self.order[:count]]

    def live_rows(self, rows: _Rows) -> _Rows:
        """Those of ``rows`` (table rows) that are still candidates."""
        slots = self.slot_of[rows]
        live = slots >= 0
        live[live] = self.live[slots[live]]
        return rows[live]

    def _sum_all(self) -> None:
        totals = np.zeros(len(self.slot_rows))
        for term in self.terms:
            totals += term.values
        self.totals = totals

    def sort(self) -> None:
        """Stable sort of ``order`` by total weight, best first."""
        keys = -self.totals[self.order]
        by_weight = np.argsort(keys, kind='stable')
        self.order = self.order[by_weight]
        self.keys = keys[by_weight]

    def move_to_front(self, position: int) -> None:
        """Put the candidate at ``position`` of the order first (the
        random pick among the best)."""
        if position:
            for array in (self.order, self.keys):
                array[:position + 1] = np.roll(array[:position + 1], 1)

    def permute_prefix(self, permutation: _Rows) -> None:
        """Reorder the first ``len(permutation)`` candidates (positions
        given in their new order: the shuffle of the best ties)."""
        count = len(permutation)
        self.order[:count] = self.order[:count][permutation]
        self.keys[:count] = self.keys[:count][permutation]

    def drop_first(self) -> None:
        """Remove the best candidate from the ranking (it is not weighed
        again)."""
        self.live[self.order[0]] = False
        self.order = self.order[1:]
        self.keys = self.keys[1:]

    def update(self, changed: _Rows, removed: _Rows) -> bool:
        """The candidates ``changed`` (rows of the table, still passing)
        changed since the last weighing and ``removed`` (rows) no longer
        pass: weigh the changed ones again and re-rank.  Re-ranking costs
        a binary search when the only change is the first candidate's
        total and no weigher's bounds moved; else a stable sort of the
        previous order (nearly sorted).  Returns False, changing
        nothing, when a raw weight is (or was) NaN: then only a full
        weighing gives Nova's result."""
        slots = self._slots(changed)
        gone = self._slots(removed)
        if len(slots) == 1 and not len(gone):
            return self._update_one(slots)
        live_rows = self.slot_rows[slots]
        raws = [np.asarray(self.raw_weights(term.weigher, self.table,
                                            live_rows, self.spec_obj),
                           dtype=np.float64) for term in self.terms]
        if (not all(term.updatable() for term in self.terms) or
                (raws and np.isnan(np.concatenate(raws)).any())):
            return False
        if len(gone):
            self.live[gone] = False
            still = self.live[self.order]
            self.order, self.keys = self.order[still], self.keys[still]
        resummed = False
        for term, raw in zip(self.terms, raws, strict=True):
            resummed |= term.update(slots, raw, gone)
        if len(self.order) <= 1:
            self.keys = np.zeros(len(self.order))
        elif resummed:
            self._sum_all()
            self.sort()
        else:
            totals = np.zeros(len(slots))
            for term in self.terms:
                totals += term.values[slots]
            self.totals[slots] = totals
            self._reinsert(slots)
        return True

    def _update_one(self, slots: _Rows) -> bool:
        """``update`` of one changed candidate, nothing removed (the
        usual later instance: the host it took), on Python floats."""
        slot = int(slots[0])
        rows = self.slot_rows[slots]
        raws = [float(self.raw_weights(term.weigher, self.table, rows,
                                       self.spec_obj)[0])
                for term in self.terms]
        if (not all(term.updatable() for term in self.terms) or
                any(raw != raw for raw in raws)):   # NaN
            return False
        resummed = False
        for term, raw in zip(self.terms, raws, strict=True):
            resummed |= term.update_one(slot, raw)
        if len(self.order) <= 1:
            self.keys = np.zeros(len(self.order))
        elif resummed:
            self._sum_all()
            self.sort()
        else:
            total = 0.0
            for term in self.terms:
                total += float(term.values[slot])
            self.totals[slot] = total
            self._reinsert(slots)
        return True

    def _slots(self, rows: _Rows) -> _Rows:
        """The live slots of ``rows`` (rows that are not candidates are
        left out)."""
        slots = self.slot_of[rows]
        slots = slots[slots >= 0]
        return slots[self.live[slots]]

    def _reinsert(self, slots: _Rows) -> None:
        """Re-rank after a change of ``slots``' totals only (none: only
        removals, which leave a sorted order sorted: a stable sort would
        not move anything)."""
        if not len(slots) and bool((self.keys[:-1] <= self.keys[1:]).all()):
            return
        if (len(slots) != 1 or self.order[0] != slots[0] or
                np.isnan(self.totals[slots[0]])):
            self.sort()
            return
        slot = slots[0]
        key = -self.totals[slot]
        # Stable: the changed candidate came first, so it goes before
        # every candidate of the same total.
        position = int(np.searchsorted(self.keys[1:], key, side='left'))
        for array, value in ((self.order, slot), (self.keys, key)):
            array[:position] = array[1:position + 1]
            array[position] = value
