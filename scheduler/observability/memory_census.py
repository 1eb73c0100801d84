"""A census of a process's memory that costs nothing between its calls:
what ``tracemalloc_dump`` writes beside (or instead of) its snapshots.

``take()`` returns a JSON-able dict:

``rss_kib``
    the process's ``VmRSS`` (``/proc/self/status``), KiB;
``allocated_blocks``
    ``sys.getallocatedblocks()``: the blocks Python's allocator holds;
``malloc``
    glibc's ``mallinfo2()`` (bytes): ``arena`` (the heap obtained with
    ``brk``/``sbrk``), ``hblkhd`` (``mmap``-ed blocks), ``uordblks``
    (in use), ``fordblks`` (free but kept), ``keepcost``; empty where
    there is no glibc;
``types``
    ``{'module.QualName': count}`` of the objects the garbage collector
    tracks (``gc.get_objects()``, frozen ones included; numbers and
    strings are not tracked),
    for the ``TOP_TYPES`` most numerous types;
``containers``
    the ``TOP_CONTAINERS`` largest dicts, lists, sets and deques among
    them, each ``{'type', 'len', 'sample'}`` (``sample``: the ``repr``
    of one key or item, cut to 80 characters), so that one that keeps
    growing can be recognised in two censuses.

Taking one walks every tracked object (about a second per million) with
the GIL held.  ``compare(old, new)`` gives the growth between two.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import heapq
import itertools
import sys
from typing import Any

TOP_TYPES = 60
TOP_CONTAINERS = 40
SAMPLE_CHARS = 80
_CONTAINERS = (dict, list, set, frozenset, collections.deque,
               collections.OrderedDict, collections.defaultdict)
_MALLINFO_FIELDS = ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd',
                    'usmblks', 'fsmblks', 'uordblks', 'fordblks',
                    'keepcost')


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO_FIELDS]


def _libc() -> Any:
    name = ctypes.util.find_library('c')
    try:
        libc = ctypes.CDLL(name)
        function = libc.mallinfo2
    except (OSError, AttributeError, TypeError):
        return None
    function.restype = _MallInfo2
    return function


_MALLINFO2 = _libc()


def rss_kib() -> int:
    """This process's resident set size, KiB (0 where ``/proc`` has
    none)."""
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def malloc_info() -> dict[str, int]:
    """glibc's ``mallinfo2()`` as a dict of bytes ({} without glibc)."""
    if _MALLINFO2 is None:
        return {}
    info = _MALLINFO2()
    return {name: int(getattr(info, name)) for name in _MALLINFO_FIELDS}


def _type_name(kind: type) -> str:
    return '%s.%s' % (kind.__module__, kind.__qualname__)


def _sample(obj: Any) -> str:
    try:
        first = next(iter(obj), None)
        return repr(first)[:SAMPLE_CHARS]
    except Exception as error:  # a repr may fail: say so, go on
        return '<%s>' % type(error).__name__


def _tracked_objects() -> list[Any]:
    """Every object the collector tracks, those frozen included (the
    host view's, ``scheduler.view.gc_freeze``): they are given back for
    the listing and frozen again, with what was made since."""
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()
    try:
        return gc.get_objects()
    finally:
        if frozen:
            gc.freeze()


def take() -> dict[str, Any]:
    """One census of this process (see the module)."""
    objects = _tracked_objects()
    counts = collections.Counter(map(type, objects))
    largest = heapq.nlargest(
        TOP_CONTAINERS, ((len(obj), number, obj)
                         for number, obj in enumerate(objects)
                         if isinstance(obj, _CONTAINERS)))
    del objects
    containers = [{'type': _type_name(type(obj)), 'len': size,
                   'sample': _sample(obj)}
                  for size, _number, obj in largest]
    del largest
    return {'rss_kib': rss_kib(),
            'allocated_blocks': sys.getallocatedblocks(),
            'malloc': malloc_info(),
            'types': {_type_name(kind): count
                      for kind, count in counts.most_common(TOP_TYPES)},
            'containers': containers}


def compare(old: dict[str, Any], new: dict[str, Any],
            limit: int = 25) -> dict[str, Any]:
    """The growth from census ``old`` to ``new``: the scalar figures'
    differences, the ``limit`` types whose count grew most, and the
    containers of ``new`` (by type and sample) that are larger than the
    same in ``old``, or new among the largest."""
    scalars = {'rss_kib': new['rss_kib'] - old['rss_kib'],
               'allocated_blocks': (new['allocated_blocks'] -
                                    old['allocated_blocks'])}
    scalars.update({'malloc.' + name: value - old['malloc'].get(name, 0)
                    for name, value in new['malloc'].items()})
    names = set(old['types']) | set(new['types'])
    types = sorted(((name, new['types'].get(name, 0) -
                     old['types'].get(name, 0)) for name in names),
                   key=lambda item: item[1], reverse=True)
    before = {(c['type'], c['sample']): c['len'] for c in old['containers']}
    grown = [dict(c, grew=c['len'] - before.get((c['type'], c['sample']),
                                                0))
             for c in new['containers']
             if c['len'] > before.get((c['type'], c['sample']), 0)]
    return {'scalars': scalars,
            'types': dict(itertools.islice(types, limit)),
            'containers': grown}
