"""How many heaps glibc's malloc may keep: two, not eight per core.

glibc gives a thread that finds the heaps busy a heap (an *arena*) of
its own, up to eight per core, and a block freed in one arena can only
be reused by the threads of that arena.  A worker of this service runs
dozens of threads (the RPC server's executor, decisions, refreshes, the
heartbeat) and so ends up with 16 arenas on two cores.  Under the soak's
load (docs/soak.rst) each of its 15 thread arenas held 4 to 9 MB from
the system with 1 to 2 MB in use, and the free memory so stranded grew
with the hour: the resident memory rose about 0.4 MiB a minute per
worker while the Python objects and the bytes malloc had in use stayed
flat.  Threads of a CPython process allocate under the GIL almost
always, so extra arenas buy no concurrency; two arenas (what
``MALLOC_ARENA_MAX=2`` asks) keep the free memory where every thread
can reuse it.

``install`` sets glibc's ``M_ARENA_MAX`` with ``mallopt`` before the
service starts its threads and forks its workers (who inherit it):
``SCHEDULER_MALLOC_ARENA_MAX`` arenas (2 by default; 0 leaves glibc's
default).  glibc's own ``MALLOC_ARENA_MAX``, when set, is left to rule.
Without glibc (musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from collections.abc import Mapping

ENV_ARENA_MAX = 'SCHEDULER_MALLOC_ARENA_MAX'
GLIBC_ENV = 'MALLOC_ARENA_MAX'
DEFAULT_ARENA_MAX = 2
# mallopt's parameter number for the arena limit (glibc's malloc.h).
M_ARENA_MAX = -8


class MallocArenasConfigError(ValueError):
    """``SCHEDULER_MALLOC_ARENA_MAX`` is not a whole number of arenas."""


def _load() -> Callable[[int, int], int] | None:
    try:
        function = ctypes.CDLL(ctypes.util.find_library('c')).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


_MALLOPT = _load()


def arena_max_from(environ: Mapping[str, str]) -> int:
    """``SCHEDULER_MALLOC_ARENA_MAX`` (the default when unset; 0: leave
    glibc's).

    :raises MallocArenasConfigError: not a whole number, or negative.
    """
    text = environ.get(ENV_ARENA_MAX, '').strip()
    if not text:
        return DEFAULT_ARENA_MAX
    try:
        value = int(text)
    except ValueError:
        raise MallocArenasConfigError(
            '%s must be a whole number of arenas, not %r'
            % (ENV_ARENA_MAX, text)) from None
    if value < 0:
        raise MallocArenasConfigError(
            '%s must be 0 (glibc\'s default) or more, not %r'
            % (ENV_ARENA_MAX, text))
    return value


def install(environ: Mapping[str, str] = os.environ) -> int | None:
    """Limit malloc's arenas (see the module); return the limit set, or
    None when nothing was set (0, ``MALLOC_ARENA_MAX`` given, no glibc,
    or refused by ``mallopt``).

    :raises MallocArenasConfigError: see ``arena_max_from``.
    """
    arena_max = arena_max_from(environ)
    if not arena_max or environ.get(GLIBC_ENV) or _MALLOPT is None:
        return None
    if not _MALLOPT(M_ARENA_MAX, arena_max):
        return None
    return arena_max
