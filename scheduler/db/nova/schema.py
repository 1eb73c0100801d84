"""The columns of Nova's tables that the scheduler reads, as Core tables.

Declared here, column by column, from the schema Nova's own migrations
create (Nova 34.0.0, the same columns since Ocata); never created, altered
or reflected: ``CELL`` and ``API`` are only used to build statements.
Types are the ones that decode Nova's values (``DateTime`` for its naive
UTC timestamps, ``Boolean`` for its flags); ``host_ip`` (``INET`` on
PostgreSQL) is read as text.  Columns Nova has but the scheduler does not
read are left out, so a later Nova that adds columns reads the same.

Cell databases (``CELL``): ``compute_nodes``, ``services`` and
``instances``, soft-deleted (``deleted = id`` when gone) and stamped
``created_at`` / ``updated_at`` / ``deleted_at``, without our
``generation`` nor the ``claimed_*`` columns nor timestamp indexes.
API database (``API``): ``aggregates``, ``aggregate_hosts``,
``aggregate_metadata``, ``instance_groups``, ``instance_group_member``,
``instance_group_policy`` (with its Rocky ``rules``), ``cell_mappings``
and ``host_mappings``.
"""

import sqlalchemy as sa

CELL = sa.MetaData()
API = sa.MetaData()


def _timestamps():
    return [sa.Column('created_at', sa.DateTime),
            sa.Column('updated_at', sa.DateTime)]


def _soft_delete():
    return [sa.Column('deleted_at', sa.DateTime),
            sa.Column('deleted', sa.Integer)]


def _integers(*names):
    return [sa.Column(name, sa.Integer) for name in names]


def _texts(*names):
    return [sa.Column(name, sa.Text) for name in names]


def _strings(*names):
    return [sa.Column(name, sa.String(255)) for name in names]


COMPUTE_NODES = sa.Table(
    'compute_nodes', CELL,
    sa.Column('id', sa.Integer, primary_key=True),
    *_integers('service_id'),
    *_strings('host'),
    sa.Column('uuid', sa.String(36)),
    *_integers('vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
               'memory_mb_used', 'local_gb_used'),
    *_texts('hypervisor_type'),
    *_integers('hypervisor_version'),
    *_strings('hypervisor_hostname'),
    *_integers('free_ram_mb', 'free_disk_gb', 'current_workload',
               'running_vms'),
    *_texts('cpu_info'),
    *_integers('disk_available_least'),
    sa.Column('host_ip', sa.String(39)),
    *_texts('supported_instances', 'metrics', 'pci_stats',
            'extra_resources', 'stats', 'numa_topology'),
    *[sa.Column(name, sa.Float) for name in (
        'ram_allocation_ratio', 'cpu_allocation_ratio',
        'disk_allocation_ratio')],
    *_integers('mapped'),
    *_timestamps(), *_soft_delete(),
)

SERVICES = sa.Table(
    'services', CELL,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36)),
    *_strings('host', 'binary', 'topic'),
    sa.Column('report_count', sa.Integer, nullable=False),
    sa.Column('disabled', sa.Boolean),
    *_strings('disabled_reason'),
    sa.Column('last_seen_up', sa.DateTime),
    sa.Column('forced_down', sa.Boolean),
    *_integers('version'),
    *_timestamps(), *_soft_delete(),
)

INSTANCES = sa.Table(
    'instances', CELL,
    sa.Column('id', sa.Integer, primary_key=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    *_strings('user_id', 'project_id', 'image_ref'),
    *_integers('power_state'),
    *_strings('vm_state', 'task_state'),
    *_integers('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb'),
    *_strings('host', 'node'),
    *_integers('instance_type_id'),
    *_texts('launched_on'),
    *_strings('availability_zone', 'os_type', 'architecture', 'vm_mode'),
    *_integers('cleaned'),
    *_timestamps(), *_soft_delete(),
)

def _api_table(name, *columns):
    """A table of the API database: ``id`` and ``columns``."""
    return sa.Table(name, API, sa.Column('id', sa.Integer, primary_key=True),
                    *columns)


AGGREGATES = _api_table('aggregates', sa.Column('uuid', sa.String(36)),
                        *_strings('name'), *_timestamps())
AGGREGATE_HOSTS = _api_table('aggregate_hosts', *_strings('host'),
                             *_integers('aggregate_id'))
AGGREGATE_METADATA = _api_table('aggregate_metadata',
                                *_strings('key', 'value'),
                                *_integers('aggregate_id'))
INSTANCE_GROUPS = _api_table('instance_groups',
                             *_strings('user_id', 'project_id'),
                             sa.Column('uuid', sa.String(36)),
                             *_strings('name'), *_timestamps())
INSTANCE_GROUP_MEMBERS = _api_table('instance_group_member',
                                    *_strings('instance_uuid'),
                                    *_integers('group_id'))
INSTANCE_GROUP_POLICIES = _api_table('instance_group_policy',
                                     *_strings('policy'),
                                     *_integers('group_id'),
                                     *_texts('rules'))
CELL_MAPPINGS = _api_table('cell_mappings', sa.Column('uuid', sa.String(36)),
                           *_strings('name'), *_texts('database_connection'),
                           sa.Column('disabled', sa.Boolean))
HOST_MAPPINGS = _api_table('host_mappings', *_integers('cell_id'),
                           *_strings('host'))
