"""Host NUMA topologies: the data classes, parsing and writing back.

``parse_host_topology`` reads the ``compute_nodes.numa_topology`` column
(Nova's ``NUMATopology`` primitive or a plain form) into frozen
``HostNUMATopology`` objects; ``topology_to_raw`` writes one back in the
shape it was read from.  Units: memory in MiB, page sizes in KiB.  The
formats are described in docs/numa.rst; ``scheduler.resources.numa`` does the
fitting.
"""

import dataclasses
import functools
import json
from typing import Any

from scheduler import exception

FORMAT_PRIMITIVE = 'primitive'
FORMAT_PLAIN = 'plain'

_DATA = 'nova_object.data'


class InvalidNUMATopology(exception.Invalid):
    """A ``numa_topology`` value that cannot be read."""

    msg_fmt = 'Invalid host NUMA topology: %(reason)s'


@dataclasses.dataclass(frozen=True)
class MemPages:
    """Pages of one size in one cell: counts of pages of ``size_kb`` KiB."""

    size_kb: int
    total: int
    used: int = 0
    reserved: int = 0

    @property
    def free(self) -> int:
        return self.total - self.used - self.reserved

    @property
    def free_kb(self) -> int:
        return self.free * self.size_kb


@dataclasses.dataclass(frozen=True)
class HostNUMACell:
    """One host NUMA cell (memory in MiB)."""

    id: int
    cpuset: frozenset
    memory: int
    cpu_usage: int = 0
    memory_usage: int = 0
    pinned_cpus: frozenset = frozenset()
    siblings: tuple = ()
    mempages: tuple = ()
    pcpuset: frozenset | None = None

    @property
    def avail_memory(self) -> int:
        """Memory not used by guests, MiB (negative when overcommitted)."""
        return self.memory - self.memory_usage

    def usable_cpus(self, pinned: bool) -> frozenset:
        """The CPUs a pinned (``pinned`` True) or unpinned guest may use."""
        if pinned and self.pcpuset is not None:
            return self.pcpuset
        return self.cpuset

    @property
    def free_pcpus(self) -> frozenset:
        """CPUs a pinned guest could still get."""
        return self.usable_cpus(True) - self.pinned_cpus

    @property
    def threads_per_core(self) -> int:
        return max((len(group) for group in self.siblings), default=1)

    def core_of(self, cpu: int) -> frozenset:
        """The sibling group holding ``cpu`` (``{cpu}`` when none)."""
        for group in self.siblings:
            if cpu in group:
                return group
        return frozenset((cpu,))


@dataclasses.dataclass(frozen=True)
class HostNUMATopology:
    """A host's NUMA cells; ``fmt`` and ``raw`` remember the stored shape
    so that ``topology_to_raw`` can write it back."""

    cells: tuple
    fmt: str = FORMAT_PLAIN
    raw: str | None = dataclasses.field(default=None, compare=False,
                                        repr=False)


# -- parsing ----------------------------------------------------------------

def _int(data: dict, key: str, default: int | None = None) -> int:
    value = data.get(key)
    if value is None:
        if default is None:
            raise InvalidNUMATopology(reason='a cell has no %r' % key)
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidNUMATopology(reason='%s=%r is not a number'
                                  % (key, value))
    return int(value)


def _cpus(data: dict, key: str, default: Any = ()) -> frozenset:
    value = data.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(
            isinstance(cpu, int) and not isinstance(cpu, bool)
            for cpu in value):
        raise InvalidNUMATopology(reason='%s=%r is not a list of CPU ids'
                                  % (key, value))
    return frozenset(value)


def _data(entry: Any) -> dict:
    if not isinstance(entry, dict):
        raise InvalidNUMATopology(reason='%r is not an object' % (entry,))
    data = entry.get(_DATA, entry)
    if not isinstance(data, dict):
        raise InvalidNUMATopology(reason='%r is not an object' % (entry,))
    return data


def _cell_from_dict(entry: Any) -> HostNUMACell:
    data = _data(entry)
    siblings = data.get('siblings') or []
    mempages = data.get('mempages') or []
    if not isinstance(siblings, list) or not isinstance(mempages, list):
        raise InvalidNUMATopology(reason='siblings and mempages must be '
                                  'lists')
    pcpuset = None
    if data.get('pcpuset') is not None:
        pcpuset = _cpus(data, 'pcpuset')
    pages = []
    for page in mempages:
        page = _data(page)
        pages.append(MemPages(size_kb=_int(page, 'size_kb'),
                              total=_int(page, 'total'),
                              used=_int(page, 'used', 0),
                              reserved=_int(page, 'reserved', 0)))
    groups = [_cpus({'siblings': group}, 'siblings') for group in siblings]
    return HostNUMACell(
        id=_int(data, 'id'), cpuset=_cpus(data, 'cpuset'),
        memory=_int(data, 'memory'), cpu_usage=_int(data, 'cpu_usage', 0),
        memory_usage=_int(data, 'memory_usage', 0),
        pinned_cpus=_cpus(data, 'pinned_cpus'),
        siblings=tuple(sorted((group for group in groups if group),
                              key=min)),
        mempages=tuple(pages), pcpuset=pcpuset)


