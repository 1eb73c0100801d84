"""Fixtures of the scheduler-manage tests."""

import contextlib
import logging

import pytest
from oslo_config import cfg

from scheduler.conf import CONF
from scheduler_tools import seed
from scheduler_tools import writers


@pytest.fixture
def ctx(tmp_path):
    """A fresh SQLite database (its URL as ``ctx.url``); afterwards the
    suite's configuration (parsed without a file) and logging, which each
    ``manage.main()`` call replaces, are restored."""
    url = 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    context = seed.use_database(url)
    context.url = url
    yield context
    writers.reset_engine()
    # Registered by the commands that parsed a configuration only.
    with contextlib.suppress(cfg.NoSuchOptError):
        CONF.clear_default('use_stderr')
    CONF([], project='scheduler', default_config_files=[],
         default_config_dirs=[])
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
