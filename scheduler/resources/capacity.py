"""The capacity rule: whether a request's resources fit on a node.

For one resource of a node, with ``total`` its physical amount, ``ratio``
its allocation ratio, ``used`` what is counted against it and
``requested`` what the request asks for::

    fits  <=>  total >= requested  and  total * ratio - used >= requested

An instance may overcommit against other instances, never against
itself (Nova's RamFilter, CoreFilter and DiskFilter since Newton; in
Placement terms, ``total * allocation_ratio - reserved`` is the
capacity and ``max_unit`` the node's size).  A node reporting 0 vCPUs is
not checked for CPU (Nova's CoreFilter lets it pass).  The functions
take scalars or NumPy arrays alike.

``claim_amounts`` says what a scheduler claims for one instance, and
``CLAIMED`` names the HostState attributes (and HostTable columns) the
claims count, so the check of a candidate before ranking
(``claim_fits``) is the check the database claim makes.  A decision
placing a request's instances asks for the same amounts several times
per instance (its filter, its consumption, its claim); within
``fixed_amounts`` they are read from the request once.
"""

import contextlib
import threading
import typing
from collections.abc import Callable
from collections.abc import Iterator

import numpy as np


class Amounts(typing.NamedTuple):
    """What one instance takes: vCPUs, RAM in MiB, local disk in GiB."""

    vcpus: int
    memory_mb: int
    disk_gb: int


class Claimed(typing.NamedTuple):
    """One claimed resource: its ``Amounts`` field and the HostState
    attributes (and HostTable columns) of its total, its use and its
    allocation ratio."""

    name: str
    total: str
    used: str
    ratio: str


# The resources a claim enforces, in the claim's terms.  ``used`` is the
# node's reported use plus its open claims plus this view's consumption.
CLAIMED = (
    Claimed('vcpus', 'vcpus_total', 'vcpus_used', 'cpu_allocation_ratio'),
    Claimed('memory_mb', 'total_usable_ram_mb', 'memory_mb_used',
            'ram_allocation_ratio'),
    Claimed('disk_gb', 'total_usable_disk_gb', 'local_gb_used',
            'disk_allocation_ratio'),
)


def free(total: typing.Any, used: typing.Any,
         ratio: typing.Any) -> typing.Any:
    """What is left to give: ``total * ratio - used`` (negative when
    overcommitted)."""
    return total * ratio - used


def fits(total: typing.Any, used: typing.Any, ratio: typing.Any,
         requested: typing.Any) -> typing.Any:
    """Whether ``requested`` more fits (the rule of this module; no
    special case for a zero total)."""
    return (total >= requested) & (free(total, used, ratio) >= requested)


def vcpus_fit(total: typing.Any, used: typing.Any, ratio: typing.Any,
              requested: typing.Any) -> typing.Any:
    """``fits`` for vCPUs: a node reporting 0 vCPUs always passes."""
    return (total == 0) | fits(total, used, ratio, requested)


def resource_fits(name: str, total: typing.Any, used: typing.Any,
                  ratio: typing.Any, requested: typing.Any) -> typing.Any:
    """``fits`` for the claimed resource ``name`` (``vcpus_fit`` for
    ``'vcpus'``)."""
    check = vcpus_fit if name == 'vcpus' else fits
    return check(total, used, ratio, requested)


def claim_amounts(spec_obj: typing.Any) -> Amounts:
    """The ``Amounts`` a claim takes for one instance of ``spec_obj``: the
    flavor's vCPUs and RAM, and its root plus ephemeral disk (swap is not
    local disk a claim counts; a boot-from-volume request's root disk is
    not local: ``RequestSpec.local_root_gb``).  Read once per
    ``fixed_amounts`` of ``spec_obj`` on this thread."""
    fixed = getattr(_fixed, 'entry', None)
    if fixed is None or fixed[0] is not spec_obj:
        return _read_amounts(spec_obj)
    if fixed[1] is None:
        fixed[1] = _read_amounts(spec_obj)
    return typing.cast(Amounts, fixed[1])


# This thread's ``[request spec, its Amounts or None before the first
# read]`` of the innermost ``fixed_amounts``.
_fixed = threading.local()


