"""The versus-nova mode's compute nodes, as nova-compute 34 writes them.

``write_fleet`` writes ``workload.generate_hosts`` into Nova's databases
made by ``versus_nova_venv.make_databases`` with bulk SQL (a few
statements at 10,000 nodes): the ``services`` rows (``nova-compute``,
Nova 34's service version, ``last_seen_up`` now), the ``compute_nodes``
rows (the node's used amounts, effective allocation ratios, ``cpu_info``,
``stats``, an empty ``pci_stats`` as Nova serialises it, no NUMA
topology, ``mapped`` 1), the API database's host mappings, and the
resource providers in Placement through its REST API from threads
(``placement_fleet.seed_providers``): VCPU / MEMORY_MB / DISK_GB with
the node's ratios and ``reserved_host_memory_mb``, the libvirt driver's
traits plus ``OWNER_NOVA`` (and ``COMPUTE_STATUS_DISABLED`` on a
disabled service's node), the node's used amounts as one allocation.

``Tracker`` then plays nova-compute while the schedulers run: a thread
keeps every service up (``updated_at`` / ``last_seen_up`` every
``HEARTBEAT_S``, a tenth of the services every tenth of that, as
independent nova-computes spread their beats: neither scheduler meets
the whole fleet's heartbeats in one refresh) and applies the instances
placed, as the resource tracker would after a claim: the node's
``*_used``, ``free_*``, ``running_vms`` and ``updated_at``, and an
``instances`` row (host, node, flavor sizes, ``vm_state`` active).
``reset`` puts the fleet back to its seeded state between phases
(instances, usage, Placement allocations of the phase's consumers, the
SQL mode's claims).
"""

import dataclasses
import datetime
import queue
import threading
import time
import uuid

import sqlalchemy as sa

from scheduler.placement.candidates import Provider
from scheduler.resources import ratios
from scheduler_tools import seed
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import placement_fleet
from scheduler_tools.bench import placement_rest
from scheduler_tools.bench import workload

# Nova 34's ``nova.objects.service.SERVICE_VERSION``.
SERVICE_VERSION = 74
OWNER_TRAIT = 'OWNER_NOVA'
HEARTBEAT_S = 10.0
HEARTBEAT_SLICES = 10
# Consumers per ``POST /allocations`` that deletes a phase's claims
# (microversion 1.13 to 1.27: several consumers, no consumer
# generation; empty allocations delete a consumer's).
RELEASE_CHUNK = 500
RELEASE_MICROVERSION = '1.27'
PROJECT = 'bench-project'
# Providers written through Placement's REST API (four requests each:
# about 7 providers/s on the 2 busy cores measured); more are written
# straight into its database (``write_providers_sql``).
REST_MAX_PROVIDERS = 2000
USER = 'bench-user'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


@dataclasses.dataclass
class Node:
    """A compute node's seeded state: sizes, used amounts, ratios."""

    host: str
    uuid: str
    vcpus: int
    memory_mb: int
    local_gb: int
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    cpu_ratio: float
    ram_ratio: float
    disk_ratio: float
    reserved_mb: int = placement_fleet.RESERVED_HOST_MEMORY_MB


def nodes_of(hosts):
    """The ``Node`` of each BenchHost (ratios resolved as nova-compute
    resolves them: the node's own, else Nova's initial ones)."""
    found = []
    for host in hosts:
        spec = host.spec
        cpu, ram, disk = (ratios.resolve_allocation_ratio(
            name, getattr(spec, name)) for name in seed.RATIO_NAMES)
        found.append(Node(spec.host, str(uuid.uuid5(uuid.NAMESPACE_DNS,
                                                    spec.host)),
                          spec.vcpus, spec.memory_mb, spec.local_gb,
                          host.vcpus_used, host.memory_mb_used,
                          host.local_gb_used, cpu, ram, disk))
    return found


def _tables(url, *names):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    meta = sa.MetaData()
    meta.reflect(engine, only=names)
    return engine, [meta.tables[name] for name in names]


def _node_row(host, node, service_id, pci_stats, now):
    row = workload.compute_node_row(host, service_id, now)
    row.update(cpu_allocation_ratio=node.cpu_ratio,
               ram_allocation_ratio=node.ram_ratio,
               disk_allocation_ratio=node.disk_ratio, pci_stats=pci_stats,
               numa_topology=None, mapped=1, updated_at=now,
               metrics='[]', hypervisor_type='QEMU')
    row.pop('id', None)
    return row


