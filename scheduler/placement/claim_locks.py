"""One claim at a time per resource provider among a service's processes.

Placement writes the allocations of a ``PUT`` or ``POST /allocations``
in one transaction that ends by bumping the generation of every
provider it allocated from; when another write bumped one of them
meanwhile, the transaction is undone and Placement answers 409
``placement.concurrent_update`` (or retries it inside itself,
``[placement] allocation_conflict_retry_count``).  The workers of one
service decide on views that agree, so they often choose the same host
at once: at 10,000 hosts and 8 callers, 18 to 22% of their writes met
such a conflict and were sent again, each a whole write for Placement.

So a claim's write holds a lock on each of its providers' stripes while
it is in flight: ``STRIPES`` locks, a provider's stripe taken from its
uuid (CRC-32), taken in stripe order (no two writers wait on each
other).  Claims on other providers proceed side by side.  The locks are
oslo.concurrency's: a thread lock within a process, and a file lock in
``[oslo_concurrency] lock_path`` (as Nova's services use it) between the
processes; the kernel releases a file lock when its process dies.
Without a ``lock_path`` the locks are the process's own; the launcher
gives the workers it forks a private directory then
(``private_lock_path``).  This only spares Placement work: Placement
still checks every claim, and the claims of other services' processes
are not held back.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import zlib
from collections.abc import Iterable
from collections.abc import Iterator

from oslo_concurrency import lockutils

from scheduler.conf import CONF

STRIPES = 64
PREFIX = 'scheduler-claims-'
# Seconds between a waiting process's first attempts at a file lock
# (fasteners polls; the n-th wait is n times this, at most 0.1 s).
POLL_DELAY = 0.002


def stripes(providers: Iterable[str]) -> list[int]:
    """The stripes of these resource provider uuids, ascending, each
    once."""
    return sorted({zlib.crc32(uuid.encode()) % STRIPES
                   for uuid in providers})


@contextlib.contextmanager
def held(providers: Iterable[str]) -> Iterator[None]:
    """Hold the locks of the stripes of ``providers`` (resource provider
    uuids) until the block ends."""
    lock_path = lockutils.get_lock_path(CONF)
    with contextlib.ExitStack() as stack:
        for stripe in stripes(providers):
            stack.enter_context(lockutils.lock(
                'placement-claims-%02d' % stripe, PREFIX,
                external=lock_path is not None, lock_path=lock_path,
                do_log=False, delay=POLL_DELAY))
        yield


@contextlib.contextmanager
def private_lock_path() -> Iterator[str | None]:
    """When ``[oslo_concurrency] lock_path`` is unset, set it to a new
    private directory (mode 0700, removed at the end) for the processes
    forked inside the block; yields the directory, or None when the
    option was set."""
    if lockutils.get_lock_path(CONF) is not None:
        yield None
        return
    directory = tempfile.mkdtemp(prefix=PREFIX)
    CONF.set_override('lock_path', directory, 'oslo_concurrency')
    try:
        yield directory
    finally:
        CONF.clear_override('lock_path', 'oslo_concurrency')
        shutil.rmtree(directory, ignore_errors=True)