@contextlib.contextmanager
def fixed_amounts(spec_obj: typing.Any) -> Iterator[None]:
    """Within: ``claim_amounts(spec_obj)`` on this thread reads the
    request once.  For a decision's steps, during which nothing changes
    the request's flavor or volumes; other requests are read as ever."""
    outer = getattr(_fixed, 'entry', None)
    _fixed.entry = [spec_obj, None]
    try:
        yield
    finally:
        _fixed.entry = outer


def _read_amounts(spec_obj: typing.Any) -> Amounts:
    """``claim_amounts`` read from the request."""
    flavor = spec_obj.flavor
    return Amounts(flavor.vcpus, flavor.memory_mb,
                   spec_obj.local_root_gb + flavor.ephemeral_gb)


def whole_node_amounts(get: Callable[[str], typing.Any]) -> Amounts:
    """What a claim takes on a node consumed whole (a bare-metal node):
    its size, the ``CLAIMED`` totals.  ``get(attribute)`` reads one
    HostState's (scalars) or a HostTable's rows (arrays), as for
    ``claim_fits``."""
    return Amounts(*(get(resource.total) for resource in CLAIMED))


def leftover_share(get: Callable[[str], typing.Any], resource: Claimed,
                   requested: typing.Any) -> typing.Any:
    """The share of one claimed resource's limit a node keeps free after
    ``requested`` more, ``(total * ratio - used - requested) / (total *
    ratio)``: a float array, of one value for a HostState's scalars
    (``get`` as for ``claim_fits``); inf where the limit is 0 (the node
    has none of the resource).  The packing weighers rank by it."""
    limit = np.atleast_1d(np.asarray(
        get(resource.total) * get(resource.ratio), dtype=np.float64))
    left = limit - get(resource.used) - requested
    return np.divide(left, limit, out=np.full(limit.shape, np.inf),
                     where=limit > 0)


def claim_fits(get: Callable[[str], typing.Any],
               amounts: Amounts) -> typing.Any:
    """Whether ``amounts`` fit by every rule a claim enforces.

    ``get(attribute)`` reads a ``CLAIMED`` attribute: of one HostState
    (scalars, returns a bool) or of a HostTable's rows (arrays, returns
    a bool array).
    """
    result: typing.Any = True
    for resource in CLAIMED:
        result = result & resource_fits(
            resource.name, get(resource.total), get(resource.used),
            get(resource.ratio), getattr(amounts, resource.name))
    return np.asarray(result) if np.ndim(result) else bool(result)


def shortfalls(get: Callable[[str], typing.Any], amounts: Amounts
               ) -> list[tuple[str, typing.Any, int, typing.Any, typing.Any]]:
    """The claimed resources ``amounts`` do not fit in, each as
    ``(name, free, requested, total, ratio)``; empty when they fit.
    ``get`` reads scalars of one node (as for ``claim_fits``)."""
    found = []
    for resource in CLAIMED:
        total, used, ratio = (get(resource.total), get(resource.used),
                              get(resource.ratio))
        requested = getattr(amounts, resource.name)
        if not resource_fits(resource.name, total, used, ratio, requested):
            found.append((resource.name, free(total, used, ratio),
                          requested, total, ratio))
    return found


# Nova's RamFilter, CoreFilter and DiskFilter (and their Aggregate* and
# Exact* variants, and the live-migration checks) measure a resource of a
# host the same way; ``Measure`` says where its amounts are read.


class Measure(typing.NamedTuple):
    """How the filters measure one resource of a host.

    ``size``: the HostState attribute (and HostTable column) of the
    node's size, multiplied by ``scale`` into the request's unit (disk:
    GiB to MiB); ``free`` or ``used``: the attribute of what is left (the
    used amount is then ``total - free``) or of what is used; ``ratio``:
    the allocation ratio's name; ``request``: the RequestSpec attribute
    of the requested amount; ``limit_key``: the ``host_state.limits`` key
    the compute node's claim reads (the limit is divided by ``scale``);
    ``lenient``: Nova's CoreFilter rule (see ``filter_fits``).
    """

    name: str
    size: str
    scale: int
    free: str | None
    used: str | None
    ratio: str
    request: str
    limit_key: str
    lenient: bool = False

    def total(self, get: Callable[[str], typing.Any]) -> typing.Any:
        """The node's size in the request's unit (scalar or array)."""
        value = get(self.size)
        return value * self.scale if self.scale != 1 else value

    def in_use(self, get: Callable[[str], typing.Any],
               total: typing.Any) -> typing.Any:
        """What is used of ``total`` (``total - free`` or ``used``)."""
        if self.used is not None:
            return get(self.used)
        return total - get(typing.cast(str, self.free))

    def unused(self, get: Callable[[str], typing.Any]) -> typing.Any:
        """What is left without overcommit, in the attributes' own unit
        (the exact filters' amount)."""
        if self.free is not None:
            return get(self.free)
        return get(self.size) - get(typing.cast(str, self.used))

    def node_limit(self, limit: typing.Any) -> typing.Any:
        """``total * ratio`` in the unit of ``limits[limit_key]``."""
        return limit / self.scale if self.scale != 1 else limit