def write_cells(urls, hosts, nodes, pci_stats):
    """The services, compute nodes (cell1) and host mappings (API)."""
    now = _now()
    engine, (services, computes) = _tables(urls['cell1'], 'services',
                                           'compute_nodes')
    try:
        with engine.begin() as connection:
            connection.execute(services.insert(), [{
                'uuid': str(uuid.uuid5(uuid.NAMESPACE_URL, host.host)),
                'host': host.host, 'binary': 'nova-compute',
                'topic': 'compute', 'report_count': 1,
                'disabled': host.disabled,
                'disabled_reason': 'benchmark' if host.disabled else None,
                'forced_down': host.forced_down, 'last_seen_up': now,
                'created_at': now, 'updated_at': now, 'deleted': 0,
                'version': SERVICE_VERSION} for host in hosts])
            ids = dict(connection.execute(sa.select(
                services.c.host, services.c.id)).all())
            connection.execute(computes.insert(), [
                _node_row(host, node, ids[host.host], pci_stats, now)
                for host, node in zip(hosts, nodes, strict=True)])
    finally:
        engine.dispose()
    engine, (cells, mappings) = _tables(urls['api'], 'cell_mappings',
                                        'host_mappings')
    try:
        with engine.begin() as connection:
            cell_id = connection.execute(sa.select(cells.c.id).where(
                cells.c.name == 'cell1')).scalar_one()
            connection.execute(mappings.insert(), [
                {'host': host.host, 'cell_id': cell_id, 'created_at': now}
                for host in hosts])
    finally:
        engine.dispose()


def providers_of(hosts):
    """Each node's provider as nova-compute 34 reports it: the placement
    mode's (``placement_fleet.provider_of``, used amounts included) with
    ``OWNER_TRAIT`` and without the operator's custom trait and the
    aggregates (the fleet has no host aggregate in Nova's API
    database)."""
    found = []
    for host in hosts:
        provider = placement_fleet.provider_of(host, True)
        traits = {trait for trait in provider.traits
                  if not trait.startswith('CUSTOM_')}
        found.append(dataclasses.replace(
            provider, traits=frozenset(traits | {OWNER_TRAIT}),
            aggregates=frozenset()))
    return found


def write_providers_sql(placement_database, providers):
    """Write root ``providers`` straight into Placement's database, as
    its REST API would leave them (generation 3: created, inventories,
    traits; ``root_provider_id`` their own id), their usages as one
    consumer each (project and user ``PROJECT`` / ``USER``): a few bulk
    statements instead of four requests per provider.

    :raises BenchError: a trait or resource class Placement does not
        know.
    """
    now = _now()
    engine, tables = _tables(placement_database, 'resource_providers',
                             'inventories', 'resource_provider_traits',
                             'consumers', 'allocations')
    rps, inventories, rp_traits, consumers, allocations = tables
    try:
        with engine.begin() as connection:
            classes = dict(connection.execute(sa.text(
                'SELECT name, id FROM resource_classes')).all())
            traits = dict(connection.execute(sa.text(
                'SELECT name, id FROM traits')).all())
            unknown = ({rc for p in providers for rc in p.inventories} -
                       set(classes)) | ({t for p in providers
                                         for t in p.traits} - set(traits))
            if unknown:
                raise BenchError('Placement does not know %s'
                                 % ', '.join(sorted(unknown)))
            connection.execute(rps.insert(), [
                {'uuid': p.uuid, 'name': p.name, 'generation': 3,
                 'created_at': now, 'updated_at': now} for p in providers])
            connection.execute(rps.update().where(
                rps.c.root_provider_id.is_(None)).values(
                root_provider_id=rps.c.id))
            ids = dict(connection.execute(sa.select(rps.c.uuid,
                                                    rps.c.id)).all())
            connection.execute(inventories.insert(), [
                dict(placement_rest.inventory_body(inventory),
                     resource_provider_id=ids[p.uuid],
                     resource_class_id=classes[rc], created_at=now)
                for p in providers for rc, inventory in p.inventories.items()])
            connection.execute(rp_traits.insert(), [
                {'resource_provider_id': ids[p.uuid], 'trait_id': traits[t],
                 'created_at': now}
                for p in providers for t in sorted(p.traits)])
            used = [p for p in providers if p.usages]
            project = _external_id(connection, 'projects', PROJECT, now)
            user = _external_id(connection, 'users', USER, now)
            seeded = {p.uuid: str(uuid.uuid5(uuid.NAMESPACE_URL,
                                             'seeded:' + p.uuid))
                      for p in used}
            connection.execute(consumers.insert(), [
                {'uuid': seeded[p.uuid], 'project_id': project,
                 'user_id': user, 'generation': 1, 'created_at': now}
                for p in used])
            connection.execute(allocations.insert(), [
                {'resource_provider_id': ids[p.uuid],
                 'consumer_id': seeded[p.uuid],
                 'resource_class_id': classes[rc], 'used': amount,
                 'created_at': now}
                for p in used for rc, amount in p.usages.items()])
    finally:
        engine.dispose()


