"""The release notes in ``releasenotes/notes/`` stay valid: ``reno
lint`` finds no unknown section, no duplicate note id and no section
that does not parse (reno logs those as warnings with exit status 0, so
its output is checked too)."""

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).parents[2]
NOTES = ROOT / 'releasenotes' / 'notes'
RENO = shutil.which('reno')


def test_there_is_a_note_of_the_current_release():
    assert any(NOTES.glob('first-release-*.yaml'))


@pytest.mark.skipif(RENO is None,
                    reason='reno is not installed (pip install .[test])')
@pytest.mark.timeout(60)
def test_reno_lint_accepts_the_notes():
    done = subprocess.run([RENO, '-q', 'lint'], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    # Quiet (-q), it prints nothing but the problems.
    assert (done.returncode, done.stdout + done.stderr) == (0, '')
