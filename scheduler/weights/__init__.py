"""Host weighers: the plug-in contract, normalisation and the handler.

A weigher is a ``BaseHostWeigher`` subclass implementing
``weigh_object(host_state, weight_properties) -> float`` (or Nova's
``_weigh_object``, which is still honoured), registered by class name
in the ``scheduler.weighers``
namespace and chosen by ``[filter_scheduler] weight_classes``
(docs/plugins.rst).  Weights are normalised, multiplied and summed as
Nova does since Victoria (docs/architecture.rst); over a ``HostTable``
the same steps run as NumPy expressions, with the same weights and order
(docs/fast-forms.rst).
"""

import typing
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
from oslo_log import log as logging

from scheduler import loadables
from scheduler.conf import CONF
from scheduler.resources import aggregates
from scheduler.weights.weighing import Weighing

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState
    from scheduler.view.host_table import HostTable

LOG = logging.getLogger(__name__)

_Rows = npt.NDArray[np.intp]
_Floats = npt.NDArray[np.float64]

NAMESPACE = 'scheduler.weighers'


def normalize(weights: typing.Sequence[float], minval: float | None = None,
              maxval: float | None = None) -> list[float]:
    """Normalise ``weights`` to [0, 1] using the given or observed bounds.

    Returns a list of floats; an empty input gives an empty list and equal
    bounds give zeros.
    """
    if not weights:
        return []
    lo = min(weights) if minval is None else minval
    hi = max(weights) if maxval is None else maxval
    if lo == hi:
        return [0.0] * len(weights)
    span = float(hi - lo)
    return [(w - lo) / span for w in weights]


class WeighedHost:
    """A host and its total weight."""

    def __init__(self, obj: typing.Any, weight: float) -> None:
        self.obj = obj
        self.weight = weight

    def to_dict(self) -> dict[str, typing.Any]:
        return {'weight': self.weight, 'host': self.obj.host}

    def __repr__(self) -> str:
        return 'WeighedHost [host: %r, weight: %s]' % (self.obj, self.weight)


