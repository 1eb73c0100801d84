"""Tests of the alembic migrations and ``scheduler-manage db``.

The migrated schema must be exactly ``models.Base.metadata`` (types,
nullability, server defaults, indexes, unique and foreign keys), on
SQLite, PostgreSQL and MySQL alike.
"""

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic import autogenerate
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from scheduler.db import api
from scheduler.db import migration
from scheduler.db import models

TABLES = {'compute_nodes', 'services', 'aggregates', 'aggregate_hosts',
          'aggregate_metadata', 'instances', 'instance_groups',
          'instance_group_member', 'instance_group_policy',
          'scheduler_claims', 'scheduler_node_claims'}
VERSION_TABLE = 'scheduler_alembic_version'


def _head():
    scripts = alembic_script.ScriptDirectory(migration.MIGRATIONS_DIR)
    (head,) = scripts.get_heads()
    return head


def _schema_differences(engine, metadata=models.Base.metadata):
    def include_name(name, type_, parent_names):
        return not (type_ == 'table' and name == VERSION_TABLE)

    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': True,
                              'include_name': include_name})
        return autogenerate.compare_metadata(context, metadata)


def _tables(engine):
    return set(sa.inspect(engine).get_table_names())


def test_one_head():
    assert _head()


def test_empty_database_has_no_version(db_engine):
    assert migration.db_version() is None


def test_db_sync_creates_the_models_schema(db_engine):
    migration.db_sync()
    assert migration.db_version() == _head()
    assert _tables(db_engine) == TABLES | {VERSION_TABLE}
    assert _schema_differences(db_engine) == []


def test_schema_comparison_sees_a_difference(db_engine):
    """Guards the test above against comparing nothing."""
    migration.db_sync()
    metadata = sa.MetaData()
    for table in models.Base.metadata.tables.values():
        table.to_metadata(metadata)
    metadata.tables['compute_nodes'].append_column(
        sa.Column('extra', sa.Integer()))
    diffs = _schema_differences(db_engine, metadata)
    assert [d[0] for d in diffs] == ['add_column']


def test_db_sync_twice_keeps_data(db_engine):
    migration.db_sync(db_engine)
    with db_engine.begin() as connection:
        connection.execute(sa.insert(api.AGGREGATES).values(name='kept'))
    migration.db_sync(db_engine, version=_head())
    assert migration.db_version(db_engine) == _head()
    with db_engine.connect() as connection:
        names = connection.execute(sa.select(api.AGGREGATES.c.name))
        assert list(names.scalars()) == ['kept']


def _manage(db_url, tmp_path, *args):
    """Run ``scheduler-manage --config-file F args`` as a subprocess."""
    conf = tmp_path / 'scheduler.conf'
    conf.write_text('[database]\nconnection = %s\n' % db_url)
    script = os.path.join(os.path.dirname(sys.executable),
                          'scheduler-manage')
    command = ([script] if os.path.exists(script)
               else [sys.executable, '-m', 'scheduler.cmd.manage'])
    return subprocess.run(command + ['--config-file', str(conf)] + list(args),
                          capture_output=True, text=True, timeout=120,
                          cwd=str(tmp_path))


def test_manage_db_sync_and_version(db_url, db_engine, tmp_path):
    result = _manage(db_url, tmp_path, 'db', 'sync')
    assert result.returncode == 0, result.stderr
    assert _tables(db_engine) == TABLES | {VERSION_TABLE}
    again = _manage(db_url, tmp_path, 'db', 'sync', _head())
    assert again.returncode == 0, again.stderr
    version = _manage(db_url, tmp_path, 'db', 'version')
    assert version.returncode == 0, version.stderr
    # oslo.log may write its lines to stdout too; the answer comes last.
    assert version.stdout.splitlines()[-1] == _head()


@pytest.mark.parametrize('args', [['db'], ['db', 'upgrade']])
def test_manage_rejects_bad_commands(tmp_path, args):
    result = _manage('sqlite:///%s' % (tmp_path / 'x.sqlite'), tmp_path,
                     *args)
    assert result.returncode == 2
    assert 'usage:' in result.stderr


