"""``docs/nova-parity.rst`` against Nova 34's own code: every filter,
weigher and request filter Nova 34 ships, and every option of its
``[scheduler]``, ``[filter_scheduler]`` and ``[metrics]`` groups, listed
by Nova's code in its virtualenv, has its line in the page, and exists
here (a filter or weigher of the same name; an option registered in the
same group, so oslo.config never drops a Nova option silently)."""

import json
import os
import re
import subprocess

import pytest
from nova_venv import nova_python

from scheduler import filters
from scheduler import weights
from scheduler.conf import CONF

pytestmark = pytest.mark.timeout(120)

PAGE = os.path.join(os.path.dirname(__file__), '..', '..', 'docs',
                    'nova-parity.rst')

# Run by Nova's python: its names, as JSON.
LIST_NOVA = """
import json
from nova.scheduler import filters, weights, request_filter
import nova.conf.scheduler as conf
print(json.dumps({
    'filters': [c.__name__ for c in filters.all_filters()],
    'weighers': [c.__name__ for c in weights.all_weighers()],
    'request_filters': [f.__name__
                        for f in request_filter.ALL_REQUEST_FILTERS],
    'options': {getattr(group, 'name', group): [opt.name for opt in opts]
                for group, opts in conf.list_opts().items()},
}))
"""


@pytest.fixture(scope='module')
def nova():
    result = subprocess.run([nova_python(), '-I', '-c', LIST_NOVA],
                            capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def page():
    with open(PAGE) as text:
        return text.read()


def _missing(names, page):
    return [name for name in names
            if not re.search(r'(?<![\w.])%s(?![\w])' % re.escape(name), page)]


def test_every_nova_name_has_its_line(nova, page):
    assert len(nova['filters']) >= 22 and len(nova['request_filters']) >= 14
    names = (nova['filters'] + nova['weighers'] + nova['request_filters'] +
             [name for opts in nova['options'].values() for name in opts])
    assert _missing(names, page) == []


def test_every_nova_filter_and_weigher_exists_here(nova):
    ours = {cls.__name__ for cls in filters.all_filters()}
    assert sorted(set(nova['filters']) - ours) == []
    ours = {cls.__name__ for cls in weights.all_weighers()}
    assert sorted(set(nova['weighers']) - ours) == []


def test_every_nova_option_is_registered_here(nova):
    missing = [(group, name) for group, names in nova['options'].items()
               for name in names if name not in CONF[group]]
    assert missing == []
