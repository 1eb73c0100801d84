"""The opt-in tracemalloc snapshots (observability.tracemalloc_dump)."""

import glob
import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest

from scheduler.observability import tracemalloc_dump

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def not_tracing():
    assert not tracemalloc.is_tracing()
    yield
    tracemalloc.stop()


def _wait_for(pattern, count=1, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(glob.glob(pattern))
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError('no %d files like %s within %.0f s: %s'
                         % (count, pattern, timeout_s, glob.glob(pattern)))


def test_off_without_the_variable(not_tracing):
    assert tracemalloc_dump.install({}) is None
    assert tracemalloc_dump.install(
        {tracemalloc_dump.ENV_DIR: '  '}) is None
    assert not tracemalloc.is_tracing()


@pytest.mark.parametrize('name,value', [
    (tracemalloc_dump.ENV_INTERVAL, 'soon'),
    (tracemalloc_dump.ENV_INTERVAL, '0'),
    (tracemalloc_dump.ENV_FRAMES, '-3'),
    (tracemalloc_dump.ENV_FRAMES, 'many'),
    (tracemalloc_dump.ENV_DELAY, '-1'),
])
def test_bad_numbers_are_refused(not_tracing, tmp_path, name, value):
    with pytest.raises(tracemalloc_dump.TracemallocConfigError,
                       match=name):
        tracemalloc_dump.install({tracemalloc_dump.ENV_DIR: str(tmp_path),
                                  name: value})
    assert not tracemalloc.is_tracing()


def test_dumps_snapshots_every_interval(not_tracing, tmp_path):
    directory = tmp_path / 'snaps'
    dumper = tracemalloc_dump.install({
        tracemalloc_dump.ENV_DIR: str(directory),
        tracemalloc_dump.ENV_INTERVAL: '0.2',
        tracemalloc_dump.ENV_FRAMES: '5'})
    try:
        assert tracemalloc.is_tracing()
        assert tracemalloc.get_traceback_limit() == 5
        paths = _wait_for(str(directory / ('tracemalloc-%d-*.snap'
                                           % os.getpid())), count=2)
    finally:
        dumper.stop()
    snapshot = tracemalloc.Snapshot.load(paths[0])
    assert snapshot.traceback_limit == 5
    assert snapshot.traces
    assert not glob.glob(str(directory / '*.tmp'))
    # A census beside each snapshot, under the same name.
    for path in paths:
        census = path.replace('tracemalloc-', 'census-').replace(
            '.snap', '.json')
        with open(census) as stream:
            assert json.load(stream)['rss_kib'] > 0


def test_no_frames_writes_censuses_alone(not_tracing, tmp_path):
    dumper = tracemalloc_dump.install({
        tracemalloc_dump.ENV_DIR: str(tmp_path),
        tracemalloc_dump.ENV_INTERVAL: '0.2',
        tracemalloc_dump.ENV_FRAMES: '0'})
    try:
        _wait_for(str(tmp_path / 'census-*.json'), count=2)
        assert not tracemalloc.is_tracing()
    finally:
        dumper.stop()
    assert not glob.glob(str(tmp_path / '*.snap'))


def test_a_delay_starts_tracing_later(not_tracing, tmp_path):
    dumper = tracemalloc_dump.install({
        tracemalloc_dump.ENV_DIR: str(tmp_path),
        tracemalloc_dump.ENV_DELAY: '0.5',
        tracemalloc_dump.ENV_INTERVAL: '0.2',
        tracemalloc_dump.ENV_FRAMES: '3'})
    try:
        assert not tracemalloc.is_tracing()
        _wait_for(str(tmp_path / '*.snap'))
        assert tracemalloc.is_tracing()
        assert tracemalloc.get_traceback_limit() == 3
    finally:
        dumper.stop()


def test_top_growth_names_the_growing_line(not_tracing, tmp_path):
    tracemalloc.start(3)
    dumper = tracemalloc_dump.Dumper(str(tmp_path), 3600.0, time.monotonic())
    old = dumper.dump()[1]
    time.sleep(1.1)  # the next snapshot's name differs by its seconds
    kept = [bytearray(1000) for _ in range(500)]  # the growth
    new = dumper.dump()[1]
    diffs = tracemalloc_dump.top_growth(old, new, limit=3)
    top = diffs[0]
    assert top.traceback[-1].filename == __file__
    assert top.size_diff >= 500 * 1000
    assert top.count_diff >= 500
    text = tracemalloc_dump.format_growth(diffs)
    assert 'kept = [bytearray(1000)' in text
    assert len(kept) == 500


def test_main_prints_usage_or_growth(not_tracing, tmp_path, capsys):
    assert tracemalloc_dump.main([]) == 2
    assert tracemalloc_dump.main(['a.snap', 'b.snap', 'many']) == 2
    assert 'usage' in capsys.readouterr().err
    tracemalloc.start(1)
    dumper = tracemalloc_dump.Dumper(str(tmp_path), 3600.0, time.monotonic())
    old = dumper.dump()
    time.sleep(1.1)
    new = dumper.dump()
    assert tracemalloc_dump.main([old[1], new[1], '5']) == 0
    assert capsys.readouterr().out.startswith('total growth of these:')
    assert tracemalloc_dump.main([old[0], new[0], '5']) == 0
    growth = json.loads(capsys.readouterr().out)
    assert len(growth['types']) == 5
    assert 'rss_kib' in growth['scalars']


def test_forked_workers_dump_their_own(tmp_path):
    """As the service's workers: install, then fork; the child dumps
    under its own pid."""
    script = textwrap.dedent('''
        import glob, os, sys, time
        from scheduler.observability import tracemalloc_dump
        dumper = tracemalloc_dump.install({
            tracemalloc_dump.ENV_DIR: sys.argv[1],
            tracemalloc_dump.ENV_INTERVAL: '0.2',
            tracemalloc_dump.ENV_FRAMES: '3'})
        pid = os.fork()
        if pid == 0:
            mine = os.path.join(sys.argv[1], '*-%d-*.snap' % os.getpid())
            deadline = time.monotonic() + 20
            while not glob.glob(mine) and time.monotonic() < deadline:
                time.sleep(0.05)
            os._exit(0)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        dumper.stop()
    ''')
    done = subprocess.run([sys.executable, '-c', script, str(tmp_path)],
                          capture_output=True, text=True, timeout=30,
                          check=True)
    child = int(done.stdout.split()[0])
    assert glob.glob(str(tmp_path / ('tracemalloc-%d-*.snap' % child)))