def _external_id(connection, table, external_id, now):
    found = connection.execute(sa.text(
        'SELECT id FROM %s WHERE external_id = :e' % table),
        {'e': external_id}).scalar()
    if found is None:
        found = connection.execute(sa.text(
            'INSERT INTO %s (external_id, created_at) VALUES (:e, :now) '
            'RETURNING id' % table), {'e': external_id, 'now': now}).scalar()
    return found


def existing_providers(placement_url):
    """The uuids of the providers Placement holds already."""
    api = placement_rest.client(placement_url)
    return {provider['uuid'] for provider in placement_rest.call_json(
        api, 'GET', '/resource_providers')['resource_providers']}


def write_fleet(urls, placement_url, placement_database, pci_stats, count,
                seed_value, progress):
    """Write ``count`` generated nodes (see the module); their Nodes.
    The providers Placement holds already (those of a smaller fleet
    written before: the same first nodes) are kept as they are."""
    hosts = workload.generate_hosts(count, seed_value)
    nodes = nodes_of(hosts)
    write_cells(urls, hosts, nodes, pci_stats)
    present = existing_providers(placement_url)
    providers: list[Provider] = [provider for provider in providers_of(hosts)
                                 if provider.uuid not in present]
    if len(providers) > REST_MAX_PROVIDERS:
        write_providers_sql(placement_database, providers)
    else:
        placement_fleet.seed_providers(placement_url, providers,
                                       progress=progress,
                                       label='providers (versus-nova)')
    return nodes


