"""Alembic revisions of the scheduler database, oldest first."""
