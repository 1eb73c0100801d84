"""``[scheduler]`` options about Nova cells (our own options).

Which cell the compute nodes of the standalone schema belong to, and in
which cell database Nova database mode keeps the service's
``nova-scheduler`` row.  See ``docs/nova-databases.rst``.
"""

from oslo_config import cfg

from scheduler.conf import scheduler

CELL0_UUID = '00000000-0000-0000-0000-000000000000'
_UUID = r'^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$'

cell_opts = [
    cfg.StrOpt('cell_uuid', regex=_UUID,
               help='The uuid of the Nova cell these compute nodes belong '
                    'to (our own option, standalone schema only).  Every '
                    'Selection names it as its ``cell_uuid``, and a '
                    'request whose ``requested_destination`` names another '
                    'cell matches no host.  Set it to the uuid of the '
                    'cell mapping (``nova-manage cell_v2 list_cells``) '
                    'whose compute nodes this database mirrors, so that '
                    'Nova\'s conductor finds the cell of a chosen host.  '
                    'Unset, a fixed uuid of our own is used.  In Nova '
                    'database mode (``[api_database] connection`` set) '
                    'each host has the uuid of the cell it was read from '
                    'and this option is ignored.'),
    cfg.StrOpt('service_cell', default='cell0',
               help='Nova database mode only (our own option): the name or '
                    'uuid of the cell mapping in whose database the '
                    'service keeps its ``nova-scheduler`` row.  Nova\'s own '
                    'scheduler writes that row to the database of its '
                    '``[database] connection``: cell0\'s in Nova\'s '
                    'multi-cell layout (the default here), the only '
                    'cell\'s in a single-cell deployment.  The API\'s '
                    'service list reads every cell database, cell0 '
                    'included, so the row is listed either way.'),
]


def register_opts(conf):
    conf.register_opts(cell_opts, group=scheduler.scheduler_group)


def list_opts():
    return {scheduler.scheduler_group: cell_opts}
