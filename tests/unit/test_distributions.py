"""The repository's two distributions, built as wheels: the service's
holds ``scheduler`` and its three console scripts and nothing of the
tools; the tools' holds ``scheduler_tools`` with its trace data, the
replay, bench and soak scripts, and requires the service."""

import email.parser
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SERVICE_SCRIPTS = {'scheduler-service', 'scheduler-manage',
                   'scheduler-status'}
TOOL_SCRIPTS = {'scheduler-replay', 'scheduler-bench', 'scheduler-soak'}


def _wheel(source, tmp_path):
    """Build the wheel of ``source`` (copied: the build leaves its
    ``build/`` and ``*.egg-info`` in the copy); return its ZipFile."""
    copy = tmp_path / 'src'
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(
        '*.egg-info', 'build', '__pycache__'))
    out = tmp_path / 'dist'
    subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps',
         '--no-build-isolation', '--disable-pip-version-check', '-q',
         '-w', str(out), str(copy)],
        check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob('*.whl')
    return zipfile.ZipFile(wheel)


def _scripts(wheel):
    text = next(wheel.read(name).decode() for name in wheel.namelist()
                if name.endswith('.dist-info/entry_points.txt'))
    scripts, section = set(), None
    for line in text.splitlines():
        if line.startswith('['):
            section = line.strip('[]')
        elif section == 'console_scripts' and '=' in line:
            scripts.add(line.split('=')[0].strip())
    return scripts


def _metadata(wheel):
    text = next(wheel.read(name).decode() for name in wheel.namelist()
                if name.endswith('.dist-info/METADATA'))
    return email.parser.Parser().parsestr(text)


@pytest.fixture(scope='module')
def service_wheel(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('service')
    copy = tmp_path / 'tree'
    copy.mkdir()
    shutil.copytree(REPO / 'scheduler', copy / 'scheduler',
                    ignore=shutil.ignore_patterns('__pycache__'))
    for name in ('pyproject.toml', 'README.rst'):
        shutil.copy(REPO / name, copy / name)
    return _wheel(copy, tmp_path)


@pytest.fixture(scope='module')
def tools_wheel(tmp_path_factory):
    return _wheel(REPO / 'scheduler-tools',
                  tmp_path_factory.mktemp('tools'))


def test_the_service_wheel_holds_no_tool(service_wheel):
    names = service_wheel.namelist()
    assert any(name == 'scheduler/server/manager.py' for name in names)
    assert 'scheduler/db/migrations/script.py.mako' in names
    assert not [name for name in names
                if name.startswith('scheduler_tools')]
    assert _scripts(service_wheel) == SERVICE_SCRIPTS
    requires = _metadata(service_wheel).get_all('Requires-Dist')
    assert not [req for req in requires
                if req.split()[0] in ('matplotlib', 'rich', 'tqdm')]


def test_the_tools_wheel_holds_the_tools_and_needs_the_service(
        tools_wheel):
    names = tools_wheel.namelist()
    assert 'scheduler_tools/cmd/replay.py' in names
    assert any(name.startswith('scheduler_tools/replay/data/') and
               name.endswith('.csv.gz') for name in names)
    assert not [name for name in names if name.startswith('scheduler/')]
    assert _scripts(tools_wheel) == TOOL_SCRIPTS
    requires = {req.split()[0].split('>')[0]
                for req in _metadata(tools_wheel).get_all('Requires-Dist')}
    assert {'openstack-standalone-scheduler', 'matplotlib', 'rich',
            'tqdm'} <= requires
