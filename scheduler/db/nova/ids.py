"""Row ids that are unique across a Nova deployment's cell databases.

Each cell database numbers its ``compute_nodes``, ``services`` and
``instances`` rows from 1, so ids repeat across cells.  The view tells
them apart by a 64-bit id: the cell mapping's ``cell_mappings.id`` (the
API database's key of the cell, stable for the cell's life) times 2**32,
plus the row's own id (Nova's ids of these tables are 32-bit
``INTEGER`` columns).  ``local_id`` and ``cell_id`` take it apart.
"""

SHIFT = 32
_LOCAL_MASK = (1 << SHIFT) - 1


def global_id(cell_id: int, local: int) -> int:
    """The view's id of row ``local`` (a cell database's id, 0 <= local <
    2**32) of the cell whose ``cell_mappings.id`` is ``cell_id`` (>= 0).

    :raises ValueError: an id out of those ranges.
    """
    if not 0 <= local <= _LOCAL_MASK or cell_id < 0:
        raise ValueError('row id %r of cell %r out of range'
                         % (local, cell_id))
    return (cell_id << SHIFT) | local


def cell_id(view_id: int) -> int:
    """The ``cell_mappings.id`` part of a view id."""
    return view_id >> SHIFT


def local_id(view_id: int) -> int:
    """The cell database's own id part of a view id."""
    return view_id & _LOCAL_MASK
