"""The image properties of instances, read in each instance's own cell.

Nova keeps the image an instance was booted (or last rebuilt) from in the
instance's system metadata: one ``instance_system_metadata`` row per
image property, keyed ``image_<property>`` (Nova's
``utils.get_system_metadata_from_image``), in the database of the
instance's cell.  Nova's ImagePropertiesWeigher reads them there for the
instances of each host it weighs (``InstanceList.fill_metadata`` under
``target_cell`` of the host's ``CellMapping``: Nova bug 2125935 was that
it read the scheduler's default database instead, where the instances of
the other cells are not found).

``ImagePropsReader`` does the same read for the host view in Nova
database mode: the live (``deleted = 0``) ``image_*`` rows of the asked
instances, in the cell database of each (the cell of the host's compute
node), turned into the image's ``properties`` dict as Nova's
``utils.get_image_from_system_metadata`` does: the ``image_`` prefix
removed, the keys Nova does not keep (``mappings``,
``block_device_mapping`` and their ``img_`` names) and the image's own
attributes (``min_ram``, ``min_disk``, ``disk_format``,
``container_format``) left out, ``None`` values skipped; values stay the
strings Nova stored.

Cost.  One ``lookup`` reads only what its cache lacks: the cells side by
side (``CellAccess.read_cells``, within ``[scheduler] cell_timeout``),
one connection per cell and one ``SELECT`` per ``CHUNK`` uuids (an
``IN`` list over Nova's ``instance_uuid`` index), never one per host.

Cache.  Results are kept per instance uuid with the caller's ``stamp``
of the instance (the view gives its ``updated_at`` and ``image_ref``):
Nova rewrites an instance's image system metadata only when it rebuilds
it, which saves the instance row (new ``updated_at``, and a new
``image_ref`` for another image), so an entry whose stamp differs from
the one asked is read again.  An instance not found (not written yet,
or deleted) is kept as having no properties, until its stamp changes.
At most ``CACHE_SIZE`` entries, the least recently asked dropped first.
``cached`` answers from the cache alone, whatever the stamps, for a
caller that has just looked the instances up.
A cell that fails or does not answer leaves its instances out of the
answer and uncached (``CellAccess`` logs the outage); ``epoch`` changes
whenever the set of instances left out changes, so that a caller
keeping results derived from a lookup knows when to drop them.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from scheduler.db.nova import cell_access

# Nova's ``utils.SM_IMAGE_PROP_PREFIX``.
PREFIX = 'image_'
# Image attributes, not properties (Nova's ``SM_INHERITABLE_KEYS``).
IMAGE_ATTRIBUTES = frozenset(('min_ram', 'min_disk', 'disk_format',
                              'container_format'))
# Keys Nova never stores nor reads back (Nova's ``SM_SKIP_KEYS``).
SKIPPED = frozenset(('mappings', 'block_device_mapping', 'img_mappings',
                     'img_block_device_mapping'))
# Most instances whose properties are kept.
CACHE_SIZE = 200_000
CHUNK = cell_access.CHUNK

# The columns of Nova's ``instance_system_metadata`` read here (cell
# databases; never created nor altered).
SYSTEM_METADATA = sa.Table(
    'instance_system_metadata', sa.MetaData(),
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('instance_uuid', sa.String(36), nullable=False),
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('value', sa.String(255)),
    sa.Column('deleted', sa.Integer),
)

# ``{property: value}`` of one instance's image (a shared, read-only dict).
Props = Mapping[str, str]
_NONE: Props = {}


def properties_of(system_metadata: Iterable[tuple[str, str | None]]
                  ) -> dict[str, str]:
    """The image ``properties`` of ``(key, value)`` system metadata pairs
    of one instance (module docstring; Nova's
    ``get_image_from_system_metadata``, restricted to ``image_*``
    keys)."""
    props = {}
    for key, value in system_metadata:
        if value is None or not key.startswith(PREFIX):
            continue
        name = key[len(PREFIX):]
        if name not in SKIPPED and name not in IMAGE_ATTRIBUTES:
            props[name] = value
    return props


def _statement(chunk: list[str]) -> sa.Select[Any]:
    table = SYSTEM_METADATA
    return (sa.select(table.c.instance_uuid, table.c.key, table.c.value)
            .where(table.c.deleted == 0,
                   table.c.key.startswith(PREFIX, autoescape=True),
                   table.c.instance_uuid.in_(chunk))
            .order_by(table.c.instance_uuid, table.c.id))


class ImagePropsReader:
    """The image properties of instances in their cells' databases, with
    a cache (module docstring).  Thread-safe."""

    def __init__(self, access: cell_access.CellAccess,
                 size: int = CACHE_SIZE) -> None:
        """``access``: the started ``CellAccess`` (``NovaSource``) whose
        cells are read; ``size``: most entries cached."""
        self._access = access
        self._size = size
        self._cache: collections.OrderedDict[
            str, tuple[Hashable, Props]] = collections.OrderedDict()
        self._interned: dict[frozenset[tuple[str, str]], Props] = {}
        self._left_out: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self.epoch = 0
        self.reads = 0          # SELECT statements run, for measures

    def lookup(self, wanted: Iterable[tuple[str | None, str, Hashable]]
               ) -> dict[str, Props]:
        """``{instance uuid: properties}`` (empty for an instance not
        found) of ``wanted``: ``(cell uuid, instance uuid, stamp)``
        triples, the cell being where the instance's host is.  Instances
        of a cell that is not scheduled to, failed or did not answer are
        left out (and read again by the next lookup)."""
        found: dict[str, Props] = {}
        missing: dict[str, dict[str, Hashable]] = {}
        with self._lock:
            for cell_uuid, uuid, stamp in wanted:
                entry = self._cache.get(uuid)
                if entry is not None and entry[0] == stamp:
                    self._cache.move_to_end(uuid)
                    found[uuid] = entry[1]
                elif cell_uuid is not None:
                    missing.setdefault(cell_uuid, {})[uuid] = stamp
        read = self._read(missing) if missing else {}
        with self._lock:
            for stamps in missing.values():
                for uuid, stamp in stamps.items():
                    if uuid in read:
                        found[uuid] = self._keep(uuid, stamp, read[uuid])
            self._note_left_out(
                {uuid for stamps in missing.values() for uuid in stamps}
                - read.keys())
        return found

    def cached(self, uuids: Iterable[str]) -> dict[str, Props]:
        """``{uuid: properties}`` of the ``uuids`` in the cache, whatever
        their stamp, without reading: for a caller that just looked
        them up (``lookup``)."""
        cache = self._cache
        with self._lock:
            return {uuid: entry[1] for uuid in uuids
                    if (entry := cache.get(uuid)) is not None}

    def _read(self, missing: dict[str, dict[str, Hashable]]
              ) -> dict[str, Props]:
        """``{uuid: props}`` of every uuid of ``missing`` (by cell uuid)
        in the cells that answered, ``{}`` for those not found."""
        by_id = {cell.id: sorted(missing[cell.uuid])
                 for cell in self._access.cells if cell.uuid in missing}
        if not by_id:
            return {}

        def read(cell: Any, connection: Any) -> dict[str, list[Any]]:
            rows: dict[str, list[Any]] = {}
            for chunk in cell_access._chunks(by_id[cell.id], CHUNK):
                for uuid, key, value in connection.execute(
                        _statement(chunk)):
                    rows.setdefault(uuid, []).append((key, value))
            return rows
        result: dict[str, Props] = {}
        for cell, rows in self._access.read_cells(read, only=by_id.keys()):
            self.reads += -(-len(by_id[cell.id]) // CHUNK)
            for uuid in by_id[cell.id]:
                result[uuid] = self._intern(properties_of(rows.get(uuid, ())))
        return result

    def _intern(self, props: dict[str, str]) -> Props:
        """One shared dict per distinct properties (instances of one
        image share it)."""
        if not props:
            return _NONE
        key = frozenset(props.items())
        with self._lock:
            return self._interned.setdefault(key, props)

    def _keep(self, uuid: str, stamp: Hashable, props: Props) -> Props:
        self._cache[uuid] = (stamp, props)
        self._cache.move_to_end(uuid)
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)
        if len(self._interned) > self._size:
            self._interned.clear()
        return props

    def _note_left_out(self, left_out: set[str]) -> None:
        if left_out != self._left_out:
            self._left_out = frozenset(left_out)
            self.epoch += 1
