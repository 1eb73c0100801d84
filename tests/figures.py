"""Figures a functional test module reports after its tests.

``write_lines(config, lines)`` writes them to pytest's terminal outside
its output capture, so that they show in pytest's own output without
``-s`` (the fault and memory tests print their measurements this way).
"""


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
