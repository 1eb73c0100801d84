"""Mapping new compute hosts to their cells, as ``nova-manage cell_v2
discover_hosts`` does.

Nova keeps, in the API database's ``host_mappings``, one row per
compute host naming the cell (``cell_mappings.id``) whose database holds
its compute nodes; Nova's API and conductor find a host's cell there,
and a host without one cannot be scheduled to by Nova.  ``nova-manage
cell_v2 discover_hosts``, or Nova's scheduler with ``[scheduler]
discover_hosts_in_cells_interval`` set (``nova.objects.host_mapping.
discover_hosts``), creates them: in every cell but cell0 (disabled ones
included), for each live compute node whose ``mapped`` is 0, a
``host_mappings`` row ``(host, cell_id)`` when its host has none, then
``compute_nodes.mapped = 1``.

``HostDiscovery.run`` does the same, with these rules:

* the cell mappings are read again at each run, so a cell created since
  the start is discovered too; cell0 is skipped;
* the cells are worked side by side, each on its ``scatter.Lane``,
  within ``[scheduler] cell_timeout`` in all: a cell that fails or does
  not answer is logged once per outage and the others are mapped; a
  run that outlives the bound finishes in the background and the cell
  is left out of the next runs until it has;
* a mapping is committed in the API database before ``mapped = 1`` is
  committed in the cell database, so a node is never marked mapped
  without its mapping; a failure in between leaves ``mapped = 0``, and
  the next run marks the node once it finds the mapping;
* another scheduler (or ``nova-manage``) creating the same mapping at
  the same time violates ``host_mappings``' unique host: that is
  "already mapped", the row is read again and the node marked mapped
  when it names this cell;
* a host that has a mapping to this cell already (an Ironic host has one
  mapping for all its nodes; a sibling worker; a mapping made by hand):
  its nodes are marked mapped (Nova leaves them at 0 and looks at them
  again at each run: marking them changes nothing Nova reads, and
  ``nova-manage cell_v2 delete_host`` sets them back to 0 as it does
  Nova's);
* a host mapped to ANOTHER cell (Nova: ``HostMappingExists``, "This
  periodic task should only be enabled if discover hosts is not run via
  nova-manage") is left alone, its nodes left unmapped; logged as a
  WARNING the first time, at DEBUG after.

Which scheduler runs discovery is ``scheduler.server.leader``'s rule.
"""

from __future__ import annotations

import dataclasses
import functools
import threading

import sqlalchemy as sa
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler.db.nova import cells
from scheduler.db.nova import scatter
from scheduler.db.nova import schema

LOG = logging.getLogger(__name__)

NODES = schema.COMPUTE_NODES
# ``host_mappings`` as it is written: Nova's ORM stamps ``created_at``.
HOST_MAPPINGS = sa.table('host_mappings', sa.column('id'),
                         sa.column('cell_id'), sa.column('host'),
                         sa.column('created_at'))
CHUNK = 500


@dataclasses.dataclass(frozen=True)
class CellResult:
    """What one run did in one cell: the hosts whose mapping it created
    (``mapped``), the ids of the compute nodes it marked ``mapped``
    (``nodes``), and ``{host: cell_id}`` of the hosts left unmapped
    because they are mapped to another cell (``elsewhere``)."""

    cell: cells.Cell
    mapped: tuple[str, ...]
    nodes: tuple[int, ...]
    elsewhere: dict[str, int]


