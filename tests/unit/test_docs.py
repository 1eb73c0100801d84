"""The documentation: it builds with warnings as errors, its filter and
weigher reference names every registered plug-in, and its option
reference shows the generator config's namespaces."""

import os
import re
import tomllib

from sphinx.cmd import build

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOCS = os.path.join(REPO, 'docs')

# A section title: a line of text, then a line of one punctuation
# character at least as long.
_TITLE = re.compile(r'^(\S[^\n]*)\n([=\-~^"\'`#*+])\2*$', re.MULTILINE)


def _read(*parts):
    with open(os.path.join(REPO, *parts), encoding='utf-8') as f:
        return f.read()


def _entry_point_names(namespace):
    """The names registered in ``namespace`` by pyproject.toml."""
    project = tomllib.loads(_read('pyproject.toml'))['project']
    return sorted(project['entry-points'][namespace])


def section_titles(text):
    """The section titles of reStructuredText ``text`` (underlined ones;
    an underline shorter than its title does not count)."""
    return {title.strip() for title, rule in
            ((m.group(1), m.group(0).split('\n')[1])
             for m in _TITLE.finditer(text))
            if len(rule) >= len(title.rstrip())}


def test_section_titles_finds_titles_only():
    text = ('Title\n=====\n\ntext\n\nShort\n---\n\nSub\n~~~~~\n'
            '\nnot a title\n')
    assert section_titles(text) == {'Title', 'Sub'}


def test_every_filter_and_weigher_has_a_section_in_filters_rst():
    titles = section_titles(_read('docs', 'filters.rst'))
    for namespace in ('scheduler.filters', 'scheduler.weighers'):
        names = _entry_point_names(namespace)
        assert names, namespace
        missing = [name for name in names if name not in titles]
        assert not missing, '%s without a section in docs/filters.rst: %s' % (
            namespace, ', '.join(missing))


def _generator_namespaces():
    pairs = [line.split('=', 1) for line in
             _read('etc', 'scheduler',
                   'scheduler-config-generator.conf').splitlines()
             if '=' in line]
    return [value.strip() for key, value in pairs
            if key.strip() == 'namespace']


def _show_options_namespaces(text):
    """The namespaces listed under the ``show-options`` directive."""
    block = text.split('.. show-options::', 1)[1]
    names = []
    for line in block.splitlines()[1:]:
        if line.strip() and not line.startswith(' '):
            break
        if line.strip() and not line.strip().startswith(':'):
            names.append(line.strip())
    return names


def test_option_reference_shows_the_generator_namespaces():
    shown = _show_options_namespaces(_read('docs', 'configuration.rst'))
    assert shown == _generator_namespaces()


def test_docs_build_without_warnings(tmp_path):
    out = tmp_path / 'html'
    status = build.build_main(['-W', '-q', '-b', 'html',
                               '-d', str(tmp_path / 'doctrees'),
                               DOCS, str(out)])
    assert status == 0
    configuration = (out / 'configuration.html').read_text()
    # The reference was generated from the code, oslo.service's included.
    for option in ('enabled_filters', 'graceful_shutdown_timeout',
                   'transport_url', 'claim_resources'):
        assert option in configuration, option
