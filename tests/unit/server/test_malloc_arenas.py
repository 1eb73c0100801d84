"""malloc's arena limit (scheduler.server.malloc_arenas)."""

import subprocess
import sys
import textwrap

import pytest

from scheduler.server import malloc_arenas

pytestmark = pytest.mark.timeout(60)


def test_the_limit_from_the_environment():
    env = malloc_arenas.ENV_ARENA_MAX
    assert (malloc_arenas.arena_max_from({}) ==
            malloc_arenas.DEFAULT_ARENA_MAX == 2)
    assert malloc_arenas.arena_max_from({env: ' 4 '}) == 4
    assert malloc_arenas.arena_max_from({env: '0'}) == 0
    for bad in ('two', '-1', '1.5'):
        with pytest.raises(malloc_arenas.MallocArenasConfigError,
                           match=env):
            malloc_arenas.arena_max_from({env: bad})


def test_nothing_set_when_off_or_left_to_glibc():
    assert malloc_arenas.install({malloc_arenas.ENV_ARENA_MAX: '0'}) is None
    assert malloc_arenas.install({malloc_arenas.GLIBC_ENV: '8'}) is None


# Sixteen threads allocate and free mid-sized blocks together, as a
# worker's RPC, decision and refresh threads do, then the arenas are
# counted in malloc_info()'s XML (one <heap nr=...> each).  The limit
# comes from argv[1] (the service's variable; '0': glibc's default).
_THREADS = textwrap.dedent('''
    import ctypes, ctypes.util, os, sys, tempfile, threading
    from scheduler.server import malloc_arenas

    malloc_arenas.install({malloc_arenas.ENV_ARENA_MAX: sys.argv[1]})
    start = threading.Barrier(16)

    def churn():
        start.wait()
        for _ in range(300):
            blocks = [bytearray(20000) for _ in range(20)]
            del blocks

    threads = [threading.Thread(target=churn) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc = ctypes.CDLL(ctypes.util.find_library('c'))
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile('r') as out:
        stream = libc.fopen(out.name.encode(), b'w')
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        print(out.read().count('<heap nr='))
''')


def _arenas(limit):
    done = subprocess.run([sys.executable, '-c', _THREADS, limit],
                          capture_output=True, text=True, timeout=50,
                          check=True, env={'PATH': '/usr/bin:/bin',
                                           'PYTHONPATH': ':'.join(sys.path)})
    return int(done.stdout)


@pytest.mark.skipif(malloc_arenas._MALLOPT is None, reason='no glibc')
def test_threads_share_two_arenas():
    """glibc's default gives the threads arenas of their own (here more
    than two: up to eight per core); the service's limit keeps two."""
    assert _arenas('0') > 2
    assert _arenas('2') <= 2
