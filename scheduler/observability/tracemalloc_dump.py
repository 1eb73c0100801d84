"""Opt-in tracemalloc snapshots of the service's processes, for finding
where memory grows (the soak's RSS growth, :doc:`soak`).

Off by default and free when off: ``install`` reads the environment
once at the service's start and does nothing unless
``SCHEDULER_TRACEMALLOC_DIR`` names a directory.  When it does, in this
process and in every process forked from it (the workers), a daemon
thread starts ``tracemalloc`` (``SCHEDULER_TRACEMALLOC_FRAMES`` frames
per traceback, 25 by default) ``SCHEDULER_TRACEMALLOC_DELAY`` seconds
after the process starts it (0 by default: at once, before the workers
are forked, which keep tracing), then dumps a snapshot
(``tracemalloc.Snapshot.dump``) every ``SCHEDULER_TRACEMALLOC_INTERVAL``
seconds (300 by default) to ``<dir>/tracemalloc-<pid>-<seconds>.snap``,
``<seconds>`` being the whole seconds since ``install`` (in the
service's first process), with a census beside it
(``scheduler.observability.memory_census``, JSON,
``census-<pid>-<seconds>.json``).  A delay keeps tracing off the
start-up (the first full read of the view); the blocks allocated before
it are not in the snapshots, but growth after it is.  Tracing is
costly: at 10,000 hosts on two busy cores it slowed the decisions
(their full reads of the view above all) by far more than the service's
deadlines allow; ``SCHEDULER_TRACEMALLOC_FRAMES=0`` traces nothing and
writes the censuses alone, which cost about a second per million
objects each and nothing in between.

``python3 -m scheduler.observability.tracemalloc_dump OLD NEW [LIMIT]``
prints the ``LIMIT`` (20) tracebacks whose allocated size grew most from
snapshot ``OLD`` to ``NEW`` (``Snapshot.compare_to(old, 'traceback')``),
in KiB and blocks; given two ``.json`` censuses, their growth
(``memory_census.compare``) as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import tracemalloc
from collections.abc import Mapping

from scheduler.observability import memory_census

ENV_DIR = 'SCHEDULER_TRACEMALLOC_DIR'
ENV_INTERVAL = 'SCHEDULER_TRACEMALLOC_INTERVAL'
ENV_FRAMES = 'SCHEDULER_TRACEMALLOC_FRAMES'
ENV_DELAY = 'SCHEDULER_TRACEMALLOC_DELAY'
DEFAULT_INTERVAL_S = 300.0
DEFAULT_FRAMES = 25
# Allocations of tracemalloc itself and of the import machinery are
# left out when comparing snapshots (top_growth).
_IGNORED = (tracemalloc.__file__, '<frozen importlib._bootstrap>',
            '<frozen importlib._bootstrap_external>')


class TracemallocConfigError(ValueError):
    """A ``SCHEDULER_TRACEMALLOC_*`` variable holds no valid number."""


class Dumper:
    """From a daemon thread of the current process (``start``): starts
    tracing ``frames`` frames deep after ``delay_s`` seconds unless it
    is on, then dumps a snapshot to ``directory`` every ``interval_s``
    seconds (names: seconds since the monotonic time ``started``)."""

    def __init__(self, directory: str, interval_s: float,
                 started: float, frames: int = DEFAULT_FRAMES,
                 delay_s: float = 0.0) -> None:
        self.directory = directory
        self.interval_s = interval_s
        self.started = started
        self.frames = frames
        self.delay_s = delay_s
        self._stop = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the dumping thread (in the calling process), unless
        ``stop`` was called."""
        if self._stopped:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name='tracemalloc-dump', daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (it ends within one interval at most); the
        processes forked afterwards start none."""
        self._stopped = True
        self._stop.set()
        if self._thread is not None and \
                self._thread is not threading.current_thread():
            self._thread.join()

    def dump(self) -> list[str]:
        """Write a census and, when tracing, a snapshot now; return
        their paths."""
        name = '%d-%06d' % (os.getpid(), time.monotonic() - self.started)
        census = os.path.join(self.directory, 'census-%s.json' % name)
        with open(census + '.tmp', 'w') as stream:
            json.dump(memory_census.take(), stream)
        os.replace(census + '.tmp', census)
        if not tracemalloc.is_tracing():
            return [census]
        path = os.path.join(self.directory, 'tracemalloc-%s.snap' % name)
        # Not filtered here (in Python, over every trace: slow): see
        # top_growth.
        tracemalloc.take_snapshot().dump(path + '.tmp')
        os.replace(path + '.tmp', path)
        return [census, path]

    def _loop(self) -> None:
        if self._stop.wait(self.delay_s):
            return
        if self.frames and not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        while not self._stop.wait(self.interval_s):
            self.dump()


def _number(environ: Mapping[str, str], name: str,
            default: float, zero: bool = False) -> float:
    text = environ.get(name, '').strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise TracemallocConfigError(
            '%s must be a number, not %r' % (name, text)) from None
    if value < 0 or (value == 0 and not zero):
        raise TracemallocConfigError('%s must be %s, not %r' % (
            name, 'zero or more' if zero else 'positive', text))
    return value


def install(environ: Mapping[str, str] = os.environ) -> Dumper | None:
    """Start tracing (at once, or after ``SCHEDULER_TRACEMALLOC_DELAY``
    seconds in each process) and dumping when
    ``SCHEDULER_TRACEMALLOC_DIR`` is set in ``environ`` (the directory
    is made if missing); return the
    dumper of this process, or None (nothing done) when it is unset.

    :raises TracemallocConfigError: the interval is not a positive
        number, or the frame count or the delay a negative one.
    """
    directory = environ.get(ENV_DIR, '').strip()
    if not directory:
        return None
    interval_s = _number(environ, ENV_INTERVAL, DEFAULT_INTERVAL_S)
    frames = int(_number(environ, ENV_FRAMES, DEFAULT_FRAMES, zero=True))
    delay_s = _number(environ, ENV_DELAY, 0.0, zero=True)
    os.makedirs(directory, exist_ok=True)
    if frames and not delay_s:
        tracemalloc.start(frames)
    dumper = Dumper(directory, interval_s, time.monotonic(), frames,
                    delay_s)
    dumper.start()
    # Threads do not survive a fork: each forked worker starts its own.
    os.register_at_fork(after_in_child=dumper.start)
    return dumper


def top_growth(old_path: str, new_path: str,
               limit: int = 20) -> list[tracemalloc.StatisticDiff]:
    """The ``limit`` tracebacks whose size grew most from the snapshot
    at ``old_path`` to that at ``new_path``."""
    ignored = [tracemalloc.Filter(False, name) for name in _IGNORED]
    old = tracemalloc.Snapshot.load(old_path).filter_traces(ignored)
    new = tracemalloc.Snapshot.load(new_path).filter_traces(ignored)
    diffs = new.compare_to(old, 'traceback')
    return sorted(diffs, key=lambda diff: diff.size_diff,
                  reverse=True)[:limit]


def format_growth(diffs: list[tracemalloc.StatisticDiff]) -> str:
    """One paragraph per traceback: growth in KiB and blocks, then its
    frames, innermost last."""
    lines = ['total growth of these: %+.1f KiB'
             % (sum(diff.size_diff for diff in diffs) / 1024.0)]
    for diff in diffs:
        lines.append('%+.1f KiB (%+d blocks), now %.1f KiB in %d blocks'
                     % (diff.size_diff / 1024.0, diff.count_diff,
                        diff.size / 1024.0, diff.count))
        lines.extend('    ' + line for line in diff.traceback.format())
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3) or (len(args) == 3 and
                                    not args[2].isdigit()):
        print('usage: python3 -m scheduler.observability.tracemalloc_dump '
              'OLD NEW [LIMIT] (two .snap snapshots or two .json '
              'censuses; LIMIT a whole number)', file=sys.stderr)
        return 2
    limit = int(args[2]) if len(args) == 3 else 20
    if args[0].endswith('.json'):
        with open(args[0]) as old, open(args[1]) as new:
            print(json.dumps(memory_census.compare(
                json.load(old), json.load(new), limit), indent=1))
        return 0
    print(format_growth(top_growth(args[0], args[1], limit)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
