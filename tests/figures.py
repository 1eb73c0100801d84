"""Figures a functional test module reports after its tests.

``write_lines(config, lines)`` writes them to pytest's terminal outside
its output capture, so that they show in pytest's own output without
``-s`` (the fault and memory tests print their measurements this way);
``reported(figures)`` is the module fixture that prints a module's list
of figure lines after its tests.
"""

import pytest


def write_lines(config, lines):
    """Write ``lines`` (strings) to pytest's terminal; nothing when there
    are none or pytest has no terminal reporter."""
    reporter = config.pluginmanager.get_plugin('terminalreporter')
    capture = config.pluginmanager.get_plugin('capturemanager')
    if reporter is None or capture is None or not lines:
        return
    with capture.global_and_fixture_disabled():
        for line in lines:
            reporter.write_line(line)


def reported(figures):
    """A module-scoped autouse fixture that prints the lines appended to
    ``figures`` (a list) after the module's tests, then empties it;
    assign it to a module attribute (``_print_figures = reported(...)``).
    """
    @pytest.fixture(scope='module', autouse=True)
    def _print_figures(request):
        yield
        write_lines(request.config, [''] + figures if figures else [])
        figures.clear()
    return _print_figures
