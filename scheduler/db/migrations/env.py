"""Alembic environment: runs the revisions in ``versions/``.

``scheduler.db.migration`` drives it programmatically and hands over an
open connection in ``config.attributes['connection']``.  Without one (a
hand-written ``alembic.ini``), the URL comes from ``sqlalchemy.url`` or,
failing that, from ``[database] connection`` through ``scheduler.db.api``.
Offline mode (``--sql``) renders the DDL for ``sqlalchemy.url``.
The revisions are recorded in ``scheduler_alembic_version``
(``models.VERSION_TABLE``): alembic's default ``alembic_version`` is
Nova's (and other applications').
"""

from alembic import context
from sqlalchemy import create_engine

from scheduler.db import models

config = context.config
target_metadata = models.Base.metadata


def _configure(**kwargs):
    context.configure(target_metadata=target_metadata,
                      version_table=models.VERSION_TABLE,
                      compare_type=True,
                      render_as_batch=True,
                      **kwargs)


def run_migrations_offline():
    """Emit the DDL as text, without a database."""
    _configure(url=config.get_main_option('sqlalchemy.url'),
               literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run_on(connection):
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def _own_engine():
    url = config.get_main_option('sqlalchemy.url')
    if url:
        return create_engine(url)
    from scheduler.db import api
    return api.get_engine()


def run_migrations_online():
    """Apply the revisions on the given or configured database."""
    connection = config.attributes.get('connection')
    if connection is not None:
        _run_on(connection)
        return
    with _own_engine().begin() as connection:
        _run_on(connection)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
