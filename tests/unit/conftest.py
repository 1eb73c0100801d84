"""pytest configuration of the unit tests.

* Every versioned object is registered once per session, and ``CONF`` is
  parsed with no arguments and no configuration file when nothing parsed
  it yet, so options read their defaults.
* ``conf``: sets option overrides for one test and clears them after it:
  ``conf.set_override('ram_weight_multiplier', 2.0, 'filter_scheduler')``;
  reading ``conf.<name>`` reads ``CONF``.

Helpers building real objects live in ``fakes.py`` (``import fakes``: this
directory is on ``sys.path`` because it is not a package).
"""

import pytest

from scheduler import objects
from scheduler.conf import CONF


@pytest.fixture(scope='session', autouse=True)
def _objects_and_config():
    objects.register_all()
    if getattr(CONF, '_namespace', None) is None:
        CONF([], project='scheduler', default_config_files=[],
             default_config_dirs=[])


class ConfOverrides:
    """Overrides of ``CONF`` options that a test sets; all are cleared by
    ``clear()`` (the fixture calls it at teardown)."""

    def __init__(self):
        self._overridden = []

    def set_override(self, name, value, group=None):
        CONF.set_override(name, value, group)
        self._overridden.append((name, group))

    def clear(self):
        while self._overridden:
            name, group = self._overridden.pop()
            CONF.clear_override(name, group)

    def __getattr__(self, name):
        return getattr(CONF, name)


@pytest.fixture
def conf():
    overrides = ConfOverrides()
    yield overrides
    overrides.clear()
