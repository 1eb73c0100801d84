"""The generator's ``scheduler.plugins`` namespace and oslo.service's
options in the generator config.

``list_plugin_opts`` must list the options a filter, weigher or driver
package registers when it loads, and none of the service's own; the
generator config must cover every option the service reads, so that
``oslo-config-validator`` accepts them (``graceful_shutdown_timeout``).
"""

import importlib
import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest
import stevedore

from scheduler import loadables
from scheduler.conf import opts
from scheduler.server import plugin_opts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GENERATOR_CONF = os.path.join(REPO, 'etc', 'scheduler',
                              'scheduler-config-generator.conf')
EXAMPLE = os.path.join(REPO, 'examples', 'free_ram_filter')


def _write_distribution(where, name, entry_points):
    """An installed distribution ``name`` as pip leaves it: a
    ``.dist-info`` directory in ``where`` (a ``sys.path`` entry) holding
    ``entry_points`` (``{namespace: {name: 'module:Class'}}``)."""
    dist = where / ('%s-1.0.0.dist-info' % name.replace('-', '_'))
    dist.mkdir()
    (dist / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: %s\nVersion: 1.0.0\n' % name)
    lines = []
    for namespace, names in entry_points.items():
        lines.append('[%s]' % namespace)
        lines.extend('%s = %s' % item for item in names.items())
    (dist / 'entry_points.txt').write_text('\n'.join(lines) + '\n')


def _tool(name):
    beside_python = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(beside_python, os.X_OK):
        return beside_python
    found = shutil.which(name)
    assert found, '%s is not installed' % name
    return found


def _names(listing):
    """``{(group name, option name)}`` of a ``list_opts`` result."""
    return {(group if isinstance(group, str) else group.name, opt.name)
            for group, group_opts in listing for opt in group_opts}


# -- list_plugin_opts in this process -----------------------------------------

@pytest.fixture
def fresh_entry_points(monkeypatch):
    """Entry points read anew, as after a restart, and again after."""
    monkeypatch.setattr(stevedore.ExtensionManager, 'ENTRY_POINT_CACHE', {})
    loadables.entry_point_classes.cache_clear()
    yield
    loadables.entry_point_classes.cache_clear()


@pytest.fixture
def three_plugins(tmp_path, monkeypatch, fresh_entry_points):
    """A package with a filter, a weigher and a driver, each of whose
    modules registers one option in a group of its own (names unique to
    this test, so the global CONF never holds them already)."""
    tag = uuid.uuid4().hex[:8]
    groups = {kind: 'plug_%s_%s' % (kind, tag)
              for kind in ('filter', 'weigher', 'driver')}
    bases = {
        'filter': ('from scheduler import filters',
                   'filters.BaseHostFilter'),
        'weigher': ('from scheduler import weights',
                    'weights.BaseHostWeigher'),
        'driver': ('from scheduler.drivers import base', 'base.Scheduler'),
    }
    entry_points = {}
    modules = []
    for kind, group in groups.items():
        module = 'plug_%s_%s' % (kind, tag)
        modules.append(module)
        import_line, base = bases[kind]
        (tmp_path / ('%s.py' % module)).write_text(textwrap.dedent('''\
            from oslo_config import cfg

            %s
            from scheduler.conf import CONF

            CONF.register_opts(
                [cfg.IntOpt('level', default=3, help='A level.')],
                group=%r)


            class Plugin(%s):
                pass
            ''') % (import_line, group, base))
        namespace = {'filter': 'scheduler.filters',
                     'weigher': 'scheduler.weighers',
                     'driver': 'scheduler.driver'}[kind]
        entry_points[namespace] = {'Plug%s' % tag: '%s:Plugin' % module}
    _write_distribution(tmp_path, 'plugs-%s' % tag, entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield groups
    for module in modules:
        sys.modules.pop(module, None)


def test_each_namespace_s_plugin_options_are_listed(three_plugins):
    listed = _names(plugin_opts.list_plugin_opts())
    assert listed == {(group, 'level') for group in three_plugins.values()}


def test_the_service_s_own_options_are_not_listed(fresh_entry_points):
    listed = _names(plugin_opts.list_plugin_opts())
    own = _names(opts.list_opts())
    assert not listed & own
    # Nor those of the libraries the service's own plug-ins import
    # (oslo.messaging's, oslo.versionedobjects', oslo.concurrency's).
    assert not [group for group, _ in listed if group.startswith('oslo_')]


def test_groups_are_option_groups_with_their_name(three_plugins):
    listing = plugin_opts.list_plugin_opts()
    assert [group.name for group, _ in listing] == sorted(
        three_plugins.values())


# -- the example plug-in, through the generator -------------------------------

def test_generator_lists_the_example_plugin_s_option(tmp_path):
    _write_distribution(tmp_path, 'scheduler-free-ram-filter', {
        'scheduler.filters': {
            'FreeRamThresholdFilter':
                'free_ram_filter:FreeRamThresholdFilter'}})
    output = tmp_path / 'plugins.sample'
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), EXAMPLE] +
        [p for p in [os.environ.get('PYTHONPATH')] if p]))
    result = subprocess.run(
        [_tool('oslo-config-generator'), '--namespace', 'scheduler.plugins',
         '--output-file', str(output)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    assert '[free_ram_threshold]' in text
    assert '#min_free_ram_mb = 1024' in text
    # Nothing of the service's own options.
    assert '[filter_scheduler]' not in text
    assert 'enabled_filters' not in text


# -- the generator config and the validator -----------------------------------

def _generator_namespaces():
    """Every ``namespace`` value of the generator config (the option is
    repeated, which configparser does not keep)."""
    with open(GENERATOR_CONF) as f:
        pairs = [line.split('=', 1) for line in f if '=' in line]
    return [value.strip() for key, value in pairs
            if key.strip() == 'namespace']


def test_generator_config_covers_the_libraries_the_service_uses():
    namespaces = _generator_namespaces()
    for expected in ('scheduler.conf', 'scheduler.plugins',
                     'oslo.service.service', 'oslo.log', 'oslo.messaging',
                     'oslo.db'):
        assert expected in namespaces, expected


def _validate(tmp_path, text):
    path = tmp_path / 'scheduler.conf'
    path.write_text(textwrap.dedent(text))
    return subprocess.run(
        [_tool('oslo-config-validator'), '--config-file', GENERATOR_CONF,
         '--input-file', str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=120)


def test_validator_accepts_graceful_shutdown_timeout(tmp_path):
    result = _validate(tmp_path, """\
        [DEFAULT]
        transport_url = rabbit://scheduler:secret@127.0.0.1:5672/
        graceful_shutdown_timeout = 30

        [database]
        connection = postgresql+psycopg2://scheduler:secret@db/scheduler

        [scheduler]
        workers = 2
        drain_timeout = 5
        """)
    assert result.returncode == 0, result.stderr


def test_validator_still_rejects_an_unknown_option(tmp_path):
    result = _validate(tmp_path, """\
        [DEFAULT]
        graceful_shutdown_timeout = 30
        no_such_option = 1
        """)
    assert result.returncode != 0
    assert 'DEFAULT/no_such_option' in result.stderr
    assert 'graceful_shutdown_timeout' not in result.stderr
