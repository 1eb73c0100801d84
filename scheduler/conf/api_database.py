"""``[api_database]``: Nova's API database, which selects Nova database mode.

As in Nova, the group holds oslo.db's database options (every one but
``use_db_reconnect``, as Nova registers them since Newton), as copies so
that oslo.config keeps them apart from ``[database]``'s.  When
``connection`` is set, the service reads a Nova deployment's own
databases: the API database named here (aggregates, server groups, cell
and host mappings) and every cell database its ``cell_mappings`` name
(compute nodes, services, instances); ``[database] connection`` is then
the scheduler's own database (claims).  Unset (the default), the service
runs on its own standalone schema in ``[database] connection`` only.
The cells' engines take the pool, retry and timeout options of this
group too, and a cell mapping whose ``database_connection`` is a Nova
URL template is filled from ``connection`` unless ``[scheduler]
cell_template_connection`` is set.  See ``docs/nova-databases.rst``.
"""

import copy

from oslo_config import cfg
from oslo_db import options as oslo_db_options

from scheduler.conf import groups

api_db_group = cfg.OptGroup(
    name='api_database', title='Nova API database',
    help='Nova\'s API database.  Setting ``connection`` selects Nova '
         'database mode: the scheduler reads the compute nodes, services '
         'and instances of every cell database named in the API '
         'database\'s ``cell_mappings`` (cell0 excluded) and the '
         'aggregates, server groups and host mappings of the API '
         'database, and keeps its own state (claims) in '
         '``[database] connection``.  It never changes Nova\'s schema, and '
         'writes only its own ``nova-scheduler`` service row.  A cell '
         'mapping whose ``database_connection`` is a template is filled '
         'from ``connection``, unless ``[scheduler] '
         'cell_template_connection`` is set.')

# The options the engines of Nova's databases take from this group.
ENGINE_OPTIONS = (
    'slave_connection', 'sqlite_synchronous', 'connection_recycle_time',
    'connection_debug', 'connection_trace', 'connection_parameters',
    'max_pool_size', 'max_overflow', 'pool_timeout', 'max_retries',
    'retry_interval', 'mysql_sql_mode', 'mysql_wsrep_sync_wait',
)

api_db_opts = [copy.deepcopy(opt) for opt in oslo_db_options.database_opts
               if opt.name != 'use_db_reconnect']


def register_opts(conf):
    groups.register_group(conf, api_db_group)
    conf.register_opts(api_db_opts, group=api_db_group)


def list_opts():
    return {api_db_group: api_db_opts}


def nova_mode(conf):
    """Whether ``conf`` selects Nova database mode (``[api_database]
    connection`` is set)."""
    return bool(conf.api_database.connection)