def _topology_from_dict(value: dict, raw_text: str) -> HostNUMATopology:
    if _DATA in value:
        fmt = FORMAT_PRIMITIVE
        data = value[_DATA]
    elif 'cells' in value:
        fmt = FORMAT_PLAIN
        data = value
    else:
        raise InvalidNUMATopology(reason='no "cells" in %r' % (value,))
    if not isinstance(data, dict) or not isinstance(data.get('cells'), list):
        raise InvalidNUMATopology(reason='"cells" is not a list')
    cells = tuple(_cell_from_dict(cell) for cell in data['cells'])
    if len({cell.id for cell in cells}) != len(cells):
        raise InvalidNUMATopology(reason='duplicate cell ids')
    return HostNUMATopology(cells=cells, fmt=fmt, raw=raw_text)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> HostNUMATopology | None:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidNUMATopology(reason='not JSON: %s' % exc) from exc
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidNUMATopology(reason='not a JSON object')
    return _topology_from_dict(value, text)


def parse_host_topology(value: Any) -> HostNUMATopology | None:
    """The HostNUMATopology of a ``numa_topology`` value, or None.

    ``value``: None or ``''`` (no topology: None), a JSON string, its
    decoded dict, or a HostNUMATopology (returned as is).  Raises
    ``InvalidNUMATopology`` when it cannot be read.
    """
    if value is None or value == '':
        return None
    if isinstance(value, HostNUMATopology):
        return value
    if isinstance(value, bytes):
        value = value.decode('utf-8')
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, dict):
        return _topology_from_dict(value, json.dumps(value))
    raise InvalidNUMATopology(reason='unexpected %s' % type(value).__name__)


# -- writing back -----------------------------------------------------------

def _cell_fields(cell: HostNUMACell) -> dict[str, Any]:
    fields = {'id': cell.id, 'cpuset': sorted(cell.cpuset),
              'memory': cell.memory, 'cpu_usage': cell.cpu_usage,
              'memory_usage': cell.memory_usage,
              'pinned_cpus': sorted(cell.pinned_cpus),
              'siblings': [sorted(group) for group in cell.siblings]}
    if cell.pcpuset is not None:
        fields['pcpuset'] = sorted(cell.pcpuset)
    return fields


def _page_fields(page: MemPages) -> dict[str, int]:
    return {'size_kb': page.size_kb, 'total': page.total, 'used': page.used,
            'reserved': page.reserved}


def _primitive(name: str, version: str, data: dict) -> dict[str, Any]:
    return {'nova_object.name': name, 'nova_object.namespace': 'nova',
            'nova_object.version': version, _DATA: data,
            'nova_object.changes': sorted(data)}


def _fresh_dict(topology: HostNUMATopology) -> dict[str, Any]:
    cells = []
    for cell in topology.cells:
        pages = [_page_fields(page) for page in cell.mempages]
        fields = _cell_fields(cell)
        if topology.fmt == FORMAT_PRIMITIVE:
            fields['mempages'] = [_primitive('NUMAPagesTopology', '1.1', p)
                                  for p in pages]
            cells.append(_primitive(
                'NUMACell', '1.4' if cell.pcpuset is not None else '1.2',
                fields))
        else:
            fields['mempages'] = pages
            cells.append(fields)
    if topology.fmt == FORMAT_PRIMITIVE:
        return _primitive('NUMATopology', '1.2', {'cells': cells})
    return {'cells': cells}


def topology_to_dict(topology: HostNUMATopology) -> dict[str, Any]:
    """The topology as a JSON-able dict in its own shape (``fmt``).

    When it was parsed from JSON, that JSON is the template: only the
    usage fields (``cpu_usage``, ``memory_usage``, ``pinned_cpus``, pages
    ``used``) are replaced, every other key is kept.
    """
    if topology.raw is None:
        return _fresh_dict(topology)
    value = json.loads(topology.raw)
    data = value.get(_DATA, value)
    if len(data['cells']) != len(topology.cells):
        return _fresh_dict(topology)
    for entry, cell in zip(data['cells'], topology.cells, strict=True):
        cell_data = entry.get(_DATA, entry)
        cell_data['cpu_usage'] = cell.cpu_usage
        cell_data['memory_usage'] = cell.memory_usage
        cell_data['pinned_cpus'] = sorted(cell.pinned_cpus)
        by_size = {page.size_kb: page for page in cell.mempages}
        for page_entry in cell_data.get('mempages') or []:
            page_data = page_entry.get(_DATA, page_entry)
            page = by_size.get(page_data.get('size_kb'))
            if page is not None:
                page_data['used'] = page.used
        if _DATA in entry:
            changes = set(entry.get('nova_object.changes') or [])
            changes.update(('cpu_usage', 'memory_usage', 'pinned_cpus'))
            entry['nova_object.changes'] = sorted(changes)
    return value


def topology_to_raw(topology: HostNUMATopology | None, like: Any) -> Any:
    """``topology`` in the type of ``like`` (the value it was read from):
    a JSON string for a string, a dict for a dict, else the object."""
    if topology is None:
        return None
    if isinstance(like, (str, bytes)):
        return json.dumps(topology_to_dict(topology), sort_keys=True)
    if isinstance(like, dict):
        return topology_to_dict(topology)
    return topology
