"""Where the host view reads: ``HostSource``, and the configured one.

The host manager (``scheduler.view.host_manager``) reads compute nodes,
services, instances, aggregates and server groups only through the
``HostSource`` that ``get_source`` returns for the configuration:

* standalone (the embedded default, ``[api_database] connection``
  unset): ``StandaloneSource``, the functions of ``scheduler.db.api`` on
  the scheduler's own Nova-shaped schema, unchanged;
* Nova database mode (``[api_database] connection`` set):
  ``scheduler.db.nova.source.NovaSource``, the tables of a Nova
  deployment's API and cell databases, as Nova's migrations made them
  (see ``docs/nova-databases.rst``).

Both return plain dicts keyed by Nova's column names (datetimes naive
UTC, ``memory_mb`` in MiB, ``local_gb`` in GiB), shaped as
``scheduler.db.api`` documents them, and raise oslo.db's ``DBError``
family when a database cannot be read.  Row ids are unique within a
source; ``row_version`` changes with every write of a row.
"""

import datetime
import threading
import typing
from collections.abc import Iterable
from collections.abc import Iterator

from scheduler.conf import CONF
from scheduler.conf import api_database
from scheduler.db import api
from scheduler.db import changes as db_changes

Row = dict[str, typing.Any]


class HostSource(typing.Protocol):
    """The reads of the host view (see ``scheduler.db.api`` for the
    shapes); ``context`` is a ``scheduler.context.RequestContext``."""

    def compute_node_iter_all(self, context) -> Iterator[Row]:
        """Every live compute node, streamed."""

    def compute_node_get(self, context, compute_id: int) -> Row:
        """One live compute node; ``NotFound`` when there is none."""

    def compute_node_get_hosts(self, context) -> set[str]:
        """The ``host`` values of the live compute nodes."""

    def service_get_all_by_binary(self, context, binary: str,
                                  include_disabled: bool = True
                                  ) -> list[Row]:
        """The live services of ``binary``."""

    def instance_get_all_by_host(self, context, host: str) -> list[Row]:
        """The live instances of one host."""

    def instance_get_all_by_hosts(self, context, hosts: Iterable[str]
                                  ) -> dict[str, list[Row]]:
        """``{host: [instances]}`` with an entry for every host."""

    def aggregate_get_all(self, context) -> list[Row]:
        """Every aggregate with its ``hosts`` and ``metadata``."""

    def instance_group_get_by_uuid(self, context, uuid: str) -> Row:
        """A server group with ``policies``, ``rules``, ``members`` and
        ``hosts``; ``NotFound`` when there is none."""

    def get_changes_since(self, context, since: datetime.datetime,
                          binary: str) -> dict[str, typing.Any]:
        """The compute node, service and instance rows changed after
        ``since`` (``db_changes.get_changes_since``'s shape)."""

    def get_instance_changes_since(self, context, since: datetime.datetime
                                   ) -> list[Row]:
        """The instance rows changed after ``since``."""

    def get_change_versions_since(self, context, since: datetime.datetime,
                                  binary: str) -> dict[str, dict]:
        """``{'compute_nodes': {id: version}, 'services': {id:
        version}}`` of the rows changed after ``since``."""

    def get_rows_by_ids(self, context, compute_node_ids: Iterable[int] = (),
                        service_ids: Iterable[int] = ()
                        ) -> dict[str, typing.Any]:
        """Compute node and service rows by id, deleted ones included."""

    def row_version(self, table_name: str, row: Row) -> tuple:
        """The version of a ``compute_nodes`` or ``services`` row."""

    def timestamp_resolution(self) -> datetime.timedelta:
        """How much earlier than its true time a stored stamp can read."""

    def cell_uuid(self, compute: Row) -> str:
        """The uuid of the Nova cell of a compute node row."""


class StandaloneSource:
    """``HostSource`` on the standalone schema: the ``scheduler.db.api``
    functions, looked up at each call; every node is in the cell of
    ``[scheduler] cell_uuid`` (unset: ``cell_mapping.SINGLE_CELL_UUID``)."""

    def compute_node_iter_all(self, context):
        return api.compute_node_iter_all(context)

    def compute_node_get(self, context, compute_id):
        return api.compute_node_get(context, compute_id)

    def compute_node_get_hosts(self, context):
        return api.compute_node_get_hosts(context)

    def service_get_all_by_binary(self, context, binary='nova-compute',
                                  include_disabled=True):
        return api.service_get_all_by_binary(context, binary,
                                             include_disabled)

    def instance_get_all_by_host(self, context, host):
        return api.instance_get_all_by_host(context, host)

    def instance_get_all_by_hosts(self, context, hosts):
        return api.instance_get_all_by_hosts(context, hosts)

    def aggregate_get_all(self, context):
        return api.aggregate_get_all(context)

    def instance_group_get_by_uuid(self, context, uuid):
        return api.instance_group_get_by_uuid(context, uuid)

    def get_changes_since(self, context, since, binary='nova-compute'):
        return db_changes.get_changes_since(context, since, binary)

    def get_instance_changes_since(self, context, since):
        return db_changes.get_instance_changes_since(context, since)

    def get_change_versions_since(self, context, since, binary='nova-compute'):
        return db_changes.get_change_versions_since(context, since, binary)

    def get_rows_by_ids(self, context, compute_node_ids=(), service_ids=()):
        return db_changes.get_rows_by_ids(context, compute_node_ids,
                                          service_ids)

    def row_version(self, table_name, row):
        return db_changes.row_version(table_name, row)

    def timestamp_resolution(self):
        return db_changes.timestamp_resolution()

    def cell_uuid(self, compute):
        return standalone_cell_uuid()


def standalone_cell_uuid():
    """``[scheduler] cell_uuid``, else ``cell_mapping.SINGLE_CELL_UUID``."""
    # Imported here: the objects bring oslo.messaging (and eventlet),
    # which the management commands reading the database do not need.
    from scheduler.objects import cell_mapping
    return CONF.scheduler.cell_uuid or cell_mapping.SINGLE_CELL_UUID


_LOCK = threading.Lock()
_SOURCE = None


def nova_mode():
    """Whether the configuration selects Nova database mode."""
    return api_database.nova_mode(CONF)


def get_source() -> HostSource:
    """The process's source for the configuration, made on first use (a
    ``NovaSource`` is started then).

    :raises scheduler.db.nova.cells.CellsError: Nova's databases cannot
        be used as configured (Nova database mode).
    """
    global _SOURCE
    with _LOCK:
        if _SOURCE is None:
            _SOURCE = _make_source()
        return _SOURCE


def _make_source():
    if not nova_mode():
        return StandaloneSource()
    from scheduler.db.nova import source as nova_source
    made = nova_source.NovaSource(CONF)
    made.start()
    return made


def reset():
    """Forget the process's source (closing a ``NovaSource``'s engines),
    e.g. after the configuration changed; the next ``get_source`` makes
    a new one."""
    global _SOURCE
    with _LOCK:
        old, _SOURCE = _SOURCE, None
    if old is not None and hasattr(old, 'stop'):
        old.stop()