class BaseHostWeigher:
    """Base class for host weighers.

    Subclasses set ``minval`` / ``maxval`` (class bounds, or None) and
    ``multiplier_option`` (the ``[filter_scheduler]`` option and aggregate
    metadata key of their multiplier), and implement ``weigh_object``.
    A weigher written for Nova implements ``_weigh_object`` instead: it is
    called in place of ``weigh_object`` when a class defines it below the
    one defining ``weigh_object`` (``per_host_method``).
    """

    minval: typing.ClassVar[float | None] = None
    maxval: typing.ClassVar[float | None] = None
    multiplier_option: typing.ClassVar[str | None] = None
    # A HostTable column holding exactly ``weigh_object``'s value, for
    # weighers that just read one HostState attribute.
    column: typing.ClassVar[str | None] = None
    # The raw weight of a host depends only on the request and that
    # host's HostState: between two instances of a request, only the
    # hosts consumed from are weighed again (``host_local``).  False by
    # default: a plug-in may read anything.
    HOST_LOCAL: typing.ClassVar[bool] = False
    # Weighing a host never raises (``never_raises``): with a multiplier
    # of 0.0 on every host such a weigher adds nothing and is not asked.
    # False by default: a plug-in may raise, as Nova's MetricsWeigher
    # does when a required metric is missing, and Nova asks every
    # weigher whatever its multiplier.
    NEVER_RAISES: typing.ClassVar[bool] = False

    def weight_multiplier(self, host_state: 'HostState') -> float:
        """The multiplier for ``host_state``: the minimum aggregate
        override, else the configured value (1.0 without an option)."""
        if self.multiplier_option is None:
            return 1.0
        default = getattr(CONF.filter_scheduler, self.multiplier_option)
        return typing.cast(float, aggregates.validate_num_values(
            aggregates.aggregate_values_from_key(
                host_state, self.multiplier_option),
            default, cast_to=aggregates.finite_float))

    def weigh_object(self, host_state: 'HostState',
                     weight_properties: 'RequestSpec') -> float:
        """The raw weight of one host (by default Nova's
        ``_weigh_object``)."""
        if _defining_class(type(self), '_weigh_object') is BaseHostWeigher:
            raise NotImplementedError()
        return self._weigh_object(host_state, weight_properties)

    def _weigh_object(self, host_state: 'HostState',
                      weight_properties: 'RequestSpec') -> float:
        """Nova's name of ``weigh_object``, for plug-ins and callers
        written for Nova."""
        if _defining_class(type(self), 'weigh_object') is BaseHostWeigher:
            raise NotImplementedError()
        return self.weigh_object(host_state, weight_properties)

    def weigh_rows(self, table: 'HostTable', rows: npt.NDArray[np.intp],
                   weight_properties: 'RequestSpec'
                   ) -> npt.ArrayLike | None:
        """Vectorised ``weigh_object``: a float array, one raw weight per
        row of ``rows`` (an intp array into ``table``), or None when this
        weigher has no vectorised form (the default)."""
        return None

    def memo_key(self,
                 weight_properties: 'RequestSpec') -> Hashable | None:
        """A hashable key capturing all of the request and configuration
        that ``weigh_object`` reads, so its results can be cached per
        host; None (the default) when there is none."""
        return None

    def multiplier_key(self) -> Hashable | None:
        """A hashable key capturing the configuration that
        ``weight_multiplier`` reads besides the host's aggregates."""
        if self.multiplier_option is None:
            return None
        return getattr(CONF.filter_scheduler, self.multiplier_option)

    def weigh_objects(self, weighed_hosts: Iterable['WeighedHost'],
                      weight_properties: 'RequestSpec') -> list[float]:
        """Raw weights of every host, clamped to the class bounds."""
        weigh = per_host_method(self)
        weights = []
        for weighed in weighed_hosts:
            value = weigh(weighed.obj, weight_properties)
            if self.minval is not None:
                value = max(value, self.minval)
            if self.maxval is not None:
                value = min(value, self.maxval)
            weights.append(value)
        return weights


class HostWeightHandler:
    """Applies weighers to hosts and sorts them (Nova's handler)."""

    def get_weighed_objects(self, weighers: typing.Sequence[BaseHostWeigher],
                            hosts: Iterable[typing.Any],
                            weight_properties: 'RequestSpec'
                            ) -> list[WeighedHost]:
        """Return ``WeighedHost`` objects sorted by weight, best first."""
        weighed = [WeighedHost(host, 0.0) for host in hosts]
        if len(weighed) <= 1:
            return weighed
        for weigher in weighers:
            raw = weigher.weigh_objects(weighed, weight_properties)
            norm = normalize(raw, weigher.minval, weigher.maxval)
            for item, value in zip(weighed, norm, strict=True):
                item.weight += weigher.weight_multiplier(item.obj) * value
        return sorted(weighed, key=lambda item: item.weight, reverse=True)


    def get_weighed_rows(self, weighers: typing.Sequence[BaseHostWeigher],
                         table: 'HostTable', rows: npt.NDArray[np.intp],
                         weight_properties: 'RequestSpec',
                         limit: int | None = None,
                         multipliers: list[typing.Any] | None = None
                         ) -> tuple[npt.NDArray[np.intp],
                                    npt.NDArray[np.float64]]:
        """``get_weighed_objects`` over a HostTable.

        ``rows``: intp array of the candidate rows, in order.  Returns
        ``(rows, weights)``: the rows sorted best first (a stable sort, as
        ``sorted``) and their float64 total weights.  With ``limit``, only
        the best rows: every row weighing at least the ``limit``-th best
        weight (ties included), which is a prefix of the full order.
        ``multipliers``: ``table_multipliers(weighers, table)``, for a
        caller weighing the same table several times (the instances of a
        request) while no aggregate changes.
        """
        if len(rows) <= 1:
            return rows, np.zeros(len(rows))
        weighed = self.weighing(weighers, table, rows, weight_properties,
                                multipliers)
        return _sorted_best_first(rows, weighed.totals, limit)

    def weighing(self, weighers: typing.Sequence[BaseHostWeigher],
                 table: 'HostTable', rows: npt.NDArray[np.intp],
                 weight_properties: 'RequestSpec',
                 multipliers: list[typing.Any] | None = None) -> Weighing:
        """The ``Weighing`` of ``rows`` (totals in ``rows`` order), which
        a caller may keep and update between the instances of a request
        when every weigher is ``host_local`` and their multipliers are
        known per table (``table_multipliers`` gives no None)."""
        if multipliers is None:
            multipliers = self.table_multipliers(weighers, table)
        asked = []
        factors = []
        for weigher, known in zip(weighers, multipliers, strict=True):
            factor = _multipliers(weigher, table, rows, known)
            if np.ndim(factor) or factor != 0.0 or not never_raises(weigher):
                asked.append(weigher)
                factors.append(factor)
        return Weighing(asked, table, rows, weight_properties, factors,
                        _raw_weights)


    @staticmethod
    def table_multipliers(weighers: typing.Sequence[BaseHostWeigher],
                          table: 'HostTable') -> list[typing.Any]:
        """The multipliers of each weigher over all the rows of ``table``
        (``_table_multipliers``), in the order of ``weighers``."""
        return [_table_multipliers(weigher, table) for weigher in weighers]


