"""A third-party filter, enabled both ways Nova operators know.

The example package ``examples/free_ram_filter`` is used (1) by class path
in ``available_filters`` and (2) by name, through an entry point in the
``scheduler.filters`` namespace of an installed distribution (built here
as a ``.dist-info`` directory on ``sys.path``, which is what pip installs).
"""

import importlib
import os
import sys

import pytest
import stevedore

from scheduler import loadables
from scheduler.engine import pipeline
from scheduler.view import host_manager
from scheduler_tools import seed

EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                       'examples', 'free_ram_filter')


@pytest.fixture
def example_on_path(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(os.path.abspath(EXAMPLE))
    dist = tmp_path / 'scheduler_free_ram_filter-1.0.0.dist-info'
    dist.mkdir()
    (dist / 'METADATA').write_text(
        'Metadata-Version: 2.1\nName: scheduler-free-ram-filter\n'
        'Version: 1.0.0\n')
    (dist / 'entry_points.txt').write_text(
        '[scheduler.filters]\n'
        'FreeRamThresholdFilter = free_ram_filter:FreeRamThresholdFilter\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    # As after a restart: stevedore and our loader read entry points anew.
    monkeypatch.setattr(stevedore.ExtensionManager, 'ENTRY_POINT_CACHE', {})
    loadables.entry_point_classes.cache_clear()
    yield
    loadables.entry_point_classes.cache_clear()
    sys.modules.pop('free_ram_filter', None)


@pytest.fixture
def ctx(tmp_path):
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'plugins.sqlite'))
    seed.add_compute(ctx, 'roomy', memory_mb=8192)
    seed.add_compute(ctx, 'tight', memory_mb=2048)
    return ctx


def _passing(ctx, memory_mb):
    manager = host_manager.HostManager(ctx)
    hosts = manager.get_all_host_states(ctx)
    spec = seed.make_spec(memory_mb=memory_mb)
    return [h.host for h in pipeline.Pipeline(manager).get_filtered_hosts(
        hosts, spec)]


@pytest.mark.parametrize('available', [
    ['scheduler.filters.all_filters',
     'free_ram_filter.FreeRamThresholdFilter'],
    ['scheduler.filters.all_filters'],
], ids=['class-path', 'entry-point'])
def test_custom_filter_enabled_by_name(example_on_path, ctx, conf,
                                       available):
    conf.set_override('available_filters', available,
                      group='filter_scheduler')
    conf.set_override('enabled_filters',
                      ['ComputeFilter', 'FreeRamThresholdFilter'],
                      group='filter_scheduler')
    assert _passing(ctx, 1024) == ['roomy', 'tight']
    assert _passing(ctx, 1536) == ['roomy']
    conf.set_override('min_free_ram_mb', 0, group='free_ram_threshold')
    assert _passing(ctx, 2048) == ['roomy', 'tight']
