"""Host weighers: the plug-in contract, normalisation and the handler.

A weigher is a ``BaseHostWeigher`` subclass implementing
``_weigh_object(host_state, weight_properties) -> float`` (Nova's
contract; ``weight_properties`` is the RequestSpec).  Weighers are
registered by class name in the ``scheduler.weighers`` namespace and
chosen by ``[filter_scheduler] weight_classes``.

Weighing follows Nova since Victoria (reference 5.1):

1. each weigher computes a raw value per host;
2. raw values are clamped to the class's ``minval`` / ``maxval`` when
   those are set;
3. they are normalised to [0, 1] over this request's hosts:
   ``(w - lo) / (hi - lo)`` where ``lo``/``hi`` are the class bound when
   set, else the minimum/maximum of this request; all equal -> all 0;
4. each normalised value is multiplied by the weigher's multiplier for
   that host: the minimum of the aggregate metadata key named like the
   option (``ram_weight_multiplier`` ...) over the host's aggregates, or
   the option's value when no aggregate sets it (Nova since Stein);
5. the host's weight is the sum over weighers; hosts are sorted by weight,
   highest first, ties keeping their input order (a stable sort).

With a single host no weigher runs and its weight stays 0.0 (Nova).
"""

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

    def weight_multiplier(self, host_state):
        """The multiplier for ``host_state``: the minimum aggregate
        override, else the configured value (1.0 without an option)."""
        if self.multiplier_option is None:
            return 1.0
        default = getattr(CONF.filter_scheduler, self.multiplier_option)
        return filter_utils.validate_num_values(
            filter_utils.aggregate_values_from_key(
                host_state, self.multiplier_option),
            default, cast_to=float)

    def _weigh_object(self, host_state, weight_properties):
        """The raw weight of one host."""
        raise NotImplementedError()

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


def all_weighers():
    """Every weigher class registered in ``scheduler.weighers``."""
    return list(loadables.entry_point_classes(NAMESPACE).values())


def load_weighers(weight_classes):
    """Instantiate the weighers named by ``weight_classes`` (names or
    dotted paths).  Raises ClassNotFound for an unknown entry."""
    classes = loadables.resolve(weight_classes, NAMESPACE, BaseHostWeigher)
    return [cls() for cls in classes]
