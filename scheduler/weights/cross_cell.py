"""CrossCellWeigher: prefer the source cell of a cross-cell move.

Follows Nova's CrossCellWeigher (Ussuri onwards).
"""

import numpy as np

from scheduler import weights
from scheduler.objects import cell_mapping


def preferred_cell_uuid(spec_obj):
    """The uuid of the cell a move prefers: ``requested_destination.cell``
    when the destination allows a cross-cell move, else None."""
    destination = spec_obj.get('requested_destination')
    if destination is None or not destination.obj_get(
            'allow_cross_cell_move'):
        return None
    cell = destination.obj_get('cell')
    return cell.obj_get('uuid') if cell is not None else None


class CrossCellWeigher(weights.BaseHostWeigher):
    """Raw weight: +1 for a host in the preferred cell of a request that
    allows a cross-cell move (``requested_destination.cell`` with
    ``allow_cross_cell_move``), -1 for a host in another cell, 0 for
    every host of any other request.

    On the standalone schema every host is in one cell,
    ``SINGLE_CELL_UUID`` (a host state without a cell is counted in it),
    so all hosts get the same raw weight, which normalises to 0; in Nova
    database mode the hosts carry their cells' uuids and the source cell
    wins.  Multiplier ``[filter_scheduler]
    cross_cell_move_weight_multiplier`` (default 1000000.0, so that the
    source cell wins over every other default weigher), overridable per
    aggregate with the key of the same name.  No class bounds.
    """

    HOST_LOCAL = True
    NEVER_RAISES = True

    multiplier_option = 'cross_cell_move_weight_multiplier'

    def weigh_object(self, host_state, weight_properties):
        preferred = preferred_cell_uuid(weight_properties)
        if preferred is None:
            return 0
        host_cell = host_state.cell_uuid or cell_mapping.SINGLE_CELL_UUID
        return 1 if host_cell == preferred else -1

    def weigh_rows(self, table, rows, weight_properties):
        if preferred_cell_uuid(weight_properties) is None:
            return np.zeros(len(rows))
        return None

    def memo_key(self, weight_properties):
        return preferred_cell_uuid(weight_properties)
