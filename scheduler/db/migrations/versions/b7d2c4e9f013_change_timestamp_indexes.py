"""Indexes for the incremental refresh: rows changed since a time.

The scheduler reads, before each decision, the ``compute_nodes``,
``services`` and ``instances`` rows created, updated or soft-deleted
since its previous read (``scheduler.view.host_manager``).  Each of the three
timestamps of the three tables gets an index, so that the read costs
O(rows changed) on every engine; ``compute_nodes.updated_at`` /
``created_at`` and ``services.updated_at`` were indexed already.

Revision ID: b7d2c4e9f013
Revises: 766c43d51da2
Create Date: 2026-11-22 13:00:00
"""

from alembic import op

revision = 'b7d2c4e9f013'
down_revision = '766c43d51da2'
branch_labels = None
depends_on = None

# (index name, table, column)
INDEXES = (
    ('compute_nodes_deleted_at_idx', 'compute_nodes', 'deleted_at'),
    ('services_created_at_idx', 'services', 'created_at'),
    ('services_deleted_at_idx', 'services', 'deleted_at'),
    ('instances_updated_at_idx', 'instances', 'updated_at'),
    ('instances_created_at_idx', 'instances', 'created_at'),
    ('instances_deleted_at_idx', 'instances', 'deleted_at'),
)


def upgrade():
    for name, table, column in INDEXES:
        op.create_index(name, table, [column])


def downgrade():
    for name, table, _column in reversed(INDEXES):
        op.drop_index(name, table_name=table)