class Tracker:
    """nova-compute's part during the run (see the module): ``placed``
    takes ``[node uuid, instance uuid, vcpus, MiB, GiB]`` lists; a thread
    applies them and beats the services' hearts.  ``drain`` waits until
    everything placed so far is written."""

    def __init__(self, urls, nodes):
        self.nodes = {node.uuid: node for node in nodes}
        self.engine, (self.services, self.computes, self.instances) = (
            _tables(urls['cell1'], 'services', 'compute_nodes',
                    'instances'))
        self.ids = {}
        with self.engine.connect() as connection:
            self.ids = dict(connection.execute(sa.select(
                self.computes.c.uuid, self.computes.c.id)).all())
        self._queue = queue.Queue()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='versus-nova-tracker')
        self.error = None
        self._thread.start()

    def placed(self, picks):
        self._queue.put(picks)

    def drain(self):
        self._queue.join()
        if self.error:
            raise self.error

    def close(self):
        self._done.set()
        self._queue.put(None)
        self._thread.join(timeout=60)
        self.engine.dispose()

    def _loop(self):
        beat = 0.0
        order = seed.heartbeat_slices(HEARTBEAT_SLICES)
        period = HEARTBEAT_S / HEARTBEAT_SLICES
        while not self._done.is_set():
            if time.monotonic() - beat > period:
                self._beat(*next(order))
                beat = time.monotonic()
            try:
                first = self._queue.get(timeout=period)
            except queue.Empty:
                continue
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._apply([pick for picks in batch if picks
                             for pick in picks])
            except Exception as exc:   # reported by drain
                self.error = exc
            for _ in batch:
                self._queue.task_done()

    def _beat(self, slices=1, index=0):
        """Beat the services whose ``id % slices`` is ``index`` (every
        service by default), as ``seed.heartbeat_services`` does ours."""
        now = _now()
        with self.engine.begin() as connection:
            connection.execute(self.services.update().where(
                self.services.c.id % slices == index).values(
                updated_at=now, last_seen_up=now,
                report_count=self.services.c.report_count + 1))

    def _apply(self, picks):
        if not picks:
            return
        now = _now()
        by_node = {}
        for node, _instance, vcpus, memory_mb, root_gb in picks:
            total = by_node.setdefault(node, [0, 0, 0, 0])
            for index, amount in enumerate((vcpus, memory_mb, root_gb, 1)):
                total[index] += amount
        c = self.computes.c
        with self.engine.begin() as connection:
            for node, (vcpus, memory_mb, root_gb, count) in sorted(
                    by_node.items()):
                connection.execute(self.computes.update().where(
                    c.uuid == node).values(
                    vcpus_used=c.vcpus_used + vcpus,
                    memory_mb_used=c.memory_mb_used + memory_mb,
                    local_gb_used=c.local_gb_used + root_gb,
                    free_ram_mb=c.free_ram_mb - memory_mb,
                    free_disk_gb=c.free_disk_gb - root_gb,
                    running_vms=c.running_vms + count, updated_at=now))
            connection.execute(self.instances.insert(), [{
                'uuid': instance, 'host': self.nodes[node].host,
                'node': self.nodes[node].host,
                'compute_id': self.ids.get(node), 'vcpus': vcpus,
                'memory_mb': memory_mb, 'root_gb': root_gb,
                'ephemeral_gb': 0, 'vm_state': 'active', 'power_state': 1,
                'project_id': PROJECT, 'user_id': USER,
                'display_name': 'bench', 'launched_at': now,
                'created_at': now, 'deleted': 0}
                for node, instance, vcpus, memory_mb, root_gb in picks])

    def reset(self):
        """Every instance row gone, each node's usage its seeded one."""
        self.drain()
        now = _now()
        c = self.computes.c
        with self.engine.begin() as connection:
            connection.execute(self.instances.delete())
            connection.execute(self.computes.update().where(
                c.uuid == sa.bindparam('node_uuid')).values(
                vcpus_used=sa.bindparam('v'),
                memory_mb_used=sa.bindparam('m'),
                local_gb_used=sa.bindparam('d'),
                free_ram_mb=sa.bindparam('fm'),
                free_disk_gb=sa.bindparam('fd'),
                running_vms=sa.bindparam('r'), updated_at=now), [
                {'node_uuid': n.uuid, 'v': n.vcpus_used,
                 'm': n.memory_mb_used, 'd': n.local_gb_used,
                 'fm': n.memory_mb - n.memory_mb_used,
                 'fd': n.local_gb - n.local_gb_used,
                 'r': max(0, n.vcpus_used // 2)}
                for n in self.nodes.values()])


def release(placement_url, consumers):
    """Delete the Placement allocations of ``consumers`` (uuids), a
    ``RELEASE_CHUNK`` at a time in one ``POST /allocations`` each."""
    api = placement_rest.client(placement_url, RELEASE_MICROVERSION)
    consumers = list(consumers)
    for start in range(0, len(consumers), RELEASE_CHUNK):
        placement_rest.call(api, 'POST', '/allocations', (204,), json={
            consumer: {'allocations': {}, 'project_id': PROJECT,
                       'user_id': USER}
            for consumer in consumers[start:start + RELEASE_CHUNK]})


def forget_claims(url):
    """Empty this service's SQL-mode claim tables (its own database)."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as connection:
            for table in sa.inspect(connection).get_table_names():
                if table.startswith('scheduler_node_claims'):
                    connection.execute(sa.text('DELETE FROM %s' % table))
    finally:
        engine.dispose()


def placement_usage(placement_database):
    """Placement's usages against its inventories, from its database:
    ``(rows, consumers)``; a row per (provider uuid, resource class):
    ``(uuid, rc, used, total, reserved, ratio)``; ``consumers``: the
    consumer uuids holding allocations."""
    engine = sa.create_engine(placement_database,
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            rows = connection.execute(sa.text(
                'SELECT rp.uuid, rc.name, '
                ' COALESCE((SELECT SUM(a.used) FROM allocations a '
                '  WHERE a.resource_provider_id = i.resource_provider_id'
                '  AND a.resource_class_id = i.resource_class_id), 0), '
                ' i.total, i.reserved, i.allocation_ratio '
                'FROM inventories i '
                'JOIN resource_providers rp ON rp.id = i.resource_provider_id'
                ' JOIN resource_classes rc ON rc.id = i.resource_class_id'
                )).all()
            consumers = connection.execute(sa.text(
                'SELECT DISTINCT consumer_id FROM allocations')).scalars(
                ).all()
    finally:
        engine.dispose()
    return [tuple(row) for row in rows], set(consumers)
