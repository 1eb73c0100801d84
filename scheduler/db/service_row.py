"""The service's own ``nova-scheduler`` row in a ``services`` table.

Nova's own scheduler keeps one live ``services`` row per host (binary
``nova-scheduler``, topic ``scheduler``) in the database of its
``[database] connection`` - the cell database Nova's control services
use, cell0's in Nova's multi-cell layout - creating it at start and
raising its ``report_count`` every ``[DEFAULT] report_interval`` seconds
(Nova's database servicegroup driver, which also stamps ``last_seen_up``
and ``updated_at``).  The API's service list reads every cell database
and shows the service up while its last heartbeat is at most
``service_down_time`` old.  ``ServiceRow`` does the same:

* in Nova database mode, in the ``services`` table of the cell named by
  ``[scheduler] service_cell`` - the one write this service makes to
  Nova's databases, the one Nova's own scheduler makes;
* on the standalone schema, in our own ``services`` table, so that
  operators see the scheduler there too.

``version`` is ``SERVICE_VERSION``, the service version of the Nova
release whose scheduler RPC API and objects this service speaks.  Rows
are written with Core statements on the engine given, each in a
transaction of its own; datetimes are naive UTC.
"""

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import uuidutils

from scheduler.db import api
from scheduler.db import source
from scheduler.db.nova import schema

LOG = logging.getLogger(__name__)

BINARY = 'nova-scheduler'
TOPIC = 'scheduler'
# nova.objects.service.SERVICE_VERSION of Nova 34.0.0 (2026.2, its
# alias "Hibiscus"): the release whose RPC API 4.5 and object versions
# this service speaks.  Nova compares compute services' versions only.
SERVICE_VERSION = 74


class ServiceRow:
    """The live row of (``host``, ``nova-scheduler``) in ``table`` (a
    ``services`` Table with Nova's columns) on ``engine``."""

    def __init__(self, engine, table, host):
        self.engine = engine
        self.table = table
        self.host = host
        self.id = None

    def _find(self, connection):
        table = self.table
        return connection.execute(sa.select(table.c.id, table.c.version)
                                  .where(table.c.host == self.host,
                                         table.c.binary == BINARY,
                                         table.c.deleted == 0)).first()

    def _insert(self, connection):
        now = timeutils.utcnow()
        result = connection.execute(sa.insert(self.table).values(
            uuid=uuidutils.generate_uuid(), host=self.host, binary=BINARY,
            topic=TOPIC, report_count=0, disabled=False, forced_down=False,
            version=SERVICE_VERSION, created_at=now, deleted=0))
        return result.inserted_primary_key[0]

    def register(self):
        """Create the row, or set the version of the existing one (as
        Nova's service start does); a sibling worker creating it at the
        same time is no error.

        :returns: the row's id (int).
        :raises oslo_db.exception.DBError: the database cannot be written.
        """
        try:
            with self.engine.begin() as connection:
                self.id = self._register_in(connection)
        except db_exc.DBDuplicateEntry:
            with self.engine.begin() as connection:
                self.id = self._find(connection)[0]
        return self.id

    def _register_in(self, connection):
        if connection.dialect.name == 'sqlite':
            # A writer from its first statement: a transaction that reads
            # first cannot always become one while a sibling worker's
            # does ("database is locked", not waited for).
            connection.execute(sa.update(self.table).where(sa.false())
                               .values(report_count=0))
        found = self._find(connection)
        if found is None:
            row_id = self._insert(connection)
            LOG.info('Created the %s service row of host %s (version %d)',
                     BINARY, self.host, SERVICE_VERSION)
            return row_id
        if found.version != SERVICE_VERSION:
            connection.execute(sa.update(self.table)
                               .where(self.table.c.id == found.id)
                               .values(version=SERVICE_VERSION,
                                       updated_at=timeutils.utcnow()))
        return found.id

    def heartbeat(self):
        """Raise ``report_count`` and stamp ``last_seen_up`` and
        ``updated_at`` with now, in one UPDATE; a row deleted meanwhile
        (``openstack compute service delete``) is created again.

        :raises oslo_db.exception.DBError: the database cannot be written.
        """
        if self.id is None:
            self.register()
        now = timeutils.utcnow()
        table = self.table
        statement = (sa.update(table)
                     .where(table.c.id == self.id, table.c.deleted == 0)
                     .values(report_count=table.c.report_count + 1,
                             last_seen_up=now, updated_at=now))
        with self.engine.begin() as connection:
            if connection.execute(statement).rowcount:
                return
        LOG.warning('The %s service row of host %s was deleted; creating '
                    'it again', BINARY, self.host)
        self.id = None
        self.register()


def configured(host):
    """The ``ServiceRow`` of ``host`` for the configuration: in the
    ``services`` table of the ``[scheduler] service_cell`` cell database
    in Nova database mode, in our own otherwise.

    :raises scheduler.db.nova.cells.CellsError: Nova database mode, and
        the service cell cannot be found or reached.
    """
    if source.nova_mode():
        cell = source.get_source().service_cell()
        return ServiceRow(cell.engine, schema.SERVICES, host)
    return ServiceRow(api.get_engine(), api.SERVICES, host)
