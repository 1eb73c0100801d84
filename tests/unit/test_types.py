"""The type check: ``mypy scheduler`` passes with the configuration of
pyproject.toml, which keeps the core packages strict (every def
annotated, every body checked)."""

import pathlib
import subprocess
import sys
import tomllib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PYPROJECT = REPO / 'pyproject.toml'

# The packages whose every module must be fully annotated and checked.
STRICT_PACKAGES = ('scheduler.engine', 'scheduler.view', 'scheduler.drivers',
                   'scheduler.placement', 'scheduler.resources')
STRICT_OPTIONS = ('disallow_untyped_defs', 'disallow_incomplete_defs',
                  'check_untyped_defs')
MYPY_TIMEOUT_S = 600


def _overrides():
    """``(module patterns, options)`` of each ``[[tool.mypy.overrides]]``
    of pyproject.toml."""
    with PYPROJECT.open('rb') as f:
        mypy = tomllib.load(f)['tool']['mypy']
    for override in mypy.get('overrides', []):
        modules = override['module']
        yield ({modules} if isinstance(modules, str) else set(modules),
               override)


def _strictness_problems():
    """What in pyproject.toml keeps a strict package from being strict."""
    wanted = {pattern for package in STRICT_PACKAGES
              for pattern in (package, package + '.*')}
    strict = set()
    problems = []
    for patterns, options in _overrides():
        if all(options.get(name) is True for name in STRICT_OPTIONS):
            strict |= patterns
        loosened = [name for name in STRICT_OPTIONS
                    if options.get(name) is False]
        if options.get('ignore_errors'):
            loosened.append('ignore_errors')
        if loosened:
            problems += ['%s loosened by %s' % (pattern, ', '.join(loosened))
                         for pattern in sorted(patterns & wanted)]
    problems += ['%s: no override sets %s = true'
                 % (pattern, ', '.join(STRICT_OPTIONS))
                 for pattern in sorted(wanted - strict)]
    return problems


def test_mypy_passes_and_the_core_packages_are_strict():
    pytest.importorskip('mypy')
    problems = _strictness_problems()
    assert not problems, 'pyproject.toml [tool.mypy]:\n' + '\n'.join(
        problems)
    result = subprocess.run(
        [sys.executable, '-m', 'mypy', '--config-file', str(PYPROJECT),
         'scheduler'],
        cwd=REPO, capture_output=True, text=True, timeout=MYPY_TIMEOUT_S)
    assert result.returncode == 0, (
        'mypy scheduler failed (exit %d):\n%s%s'
        % (result.returncode, result.stdout, result.stderr))
