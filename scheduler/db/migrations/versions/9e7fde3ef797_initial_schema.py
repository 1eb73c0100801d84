"""Initial schema: Nova's Newton/Ocata tables the scheduler reads.

Creates ``compute_nodes``, ``services`` and ``instances`` (cell-database
shape, soft-deleted) and ``aggregates``, ``aggregate_hosts``,
``aggregate_metadata``, ``instance_groups``, ``instance_group_member`` and
``instance_group_policy`` (API-database shape), plus our own
``compute_nodes.generation`` column and the ``updated_at`` and
``created_at`` indexes of the incremental refresh.  The types
are spelled out here rather than imported from ``models`` so that this
revision stays fixed when the models move on.

Revision ID: 9e7fde3ef797
Revises:
Create Date: 2025-11-22 10:20:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql

revision = '9e7fde3ef797'
down_revision = None
branch_labels = None
depends_on = None

MEDIUM_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql')
IP_ADDRESS = sa.String(39).with_variant(postgresql.INET(), 'postgresql')


def _timestamps():
    return [sa.Column('created_at', sa.DateTime()),
            sa.Column('updated_at', sa.DateTime())]


def _soft_delete():
    return [sa.Column('deleted_at', sa.DateTime()),
            sa.Column('deleted', sa.Integer(), server_default='0')]


def _counter(name, nullable=True):
    return sa.Column(name, sa.Integer(), nullable=nullable,
                     server_default='0')


def _flag(name):
    return sa.Column(name, sa.Boolean(), server_default='0')


def _id():
    return sa.Column('id', sa.Integer(), primary_key=True,
                     autoincrement=True)


def _string(name, nullable=True):
    return sa.Column(name, sa.String(255), nullable=nullable)


def _integer(name, nullable=True):
    return sa.Column(name, sa.Integer(), nullable=nullable)


def _parent(name, table):
    return sa.Column(name, sa.Integer(), sa.ForeignKey(table + '.id'),
                     nullable=False)


def _create_compute_nodes():
    op.create_table(
        'compute_nodes',
        _id(),
        _integer('service_id'),
        _string('host'),
        sa.Column('uuid', sa.String(36)),
        *[_integer(name, nullable=False) for name in (
            'vcpus', 'memory_mb', 'local_gb',
            'vcpus_used', 'memory_mb_used', 'local_gb_used')],
        sa.Column('hypervisor_type', MEDIUM_TEXT, nullable=False),
        _integer('hypervisor_version', nullable=False),
        _string('hypervisor_hostname'),
        *[_integer(name) for name in (
            'free_ram_mb', 'free_disk_gb', 'current_workload',
            'running_vms')],
        sa.Column('cpu_info', MEDIUM_TEXT, nullable=False),
        _integer('disk_available_least'),
        sa.Column('host_ip', IP_ADDRESS),
        *[sa.Column(name, sa.Text()) for name in (
            'supported_instances', 'metrics', 'pci_stats',
            'extra_resources', 'stats', 'numa_topology')],
        *[sa.Column(name, sa.Float()) for name in (
            'ram_allocation_ratio', 'cpu_allocation_ratio',
            'disk_allocation_ratio')],
        _counter('mapped'),
        _counter('generation', nullable=False),
        *_timestamps(),
        *_soft_delete(),
        sa.UniqueConstraint(
            'host', 'hypervisor_hostname', 'deleted',
            name='uniq_compute_nodes0host0hypervisor_hostname0deleted'),
    )
    op.create_index('compute_nodes_uuid_idx', 'compute_nodes', ['uuid'],
                    unique=True)
    for column in ('updated_at', 'created_at'):
        op.create_index('compute_nodes_%s_idx' % column, 'compute_nodes',
                        [column])


def _create_services():
    op.create_table(
        'services',
        _id(),
        sa.Column('uuid', sa.String(36)),
        _string('host'),
        _string('binary'),
        _string('topic'),
        _counter('report_count', nullable=False),
        _flag('disabled'),
        _string('disabled_reason'),
        sa.Column('last_seen_up', sa.DateTime()),
        _flag('forced_down'),
        _counter('version'),
        *_timestamps(),
        *_soft_delete(),
        sa.UniqueConstraint('host', 'topic', 'deleted',
                            name='uniq_services0host0topic0deleted'),
        sa.UniqueConstraint('host', 'binary', 'deleted',
                            name='uniq_services0host0binary0deleted'),
    )
    op.create_index('services_uuid_idx', 'services', ['uuid'], unique=True)
    op.create_index('services_updated_at_idx', 'services', ['updated_at'])


def _create_aggregates():
    op.create_table(
        'aggregates',
        _id(),
        sa.Column('uuid', sa.String(36)),
        _string('name'),
        *_timestamps(),
        sa.UniqueConstraint('name', name='uniq_aggregate0name'),
    )
    op.create_index('aggregate_uuid_idx', 'aggregates', ['uuid'])
    op.create_table(
        'aggregate_hosts',
        _id(),
        _string('host'),
        _parent('aggregate_id', 'aggregates'),
        *_timestamps(),
        sa.UniqueConstraint('host', 'aggregate_id',
                            name='uniq_aggregate_hosts0host0aggregate_id'),
    )
    op.create_table(
        'aggregate_metadata',
        _id(),
        _string('key', nullable=False),
        _string('value', nullable=False),
        _parent('aggregate_id', 'aggregates'),
        *_timestamps(),
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate_id0key'),
    )
    op.create_index('aggregate_metadata_key_idx', 'aggregate_metadata',
                    ['key'])


def _create_instances():
    op.create_table(
        'instances',
        _id(),
        sa.Column('uuid', sa.String(36), nullable=False),
        _string('user_id'),
        _string('project_id'),
        _string('image_ref'),
        _integer('power_state'),
        _string('vm_state'),
        _string('task_state'),
        *[_integer(name) for name in (
            'memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb')],
        _string('host'),
        _string('node'),
        _integer('instance_type_id'),
        sa.Column('launched_on', MEDIUM_TEXT),
        *[_string(name) for name in (
            'availability_zone', 'os_type', 'architecture', 'vm_mode')],
        _counter('cleaned'),
        *_timestamps(),
        *_soft_delete(),
        sa.UniqueConstraint('uuid', name='uniq_instances0uuid'),
    )
    for name, columns in (
            ('instances_host_node_deleted_idx', ['host', 'node', 'deleted']),
            ('instances_host_deleted_cleaned_idx',
             ['host', 'deleted', 'cleaned']),
            ('instances_uuid_deleted_idx', ['uuid', 'deleted']),
            ('instances_project_id_deleted_idx',
             ['project_id', 'deleted'])):
        op.create_index(name, 'instances', columns)


def _create_instance_groups():
    op.create_table(
        'instance_groups',
        _id(),
        _string('user_id'),
        _string('project_id'),
        sa.Column('uuid', sa.String(36), nullable=False),
        _string('name'),
        *_timestamps(),
        sa.UniqueConstraint('uuid', name='uniq_instance_groups0uuid'),
    )
    op.create_table(
        'instance_group_member',
        _id(),
        _string('instance_uuid'),
        _parent('group_id', 'instance_groups'),
        *_timestamps(),
    )
    op.create_index('instance_group_member_instance_idx',
                    'instance_group_member', ['instance_uuid'])
    op.create_table(
        'instance_group_policy',
        _id(),
        _string('policy'),
        _parent('group_id', 'instance_groups'),
        sa.Column('rules', sa.Text()),
        *_timestamps(),
    )
    op.create_index('instance_group_policy_policy_idx',
                    'instance_group_policy', ['policy'])


def upgrade():
    _create_compute_nodes()
    _create_services()
    _create_aggregates()
    _create_instances()
    _create_instance_groups()