def _sorted_best_first(rows: _Rows, total: _Floats,
                       limit: int | None) -> tuple[_Rows, _Floats]:
    """Stable descending sort of ``rows`` by ``total``; with ``limit``
    (fewer than the rows), only the prefix of the rows weighing at least
    the ``limit``-th largest total."""
    if limit is not None and limit < len(rows):
        threshold = np.partition(total, len(total) - limit)[-limit]
        best = np.flatnonzero(total >= threshold)
        rows, total = rows[best], total[best]
    order = np.argsort(-total, kind='stable')
    return rows[order], total[order]


# The class of ``cls``'s MRO that defines ``name`` (None: none does).
_defining_class: Callable[[typing.Any, str], type | None] = (
    loadables._defining_class)


def per_host_method(weigher: BaseHostWeigher
                    ) -> Callable[['HostState', 'RequestSpec'], float]:
    """The method giving ``weigher``'s raw weight of one host: its
    ``weigh_object``, or Nova's ``_weigh_object`` when a class below the
    one defining ``weigh_object`` defines it (a plug-in written for Nova,
    possibly subclassing a built-in weigher)."""
    cls = type(weigher)
    nova = _defining_class(cls, '_weigh_object')
    ours = _defining_class(cls, 'weigh_object')
    if (nova is not None and ours is not None and nova is not ours
            and issubclass(nova, ours)):
        return weigher._weigh_object
    return weigher.weigh_object


# The per-host methods a fast form must stand for.
_REFERENCE = ('weigh_object', '_weigh_object', 'weigh_objects')
# ... and ``HOST_LOCAL``, which speaks for the fast forms too.
_LOCAL_REFERENCE = _REFERENCE + ('weigh_rows', 'memo_key', 'column')


def host_local(weigher: BaseHostWeigher) -> bool:
    """Whether ``weigher`` is ``HOST_LOCAL``, as declared by the class
    defining how it weighs or a subclass of it (a plug-in overriding
    ``weigh_object`` of a built-in weigher is not assumed local)."""
    return loadables.declares(weigher, 'HOST_LOCAL', _LOCAL_REFERENCE)


def never_raises(weigher: BaseHostWeigher) -> bool:
    """Whether ``weigher`` declares ``NEVER_RAISES``, as the class
    defining how it weighs or a subclass of it (a plug-in overriding
    ``weigh_object`` of a built-in weigher is assumed to raise).  A
    weighing leaves out such a weigher when its multiplier is 0.0 on
    every host: it could only add 0.0 to each total."""
    return loadables.declares(weigher, 'NEVER_RAISES', _LOCAL_REFERENCE)


