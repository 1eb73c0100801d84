"""Fixtures of the scheduler-manage tests."""

import pytest

from scheduler_tools import seed
from scheduler_tools import writers


@pytest.fixture
def ctx(tmp_path, parsed_conf_restored):
    """A fresh SQLite database (its URL as ``ctx.url``); afterwards the
    suite's configuration and logging, which each ``manage.main()`` call
    replaces, are restored (``parsed_conf_restored``)."""
    url = 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    context = seed.use_database(url)
    context.url = url
    yield context
    writers.reset_engine()
