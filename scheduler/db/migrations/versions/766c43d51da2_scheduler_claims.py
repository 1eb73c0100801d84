"""Resource claims: ``compute_nodes.claimed_*`` and ``scheduler_claims``.

Adds to ``compute_nodes`` the sums of the live claims of each node,
``claimed_vcpus``, ``claimed_memory_mb`` (MiB) and ``claimed_disk_gb``
(GiB), NOT NULL with server default 0 so that existing rows start with
no claim, and ``claims_updated_at`` (NULL until the first claim or
release).  Creates ``scheduler_claims``, one row per claimed instance
(unique ``instance_uuid``), indexed by ``compute_node_id`` and
``expires_at``.  ``services.updated_at`` is already indexed
(``services_updated_at_idx``, initial revision).  Plain ``ADD COLUMN``
statements, which SQLite, PostgreSQL and MySQL all accept for a NOT NULL
column with a default.  See ``scheduler.db.claims``.

Revision ID: 766c43d51da2
Revises: 9e7fde3ef797
Create Date: 2026-01-10 12:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = '766c43d51da2'
down_revision = '9e7fde3ef797'
branch_labels = None
depends_on = None

CLAIMED_COLUMNS = ('claimed_vcpus', 'claimed_memory_mb', 'claimed_disk_gb')


def _add_compute_node_columns():
    for name in CLAIMED_COLUMNS:
        op.add_column('compute_nodes',
                      sa.Column(name, sa.Integer(), nullable=False,
                                server_default='0'))
    op.add_column('compute_nodes',
                  sa.Column('claims_updated_at', sa.DateTime()))


def _create_scheduler_claims():
    op.create_table(
        'scheduler_claims',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('compute_node_id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(255)),
        *[sa.Column(name, sa.Integer(), nullable=False)
          for name in ('vcpus', 'memory_mb', 'disk_gb')],
        sa.Column('expires_at', sa.DateTime(), nullable=False),
        sa.Column('created_at', sa.DateTime()),
        sa.Column('updated_at', sa.DateTime()),
        sa.UniqueConstraint('instance_uuid',
                            name='uniq_scheduler_claims0instance_uuid'),
        # A claim id must never be reused, on SQLite too.
        sqlite_autoincrement=True,
    )
    for column in ('compute_node_id', 'expires_at'):
        op.create_index('scheduler_claims_%s_idx' % column,
                        'scheduler_claims', [column])


def upgrade():
    _add_compute_node_columns()
    _create_scheduler_claims()
