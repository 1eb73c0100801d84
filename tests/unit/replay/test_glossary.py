"""The glossary of the replay's table: every row has a term, and the
docs and ``--help`` give the same definitions."""

import pathlib
import re
import subprocess
import sys

import pytest

from scheduler_tools.replay import glossary
from scheduler_tools.replay import report
from tests.unit.replay.test_report import _summary

DOCS = pathlib.Path(__file__).parents[3] / 'docs' / 'tools.rst'


def _words(text):
    return re.sub(r'\s+', ' ', text).strip()


@pytest.mark.parametrize('compare', [False, True])
def test_every_row_of_the_table_starts_with_a_term(compare):
    summary = _summary(compare=compare)
    labels = [label for label, _ in report.table_rows(summary)]
    if compare:
        labels += [label for label, *_ in
                   report.comparison_rows(summary['compare'])]
    assert labels
    assert [label for label in labels if glossary.term_of(label) is None] \
        == []


def test_the_docs_define_every_term_as_the_glossary_does():
    docs = _words(DOCS.read_text(encoding='utf-8'))
    for term, definition in glossary.TERMS:
        assert _words('%s %s' % (term, definition)) in docs, term


def test_help_ends_with_the_glossary():
    # A process of its own: --help parses the global configuration.
    done = subprocess.run(
        [sys.executable, '-c', 'import sys; from scheduler_tools.cmd.replay '
         'import main; sys.exit(main())', '--help'],
        capture_output=True, text=True, timeout=120, check=True)
    # argparse wraps the paragraph, also after a word's hyphen.
    assert re.sub(r'\s', '', done.stdout).endswith(
        re.sub(r'\s', '', glossary.epilog()))


def test_the_longest_term_wins():
    assert glossary.term_of('Hosts in use / bound: peak') == (
        'Hosts in use / bound')
    assert glossary.term_of('Hosts in use: mean') == 'Hosts in use'
    assert glossary.term_of('Something else') is None
