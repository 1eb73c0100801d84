"""The console scripts as an operator meets them, each a process of its
own in an empty working directory (issue 34, items 1 and 6).

* ``scheduler-manage`` refuses to run without a ``[database]
  connection`` (one line on stderr, exit status 1) and writes no
  ``./scheduler.sqlite``; on a database that was never synced, a reading
  and a writing command both say "run scheduler-manage db sync".
* Every console script of both distributions (their ``[project.scripts]``)
  answers ``--version`` with the version, exit status 0.
* ``--help`` starts without oslo.messaging and eventlet; ``host list``
  without them, alembic, keystoneauth1, NumPy, the PostgreSQL dialect
  and cliff's distribution scan; every console script's ``--help`` and
  ``--version`` without them, SQLAlchemy and oslo.versionedobjects (the
  runtime loads once the arguments are parsed).
"""

import os
import pathlib
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DISTRIBUTIONS = (REPO, REPO / 'scheduler-tools')

# Seconds any one command may take (a loaded machine's start-up).
COMMAND_TIMEOUT = 60

pytestmark = pytest.mark.timeout(240)

NO_CONNECTION = 'no [database] connection is set'
NOT_SYNCED = 'run "scheduler-manage db sync"'


def _environment(home):
    """This environment, with the repository's packages first on
    ``PYTHONPATH`` and ``home`` as ``HOME`` (no ``~/.scheduler``
    config file of the user's is found)."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(path) for path in DISTRIBUTIONS]
        + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env['HOME'] = str(home)
    return env


def _python(cwd, *argv):
    """``python argv`` in ``cwd`` (an empty directory is made there),
    with a ``HOME`` of its own beside it; the CompletedProcess (text)."""
    cwd.mkdir(exist_ok=True)
    home = cwd.parent / (cwd.name + '-home')
    home.mkdir(exist_ok=True)
    return subprocess.run([sys.executable] + list(argv), cwd=str(cwd),
                          env=_environment(home), capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT)


def _manage(cwd, *argv):
    return _python(cwd, '-m', 'scheduler.cmd.manage', *argv)


def _scripts():
    """Every ``[project.scripts]`` entry of both distributions:
    ``(name, 'module:function')``."""
    found = []
    for root in DISTRIBUTIONS:
        with open(root / 'pyproject.toml', 'rb') as stream:
            found += tomllib.load(stream)['project']['scripts'].items()
    return sorted(found)


@pytest.mark.parametrize('argv', [
    ('db', 'sync'),
    ('host', 'add', 'cmp1', '--vcpus', '8', '--memory-mb', '8192',
     '--disk-gb', '100'),
    ('explain', '--vcpus', '1'),
    ('server', 'boot', '--vcpus', '1'),
], ids=lambda argv: ' '.join(argv[:2]))
def test_no_connection_is_refused_and_nothing_written(tmp_path, argv):
    work = tmp_path / 'work'
    result = _manage(work, *argv)
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    name = 'explain' if argv[0] == 'explain' else ' '.join(argv[:2])
    assert lines[0].startswith('scheduler-manage %s: %s: ' % (
        name, NO_CONNECTION)), lines
    assert '--config-file' in lines[0]
    assert result.stdout == ''
    assert list(work.iterdir()) == []


def test_an_unsynced_database_asks_for_db_sync(tmp_path):
    database = tmp_path / 'empty.sqlite'
    conf = tmp_path / 'scheduler.conf'
    conf.write_text('[DEFAULT]\ntransport_url = fake:/\n'
                    '[database]\nconnection = sqlite:///%s\n' % database)
    for argv in (('host', 'list'), ('explain', '--vcpus', '1'),
                 ('host', 'add', 'cmp1', '--vcpus', '8', '--memory-mb',
                  '8192', '--disk-gb', '100')):
        result = _manage(tmp_path, '--config-file', str(conf), *argv)
        assert result.returncode == 1, (result.stdout, result.stderr)
        (line,) = result.stderr.splitlines()
        name = 'explain' if argv[0] == 'explain' else ' '.join(argv[:2])
        assert line.startswith('scheduler-manage %s: the database schema '
                               'is at revision none' % name), line
        assert line.endswith(NOT_SYNCED), line
        assert result.stdout == ''


def test_every_console_script_answers_version(tmp_path):
    scripts = _scripts()
    assert {name for name, _ in scripts} >= {
        'scheduler-service', 'scheduler-manage', 'scheduler-status',
        'scheduler-replay', 'scheduler-bench', 'scheduler-soak'}
    for name, target in scripts:
        module, function = target.split(':')
        result = _python(
            tmp_path, '-c',
            'import sys; sys.argv[0] = %r; from %s import %s as main; '
            'sys.exit(main())' % (name, module, function), '--version')
        assert result.returncode == 0, (name, result.stdout, result.stderr)
        # argparse prints the version alone; cliff after the name.
        assert result.stdout.split()[-1] == metadata.version(
            'openstack-standalone-scheduler'), (
            name, result.stdout, result.stderr)


# What a console script's runtime imports and its ``--help`` and
# ``--version`` have no use for (the bulk of a second's start-up).
UNUSED_BY_HELP = ('eventlet', 'oslo_messaging', 'alembic', 'sqlalchemy',
                  'numpy', 'oslo_versionedobjects')


@pytest.mark.parametrize('argv', ['--help', '--version'])
def test_every_console_script_answers_before_its_runtime_loads(tmp_path,
                                                               argv):
    loaded = {}
    for name, target in _scripts():
        module, function = target.split(':')
        result = _python(
            tmp_path, '-c',
            'import contextlib, io, sys; sys.argv[0] = %r\n'
            'from %s import %s as main\n'
            'with contextlib.redirect_stdout(io.StringIO()):\n'
            '    try:\n'
            '        status = main([%r])\n'
            '    except SystemExit as exc:\n'
            '        status = exc.code\n'
            'print(status, sorted(name for name in %r '
            'if name in sys.modules))'
            % (name, module, function, argv, UNUSED_BY_HELP))
        assert result.returncode == 0, (name, result.stderr)
        loaded[name] = result.stdout.split('\n')[-2]
    assert loaded == {name: '0 []' for name, _ in _scripts()}


@pytest.mark.parametrize('module,argv', [
    ('scheduler.cmd.manage', ['--help']),
    ('scheduler.cmd.manage', ['help', 'host', 'list']),
    ('scheduler.cmd.manage', ['server', 'boot', '--help']),
    ('scheduler.cmd.status', ['--help']),
], ids=lambda value: ' '.join(value) if isinstance(value, list) else value)
def test_help_starts_without_messaging(tmp_path, module, argv):
    result = _python(
        tmp_path, '-c',
        'import contextlib, io, sys; from %s import main\n'
        'with contextlib.redirect_stdout(io.StringIO()):\n'
        '    try:\n'
        '        status = main(%r)\n'
        '    except SystemExit as exc:\n'
        '        status = exc.code\n'
        'print(status, sorted(name for name in ("eventlet", '
        '"oslo_messaging", "alembic") if name in sys.modules))'
        % (module, argv))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split('\n')[-2] == '0 []', result.stdout


# What start-up costs most and ``host list`` has no use for: oslo.messaging
# and eventlet, alembic (the revision is read with SQLAlchemy),
# keystoneauth1 and requests (Placement's options are registered by its
# client), NumPy (the host view's, not the liveness rule's), SQLAlchemy's
# PostgreSQL dialect on an SQLite database, and cliff's scan of every
# installed distribution's metadata.
UNUSED_BY_HOST_LIST = ('eventlet', 'oslo_messaging', 'alembic',
                       'keystoneauth1', 'requests', 'numpy',
                       'sqlalchemy.dialects.postgresql')


def test_host_list_starts_with_the_database_alone(tmp_path):
    conf = tmp_path / 'scheduler.conf'
    conf.write_text('[database]\nconnection = sqlite:///%s\n'
                    % (tmp_path / 'scheduler.sqlite'))
    for argv in (('db', 'sync'),
                 ('host', 'add', 'cmp1', '--vcpus', '8', '--memory-mb',
                  '8192', '--disk-gb', '100')):
        result = _manage(tmp_path / 'run', '--config-file', str(conf),
                         *argv)
        assert result.returncode == 0, result.stderr
    result = _python(
        tmp_path / 'run', '-c',
        'import contextlib, io, sys\n'
        'from cliff import command\n'
        'from scheduler.cmd.manage import main\n'
        'out = io.StringIO()\n'
        'with contextlib.redirect_stdout(out):\n'
        '    status = main(["--config-file", %r, "host", "list", "-f", '
        '"value", "-c", "Host"])\n'
        'print(out.getvalue().split(), status, command._dists_by_mods, '
        'sorted(name for name in %r if name in sys.modules))'
        % (str(conf), UNUSED_BY_HOST_LIST))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split('\n')[-2] == "['cmp1'] 0 None []", (
        result.stdout)