def _raw_weights(weigher: BaseHostWeigher, table: 'HostTable', rows: _Rows,
                 weight_properties: 'RequestSpec') -> _Floats:
    values: npt.ArrayLike | None = None
    column, weigh_rows, memo_key = _forms(weigher)
    if weigher.column is not None and column:
        values = table.columns[weigher.column][rows]
    elif weigh_rows:
        values = weigher.weigh_rows(table, rows, weight_properties)
    if values is not None:
        return np.asarray(values, dtype=np.float64)
    key = None
    if memo_key:
        key = weigher.memo_key(weight_properties)
    if key is not None:
        weigh = per_host_method(weigher)
        if len(rows) == 1:
            # One host (a request's later instance re-weighs the host the
            # previous one took): weighing it costs less than the memo's
            # bookkeeping, and the memo would weigh it again anyway.
            return np.array([weigh(table.states[int(rows[0])],
                                   weight_properties)], dtype=np.float64)
        return table.memo(
            weigher, ('raw', key),
            lambda state: weigh(state, weight_properties),
            rows, dtype=np.float64)
    weighed = [WeighedHost(state, 0.0) for state in table.states_at(rows)]
    return np.asarray(weigher.weigh_objects(weighed, weight_properties),
                      dtype=np.float64)


# Weigher class -> whether its ``column``, ``weigh_rows`` and ``memo_key``
# stand for its per-host methods (``loadables.fast_form_applies``), found
# once per class (a request's instances ask for each weigher).
_FORMS: dict[type, tuple[bool, bool, bool]] = {}


def _forms(weigher: BaseHostWeigher) -> tuple[bool, bool, bool]:
    forms = _FORMS.get(type(weigher))
    if forms is None:
        column, weigh_rows, memo_key = (
            loadables.fast_form_applies(weigher, name, _REFERENCE)
            for name in ('column', 'weigh_rows', 'memo_key'))
        forms = _FORMS[type(weigher)] = (column, weigh_rows, memo_key)
    return forms


def _table_multipliers(weigher: BaseHostWeigher,
                       table: 'HostTable') -> typing.Any:
    """The multiplier of each row of ``table`` (or one for all): computed
    once per distinct aggregate metadata and kept until aggregates change
    (``HostTable.per_table``); None when a plug-in overrides
    ``weight_multiplier``, which may then read anything (it is called
    for each host weighed, see ``_multipliers``)."""
    if not loadables.fast_form_applies(weigher, 'multiplier_key',
                                       ('weight_multiplier',)):
        return None
    return table.per_table(
        weigher, ('multiplier', weigher.multiplier_key()),
        weigher.weight_multiplier, dtype=np.float64)


def _multipliers(weigher: BaseHostWeigher, table: 'HostTable', rows: _Rows,
                 known: typing.Any) -> typing.Any:
    """The multiplier of each of ``rows`` (or one for all), from the
    weigher's ``_table_multipliers`` value ``known``."""
    if known is None:
        return np.fromiter((weigher.weight_multiplier(state)
                            for state in table.states_at(rows)),
                           dtype=np.float64, count=len(rows))
    return known if np.ndim(known) == 0 else known[rows]


def _normalize_array(weights: _Floats, minval: float | None = None,
                     maxval: float | None = None) -> _Floats:
    """``normalize`` over a float array."""
    lo = weights.min() if minval is None else minval
    hi = weights.max() if maxval is None else maxval
    if lo == hi:
        return np.zeros(len(weights))
    return (weights - lo) / float(hi - lo)


def all_weighers() -> list[type[BaseHostWeigher]]:
    """Every weigher class registered in ``scheduler.weighers``."""
    return list(loadables.entry_point_classes(NAMESPACE).values())


def load_weighers(
        weight_classes: Iterable[str]) -> list[BaseHostWeigher]:
    """Instantiate the weighers named by ``weight_classes`` (names or
    dotted paths).  Raises ClassNotFound for an unknown entry."""
    classes = loadables.resolve(weight_classes, NAMESPACE, BaseHostWeigher)
    return [cls() for cls in classes]
