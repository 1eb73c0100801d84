"""``NovaSource``: the host view's reads on a Nova deployment's databases.

It answers every read of ``scheduler.db.source.HostSource`` from the
tables Nova's own migrations created, and never writes to them:

* compute nodes, services and instances from each cell database to
  schedule to (``scheduler.db.nova.cells``: every cell mapping but cell0
  and the disabled ones), the cells side by side within ``[scheduler]
  cell_timeout`` (``scheduler.db.nova.scatter``);
* aggregates and server groups from the API database, and the cell of a
  host from its ``host_mappings`` row;
* the claimed sums of each node from our own database
  (``scheduler_node_claims``, see ``scheduler.db.nova.node_claims``).

Rows are dicts keyed by Nova's column names, as ``scheduler.db.api``
returns them, with these differences:

* ``id`` of compute nodes, services and instances is the view's 64-bit
  id (``scheduler.db.nova.ids``), unique across cells; ``cell_uuid`` is
  the uuid of the cell mapping the row was read from;
* a compute node carries the node's ``claimed_vcpus``,
  ``claimed_memory_mb`` (MiB), ``claimed_disk_gb`` (GiB), the claims'
  ``generation`` and ``claims_updated_at`` from our database;
  ``reported_at`` is Nova's ``updated_at``, and ``updated_at`` the later
  of that and ``claims_updated_at`` (a claim by another scheduler is a
  change of the node, as on the standalone schema).

Incremental reads.  Nova's tables have no ``generation`` and no index on
their timestamps: a changed-since read is one scan of each cell table
(``db_changes.changed_since``: ``created_at``, ``updated_at`` or ``deleted_at``
after ``since``), and a row's version (``row_version``) is made of the
columns Nova has: the timestamps and ``deleted``, the usage columns a
report changes (so that two reports within one second - MySQL keeps
whole seconds - still differ), and the claims' ``generation``.

Cells that fail.  ``start`` (run by the service at start) reads the API
database and every cell database and raises ``cells.CellsError`` when
one cannot be used.  Later, a cell whose database fails, or does not
answer within ``[scheduler] cell_timeout``, is logged (once per
outage) and skipped; its rows are missing from that read (as in Nova,
whose HostManager skips a cell that does not answer within
``CELL_TIMEOUT``), a cell that did not answer is not read again until
its late read returns, and the next change read of that cell goes back
to the earliest time it missed (to the beginning after a full read
missed it), so that its changes are not lost.  A read fails only when
every cell failed.  New cell mappings are
read at ``start`` only (Nova reads them at start and on SIGHUP).
"""

import datetime
import functools

import sqlalchemy as sa
from oslo_log import log as logging

from scheduler import exception
from scheduler.db import api
from scheduler.db import changes as db_changes
from scheduler.db.nova import cell_access
from scheduler.db.nova import ids
from scheduler.db.nova import image_props
from scheduler.db.nova import node_claims
from scheduler.db.nova import schema

LOG = logging.getLogger(__name__)

EPOCH = cell_access.EPOCH
CHUNK = cell_access.CHUNK
_later = cell_access._later
_chunks = cell_access._chunks
_live = cell_access._live
_by_local_ids = cell_access._by_local_ids

NODES = schema.COMPUTE_NODES
SERVICES = schema.SERVICES
INSTANCES = schema.INSTANCES

# Nova's columns of a compute node's version (``row_version``), read
# narrowly by the sweep; the claims' ``generation`` comes last.
NODE_VERSION_COLUMNS = (
    'updated_at', 'created_at', 'deleted', 'vcpus_used', 'memory_mb_used',
    'local_gb_used', 'free_ram_mb', 'free_disk_gb', 'disk_available_least',
    'running_vms', 'current_workload')
SERVICE_VERSION_COLUMNS = ('updated_at', 'created_at', 'deleted',
                           'report_count', 'disabled', 'forced_down')

_AGGREGATE_TABLES = (schema.AGGREGATES, schema.AGGREGATE_HOSTS,
                     schema.AGGREGATE_METADATA)
_GROUP_TABLES = (schema.INSTANCE_GROUPS, schema.INSTANCE_GROUP_POLICIES,
                 schema.INSTANCE_GROUP_MEMBERS)


