"""Fleets of compute nodes: reading, writing and generating them.

A fleet CSV has one compute node per row and a header line.  Columns:

``host``, ``nodename``
    The service host name and the hypervisor (node) name; several nodes
    may share a host.
``vcpus``, ``memory_mb``, ``local_gb``
    Physical capacity: CPUs, RAM in MiB, local disk in GiB.
``availability_zone`` (optional)
    The host's zone: it joins the aggregate ``az-<zone>`` whose metadata
    sets ``availability_zone``.
``aggregates`` (optional)
    ``;``-separated aggregate names the host belongs to.
``cpu_allocation_ratio``, ``ram_allocation_ratio``,
``disk_allocation_ratio`` (optional)
    Written to the compute node row; empty leaves them NULL, so the
    scheduler's ``[DEFAULT]`` options (or Nova's 16.0 / 1.5 / 1.0) apply.
``hypervisor_type`` (optional)
    Default ``QEMU``.
``gpus``, ``gpu_model`` (optional)
    GPUs of the node (default 0) and their model (needed with GPUs): a
    PCI device pool of that model in the row's ``pci_stats``
    (``seed.gpu_pci_stats``).

``generate_fleet`` builds a homogeneous fleet from a host shape
``vcpus:memory_mb[:local_gb[:gpus:gpu_model]]`` (``HostShape``, e.g.
``64:262144:2000``, or ``96:393216::8:G2`` for 8 GPUs of model ``G2``
per host; without ``local_gb`` the replay chooses the disk, see
``options``), hosts named ``compute-0001``, ``compute-0002``, ...
(node name = host name).

A fleet is a list of ``scheduler_tools.seed.HostSpec``; the seeder
(``seed.seed_fleet``) writes it into an empty database the way compute
services and an operator would.  ``load_nodes`` reads the compute nodes
back (the replay always works from the rows, seeded or not).
"""

import csv
import typing

from scheduler.db import api as db
from scheduler_tools.replay import trace
from scheduler_tools.seed import DEFAULT_HYPERVISOR_TYPE
from scheduler_tools.seed import RATIO_NAMES
from scheduler_tools.seed import FleetError
from scheduler_tools.seed import HostSpec
from scheduler_tools.seed import check_fleet

FLEET_COLUMNS = ('host', 'nodename', 'vcpus', 'memory_mb', 'local_gb')
OPTIONAL_COLUMNS = ('availability_zone', 'aggregates',
                    'cpu_allocation_ratio', 'ram_allocation_ratio',
                    'disk_allocation_ratio', 'hypervisor_type')
GPU_COLUMNS = ('gpus', 'gpu_model')


# ----------------------------------------------------------------- read --

def _cell(row, name):
    return (row.get(name) or '').strip()


def _count(row, name, line):
    text = _cell(row, name)
    try:
        value = int(text)
    except ValueError:
        raise FleetError('line %d: %s %r is not an integer'
                         % (line, name, text)) from None
    if value < 0:
        raise FleetError('line %d: %s %r is negative' % (line, name, text))
    return value


def _ratio(row, name, line):
    text = _cell(row, name)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise FleetError('line %d: %s %r is not a number'
                         % (line, name, text)) from None
    if not value > 0:
        raise FleetError('line %d: %s %r must be positive'
                         % (line, name, text))
    return value


def parse_host(row, line=0):
    """Build a HostSpec from a CSV row dict; ``line`` numbers errors.

    :raises FleetError: an empty name or a bad number.
    """
    for name in ('host', 'nodename'):
        if not _cell(row, name):
            raise FleetError('line %d: %s is empty' % (line, name))
    aggregates = tuple(name.strip()
                       for name in _cell(row, 'aggregates').split(';')
                       if name.strip())
    return HostSpec(
        host=_cell(row, 'host'), nodename=_cell(row, 'nodename'),
        vcpus=_count(row, 'vcpus', line),
        memory_mb=_count(row, 'memory_mb', line),
        local_gb=_count(row, 'local_gb', line),
        availability_zone=_cell(row, 'availability_zone') or None,
        aggregates=aggregates,
        hypervisor_type=(_cell(row, 'hypervisor_type') or
                         DEFAULT_HYPERVISOR_TYPE),
        gpus=_count(row, 'gpus', line) if _cell(row, 'gpus') else 0,
        gpu_model=_cell(row, 'gpu_model') or None,
        **{name: _ratio(row, name, line) for name in RATIO_NAMES})


