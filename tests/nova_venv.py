"""Where the tests find Nova from PyPI: the virtualenv that
``tools/test-setup.sh`` builds (``$SCHEDULER_NOVA_VENV``, default
``~/.cache/scheduler-tests/nova-<version>``, stamped with the version
in its ``scheduler-nova-version`` file).  Without it a test fails with a
hint, or is skipped under ``SCHEDULER_TEST_SKIP_NOVA=1``.
"""

import importlib.util
import os

import pytest

NOVA_VERSION = os.environ.get('SCHEDULER_NOVA_VERSION', '34.0.0')


def nova_venv():
    """The Nova venv's directory; fails (or skips) when it is missing or
    holds another version."""
    cache = (os.environ.get('XDG_CACHE_HOME') or
             os.path.expanduser('~/.cache'))
    venv = os.environ.get('SCHEDULER_NOVA_VENV') or os.path.join(
        cache, 'scheduler-tests', 'nova-' + NOVA_VERSION)
    try:
        with open(os.path.join(venv, 'scheduler-nova-version')) as stamp:
            if stamp.read().strip() == NOVA_VERSION:
                return venv
    except OSError:
        pass
    if os.environ.get('SCHEDULER_TEST_SKIP_NOVA', '') in ('1', 'true'):
        pytest.skip('SCHEDULER_TEST_SKIP_NOVA is set')
    pytest.fail('no nova==%s venv in %s: run tools/test-setup.sh (or set '
                'SCHEDULER_TEST_SKIP_NOVA=1)' % (NOVA_VERSION, venv),
                pytrace=False)


def nova_python():
    """The Nova venv's python (see ``nova_venv``)."""
    return os.path.join(nova_venv(), 'bin', 'python')


def load_helper_module(path, name):
    """The module of a Nova-side helper file (shared by Nova's process and
    ours), loaded as ``name`` without its directory on ``sys.path``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
