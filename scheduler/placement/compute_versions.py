"""The minimum nova-compute service version, for ``owner_nova_filter``.

Nova 34 requires the ``OWNER_NOVA`` trait only once every nova-compute
reports service version ``MIN_COMPUTE_VERSION_OWNER_TRAIT`` (73) or
later, read by ``nova.objects.service.get_minimum_version_all_cells``:
the least ``services.version`` of the live (``deleted = 0``), not forced
down ``nova-compute`` rows of every cell, leaving out versions 0 and
NULL, and the cells that fail or do not answer; 0 when nothing is left.

``MinComputeVersion`` reads the same rows through the host view's
source (``scheduler.db.source.get_source``): in Nova database mode the
``services`` table of each scheduled cell database (not the disabled
cells, which Nova reads too), side by side within
``[scheduler] cell_timeout`` (a cell that fails or does not answer is
skipped, ``scheduler.db.nova.scatter``); in standalone mode the
scheduler's own ``services`` table, which has Nova's ``version``
column.  When no database answers, the version is 0 (logged), as in
Nova.  Nova reads it for every request; here a version read is kept
``CACHE_SECONDS`` (60 s): a rolling upgrade's last compute turns the
filter on within a minute, and a decision does not wait for every cell.
A failed read is not kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

from oslo_db import exception as db_exc
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'nova-compute'
MIN_COMPUTE_VERSION_OWNER_TRAIT = 73
CACHE_SECONDS = 60.0


def minimum(services: Iterable[dict[str, Any]]) -> int:
    """The least positive ``version`` of the ``services`` rows that are
    not forced down; 0 when there is none (Nova's rule)."""
    versions = [row.get('version') for row in services
                if not row.get('forced_down')]
    return min((version for version in versions if version), default=0)


def read_services() -> list[dict[str, Any]]:
    """The live nova-compute ``services`` rows of the host view's source
    (every cell that answers).

    :raises oslo_db.exception.DBError: no database answered.
    """
    from scheduler import context as context_lib
    from scheduler.db import source as source_lib
    return list(source_lib.get_source().service_get_all_by_binary(
        context_lib.get_admin_context(), COMPUTE_BINARY))


class MinComputeVersion:
    """``()`` returns the minimum nova-compute version (see the module).
    ``read``: returns the services rows; ``ttl``: seconds a read is kept;
    ``clock``: monotonic seconds.  Thread-safe."""

    def __init__(self, read: Callable[[], Iterable[dict[str, Any]]] =
                 read_services, ttl: float = CACHE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: tuple[float, int] | None = None

    def __call__(self) -> int:
        with self._lock:
            now = self._clock()
            if self._kept is not None and now - self._kept[0] < self._ttl:
                return self._kept[1]
            try:
                version = minimum(self._read())
            except (db_exc.DBError, _cells_error()) as exc:
                LOG.warning('Failed to get the minimum nova-compute service '
                            'version from any cell (%s): taken as 0',
                            str(exc).splitlines()[0] if str(exc) else
                            type(exc).__name__)
                return 0
            self._kept = (now, version)
            return version


def _cells_error() -> type[Exception]:
    from scheduler.db.nova import cells
    error: type[Exception] = cells.CellsError
    return error
