"""``[scheduler]`` options about Nova cells (our own options).

Which cell the compute nodes of the standalone schema belong to, and, in
Nova database mode: in which cell database the service keeps its
``nova-scheduler`` row, how long a cell database may take to answer a
read before it is skipped, and which URL fills the cell mappings whose
``database_connection`` is a template.  See ``docs/nova-databases.rst``.
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
    cfg.FloatOpt('cell_timeout', default=3.0, min=0.1,
                 help='Nova database mode only (our own option): seconds '
                      'a read of the cell databases waits for them.  The '
                      'cells are read side by side; a cell whose database '
                      'has not answered by then (a frozen server, a '
                      'network that drops packets) is skipped, as Nova\'s '
                      'scheduler skips a cell that does not answer within '
                      'its ``CELL_TIMEOUT`` (60 s, not an option in Nova): '
                      'its hosts are no candidates, the other cells are '
                      'scheduled to, and it is not read again until its '
                      'late read returns.  Keep it well below '
                      '``decision_timeout`` (a decision waiting longer is '
                      'abandoned), and above the time a full read of the '
                      'largest cell takes (about 0.1 s per 1,000 compute '
                      'nodes on PostgreSQL).'),
    cfg.StrOpt('cell_template_connection', secret=True,
               help='Nova database mode only (our own option): the '
                    'database URL whose parts fill the cell mappings whose '
                    '``database_connection`` is a template (Nova Stein '
                    'and later, e.g. ``{scheme}://{username}:{password}@'
                    '{hostname}/nova_cell1?{query}``).  Nova fills them from '
                    'the ``[database] connection`` of the process that '
                    'reads the mapping, which for Nova\'s scheduler is '
                    'its cell0 (or single cell) database; ours is the '
                    'scheduler\'s own database, so set this option to that '
                    'URL of Nova\'s scheduler when the templates need its '
                    'path, host or credentials.  Unset, ``[api_database] '
                    'connection`` fills them.'),
]


def register_opts(conf):
    conf.register_opts(cell_opts, group=scheduler.scheduler_group)


def list_opts():
    return {scheduler.scheduler_group: cell_opts}
