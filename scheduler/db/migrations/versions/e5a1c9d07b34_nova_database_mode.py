"""Nova database mode: ``scheduler_node_claims``, 64-bit claim node ids.

Creates ``scheduler_node_claims``, one row per claimed compute node of a
Nova cell database, keyed by the view's 64-bit node id (see
``scheduler.db.models.NodeClaims``), indexed by ``uuid`` and
``updated_at``.  ``scheduler_claims.compute_node_id`` becomes a BIGINT on
PostgreSQL and MySQL to hold those ids; SQLite's INTEGER already holds
64 bits, and its table is not rebuilt (a rebuild would lose its
``AUTOINCREMENT``, which keeps claim ids from being reused).  Existing
rows are kept.

Revision ID: e5a1c9d07b34
Revises: b7d2c4e9f013
Create Date: 2027-01-18 10:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = 'e5a1c9d07b34'
down_revision = 'b7d2c4e9f013'
branch_labels = None
depends_on = None

SNAPSHOT_COUNTS = ('vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
                   'memory_mb_used', 'local_gb_used')
RATIOS = ('cpu_allocation_ratio', 'ram_allocation_ratio',
          'disk_allocation_ratio')
CLAIMED = ('claimed_vcpus', 'claimed_memory_mb', 'claimed_disk_gb')


def _counter(name):
    return sa.Column(name, sa.Integer(), nullable=False, server_default='0')


def _create_node_claims():
    op.create_table(
        'scheduler_node_claims',
        sa.Column('id', sa.BigInteger(), primary_key=True,
                  autoincrement=False),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('cell_uuid', sa.String(36)),
        sa.Column('host', sa.String(255)),
        *[sa.Column(name, sa.Integer(), nullable=False)
          for name in SNAPSHOT_COUNTS],
        *[sa.Column(name, sa.Float()) for name in RATIOS],
        _counter('deleted'),
        sa.Column('reported_at', sa.DateTime()),
        *[_counter(name) for name in CLAIMED],
        _counter('generation'),
        sa.Column('claims_updated_at', sa.DateTime()),
        sa.Column('created_at', sa.DateTime()),
        sa.Column('updated_at', sa.DateTime()),
    )
    for column in ('uuid', 'updated_at'):
        op.create_index('scheduler_node_claims_%s_idx' % column,
                        'scheduler_node_claims', [column])


def upgrade():
    _create_node_claims()
    if op.get_bind().dialect.name != 'sqlite':
        op.alter_column('scheduler_claims', 'compute_node_id',
                        type_=sa.BigInteger(), existing_type=sa.Integer(),
                        existing_nullable=False)