def read_fleet(path):
    """The HostSpecs of the fleet CSV ``path``, in file order.

    :raises FleetError: a missing column, a bad value, a duplicate
        (host, nodename) or no host at all.
    """
    hosts = [parse_host(row, line)
             for line, row in trace.csv_rows(path, FLEET_COLUMNS,
                                             FleetError)]
    check_fleet(hosts)
    return hosts


def write_fleet(path, hosts):
    """Write ``hosts`` (HostSpecs) as a fleet CSV with every column (the
    GPU columns only when a host has GPUs)."""
    with_gpus = any(spec.gpus for spec in hosts)
    with open(path, 'w', encoding='utf-8', newline='') as out:
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(FLEET_COLUMNS + OPTIONAL_COLUMNS +
                        (GPU_COLUMNS if with_gpus else ()))
        for spec in hosts:
            writer.writerow([
                spec.host, spec.nodename, spec.vcpus, spec.memory_mb,
                spec.local_gb, spec.availability_zone or '',
                ';'.join(spec.aggregates)] +
                ['' if getattr(spec, name) is None else getattr(spec, name)
                 for name in RATIO_NAMES] + [spec.hypervisor_type] +
                ([spec.gpus, spec.gpu_model or ''] if with_gpus else []))


# ------------------------------------------------------------- generate --

class HostShape(typing.NamedTuple):
    """The capacity of each host of a generated fleet: CPUs, RAM in MiB,
    local disk in GiB (None: left to the replay, see ``options``) and
    ``gpus`` PCI passthrough GPUs of model ``gpu_model`` (None without
    GPUs)."""

    vcpus: int
    memory_mb: int
    local_gb: int | None
    gpus: int = 0
    gpu_model: str | None = None

    def __str__(self):
        """The shape as ``--host-shape`` spells it."""
        fields = [self.vcpus, self.memory_mb,
                  '' if self.local_gb is None else self.local_gb]
        if self.gpus:
            fields += [self.gpus, self.gpu_model]
        return ':'.join(map(str, fields)).rstrip(':')


def parse_host_shape(text):
    """``'vcpus:memory_mb[:local_gb[:gpus:gpu_model]]'`` -> a HostShape;
    ``local_gb`` may be left empty (``96:393216::8:G2``), the disk then
    left to the caller.

    :raises FleetError: the counts are not positive integers (``gpus``:
        not negative), or GPUs come without a model.
    """
    parts = str(text).split(':')
    disk = parts[2] if len(parts) > 2 else None
    gpus = parts[3:]
    try:
        if len(parts) not in (2, 3, 5) or disk == '' and not gpus:
            raise ValueError(text)
        shape = HostShape(int(parts[0]), int(parts[1]),
                          int(disk) if disk else None,
                          int(gpus[0]) if gpus else 0,
                          gpus[1].strip() or None if gpus else None)
        if min(shape.vcpus, shape.memory_mb) <= 0 or shape.gpus < 0 or (
                shape.local_gb is not None and shape.local_gb <= 0):
            raise ValueError(text)
    except ValueError:
        raise FleetError('host shape %r is not vcpus:memory_mb[:local_gb'
                         '[:gpus:gpu_model]] (positive integers)'
                         % (text,)) from None
    if shape.gpus and not shape.gpu_model:
        raise FleetError('host shape %r has GPUs but no GPU model'
                         % (text,))
    return shape if shape.gpus else shape._replace(gpu_model=None)


def generate_fleet(count, shape):
    """``count`` identical HostSpecs of ``shape`` (a HostShape, or a
    ``(vcpus, memory_mb, local_gb)`` tuple; its disk given), named
    ``compute-0001``... (at least 4 digits, so the names sort in
    creation order); node name = host name."""
    if count < 1:
        raise FleetError('a generated fleet needs at least one host')
    shape = HostShape(*shape)
    width = max(4, len(str(count)))
    names = ['compute-%0*d' % (width, number)
             for number in range(1, count + 1)]
    return [HostSpec(name, name, shape.vcpus, shape.memory_mb,
                     shape.local_gb, gpus=shape.gpus,
                     gpu_model=shape.gpu_model)
            for name in names]


# ------------------------------------------------------------ read back --

def load_nodes(ctx):
    """Every live compute node row of the database (dicts, by id).

    :raises FleetError: there is none (seed first).
    """
    rows = db.compute_node_get_all(ctx)
    if not rows:
        raise FleetError('the database has no compute node: seed it first '
                         '(scheduler-replay --seed-only)')
    return rows
