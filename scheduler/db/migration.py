"""Schema migrations: alembic, driven from code.

No ``alembic.ini`` is needed: the alembic ``Config`` is built here, with
``script_location`` pointing at the ``migrations`` package, and the
revisions run on a connection of the engine given (by default the one
``scheduler.db.api`` builds from ``[database] connection``).  Revisions only
go forward, as Nova's do.
"""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration

from scheduler.db import api

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              'migrations')


def _alembic_config(connection):
    config = alembic_config.Config()
    config.set_main_option('script_location', MIGRATIONS_DIR)
    config.attributes['connection'] = connection
    return config


def db_sync(engine=None, version='head'):
    """Upgrade the database to ``version`` (an alembic revision id, or
    ``'head'`` for the newest).  Already being there is not an error, so
    running it twice is harmless.

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    """
    engine = engine or api.get_engine()
    with engine.begin() as connection:
        alembic_command.upgrade(_alembic_config(connection), version or 'head')


def db_version(engine=None):
    """Return the database's current revision id, or None when no
    revision has been applied (an empty database).

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    """
    engine = engine or api.get_engine()
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()
