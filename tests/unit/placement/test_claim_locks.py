"""The claim locks of ``scheduler.placement.claim_locks``: a provider's
stripe, a held stripe holding back another writer of that stripe (in
this process, and through the lock files of ``lock_path``) but not the
writers of other stripes, and the private lock directory the launcher
gives its workers."""

import os
import stat
import threading
import uuid

import pytest
from oslo_concurrency import lockutils

from scheduler.conf import CONF
from scheduler.placement import claim_locks

# Seconds a writer that must wait is given to (wrongly) get in.
SETTLE = 0.3


def _providers_of_stripes():
    """Two provider uuids of one stripe, and one of another."""
    first = str(uuid.uuid4())
    stripe = claim_locks.stripes([first])[0]
    same = other = None
    while same is None or other is None:
        rp = str(uuid.uuid4())
        if claim_locks.stripes([rp]) == [stripe]:
            same = same or rp
        else:
            other = other or rp
    return first, same, other


def test_stripes_are_sorted_distinct_and_the_same_in_every_process():
    rps = [str(uuid.uuid4()) for _ in range(200)]
    found = claim_locks.stripes(rps + rps)
    assert found == sorted(set(found))
    assert all(0 <= stripe < claim_locks.STRIPES for stripe in found)
    # CRC-32 of the uuid, not Python's per-process hash.
    assert claim_locks.stripes(['00000000-0000-0000-0000-000000000000']) == [
        0x8151da89 % claim_locks.STRIPES]
    assert claim_locks.stripes([]) == []


@pytest.mark.parametrize('external', [False, True])
def test_a_held_stripe_holds_back_its_writers_only(external, conf,
                                                   tmp_path):
    if external:
        conf.set_override('lock_path', str(tmp_path), 'oslo_concurrency')
    else:
        assert lockutils.get_lock_path(CONF) is None
    first, same, other = _providers_of_stripes()
    entered = {'same': threading.Event(), 'other': threading.Event()}

    def write(name, rp):
        with claim_locks.held([rp]):
            entered[name].set()

    with claim_locks.held([first]):
        threads = [threading.Thread(target=write, args=('same', same)),
                   threading.Thread(target=write, args=('other', other))]
        for thread in threads:
            thread.start()
        assert entered['other'].wait(10)
        assert not entered['same'].wait(SETTLE)
    assert entered['same'].wait(10)
    for thread in threads:
        thread.join(10)
    if external:
        assert {path.name for path in tmp_path.iterdir()} >= {
            '%splacement-claims-%02d' % (claim_locks.PREFIX, stripe)
            for stripe in claim_locks.stripes([first, other])}


def test_private_lock_path_when_unset(conf):
    assert lockutils.get_lock_path(CONF) is None
    with claim_locks.private_lock_path() as directory:
        assert lockutils.get_lock_path(CONF) == directory
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        with claim_locks.held([str(uuid.uuid4())]):
            assert os.listdir(directory)
    assert not os.path.exists(directory)
    assert lockutils.get_lock_path(CONF) is None


def test_a_set_lock_path_is_kept(conf, tmp_path):
    conf.set_override('lock_path', str(tmp_path), 'oslo_concurrency')
    with claim_locks.private_lock_path() as directory:
        assert directory is None
        assert lockutils.get_lock_path(CONF) == str(tmp_path)
    assert lockutils.get_lock_path(CONF) == str(tmp_path)
