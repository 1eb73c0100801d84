"""Host weighers: the plug-in contract, normalisation and the handler.

A weigher is a ``BaseHostWeigher`` subclass implementing
``_weigh_object(host_state, weight_properties) -> float`` (Nova's
contract), registered by class name in the ``scheduler.weighers``
namespace and chosen by ``[filter_scheduler] weight_classes``
(docs/plugins.rst).  Weights are normalised, multiplied and summed as
Nova does since Victoria (docs/architecture.rst); over a ``HostTable``
the same steps run as NumPy expressions, with the same weights and order
(docs/fast-forms.rst).
"""

import numpy as np
from oslo_log import log as logging

from scheduler import loadables
from scheduler.conf import CONF
from scheduler.filters import utils as filter_utils

LOG = logging.getLogger(__name__)

NAMESPACE = 'scheduler.weighers'


def normalize(weights, minval=None, maxval=None):
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

    def __init__(self, obj, weight):
        self.obj = obj
        self.weight = weight

    def to_dict(self):
        return {'weight': self.weight, 'host': self.obj.host}

    def __repr__(self):
        return 'WeighedHost [host: %r, weight: %s]' % (self.obj, self.weight)


class BaseHostWeigher:
    """Base class for host weighers.

    Subclasses set ``minval`` / ``maxval`` (class bounds, or None) and
    ``multiplier_option`` (the ``[filter_scheduler]`` option and aggregate
    metadata key of their multiplier), and implement ``_weigh_object``.
    """

    minval = None
    maxval = None
    multiplier_option = None
    # A HostTable column holding exactly ``_weigh_object``'s value, for
    # weighers that just read one HostState attribute.
    column = None

    def weight_multiplier(self, host_state):
        """The multiplier for ``host_state``: the minimum aggregate
        override, else the configured value (1.0 without an option)."""
        if self.multiplier_option is None:
            return 1.0
        default = getattr(CONF.filter_scheduler, self.multiplier_option)
        return filter_utils.validate_num_values(
            filter_utils.aggregate_values_from_key(
                host_state, self.multiplier_option),
            default, cast_to=filter_utils.finite_float)

    def _weigh_object(self, host_state, weight_properties):
        """The raw weight of one host."""
        raise NotImplementedError()

    def weigh_rows(self, table, rows, weight_properties):
        """Vectorised ``_weigh_object``: a float array, one raw weight per
        row of ``rows`` (an intp array into ``table``), or None when this
        weigher has no vectorised form (the default)."""
        return None

    def memo_key(self, weight_properties):
        """A hashable key capturing all of the request and configuration
        that ``_weigh_object`` reads, so its results can be cached per
        host; None (the default) when there is none."""
        return None

    def multiplier_key(self):
        """A hashable key capturing the configuration that
        ``weight_multiplier`` reads besides the host's aggregates."""
        if self.multiplier_option is None:
            return None
        return getattr(CONF.filter_scheduler, self.multiplier_option)

    def weigh_objects(self, weighed_hosts, weight_properties):
        """Raw weights of every host, clamped to the class bounds."""
        weights = []
        for weighed in weighed_hosts:
            value = self._weigh_object(weighed.obj, weight_properties)
            if self.minval is not None:
                value = max(value, self.minval)
            if self.maxval is not None:
                value = min(value, self.maxval)
            weights.append(value)
        return weights


class HostWeightHandler:
    """Applies weighers to hosts and sorts them (Nova's handler)."""

    def get_weighed_objects(self, weighers, hosts, weight_properties):
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


    def get_weighed_rows(self, weighers, table, rows, weight_properties,
                         limit=None, multipliers=None):
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
        total = np.zeros(len(rows))
        if len(rows) <= 1:
            return rows, total
        if multipliers is None:
            multipliers = self.table_multipliers(weighers, table)
        for weigher, known in zip(weighers, multipliers, strict=True):
            factors = _multipliers(weigher, table, rows, known)
            # Computed even when unused: a weigher may raise (Nova's
            # MetricsWeigher does when a required metric is missing).
            raw = _raw_weights(weigher, table, rows, weight_properties)
            if np.ndim(factors) == 0 and factors == 0.0:
                continue   # adds 0 x (a value in [0, 1]) to every host
            if weigher.minval is not None:
                raw = np.maximum(raw, weigher.minval)
            if weigher.maxval is not None:
                raw = np.minimum(raw, weigher.maxval)
            total += factors * _normalize_array(
                raw, weigher.minval, weigher.maxval)
        return _sorted_best_first(rows, total, limit)


    @staticmethod
    def table_multipliers(weighers, table):
        """The multipliers of each weigher over all the rows of ``table``
        (``_table_multipliers``), in the order of ``weighers``."""
        return [_table_multipliers(weigher, table) for weigher in weighers]


def _sorted_best_first(rows, total, limit):
    """Stable descending sort of ``rows`` by ``total``; with ``limit``
    (fewer than the rows), only the prefix of the rows weighing at least
    the ``limit``-th largest total."""
    if limit is not None and limit < len(rows):
        threshold = np.partition(total, len(total) - limit)[-limit]
        best = np.flatnonzero(total >= threshold)
        rows, total = rows[best], total[best]
    order = np.argsort(-total, kind='stable')
    return rows[order], total[order]


# The per-host methods a fast form must stand for.
_REFERENCE = ('_weigh_object', 'weigh_objects')


def _raw_weights(weigher, table, rows, weight_properties):
    values = None
    if weigher.column is not None and loadables.fast_form_applies(
            weigher, 'column', _REFERENCE):
        values = table.columns[weigher.column][rows]
    elif loadables.fast_form_applies(weigher, 'weigh_rows', _REFERENCE):
        values = weigher.weigh_rows(table, rows, weight_properties)
    if values is not None:
        return np.asarray(values, dtype=np.float64)
    key = None
    if loadables.fast_form_applies(weigher, 'memo_key', _REFERENCE):
        key = weigher.memo_key(weight_properties)
    if key is not None:
        return table.memo(
            weigher, ('raw', key),
            lambda state: weigher._weigh_object(state, weight_properties),
            rows, dtype=np.float64)
    weighed = [WeighedHost(state, 0.0) for state in table.states_at(rows)]
    return np.asarray(weigher.weigh_objects(weighed, weight_properties),
                      dtype=np.float64)


def _table_multipliers(weigher, table):
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


def _multipliers(weigher, table, rows, known):
    """The multiplier of each of ``rows`` (or one for all), from the
    weigher's ``_table_multipliers`` value ``known``."""
    if known is None:
        return np.fromiter((weigher.weight_multiplier(state)
                            for state in table.states_at(rows)),
                           dtype=np.float64, count=len(rows))
    return known if np.ndim(known) == 0 else known[rows]


def _normalize_array(weights, minval=None, maxval=None):
    """``normalize`` over a float array."""
    lo = weights.min() if minval is None else minval
    hi = weights.max() if maxval is None else maxval
    if lo == hi:
        return np.zeros(len(weights))
    return (weights - lo) / float(hi - lo)


def all_weighers():
    """Every weigher class registered in ``scheduler.weighers``."""
    return list(loadables.entry_point_classes(NAMESPACE).values())


def load_weighers(weight_classes):
    """Instantiate the weighers named by ``weight_classes`` (names or
    dotted paths).  Raises ClassNotFound for an unknown entry."""
    classes = loadables.resolve(weight_classes, NAMESPACE, BaseHostWeigher)
    return [cls() for cls in classes]
