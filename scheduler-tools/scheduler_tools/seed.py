"""The fleet seeder: compute nodes, their services and aggregates written
into a scheduler database, as compute services and an operator would.

The one module that puts fleets into databases, for the replay, the
benchmark and the tests:

``use_database(url)``
    Points ``scheduler.db.api`` at ``url``, creates the schema and
    returns an admin context.
``HostSpec``, ``compute_node_values``, ``aggregate_members``
    A compute node of a fleet (CPUs, RAM in MiB, disk in GiB, zone,
    aggregates, allocation ratios, hypervisor type, GPUs), its
    ``compute_nodes`` row with nothing used, and the aggregates of a
    fleet: a zone is the aggregate ``az-<zone>`` whose metadata sets
    ``availability_zone``.
``gpu_pci_stats``
    The ``pci_stats`` of a node's GPUs, as nova-compute reports PCI
    passthrough devices: one pool of the node's GPU model.
``seed_fleet(ctx, hosts)``
    Row by row through ``scheduler_tools.writers``, into a database
    without compute nodes: one ``nova-compute`` service per host (alive
    now), one ``compute_nodes`` row per node (ids in list order) and the
    aggregates.  The replay seeds this way.
``bulk_seed(ctx, services, compute_nodes, aggregates, now)``
    The same rows, complete, in a few bulk INSERTs in one transaction,
    so that 100,000 hosts take seconds; ``remove_seeded`` deletes them
    again.  The benchmark seeds this way.
``add_compute``, ``add_aggregate``
    One compute node (with its service) or one aggregate at a time, with
    the used amounts and columns a test chooses; ``make_spec`` and
    ``make_flavor`` build the RequestSpecs the tests ask for.
``heartbeat_services``
    A heartbeat of every compute service in one UPDATE, as the services
    themselves would send.
"""

import dataclasses
import datetime
import itertools
import uuid
import zlib

import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler.db import api as db
from scheduler.db import migration
from scheduler.db import service_row
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import request_spec
from scheduler_tools import writers

COMPUTE_BINARY = 'nova-compute'
COMPUTE_TOPIC = 'compute'
AZ_AGGREGATE_PREFIX = 'az-'
DEFAULT_HYPERVISOR_TYPE = 'QEMU'
RATIO_NAMES = ('cpu_allocation_ratio', 'ram_allocation_ratio',
               'disk_allocation_ratio')
# Rows per INSERT (and ids per DELETE) of the bulk path.
INSERT_CHUNK = 2000
# The PCI pools of GPUs (see ``gpu_pci_stats``).
GPU_VENDOR_ID = '10de'
GPU_DEV_TYPE = 'type-PCI'
GPU_MODEL_TAG = 'gpu_model'


class FleetError(ValueError):
    """The fleet cannot be read, generated or seeded."""


@dataclasses.dataclass(frozen=True)
class HostSpec:
    """One compute node of a fleet: CPUs, RAM in MiB, disk in GiB;
    ``gpus`` GPUs of model ``gpu_model`` as PCI passthrough devices."""

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
    gpus: int = 0
    gpu_model: str | None = None


def use_database(url):
    """Point the DB API at ``url``, sync the schema, return a context."""
    objects.register_all()
    writers.reset_engine(url)
    migration.db_sync(db.get_engine())
    return scheduler_context.get_admin_context()


def check_fleet(hosts):
    """Raise FleetError when ``hosts`` is empty, repeats a node, has GPUs
    without a model, or two GPU models share a product id."""
    if not hosts:
        raise FleetError('the fleet has no compute node')
    seen = set()
    models = {}
    for spec in hosts:
        key = (spec.host, spec.nodename)
        if key in seen:
            raise FleetError('compute node %s:%s is listed twice' % key)
        seen.add(key)
        if spec.gpus and not spec.gpu_model:
            raise FleetError('compute node %s:%s has GPUs but no GPU '
                             'model' % key)
        if spec.gpus:
            models.setdefault(gpu_product_id(spec.gpu_model),
                              set()).add(spec.gpu_model)
    for product, names in models.items():
        if len(names) > 1:
            raise FleetError('GPU models %s share the product id %s; '
                             'rename one' % (', '.join(sorted(names)),
                                             product))


# ----------------------------------------------------------------- GPUs --

def gpu_product_id(model):
    """The PCI ``product_id`` standing for GPU ``model``: the last four
    hexadecimal digits of the CRC-32 of its name (a fleet names models,
    not PCI ids; ``check_fleet`` refuses two models with one id)."""
    return '%04x' % (zlib.crc32(model.encode('utf-8')) & 0xffff)