class HostDiscovery:
    """``discover_hosts`` over a Nova deployment's cells (module
    docstring).  Its engines are its own: the API database's, opened
    once, and one per cell database, opened when first seen.  ``run``
    is called by one thread at a time; ``stop`` closes the engines."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._conf = conf
        self._api: sa.engine.Engine | None = None
        self._cells: dict[tuple[int, str], cells.Cell] = {}
        self._lanes: dict[tuple[int, str], scatter.Lane] = {}
        self._warned = False
        self._stopped = False
        self._lock = threading.Lock()

    def run(self) -> list[CellResult]:
        """Map the unmapped compute nodes of every cell but cell0.

        :returns: a ``CellResult`` per cell that answered within
            ``[scheduler] cell_timeout``, by cell mapping id.
        :raises cells.CellsError: the API database cannot be reached or
            read, or ``stop`` was called (the run maps nothing).
        """
        mappings = [m for m in cells.read_mappings(self._api_engine())
                    if m['uuid'] != cells.CELL0_UUID]
        lanes = self._lanes_of(mappings)
        outcomes = scatter.gather(
            [(lane, functools.partial(self._discover, mapping))
             for lane, mapping in zip(lanes, mappings, strict=True)],
            self._conf.scheduler.cell_timeout,
            (cells.CellsError, *cells.DATABASE_ERRORS))
        results = []
        for lane, (value, error) in zip(lanes, outcomes, strict=True):
            if error is not None:
                lane.down(cells.first_line(error))
                continue
            lane.up()
            results.append(value)
        return results

    def stop(self) -> None:
        """Close the engines (a cell still being worked finishes on
        its own)."""
        with self._lock:
            for lane in self._lanes.values():
                lane.close()
            cells.dispose(self._cells.values())
            if self._api is not None:
                self._api.dispose()
            self._cells, self._lanes, self._api = {}, {}, None
            self._stopped = True

    # -- engines ---------------------------------------------------------

    def _api_engine(self) -> sa.engine.Engine:
        with self._lock:
            if self._stopped:
                raise cells.CellsError('host discovery is stopped')
            if self._api is None:
                try:
                    self._api = cells.create_engine(
                        self._conf.api_database.connection, self._conf)
                except cells.CellsError as exc:
                    raise cells.CellsError(
                        '[api_database] connection: %s' % exc) from exc
            return self._api

    def _lanes_of(self, mappings: list[dict]) -> list[scatter.Lane]:
        """The lane of each of ``mappings`` (made when first seen); the
        engines and lanes of the mappings gone (or whose URL changed)
        are closed."""
        keys = [_key(mapping) for mapping in mappings]
        with self._lock:
            for key in set(self._lanes) - set(keys):
                self._lanes.pop(key).close()
                gone = self._cells.pop(key, None)
                if gone is not None:
                    gone.engine.dispose()
            for key, mapping in zip(keys, mappings, strict=True):
                if key not in self._lanes:
                    self._lanes[key] = scatter.Lane(
                        '%s (%s)' % (mapping['name'] or 'unnamed',
                                     mapping['uuid']), threads=1)
            return [self._lanes[key] for key in keys]

    def _cell(self, mapping: dict) -> cells.Cell:
        """The ``Cell`` of ``mapping``, its engine opened once (on the
        cell's lane: a database that does not answer holds only it).

        :raises cells.CellsError: its database cannot be reached.
        """
        key = _key(mapping)
        with self._lock:
            if self._stopped:
                raise cells.CellsError('host discovery is stopped')
            cell = self._cells.get(key)
        if cell is None:
            cell = cells.open_cell(mapping, self._conf)
            with self._lock:
                self._cells[key] = cell
        return cell

    # -- one cell --------------------------------------------------------

    def _discover(self, mapping: dict) -> CellResult:
        """Map the unmapped nodes of the cell of ``mapping`` (runs on its
        lane)."""
        cell = self._cell(mapping)
        nodes = _unmapped(cell.engine)
        hosts = sorted({host for _id, host in nodes})
        owners = self._owners(hosts)
        created, elsewhere = [], {}
        for host in hosts:
            if host not in owners:
                owners[host], made = self._create(host, cell.id)
                if made:
                    created.append(host)
            if owners[host] != cell.id:
                elsewhere[host] = owners[host]
        ids = [node_id for node_id, host in nodes
               if owners.get(host) == cell.id]
        _mark_mapped(cell.engine, ids)
        for host, other in sorted(elsewhere.items()):
            self._conflict(cell, host, other)
        if created:
            LOG.info('Discovered %d new host(s) in cell %s: %s',
                     len(created), cell.label, ','.join(created))
        return CellResult(cell, tuple(created), tuple(ids), elsewhere)

    def _owners(self, hosts: list[str]) -> dict[str, int]:
        """``{host: cell_id}`` of the ``hosts`` that have a mapping."""
        table = schema.HOST_MAPPINGS
        owners: dict[str, int] = {}
        with self._api_engine().connect() as connection:
            for chunk in _chunks(hosts):
                owners.update(connection.execute(
                    sa.select(table.c.host, table.c.cell_id)
                    .where(table.c.host.in_(chunk))).tuples().all())
        return owners

    def _create(self, host: str, cell_id: int) -> tuple[int, bool]:
        """Map ``host`` to ``cell_id``: ``(the cell it is mapped to,
        whether this call created the mapping)``; one made meanwhile by
        someone else is read back (and one made and deleted again
        meanwhile is made once more)."""
        while True:
            try:
                with self._api_engine().begin() as connection:
                    connection.execute(sa.insert(HOST_MAPPINGS).values(
                        host=host, cell_id=cell_id,
                        created_at=timeutils.utcnow()))
                return cell_id, True
            except db_exc.DBDuplicateEntry:
                LOG.debug('Host %s was mapped meanwhile', host)
            owner = self._owners([host]).get(host)
            if owner is not None:
                return owner, False

    def _conflict(self, cell: cells.Cell, host: str, other: int) -> None:
        message = ('Host %s has compute nodes in cell %s but is mapped to '
                   'cell mapping %d already (host_mappings); they stay '
                   'unmapped.  This periodic task should only be enabled '
                   'if discover hosts is not run via nova-manage'
                   % (host, cell.label, other))
        with self._lock:
            first, self._warned = not self._warned, True
        if first:
            LOG.warning(message)
        else:
            LOG.debug(message)


def _key(mapping: dict) -> tuple[int, str]:
    """A cell's key: its mapping's id and ``database_connection``."""
    return mapping['id'], mapping['database_connection']


def _chunks(items: list) -> list[list]:
    """``items`` in lists of at most ``CHUNK`` (one ``IN (...)`` each)."""
    return [items[start:start + CHUNK]
            for start in range(0, len(items), CHUNK)]


def _unmapped(engine: sa.engine.Engine) -> list[tuple[int, str]]:
    """``[(id, host)]`` of the live compute nodes with ``mapped`` 0 and a
    host, by id (Nova: ``ComputeNodeList.get_all_by_not_mapped(ctxt,
    1)``)."""
    statement = (sa.select(NODES.c.id, NODES.c.host)
                 .where(NODES.c.mapped < 1, NODES.c.deleted == 0,
                        NODES.c.host.is_not(None))
                 .order_by(NODES.c.id))
    with engine.connect() as connection:
        return [(row.id, row.host) for row in connection.execute(statement)]


def _mark_mapped(engine: sa.engine.Engine, ids: list[int]) -> None:
    """``mapped = 1`` on the live compute nodes ``ids``, stamping
    ``updated_at`` as Nova's ``ComputeNode.save`` does."""
    if not ids:
        return
    now = timeutils.utcnow()
    with engine.begin() as connection:
        for chunk in _chunks(ids):
            connection.execute(sa.update(NODES).where(
                NODES.c.id.in_(chunk), NODES.c.deleted == 0).values(
                    mapped=1, updated_at=now))
