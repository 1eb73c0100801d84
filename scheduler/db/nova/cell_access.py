"""``CellAccess``: the cells of a Nova deployment, as ``NovaSource``
reads them.

The life cycle of the engines of the API database and of each cell
database scheduled to (``start`` / ``stop``), the read of every cell
with the skipping and catching up of a cell that fails, and the shapes
of the rows read (view ids, cell uuids, the claims' sums).  The reads
themselves are ``scheduler.db.nova.source.NovaSource``'s, a subclass.

The cells are read side by side, each on its ``scatter.Lane``, within
``[scheduler] cell_timeout`` seconds in all (``_each_cell``, as Nova's
``scatter_gather_cells``): a cell whose database fails, or does not
answer in time, is skipped (logged once per outage) and the others' rows
are returned.
"""

import datetime
import functools
import threading

import sqlalchemy as sa
from oslo_log import log as logging

from scheduler.conf import CONF
from scheduler.db import api
from scheduler.db.nova import cells
from scheduler.db.nova import ids
from scheduler.db.nova import node_claims
from scheduler.db.nova import scatter
from scheduler.db.nova import schema

LOG = logging.getLogger(__name__)

# The start of a change read that must return everything.
EPOCH = datetime.datetime(1970, 1, 1)
# Most values in one ``IN (...)`` list.
CHUNK = api.IN_CHUNK_SIZE


def _later(first, second):
    """The later of two naive datetimes, either of which may be None."""
    if first is None or second is None:
        return first or second
    return max(first, second)


def _chunks(items, size=CHUNK):
    items = sorted(items)
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _live(table):
    return table.c.deleted == 0


def _connected(read, cell):
    """``read(cell, connection)`` on a connection of the cell's engine."""
    with cell.engine.connect() as connection:
        return read(cell, connection)


