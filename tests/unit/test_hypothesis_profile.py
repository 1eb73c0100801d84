"""A plain ``python -m pytest`` runs Hypothesis under the suite's ``ci``
profile (derandomized, no deadline) without any flag or ``CI`` variable:
the suite chooses it itself (``tests/conftest.py``)."""

import os
import subprocess
import sys

import hypothesis
import pytest

CHECK = 'SCHEDULER_CHECK_HYPOTHESIS_PROFILE'


@pytest.mark.skipif(not os.environ.get(CHECK),
                    reason='run by test_plain_pytest_loads_ci_profile')
def test_profile_in_use():
    current = hypothesis.settings.default
    assert current.deadline is None
    assert current.derandomize is True


def test_plain_pytest_loads_ci_profile():
    env = {key: value for key, value in os.environ.items()
           if key not in ('CI', 'SCHEDULER_HYPOTHESIS_PROFILE')}
    env[CHECK] = '1'
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         'tests/unit/test_hypothesis_profile.py::test_profile_in_use'],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '1 passed' in done.stdout