def gpu_pci_stats(model, count):
    """The ``compute_nodes.pci_stats`` of a node with ``count`` free GPUs
    of ``model`` (None without GPUs): Nova's ``PciDevicePoolList``
    primitive with one pool, ``vendor_id`` GPU_VENDOR_ID,
    ``gpu_product_id(model)``, no NUMA node (the fleets say nothing of
    NUMA) and the tags ``dev_type: type-PCI`` and ``gpu_model: <model>``
    (the tag a ``[pci] device_spec`` entry would set)."""
    if not count:
        return None
    pool = {'vendor_id': GPU_VENDOR_ID,
            'product_id': gpu_product_id(model), 'numa_node': None,
            'count': count, 'tags': {'dev_type': GPU_DEV_TYPE,
                                     GPU_MODEL_TAG: model}}
    return {'nova_object.name': 'PciDevicePoolList',
            'nova_object.namespace': 'nova',
            'nova_object.version': '1.1',
            'nova_object.data': {'objects': [{
                'nova_object.name': 'PciDevicePool',
                'nova_object.namespace': 'nova',
                'nova_object.version': '1.1',
                'nova_object.data': pool}]}}


# ----------------------------------------------------------------- rows --

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
    if spec.gpus:
        values['pci_stats'] = gpu_pci_stats(spec.gpu_model, spec.gpus)
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


# ----------------------------------------------------------- row by row --

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
            services[spec.host] = writers.service_create(
                ctx, _service_values(spec.host, now))
        values = compute_node_values(spec)
        values['service_id'] = services[spec.host]['id']
        writers.compute_node_create(ctx, values)
    for name, (metadata, members) in aggregate_members(hosts).items():
        aggregate = writers.aggregate_create(ctx, name, metadata=metadata)
        for host in members:
            writers.aggregate_add_host(ctx, aggregate['id'], host)


def add_compute(ctx, host, node=None, vcpus=8, memory_mb=16384,
                local_gb=200, vcpus_used=0, memory_mb_used=0,
                local_gb_used=0, service=True, disabled=False,
                last_seen_up=None, **extra):
    """Add a compute node (and its nova-compute service row) to the DB.

    Free RAM and disk are derived from the totals and the used amounts;
    ``extra`` sets any other column.  Returns the compute node row dict.
    """
    if service:
        writers.service_create(ctx, {
            'host': host, 'binary': COMPUTE_BINARY, 'topic': COMPUTE_TOPIC,
            'report_count': 1, 'disabled': disabled,
            'last_seen_up': last_seen_up or timeutils.utcnow()})
    values = {
        'host': host, 'hypervisor_hostname': node or host,
        'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb,
        'vcpus_used': vcpus_used, 'memory_mb_used': memory_mb_used,
        'local_gb_used': local_gb_used,
        'free_ram_mb': memory_mb - memory_mb_used,
        'free_disk_gb': local_gb - local_gb_used,
        'hypervisor_type': DEFAULT_HYPERVISOR_TYPE,
        'hypervisor_version': 2011000,
        'cpu_info': '{"arch": "x86_64"}',
        'supported_instances': '[["x86_64", "kvm", "hvm"]]',
        'host_ip': '10.0.0.1', 'stats': '{}'}
    values.update(extra)
    return writers.compute_node_create(ctx, values)


def add_aggregate(ctx, name, hosts=(), metadata=None):
    """Create an aggregate with ``hosts`` and ``metadata``; return its dict."""
    agg = writers.aggregate_create(ctx, name, metadata=metadata or {})
    for host in hosts:
        writers.aggregate_add_host(ctx, agg['id'], host)
    return db.aggregate_get(ctx, agg['id'])


# ----------------------------------------------------------------- bulk --

@dataclasses.dataclass
class Seeded:
    """The ids of the rows ``bulk_seed`` wrote, and when it began (naive
    UTC): the scheduler services started on the fleet write their own
    ``nova-scheduler`` rows after that."""

    service_ids: list
    compute_node_ids: list
    aggregate_ids: list
    seeded_at: datetime.datetime


def _insert_many(session, table, rows):
    for start in range(0, len(rows), INSERT_CHUNK):
        session.execute(sa.insert(table), rows[start:start + INSERT_CHUNK])


