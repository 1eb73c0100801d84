"""Fleets of compute nodes: reading, generating, seeding, heartbeats.

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

``generate_fleet`` builds a homogeneous fleet from a host shape
``vcpus:memory_mb:local_gb`` (e.g. ``64:262144:2000``; without
``local_gb`` the replay chooses the disk, see ``runner``), hosts named
``compute-0001``, ``compute-0002``, ... (node name = host name).

``seed_fleet`` writes a fleet into an empty database the way compute
services and an operator would: one ``nova-compute`` service per host
(alive now), one ``compute_nodes`` row per node with nothing used, and
the aggregates.  ``load_nodes`` reads the compute nodes back (the replay
always works from the rows, seeded or not).  ``heartbeat_services``
refreshes every compute service's ``last_seen_up`` in one UPDATE.
"""

import csv
import dataclasses

import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler.db import api as db

FLEET_COLUMNS = ('host', 'nodename', 'vcpus', 'memory_mb', 'local_gb')
OPTIONAL_COLUMNS = ('availability_zone', 'aggregates',
                    'cpu_allocation_ratio', 'ram_allocation_ratio',
                    'disk_allocation_ratio', 'hypervisor_type')
RATIO_NAMES = ('cpu_allocation_ratio', 'ram_allocation_ratio',
               'disk_allocation_ratio')
COMPUTE_BINARY = 'nova-compute'
COMPUTE_TOPIC = 'compute'
AZ_AGGREGATE_PREFIX = 'az-'
DEFAULT_HYPERVISOR_TYPE = 'QEMU'


class FleetError(ValueError):
    """The fleet cannot be read, generated or seeded."""


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """One compute node of a fleet: CPUs, RAM in MiB, disk in GiB."""

    host: str
    nodename: str
    vcpus: int
    memory_mb: int
    local_gb: int
    availability_zone: str | None = None
    aggregates: tuple = ()
    cpu_allocation_ratio: float | None = None
    ram_allocation_ratio: float | None = None
    disk_allocation_ratio: float | None = None
    hypervisor_type: str = DEFAULT_HYPERVISOR_TYPE


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
        **{name: _ratio(row, name, line) for name in RATIO_NAMES})


def read_fleet(path):
    """The HostSpecs of the fleet CSV ``path``, in file order.

    :raises FleetError: a missing column, a bad value, a duplicate
        (host, nodename) or no host at all.
    """
    with open(path, encoding='utf-8', newline='') as stream:
        reader = csv.DictReader(stream)
        missing = [name for name in FLEET_COLUMNS
                   if name not in (reader.fieldnames or ())]
        if missing:
            raise FleetError('%s: missing column(s) %s'
                             % (path, ', '.join(missing)))
        hosts = [parse_host(row, reader.line_num) for row in reader]
    check_fleet(hosts)
    return hosts


def check_fleet(hosts):
    """Raise FleetError when ``hosts`` is empty or repeats a node."""
    if not hosts:
        raise FleetError('the fleet has no compute node')
    seen = set()
    for spec in hosts:
        key = (spec.host, spec.nodename)
        if key in seen:
            raise FleetError('compute node %s:%s is listed twice' % key)
        seen.add(key)


def write_fleet(path, hosts):
    """Write ``hosts`` (HostSpecs) as a fleet CSV with every column."""
    with open(path, 'w', encoding='utf-8', newline='') as out:
        writer = csv.writer(out, lineterminator='\n')
        writer.writerow(FLEET_COLUMNS + OPTIONAL_COLUMNS)
        for spec in hosts:
            writer.writerow([
                spec.host, spec.nodename, spec.vcpus, spec.memory_mb,
                spec.local_gb, spec.availability_zone or '',
                ';'.join(spec.aggregates)] +
                ['' if getattr(spec, name) is None else getattr(spec, name)
                 for name in RATIO_NAMES] + [spec.hypervisor_type])


# ------------------------------------------------------------- generate --

def parse_host_shape(text):
    """``'vcpus:memory_mb:local_gb'`` -> ``(vcpus, memory_mb, local_gb)``
    (CPUs, MiB, GiB), each a positive integer; ``'vcpus:memory_mb'`` ->
    ``(vcpus, memory_mb, None)``, the disk left to the caller.

    :raises FleetError: not two or three positive integers.
    """
    parts = str(text).split(':')
    try:
        shape = tuple(int(part) for part in parts)
    except ValueError:
        shape = ()
    if len(shape) not in (2, 3) or min(shape) <= 0:
        raise FleetError('host shape %r is not vcpus:memory_mb[:local_gb] '
                         '(positive integers)' % (text,))
    return shape + (None,) * (3 - len(shape))