class CellAccess:
    """The cells scheduled to and the shapes of their rows (module
    docstring).  Thread-safe; ``start`` before use, ``stop`` to close
    the engines."""

    def __init__(self, conf=CONF):
        self._conf = conf
        self._api = None
        self._mappings = []
        self._cells = []             # Cell to schedule to, by mapping id
        self._by_id = {}             # cell_mappings.id -> Cell
        self._lanes = {}             # cell_mappings.id -> scatter.Lane
        self._service_cell = None
        self._snapshots = {}         # view node id -> node_claims.Snapshot
        self._host_cell = {}         # host -> cell_mappings.id of its nodes
        self._missed = {}            # cell_mappings.id -> earliest since
        self._lock = threading.Lock()

    # -- life cycle ------------------------------------------------------

    def start(self):
        """Open and check the API database, every cell database to
        schedule to, and our own ``scheduler_node_claims``.

        :raises cells.CellsError: one of them cannot be used (one line).
        """
        url = self._conf.api_database.connection
        try:
            self._api = cells.create_engine(url, self._conf)
        except cells.CellsError as exc:
            raise cells.CellsError(
                '[api_database] connection: %s' % exc) from exc
        cells.check_tables(self._api, schema.API,
                           '[api_database] connection')
        self._mappings = cells.read_mappings(self._api)
        wanted = cells.scheduled(self._mappings)
        if not wanted:
            raise cells.CellsError(
                'the API database %s maps no enabled cell besides cell0 '
                '(nova-manage cell_v2 create_cell)'
                % cells.safe_url(self._api.url))
        self._cells = [cells.open_cell(mapping, self._conf)
                       for mapping in wanted]
        self._by_id = {cell.id: cell for cell in self._cells}
        for cell in self._cells:
            cells.check(cell)
        self._check_own_database()
        self._lanes = {cell.id: scatter.Lane(cell.label)
                       for cell in self._cells}
        self._check_cell_timeout()
        LOG.info('Nova database mode: scheduling to %d cell(s): %s',
                 len(self._cells),
                 ', '.join(cell.label for cell in self._cells))

    @staticmethod
    def _check_own_database():
        try:
            with api.get_engine().connect() as connection:
                connection.execute(sa.select(node_claims.NODE_CLAIMS).where(
                    sa.false())).all()
        except cells.DATABASE_ERRORS as exc:
            raise cells.CellsError(
                '[database] connection (the scheduler\'s own database) '
                'has no scheduler_node_claims table: run scheduler-manage '
                'db sync (%s)' % cells.first_line(exc)) from exc

    def _check_cell_timeout(self):
        group = self._conf.scheduler
        if 0 < group.decision_timeout <= group.cell_timeout:
            LOG.warning('[scheduler] cell_timeout (%.1f s) is not below '
                        'decision_timeout (%.1f s): a cell that does not '
                        'answer makes decisions fail instead of being '
                        'skipped', group.cell_timeout,
                        group.decision_timeout)

    def stop(self):
        """Close every engine, and end the threads reading the cells
        (one still waiting for a database ends when it answers)."""
        for lane in self._lanes.values():
            lane.close()
        extra = [self._service_cell] if self._service_cell else []
        cells.dispose(self._cells + [c for c in extra
                                     if c not in self._cells])
        if self._api is not None:
            self._api.dispose()

    def service_cell(self):
        """The ``Cell`` whose database keeps the service's row
        (``[scheduler] service_cell``, a name or uuid), opened once.

        :raises cells.CellsError: no cell mapping has that name or uuid,
            or its database cannot be reached.
        """
        if self._service_cell is None:
            wanted = self._conf.scheduler.service_cell
            mapping = cells.find(self._mappings, wanted)
            if mapping is None:
                raise cells.CellsError(
                    '[scheduler] service_cell: no cell mapping is named or '
                    'has the uuid %r' % wanted)
            self._service_cell = (self._by_id.get(mapping['id']) or
                                  cells.open_cell(mapping, self._conf))
        return self._service_cell

    @property
    def cells(self):
        """The ``Cell`` objects scheduled to, by ``cell_mappings.id``."""
        return list(self._cells)

    def cell_of(self, view_id):
        """The scheduled ``Cell`` of a view id, or None."""
        return self._by_id.get(ids.cell_id(view_id))

    # -- per cell --------------------------------------------------------

    def _since(self, cell, since):
        missed = self._missed.get(cell.id)
        return since if missed is None else min(since, missed)

    def _skip(self, cell, since, exc):
        self._lanes[cell.id].down(cells.first_line(exc))
        with self._lock:
            missed = self._missed.get(cell.id)
            since = since or EPOCH
            self._missed[cell.id] = since if missed is None else min(
                missed, since)

    def read_cells(self, read, only=None):
        """``[(cell, read(cell, connection))]`` of the scheduled cells (or
        of those of ``only``, mapping ids) that answer, read side by side
        within ``[scheduler] cell_timeout``; the others are skipped."""
        return self._each_cell(read, only=only)

    def _each_cell(self, read, since=None, clears=False, only=None):
        """``[(cell, read(cell, connection))]`` over the scheduled cells
        (or the cells of ``only``, mapping ids), read side by side
        (``scatter.gather``, within ``[scheduler] cell_timeout``); a cell
        that fails or does not answer in time is skipped (``_skip`` with
        ``since``).  With ``clears``, a cell read forgets what it missed.
        Raises the last error when every scheduled cell failed (never
        with ``only``): a ``DBError``, ``scatter.NotAnswering`` for a
        cell that did not answer."""
        chosen = [cell for cell in self._cells
                  if only is None or cell.id in only]
        outcomes = scatter.gather(
            [(self._lanes[cell.id], functools.partial(_connected, read, cell))
             for cell in chosen],
            self._conf.scheduler.cell_timeout, cells.DATABASE_ERRORS)
        results, error = [], None
        for cell, (value, failure) in zip(chosen, outcomes, strict=True):
            if failure is not None:
                error = failure
                self._skip(cell, since, failure)
                continue
            self._lanes[cell.id].up()
            results.append((cell, value))
            if clears:
                with self._lock:
                    self._missed.pop(cell.id, None)
        if error is not None and not results and only is None:
            raise error
        return results

    def _nodes_of_failed(self, found):
        """The view ids of the nodes last read from the scheduled cells
        missing from ``found`` (``_each_cell``'s result)."""
        failed = {cell.id for cell in self._cells} - {
            cell.id for cell, _rows in found}
        if not failed:
            return set()
        return {view_id for view_id in list(self._snapshots)
                if ids.cell_id(view_id) in failed}

    # -- row shapes ------------------------------------------------------

    def _node(self, cell, row, sums):
        """The view's dict of a Nova ``compute_nodes`` row (module
        docstring), its claims ``sums`` added; records its snapshot."""
        view_id = ids.global_id(cell.id, row['id'])
        self._snapshots[view_id] = node_claims.snapshot_of(
            view_id, cell.uuid, row)
        if row['host'] is not None:
            self._host_cell[row['host']] = cell.id
        node = dict(row, id=view_id, cell_uuid=cell.uuid,
                    reported_at=row['updated_at'], **sums._asdict())
        node['updated_at'] = _later(row['updated_at'],
                                    sums.claims_updated_at)
        return node

    @staticmethod
    def _tagged(cell, row):
        """A services or instances row with the view's id and its cell."""
        return dict(row, id=ids.global_id(cell.id, row['id']),
                    cell_uuid=cell.uuid)

    def _claim_sums(self, context, ids_=None):
        with api.context_manager.reader.connection.using(
                context) as connection:
            return node_claims.sums(connection, ids_)

    def _nodes(self, context, cell_rows, sums=None):
        """Shape ``[(cell, [compute_nodes rows])]``, reading the claims
        sums of the nodes not in ``sums``."""
        sums = dict(sums or {})
        wanted = {ids.global_id(cell.id, row['id'])
                  for cell, rows in cell_rows for row in rows} - sums.keys()
        if wanted:
            sums.update(self._claim_sums(context, wanted))
        return [self._node(cell, row, sums.get(
                    ids.global_id(cell.id, row['id']), node_claims.NO_SUMS))
                for cell, rows in cell_rows for row in rows]

    def _by_cell(self, view_ids):
        """``{cell_mappings.id: [local ids]}`` of ``view_ids``."""
        grouped = {}
        for view_id in view_ids:
            grouped.setdefault(ids.cell_id(view_id), []).append(
                ids.local_id(view_id))
        return grouped

    def _read_by_ids(self, table, view_ids, columns=None):
        """``[(cell, rows)]``: the rows of ``table`` (deleted ones too)
        with these view ids, all columns or ``id`` and ``columns``, from
        the scheduled cells that answer."""
        grouped = self._by_cell(view_ids)
        if not grouped:
            return []
        return self._each_cell(
            lambda cell, connection: _by_local_ids(
                connection, table, grouped[cell.id], columns),
            only=grouped.keys())


def _by_local_ids(connection, table, local_ids, columns=None):
    """The rows of ``table`` (deleted ones too) with these ids of one
    cell (``local_ids``), all columns or ``id`` and ``columns``."""
    statement = (sa.select(table.c.id, *[table.c[c] for c in columns])
                 if columns else sa.select(table))
    rows = []
    for chunk in _chunks(local_ids):
        rows.extend(api.dict_rows(connection, statement.where(
            table.c.id.in_(chunk))))
    return rows
