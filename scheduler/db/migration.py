"""Schema migrations: alembic, driven from code.

No ``alembic.ini`` is needed: the alembic ``Config`` is built here, with
``script_location`` pointing at the ``migrations`` package, and the
revisions run on a connection of the engine given (by default the one
``scheduler.db.api`` builds from ``[database] connection``).  Revisions only
go forward, as Nova's do.

The applied revision is kept in ``scheduler_alembic_version``
(``models.VERSION_TABLE``).  Releases before Nova database mode kept it
in alembic's default ``alembic_version``, the table Nova's databases keep
their own revisions in: ``db_sync`` moves a revision of ours found there
into ``scheduler_alembic_version`` and drops ``alembic_version``, in the
transaction of the upgrade.  A database whose ``alembic_version`` holds
another application's revision (a Nova cell or API database), or that
holds tables of our schema without any revision of ours (an older Nova
database, from before Nova used alembic), is refused with
``ForeignSchema`` and left untouched: ``[database] connection`` must name
the scheduler's own database.

``schema_problem`` is the one check that a database is at the revision
this release needs, which ``scheduler-service`` (before it starts) and
``scheduler-manage`` (before, or on the failure of, a command that reads
or writes the schema) share: "run ``scheduler-manage db sync``".
"""

import os

import sqlalchemy as sa

from scheduler.db import api
from scheduler.db import models

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              'migrations')

# Where releases before Nova database mode kept our revision.
LEGACY_VERSION_TABLE = 'alembic_version'

# The revision ids of our migrations, oldest first: the last is the head
# ``db_sync`` upgrades to.  Written out so that reading a database's
# revision (``schema_problem``, before every ``scheduler-manage``
# command) needs no alembic, whose import takes about 0.1 s; a unit test
# holds the tuple to alembic's script directory.
REVISIONS = ('9e7fde3ef797', '766c43d51da2', 'b7d2c4e9f013', 'e5a1c9d07b34')


class ForeignSchema(Exception):
    """The database holds another application's schema (str: what was
    found and what to do); nothing was changed."""


def _alembic_config(connection):
    from alembic import config as alembic_config

    config = alembic_config.Config()
    config.set_main_option('script_location', MIGRATIONS_DIR)
    config.attributes['connection'] = connection
    return config


def our_revisions():
    """The frozenset of the revision ids (str) of our migrations."""
    return frozenset(REVISIONS)


def head_revision():
    """The revision id (str) ``db_sync`` upgrades to."""
    return REVISIONS[-1]


def _heads(connection, version_table):
    """The revision ids recorded in ``version_table`` (alembic's table of
    one ``version_num`` column; a tuple, empty when the table is missing
    or empty)."""
    if not sa.inspect(connection).has_table(version_table):
        return ()
    table = sa.table(version_table, sa.column('version_num'))
    return tuple(connection.execute(sa.select(table.c.version_num)).scalars())


def _refusal(url, found):
    return ('The database of [database] connection (%s) holds %s: it is not '
            'the scheduler\'s database, and nothing was changed.  Give the '
            'scheduler an empty database of its own (to schedule on a Nova '
            'deployment\'s databases, set [api_database] connection to '
            'Nova\'s API database; see docs/nova-databases.rst).'
            % (url, found))


def _foreign(connection):
    """What shows that the database is another application's (str), or
    None: a revision not ours in ``alembic_version``, or, without any
    revision of ours, tables that our schema would create."""
    legacy = _heads(connection, LEGACY_VERSION_TABLE)
    foreign = [revision for revision in legacy
               if revision not in our_revisions()]
    if foreign:
        return ('another application\'s alembic revision %s in %s (a Nova '
                'database?)' % (', '.join(foreign), LEGACY_VERSION_TABLE))
    if legacy or _heads(connection, models.VERSION_TABLE):
        return None
    clashes = sorted(set(sa.inspect(connection).get_table_names()) &
                     set(models.Base.metadata.tables))
    if clashes:
        return ('tables of another application (%s) and no revision of '
                'ours' % ', '.join(clashes))
    return None


def _url(connection):
    return connection.engine.url.render_as_string(hide_password=True)


def foreign_schema(engine=None):
    """Why the database is not the scheduler's (the one-line refusal of
    ``db_sync``, str), or None when it is ours or empty.

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    """
    engine = engine or api.get_engine()
    with engine.connect() as connection:
        found = _foreign(connection)
        return None if found is None else _refusal(_url(connection), found)


def _adopt_legacy_version(connection):
    """Move a revision of ours from ``alembic_version`` into
    ``VERSION_TABLE`` (see the module docstring); refuse another
    application's database.  A no-op on a database already versioned in
    ``VERSION_TABLE`` or empty."""
    found = _foreign(connection)
    if found is not None:
        raise ForeignSchema(_refusal(_url(connection), found))
    if _heads(connection, models.VERSION_TABLE):
        return
    legacy = _heads(connection, LEGACY_VERSION_TABLE)
    if legacy:
        from alembic import command as alembic_command

        alembic_command.stamp(_alembic_config(connection), list(legacy))
        connection.execute(sa.text('DROP TABLE %s' % LEGACY_VERSION_TABLE))


def db_sync(engine=None, version='head'):
    """Upgrade the database to ``version`` (an alembic revision id, or
    ``'head'`` for the newest).  Already being there is not an error, so
    running it twice is harmless.  A revision kept by an older release in
    ``alembic_version`` is moved to ``scheduler_alembic_version`` first.

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    :raises ForeignSchema: the database holds another application's
        schema (e.g. a Nova cell database); it is left untouched.
    """
    from alembic import command as alembic_command

    engine = engine or api.get_engine()
    with engine.begin() as connection:
        _adopt_legacy_version(connection)
        alembic_command.upgrade(_alembic_config(connection), version or 'head')


def schema_problem(engine=None):
    """Why the database cannot be used by this release (one line, str:
    its revision, the one needed and "run ``scheduler-manage db sync``"),
    or None when it is at ``head_revision()``.  An empty database, or
    one whose revision is not ours, counts as revision none.

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    :raises oslo_db.exception.DBError: the database cannot be read.
    """
    found = db_version(engine)
    if found == head_revision():
        return None
    return ('the database schema is at revision %s, this release needs %s: '
            'run "scheduler-manage db sync"'
            % (found or 'none (an empty database)', head_revision()))


def db_version(engine=None):
    """Return the database's current revision id, or None when no
    revision of ours has been applied (an empty database, or another
    application's).  A revision an older release recorded in
    ``alembic_version`` (not moved yet by ``db_sync``) counts.

    :param engine: a SQLAlchemy ``Engine``; defaults to ``api.get_engine()``.
    """
    engine = engine or api.get_engine()
    with engine.connect() as connection:
        for table in (models.VERSION_TABLE, LEGACY_VERSION_TABLE):
            heads = _heads(connection, table)
            if heads and set(heads) <= our_revisions():
                return heads[0]
    return None