# -- the version table of our own, and foreign databases ----------------------

def _revisions():
    scripts = alembic_script.ScriptDirectory(migration.MIGRATIONS_DIR)
    return [script.revision for script in scripts.walk_revisions()]


def _alembic_version(engine, revision):
    """Record ``revision`` in alembic's default ``alembic_version``."""
    with engine.begin() as connection:
        connection.execute(sa.text(
            'CREATE TABLE alembic_version (version_num VARCHAR(32) '
            'NOT NULL PRIMARY KEY)'))
        connection.execute(sa.text(
            "INSERT INTO alembic_version VALUES ('%s')" % revision))


def _legacy_install(engine, revision):
    """A database synced by a release that kept our revision in
    ``alembic_version``: migrated to ``revision``, version moved back."""
    migration.db_sync(engine, version=revision)
    _alembic_version(engine, revision)
    with engine.begin() as connection:
        connection.execute(sa.text('DROP TABLE %s' % VERSION_TABLE))


def test_revision_of_an_older_release_is_moved_to_our_table(db_engine):
    before = _revisions()[1]    # the revision before the head
    _legacy_install(db_engine, before)
    assert migration.db_version(db_engine) == before
    with db_engine.begin() as connection:
        connection.execute(sa.insert(api.AGGREGATES).values(name='kept'))
    migration.db_sync(db_engine)
    assert migration.db_version(db_engine) == _head()
    assert _tables(db_engine) == TABLES | {VERSION_TABLE}
    assert _schema_differences(db_engine) == []
    with db_engine.connect() as connection:
        names = connection.execute(sa.select(api.AGGREGATES.c.name))
        assert list(names.scalars()) == ['kept']


def test_another_applications_revision_is_refused(db_engine):
    _alembic_version(db_engine, 'ab450ba04102')   # Nova 34's cell head
    with pytest.raises(migration.ForeignSchema, match='ab450ba04102'):
        migration.db_sync(db_engine)
    assert _tables(db_engine) == {'alembic_version'}
    assert migration.db_version(db_engine) is None


def test_tables_of_ours_without_a_revision_are_refused(db_engine):
    with db_engine.begin() as connection:
        connection.execute(sa.text('CREATE TABLE compute_nodes (id INTEGER)'))
    with pytest.raises(migration.ForeignSchema, match='compute_nodes'):
        migration.db_sync(db_engine)
    assert _tables(db_engine) == {'compute_nodes'}


def test_manage_db_sync_refuses_a_foreign_database(db_url, db_engine,
                                                   tmp_path):
    _alembic_version(db_engine, 'ab450ba04102')   # Nova 34's cell head
    result = _manage(db_url, tmp_path, 'db', 'sync')
    assert result.returncode == 1
    assert 'ab450ba04102' in result.stderr
    assert _tables(db_engine) == {'alembic_version'}


# -- the revisions written out, and a check that needs no alembic -------------

def test_the_revisions_written_out_are_alembic_s_in_order():
    scripts = alembic_script.ScriptDirectory(migration.MIGRATIONS_DIR)
    oldest_first = [script.revision
                    for script in reversed(list(scripts.walk_revisions()))]
    assert list(migration.REVISIONS) == oldest_first
    assert migration.head_revision() == scripts.get_current_head()


def test_reading_the_revision_imports_no_alembic(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'r.sqlite')
    migration.db_sync(sa.create_engine(url))
    code = ('import sys, sqlalchemy as sa\n'
            'from scheduler.db import migration\n'
            'engine = sa.create_engine(%r)\n'
            'print(migration.schema_problem(engine), migration.db_version('
            'engine))\n'
            'print(sorted(m for m in sys.modules if m.startswith("alembic")))'
            % url)
    result = subprocess.run([sys.executable, '-c', code], check=True,
                            capture_output=True, text=True)
    assert result.stdout.splitlines() == [
        'None %s' % migration.head_revision(), '[]']
