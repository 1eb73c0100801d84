"""Alembic environment of the scheduler database (see ``migration.py``)."""
