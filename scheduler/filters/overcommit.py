"""The RAM, vCPU and disk filters' shared form.

Nova's RamFilter, CoreFilter and DiskFilter apply one capacity rule
(``scheduler.resources.capacity.host_check`` per host,
``capacity.filter_fits`` over a HostTable) to the resource their
``capacity.Measure`` names, with the allocation ratio their
``_get_<ratio name>(host_state, spec_obj)`` hook gives (Nova's hook
names: ``_get_ram_allocation_ratio``, ``_get_cpu_allocation_ratio``,
``_get_disk_allocation_ratio``).  A subclass sets ``measure``, the two
log messages and the hook; the Aggregate* variants only override the
hook.
"""

import functools
import typing

import numpy as np
import numpy.typing as npt
from oslo_log import log as logging

from scheduler import filters
from scheduler import loadables
from scheduler.resources import capacity

if typing.TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState
    from scheduler.view.host_table import HostTable

LOG = logging.getLogger(__name__)

# Nova's log messages, by ``Measure.name``: for a host larger than itself
# and for one short of room (keys: host_state, requested, total, usable).
MESSAGES = {
    capacity.MEMORY_MB.name: (
        '%(host_state)s does not have %(requested)d MB of usable RAM in '
        'total (%(total)d MB)',
        '%(host_state)s does not have %(requested)d MB usable RAM, it only '
        'has %(usable)s MB usable RAM'),
    capacity.VCPUS.name: (
        '%(host_state)s does not have %(requested)d vCPUs in total '
        '(%(total)d)',
        '%(host_state)s does not have %(requested)d usable vCPUs, it only '
        'has %(usable)s usable vCPUs'),
    capacity.DISK_MB.name: (
        '%(host_state)s does not have %(requested)d MB of usable disk in '
        'total (%(total)d MB)',
        '%(host_state)s does not have %(requested)d MB usable disk, it only '
        'has %(usable)s MB usable disk'),
}


# ``explain``'s words, by ``Measure.name``: (group label, resource,
# unit of the request and of the check).
EXPLAINED = {
    capacity.MEMORY_MB.name: ('insufficient RAM', 'RAM', ' MiB'),
    capacity.VCPUS.name: ('insufficient vCPUs', 'vCPUs', ''),
    capacity.DISK_MB.name: ('insufficient disk', 'disk', ' MiB'),
}


def amount(value: typing.Any) -> str:
    """``1,536`` or ``1,536.5``: an amount as ``explain`` prints it."""
    if value is None:
        return 'none'
    if float(value) == int(value):
        return '{:,}'.format(int(value))
    return '{:,.1f}'.format(value)


def allocation_ratio_rows(host_filter: typing.Any, table: 'HostTable',
                          rows: npt.NDArray[np.intp], spec_obj: typing.Any,
                          ratio_name: str) -> npt.NDArray[np.float64]:
    """The ratio ``host_filter._get_<ratio_name>(host_state, spec_obj)``
    gives each host of ``rows`` (a HostTable's intp row array), as a float
    array: the table's column of the host's own ratio when the filter says
    it uses that (``uses_host_ratio``), the hook's value cached per host
    when it says the request does not matter (``ratio_ignores_request``),
    else the hook called for each host.  Each flag counts only when set
    by the class that defines the hook."""
    hook = '_get_' + ratio_name
    ratio_of = getattr(host_filter, hook)
    if loadables.declares(host_filter, 'uses_host_ratio', (hook,)):
        return typing.cast('npt.NDArray[np.float64]',
                           table.columns[ratio_name][rows])
    if loadables.declares(host_filter, 'ratio_ignores_request',
                          (hook,)):
        return typing.cast('npt.NDArray[np.float64]', table.memo(
            host_filter, 'ratio', lambda state: ratio_of(state, spec_obj),
            rows, dtype=float))
    return np.fromiter((ratio_of(state, spec_obj)
                        for state in table.states_at(rows)),
                       dtype=float, count=len(rows))


def column_reader(table: 'HostTable', rows: npt.NDArray[np.intp]
                  ) -> tuple[typing.Callable[[str], typing.Any], bool]:
    """``(get, single)``: ``get(name)`` reads column ``name`` of ``rows``
    of ``table``: an array, or, when ``single`` (one row, as a later
    instance of a request filters the host it consumed from), that
    row's value as a Python scalar: the same floating-point rules cost
    less on scalars than on one-element arrays (results are the same:
    a float64 element is an IEEE double either way)."""
    columns = table.columns
    if len(rows) == 1:
        row = int(rows[0])
        return (lambda name: columns[name][row].item()), True
    return (lambda name: columns[name][rows]), False