MEMORY_MB = Measure('memory_mb', 'total_usable_ram_mb', 1, 'free_ram_mb',
                    None, 'ram_allocation_ratio', 'memory_mb', 'memory_mb')
VCPUS = Measure('vcpus', 'vcpus_total', 1, None, 'vcpus_used',
                'cpu_allocation_ratio', 'vcpus', 'vcpu', lenient=True)
DISK_MB = Measure('disk_mb', 'total_usable_disk_gb', 1024, 'free_disk_mb',
                  None, 'disk_allocation_ratio',
                  'requested_resources_disk_mb', 'disk_gb')

# Verdicts of ``host_check``.
FITS = 'fits'
UNREPORTED = 'unreported'   # lenient: the node reports no size
TOO_BIG = 'too_big'         # larger than the node itself
SHORT = 'short'             # not enough left under the ratio


class Check(typing.NamedTuple):
    """The verdict of ``host_check`` on one host: ``verdict`` (``FITS``
    or why not), ``limit`` (``total * ratio``, None when not computed),
    ``available`` (``limit - used``, None when not computed) and
    ``node_limit``, the value to write in ``limits[limit_key]`` (None:
    write nothing)."""

    verdict: str
    limit: typing.Any = None
    available: typing.Any = None
    node_limit: typing.Any = None

    @property
    def fits(self) -> bool:
        return self.verdict in (FITS, UNREPORTED)


def host_check(measure: Measure, total: typing.Any, used: typing.Any,
               ratio_of: Callable[[], float],
               requested: typing.Any) -> Check:
    """The filters' rule on one host, in Nova's per-host steps.

    The rule of this module (``fits``): the node is at least as large as
    the request and ``total * ratio - used`` covers it.  A ``lenient``
    measure (vCPUs, Nova's CoreFilter) differs: a node reporting no size
    (0 or None) passes unchecked, the size check applies only when
    ``total * ratio`` is positive, and that limit is written for the
    compute node even when the host fails.  Otherwise the limit is
    written when the host passes.  ``ratio_of`` is called only when the
    size check leaves the answer open, as Nova asks for the ratio.
    """
    if measure.lenient:
        if not total:
            return Check(UNREPORTED)
        limit = total * ratio_of()
        written = limit if limit > 0 else None
        if limit > 0 and requested > total:
            return Check(TOO_BIG, limit, None, written)
    else:
        if total < requested:
            return Check(TOO_BIG)
        limit = total * ratio_of()
        written = None
    available = limit - used
    if available < requested:
        return Check(SHORT, limit, available, written)
    if not measure.lenient:
        written = measure.node_limit(limit)
    return Check(FITS, limit, available, written)


def filter_fits(measure: Measure, total: typing.Any, used: typing.Any,
                ratio: typing.Any, requested: typing.Any) -> typing.Any:
    """``host_check(...).fits`` over arrays (HostTable columns): ``fits``,
    or for a ``lenient`` measure Nova's CoreFilter rule."""
    if not measure.lenient:
        return fits(total, used, ratio, requested)
    limit = total * ratio
    too_big = (limit > 0) & (requested > total)
    return (total == 0) | (np.logical_not(too_big)
                           & (limit - used >= requested))


def node_limit(measure: Measure, total: typing.Any,
               ratio: float) -> typing.Any:
    """The ``limits[limit_key]`` ``host_check`` writes for a passing
    host (None: none)."""
    if measure.lenient:
        if not total:
            return None
        limit = total * ratio
        return limit if limit > 0 else None
    return measure.node_limit(total * ratio)