def bulk_seed(ctx, services, compute_nodes, aggregates, now):
    """Write a fleet into the database of ``ctx``, which must hold no
    compute node (the caller checks), in one transaction; return a
    Seeded record (``seeded_at`` is ``now``).

    :param services: complete ``services`` rows, one ``nova-compute``
        service per host.
    :param compute_nodes: complete ``compute_nodes`` rows (JSON columns
        as text) but for ``service_id``, which becomes the id of the
        service of their ``host``; their ids follow the list order.
    :param aggregates: ``{name: (metadata, [host names])}``, as
        ``aggregate_members`` gives them; each aggregate's uuid is derived
        from its name and its rows are created at ``now``.
    """
    hosts = {row['host'] for row in services}
    with db.context_manager.writer.using(ctx) as session:
        _insert_many(session, db.SERVICES, services)
        service_ids = {
            host: service_id for host, service_id in session.execute(
                sa.select(db.SERVICES.c.host, db.SERVICES.c.id).where(
                    db.SERVICES.c.binary == COMPUTE_BINARY,
                    db.SERVICES.c.deleted == 0))
            if host in hosts}
        _insert_many(session, db.COMPUTE_NODES, [
            dict(row, service_id=service_ids[row['host']])
            for row in compute_nodes])
        node_ids = [
            node_id for node_id, host in session.execute(
                sa.select(db.COMPUTE_NODES.c.id, db.COMPUTE_NODES.c.host)
                .where(db.COMPUTE_NODES.c.deleted == 0)
                .order_by(db.COMPUTE_NODES.c.id))
            if host in hosts]
        aggregate_ids = _bulk_aggregates(session, aggregates, now)
    return Seeded(sorted(service_ids.values()), node_ids, aggregate_ids,
                  now)


def _bulk_aggregates(session, aggregates, now):
    aggregate_ids = []
    for name, (metadata, names) in aggregates.items():
        aggregate_id = session.execute(sa.insert(db.AGGREGATES).values(
            name=name, uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
            created_at=now)).inserted_primary_key[0]
        aggregate_ids.append(aggregate_id)
        if metadata:
            session.execute(sa.insert(db.AGGREGATE_METADATA), [
                {'aggregate_id': aggregate_id, 'key': key, 'value': value,
                 'created_at': now} for key, value in metadata.items()])
        _insert_many(session, db.AGGREGATE_HOSTS, [
            {'aggregate_id': aggregate_id, 'host': host, 'created_at': now}
            for host in names])
    return aggregate_ids


def remove_seeded(ctx, seeded):
    """Delete (for real) the rows ``bulk_seed`` wrote, and the
    ``nova-scheduler`` rows of the services started since, so that
    another fleet can be seeded into the same database."""
    with db.context_manager.writer.using(ctx) as session:
        session.execute(sa.delete(db.SERVICES).where(
            db.SERVICES.c.binary == service_row.BINARY,
            db.SERVICES.c.created_at >= seeded.seeded_at))
        for table, column in (
                (db.AGGREGATE_METADATA, db.AGGREGATE_METADATA.c.aggregate_id),
                (db.AGGREGATE_HOSTS, db.AGGREGATE_HOSTS.c.aggregate_id),
                (db.AGGREGATES, db.AGGREGATES.c.id)):
            session.execute(sa.delete(table).where(
                column.in_(seeded.aggregate_ids)))
        for table, ids in ((db.COMPUTE_NODES, seeded.compute_node_ids),
                           (db.SERVICES, seeded.service_ids)):
            for start in range(0, len(ids), INSERT_CHUNK):
                session.execute(sa.delete(table).where(
                    table.c.id.in_(ids[start:start + INSERT_CHUNK])))


# ----------------------------------------------------------- heartbeats --

def heartbeat_slices(slices):
    """The arguments of ``heartbeat_services`` (tuples) for a caller that
    beats one slice at a time, for ever: every service first (``()``),
    then each of the ``slices`` slices in turn."""
    return itertools.chain(
        [()], ((slices, index) for index in itertools.cycle(range(slices))))


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


# ------------------------------------------------------------- requests --

def make_flavor(memory_mb=512, vcpus=1, root_gb=1, ephemeral_gb=0, swap=0,
                extra_specs=None, name='m1.test', flavor_id=1):
    return flavor_obj.Flavor(
        id=flavor_id, name=name, flavorid=str(flavor_id),
        memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
        ephemeral_gb=ephemeral_gb, swap=swap, extra_specs=extra_specs or {},
        is_public=True, disabled=False, projects=[], rxtx_factor=1.0)


def make_spec(num_instances=1, **kwargs):
    """A RequestSpec with defaults; flavor keywords go to ``make_flavor``."""
    flavor_keys = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap',
                   'extra_specs')
    flavor = make_flavor(**{k: kwargs.pop(k) for k in flavor_keys
                            if k in kwargs})
    spec = request_spec.RequestSpec(
        flavor=flavor, num_instances=num_instances,
        instance_uuid=kwargs.pop('instance_uuid', str(uuid.uuid4())),
        project_id=kwargs.pop('project_id', 'project-1'), **kwargs)
    return spec.ensure_defaults()