def generate_fleet(count, shape):
    """``count`` identical HostSpecs of ``shape`` (vcpus, memory_mb in
    MiB, local_gb in GiB), named ``compute-0001``... (at least 4 digits,
    so the names sort in creation order); node name = host name."""
    if count < 1:
        raise FleetError('a generated fleet needs at least one host')
    vcpus, memory_mb, local_gb = shape
    width = max(4, len(str(count)))
    names = ['compute-%0*d' % (width, number)
             for number in range(1, count + 1)]
    return [HostSpec(name, name, vcpus, memory_mb, local_gb)
            for name in names]


# ----------------------------------------------------------------- seed --

def compute_node_values(spec):
    """The ``compute_nodes`` row of an empty node (nothing used yet)."""
    values = {
        'host': spec.host, 'hypervisor_hostname': spec.nodename,
        'vcpus': spec.vcpus, 'memory_mb': spec.memory_mb,
        'local_gb': spec.local_gb, 'vcpus_used': 0, 'memory_mb_used': 0,
        'local_gb_used': 0, 'free_ram_mb': spec.memory_mb,
        'free_disk_gb': spec.local_gb, 'disk_available_least': spec.local_gb,
        'running_vms': 0, 'current_workload': 0,
        'hypervisor_type': spec.hypervisor_type,
        'hypervisor_version': 2011000,
        'cpu_info': '{"arch": "x86_64"}',
        'supported_instances': [['x86_64', 'kvm', 'hvm']],
        'stats': {'num_instances': 0, 'io_workload': 0},
    }
    for name in RATIO_NAMES:
        if getattr(spec, name) is not None:
            values[name] = getattr(spec, name)
    return values


def _service_values(host, now):
    return {'host': host, 'binary': COMPUTE_BINARY, 'topic': COMPUTE_TOPIC,
            'report_count': 1, 'last_seen_up': now}


def aggregate_members(hosts):
    """``{aggregate name: (metadata, [service host names])}`` for a
    fleet, aggregates and hosts in first-seen order.  A zone is the
    aggregate ``az-<zone>`` with ``{'availability_zone': zone}``."""
    members = {}
    for spec in hosts:
        wanted = [(name, {}) for name in spec.aggregates]
        if spec.availability_zone:
            wanted.append((AZ_AGGREGATE_PREFIX + spec.availability_zone,
                           {'availability_zone': spec.availability_zone}))
        for name, metadata in wanted:
            # dict keys keep first-seen order and make membership O(1).
            members.setdefault(name, (metadata, {}))[1][spec.host] = None
    return {name: (metadata, list(hosts))
            for name, (metadata, hosts) in members.items()}


def seed_fleet(ctx, hosts):
    """Write ``hosts`` (HostSpecs) into the database of ``ctx``: services,
    compute nodes (in list order, so their ids follow it) and aggregates.

    :raises FleetError: the database already has compute nodes.
    """
    check_fleet(hosts)
    existing = len(db.compute_node_get_ids(ctx))
    if existing:
        raise FleetError('the database already has %d compute node(s); '
                         'seed an empty database' % existing)
    now = timeutils.utcnow()
    services = {}
    for spec in hosts:
        if spec.host not in services:
            services[spec.host] = db.service_create(
                ctx, _service_values(spec.host, now))
        values = compute_node_values(spec)
        values['service_id'] = services[spec.host]['id']
        db.compute_node_create(ctx, values)
    for name, (metadata, members) in aggregate_members(hosts).items():
        aggregate = db.aggregate_create(ctx, name, metadata=metadata)
        for host in members:
            db.aggregate_add_host(ctx, aggregate['id'], host)


def load_nodes(ctx):
    """Every live compute node row of the database (dicts, by id).

    :raises FleetError: there is none (seed first).
    """
    rows = db.compute_node_get_all(ctx)
    if not rows:
        raise FleetError('the database has no compute node: seed it first '
                         '(scheduler-replay --seed-only)')
    return rows


def heartbeat_services(ctx, slices=1, index=0):
    """Record a heartbeat of the live ``nova-compute`` services in one
    UPDATE (``report_count + 1``, ``last_seen_up`` = ``updated_at`` =
    now), as their compute services would.  With ``slices`` > 1, only
    those whose ``id % slices == index``, so that a caller beating one
    slice at a time spreads the heartbeats as independent services do.
    Returns the row count."""
    table = db.SERVICES
    now = timeutils.utcnow()
    statement = (sa.update(table)
                 .where(table.c.binary == COMPUTE_BINARY,
                        table.c.deleted == 0,
                        table.c.id % slices == index)
                 .values(report_count=table.c.report_count + 1,
                         last_seen_up=now, updated_at=now))
    with db.context_manager.writer.using(ctx) as session:
        return session.execute(statement).rowcount