class NovaSource(cell_access.CellAccess):
    """The reads of ``HostSource`` on a Nova deployment's databases
    (module docstring).  Thread-safe; ``start`` before use, ``stop`` to
    close the engines."""

    # -- compute nodes ---------------------------------------------------

    def compute_node_iter_all(self, context, batch=CHUNK):
        """Yield every live compute node of the cells that answer, by
        cell then id (each cell read whole, side by side, fetched
        ``batch`` rows at a time by a server-side cursor)."""
        sums = self._claim_sums(context)
        statement = sa.select(NODES).where(_live(NODES)).order_by(NODES.c.id)

        def read(cell, connection):
            # Rows (tuples) until shaped below: a third of dicts' memory.
            return connection.execute(
                statement, execution_options={'yield_per': batch}
            ).mappings().all()
        for cell, rows in self._each_cell(read):
            for row in rows:
                view_id = ids.global_id(cell.id, row['id'])
                yield self._node(cell, dict(row), sums.get(
                    view_id, node_claims.NO_SUMS))

    def compute_node_get(self, context, compute_id):
        """The live compute node ``compute_id`` (a view id).

        :raises scheduler.exception.NotFound: no such live node in a
            scheduled cell that answers.
        """
        found = self._nodes(context, self._read_by_ids(NODES, [compute_id]))
        if not found or found[0]['deleted']:
            raise exception.NotFound(
                message='Compute node %s could not be found.' % compute_id)
        return found[0]

    def compute_node_get_hosts(self, context):
        """The ``host`` values of the live compute nodes (a set)."""
        statement = (sa.select(NODES.c.host).distinct()
                     .where(_live(NODES), NODES.c.host.is_not(None)))
        return {host for _cell, hosts in self._each_cell(
            lambda cell, connection: connection.execute(
                statement).scalars().all()) for host in hosts}

    def snapshots(self, view_ids):
        """The ``node_claims.Snapshot`` of each of ``view_ids`` as the view
        last read it (read from its cell when it never did); ids of no
        node of a scheduled cell are left out."""
        found = {view_id: self._snapshots[view_id] for view_id in view_ids
                 if view_id in self._snapshots}
        missing = set(view_ids) - found.keys()
        for cell, rows in self._read_by_ids(NODES, missing):
            for row in rows:
                view_id = ids.global_id(cell.id, row['id'])
                found[view_id] = self._snapshots[view_id] = (
                    node_claims.snapshot_of(view_id, cell.uuid, row))
        return [found[view_id] for view_id in sorted(found)]

    # -- services --------------------------------------------------------

    def service_get_all_by_binary(self, context, binary='nova-compute',
                                  include_disabled=True):
        """The live services of ``binary`` in the scheduled cells."""
        statement = (sa.select(SERVICES)
                     .where(_live(SERVICES), SERVICES.c.binary == binary)
                     .order_by(SERVICES.c.id))
        if not include_disabled:
            statement = statement.where(SERVICES.c.disabled == sa.false())
        return [self._tagged(cell, row) for cell, rows in self._each_cell(
            lambda cell, connection: api.dict_rows(connection, statement))
            for row in rows]

    # -- instances -------------------------------------------------------

    def _host_mappings(self, hosts):
        """``{host: cell_mappings.id}`` from the API database's
        ``host_mappings``, for the mapped ones of ``hosts``."""
        table = schema.HOST_MAPPINGS
        found = {}
        with self._api.connect() as connection:
            for chunk in _chunks(hosts):
                found.update(connection.execute(
                    sa.select(table.c.host, table.c.cell_id)
                    .where(table.c.host.in_(chunk))).all())
        return found

    def instance_get_all_by_hosts(self, context, hosts):
        """``{host: [instance dicts]}``, an entry (maybe empty) per host.

        A host's instances are read in the cell of its ``host_mappings``
        row, as Nova does (else in the cell its compute nodes were read
        from; a host known by neither has none).
        """
        by_host = {host: [] for host in hosts}
        mapped = self._host_mappings(by_host)
        hosts_of = {}
        for host in by_host:
            cell_id = mapped.get(host, self._host_cell.get(host))
            if cell_id is not None:
                hosts_of.setdefault(cell_id, []).append(host)

        def read(cell, connection):
            rows = []
            for chunk in _chunks(hosts_of[cell.id]):
                rows.extend(api.dict_rows(connection, sa.select(
                    INSTANCES).where(_live(INSTANCES),
                                     INSTANCES.c.host.in_(chunk)).order_by(
                    INSTANCES.c.id)))
            return rows
        for cell, rows in self._each_cell(read, only=hosts_of.keys()):
            for row in rows:
                by_host[row['host']].append(self._tagged(cell, row))
        return by_host

    def instance_get_all_by_host(self, context, host):
        """The live instances of ``host`` (list of dicts)."""
        return self.instance_get_all_by_hosts(context, [host])[host]

    # -- API database ----------------------------------------------------

    def aggregate_get_all(self, context):
        """Every aggregate of the API database, shaped as
        ``api.aggregate_get_all``'s."""
        with self._api.connect() as connection:
            return api.aggregates_read(connection, tables=_AGGREGATE_TABLES)

    def instance_group_get_by_uuid(self, context, uuid):
        """A server group of the API database, shaped as
        ``api.instance_group_get_by_uuid``'s; ``hosts`` are those of its
        live member instances in the scheduled cells.

        :raises scheduler.exception.NotFound: no group has this uuid.
        """
        with self._api.connect() as connection:
            group = api.instance_group_read(connection, uuid,
                                            tables=_GROUP_TABLES)
        members = group['members']

        def read(cell, connection):
            hosts = set()
            for chunk in _chunks(members):
                hosts.update(connection.execute(
                    sa.select(INSTANCES.c.host).distinct().where(
                        _live(INSTANCES), INSTANCES.c.host.is_not(None),
                        INSTANCES.c.uuid.in_(chunk))).scalars())
            return hosts
        group['hosts'] = sorted(set().union(
            *(hosts for _cell, hosts in self._each_cell(read)))) if (
            members) else []
        return group

    # -- incremental reads -----------------------------------------------

    def _changed(self, table, since, binary=None, columns=None):
        """The read of ``table``'s rows changed since ``since`` in a cell
        (a function of cell and connection), all columns or ``id`` and
        ``columns`` (a tuple); of ``binary`` only, for services (compared
        here, not in SQL: see ``_changed_statement``)."""
        if binary is not None and columns is not None:
            columns += ('binary',)
        statement = _changed_statement(table, columns)

        def read(cell, connection):
            rows = api.dict_rows(connection, statement,
                                 {'since': self._since(cell, since)})
            if binary is None:
                return rows
            return [row for row in rows if row['binary'] == binary]
        return read

    def _changed_or_claimed(self, since, claimed, columns=None):
        """The read (a function of cell and connection) of the compute
        nodes changed since ``since`` and, by id on the same connection,
        of those of ``claimed`` (view ids: claims changed) that are not
        among them; all columns or ``id`` and ``columns``."""
        changed = self._changed(NODES, since, columns=columns)
        claimed_in = self._by_cell(claimed)

        def read(cell, connection):
            rows = changed(cell, connection)
            rows += _by_local_ids(
                connection, NODES, set(claimed_in.get(cell.id, ())) - {
                    row['id'] for row in rows}, columns)
            return rows
        return read

    def get_changes_since(self, context, since, binary='nova-compute'):
        """What changed after ``since`` in the scheduled cells and in our
        claims, shaped as ``db_changes.get_changes_since``'s result.  A compute
        node whose claims changed comes with its current row; the nodes
        of a cell that cannot be read count as deleted.

        The claims are read first, so that each cell's part (its changed
        rows and the rows of its nodes whose claims alone changed) is
        one trip to its database."""
        with api.context_manager.reader.connection.using(
                context) as connection:
            claimed = node_claims.changed_since(connection, since)
        readers = {'compute_nodes': self._changed_or_claimed(since, claimed),
                   'services': self._changed(SERVICES, since, binary),
                   'instances': self._changed(INSTANCES, since)}
        found = self._each_cell(
            lambda cell, connection: {name: read(cell, connection)
                                      for name, read in readers.items()},
            since=since, clears=True)
        computes = self._nodes(context, [
            (cell, rows['compute_nodes']) for cell, rows in found], claimed)
        changes = db_changes.changes_of(
            sorted(computes, key=lambda row: row['id']),
            [self._tagged(cell, row)
             for cell, rows in found for row in rows['services']],
            [self._tagged(cell, row)
             for cell, rows in found for row in rows['instances']])
        # The nodes of a cell that failed are gone until it answers: the
        # view reads everything again without them.
        changes['deleted_compute_node_ids'] |= self._nodes_of_failed(found)
        return changes

    def get_instance_changes_since(self, context, since):
        """The ``instances`` part of ``get_changes_since`` alone."""
        return [self._tagged(cell, row) for cell, rows in self._each_cell(
            self._changed(INSTANCES, since), since=since) for row in rows]

    def get_change_versions_since(self, context, since, binary='nova-compute'):
        """``{'compute_nodes': {id: version}, 'services': {id: version}}``
        of the rows changed since ``since`` (deleted ones included), and
        of the nodes whose claims changed: a narrow read (ids and
        ``row_version`` columns)."""
        with api.context_manager.reader.connection.using(
                context) as connection:
            gens = {node_id: sums.generation for node_id, sums in
                    node_claims.changed_since(connection, since).items()}
        nodes = self._changed_or_claimed(since, gens, NODE_VERSION_COLUMNS)
        services = self._changed(SERVICES, since, binary,
                                 SERVICE_VERSION_COLUMNS)
        found = self._each_cell(
            lambda cell, connection: (nodes(cell, connection),
                                      services(cell, connection)),
            since=since)
        parts = {ids.global_id(cell.id, row['id']): _node_part(row)
                 for cell, (rows, _services) in found for row in rows}
        missing = parts.keys() - gens.keys()
        if missing:
            with api.context_manager.reader.connection.using(
                    context) as connection:
                gens.update((node_id, sums.generation) for node_id, sums in
                            node_claims.sums(connection, missing).items())
        return {
            'compute_nodes': {node_id: part + (gens.get(node_id, 0),)
                              for node_id, part in parts.items()},
            'services': {
                ids.global_id(cell.id, row['id']): tuple(
                    row[name] for name in SERVICE_VERSION_COLUMNS)
                for cell, (_nodes, rows) in found for row in rows}}

    def get_rows_by_ids(self, context, compute_node_ids=(), service_ids=()):
        """The compute node and service rows of these view ids, deleted
        ones included, shaped as ``get_changes_since``'s result (no
        instances)."""
        computes = self._nodes(context,
                               self._read_by_ids(NODES, compute_node_ids))
        services = [self._tagged(cell, row) for cell, rows in
                    self._read_by_ids(SERVICES, service_ids) for row in rows]
        return db_changes.changes_of(computes, services, [])

    @staticmethod
    def row_version(table_name, row):
        """The version of a compute node or service row of this source
        (module docstring): every write of Nova or a claim changes it."""
        if table_name == 'compute_nodes':
            return tuple(row.get('reported_at') if name == 'updated_at'
                         else row.get(name)
                         for name in NODE_VERSION_COLUMNS) + (
                row.get('generation') or 0,)
        return tuple(row.get(name) for name in SERVICE_VERSION_COLUMNS)

    def timestamp_resolution(self):
        """One second when a cell database or ours is MySQL (whole-second
        ``DATETIME``), else none."""
        dialects = {cell.engine.dialect.name for cell in self._cells}
        if 'mysql' in dialects:
            return datetime.timedelta(seconds=1)
        return db_changes.timestamp_resolution()

    @staticmethod
    def cell_uuid(compute):
        """The uuid of the cell a compute node row was read from."""
        return compute['cell_uuid']

    @functools.cached_property
    def image_props_reader(self):
        """The ``image_props.ImagePropsReader`` of these cells (one per
        source): instances' image properties from their cell's system
        metadata, for the ImagePropertiesWeigher."""
        return image_props.ImagePropsReader(self)


@functools.cache
def _changed_statement(table, columns):
    """SELECT the rows of ``table`` created, updated or soft-deleted after
    the bound ``since``, by id: one sequential scan of the table, which
    has no timestamp index in Nova's schema.  Nothing else is compared
    in SQL: a condition on an indexed column (``services.binary``, in
    the unique index on host, binary and deleted) lets PostgreSQL, when
    its statistics are stale, walk that whole index and fetch every row
    in index order instead (4-10 ms against 1-2 ms for 10,000 services
    whose heartbeats leave many dead row versions)."""
    selected = ([table.c.id] + [table.c[c] for c in columns]
                if columns else [table])
    return (sa.select(*selected).where(db_changes.changed_since(table))
            .order_by(table.c.id))


def _node_part(row):
    """Nova's part of a compute node's version, from a narrow read."""
    return tuple(row[name] for name in NODE_VERSION_COLUMNS)