def as_mask(result: typing.Any, single: bool) -> npt.NDArray[np.bool_]:
    """A bool array of a ``host_mask`` computed with ``column_reader``:
    ``result`` as is, or one element when ``single``."""
    if single:
        return np.array([bool(result)])
    return typing.cast('npt.NDArray[np.bool_]', result)


class OvercommitFilter(filters.BaseHostFilter):
    """Free ``measure`` after overcommit covers the request (the rule of
    ``capacity.host_check``), writing the limit the compute node's claim
    enforces.  Not a plug-in itself: RamFilter, CoreFilter, DiskFilter
    and their variants are."""

    HOST_LOCAL = True

    RUN_ON_REBUILD = False

    measure: typing.ClassVar[capacity.Measure]

    def allocation_ratio(self, host_state: 'HostState',
                         spec_obj: 'RequestSpec') -> float:
        """The ratio that applies to ``host_state``: the value of the
        class's ``_get_<measure.ratio>`` hook."""
        hook = getattr(self, '_get_' + self.measure.ratio)
        return typing.cast(float, hook(host_state, spec_obj))

    def host_passes(self, host_state: 'HostState',
                    spec_obj: 'RequestSpec') -> bool:
        measure = self.measure
        get = functools.partial(getattr, host_state)
        requested = getattr(spec_obj, measure.request)
        total = measure.total(get)
        check = capacity.host_check(
            measure, total, measure.in_use(get, total),
            lambda: self.allocation_ratio(host_state, spec_obj), requested)
        if check.node_limit is not None:
            host_state.limits[measure.limit_key] = check.node_limit
        values = {'host_state': host_state, 'requested': requested,
                  'total': total, 'usable': check.available}
        if check.verdict == capacity.UNREPORTED:
            LOG.warning('%(host_state)s reports no vCPUs; assuming its CPU '
                        'collection is broken and letting it pass', values)
        elif check.verdict != capacity.FITS:
            too_big, short = MESSAGES[measure.name]
            LOG.debug(too_big if check.verdict == capacity.TOO_BIG else short,
                      values)
        return check.fits

    def explain(self, host_state: 'HostState',
                spec_obj: 'RequestSpec') -> str:
        """``1,536 MiB free RAM after ratio 1.5, 2,048 MiB asked`` (free:
        ``total * ratio - used``), or ``4 vCPUs asked, more than the
        host's 2 in total`` (no instance overcommits against itself)."""
        measure = self.measure
        _label, noun, unit = EXPLAINED[measure.name]
        get = functools.partial(getattr, host_state)
        requested = getattr(spec_obj, measure.request)
        total = measure.total(get)
        ratio = self.allocation_ratio(host_state, spec_obj)
        check = capacity.host_check(measure, total,
                                    measure.in_use(get, total),
                                    lambda: ratio, requested)
        if check.verdict == capacity.TOO_BIG:
            return '%s%s %s asked, more than the host\'s %s%s in total' % (
                amount(requested), unit, noun, amount(total), unit)
        if check.verdict == capacity.SHORT:
            return '%s%s free %s after ratio %s, %s%s asked' % (
                amount(check.available), unit, noun, ratio,
                amount(requested), unit)
        return super().explain(host_state, spec_obj)

    def explain_group(self, host_state: 'HostState',
                      spec_obj: 'RequestSpec') -> str:
        return EXPLAINED[self.measure.name][0]

    def host_mask(self, table: 'HostTable', rows: npt.NDArray[np.intp],
                  spec_obj: 'RequestSpec') -> npt.NDArray[np.bool_]:
        measure = self.measure
        get, single = column_reader(table, rows)
        total = measure.total(get)
        used = measure.in_use(get, total)
        ratio: typing.Any = allocation_ratio_rows(self, table, rows, spec_obj,
                                                  measure.ratio)
        if single:
            ratio = ratio[0].item()
        return as_mask(capacity.filter_fits(
            measure, total, used, ratio, getattr(spec_obj, measure.request)),
            single)

    def apply_limits(self, host_state: 'HostState',
                     spec_obj: 'RequestSpec') -> None:
        measure = self.measure
        total = measure.total(functools.partial(getattr, host_state))
        if measure.lenient and not total:
            return
        limit = capacity.node_limit(
            measure, total, self.allocation_ratio(host_state, spec_obj))
        if limit is not None:
            host_state.limits[measure.limit_key] = limit
