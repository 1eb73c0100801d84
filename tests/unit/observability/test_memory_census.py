"""The memory census (scheduler.observability.memory_census)."""

import gc
import json

import pytest

from scheduler.observability import memory_census

pytestmark = pytest.mark.timeout(60)


class _Grower:
    """Stands for a structure that keeps something per request."""

    def __init__(self):
        self.by_uuid = {}


def test_a_census_is_json_and_counts_the_process():
    census = memory_census.take()
    assert json.loads(json.dumps(census)) == census
    assert census['rss_kib'] > 0
    assert census['allocated_blocks'] > 0
    assert 'builtins.dict' in census['types']
    assert len(census['types']) <= memory_census.TOP_TYPES
    assert len(census['containers']) <= memory_census.TOP_CONTAINERS
    sizes = [c['len'] for c in census['containers']]
    assert sizes == sorted(sizes, reverse=True)


def test_malloc_figures_where_glibc_has_them():
    info = memory_census.malloc_info()
    if info:
        assert info['uordblks'] > 0
        assert set(info) == set(memory_census._MALLINFO_FIELDS)


def test_compare_names_the_growing_type_and_container():
    grower = _Grower()
    grower.by_uuid.update(('uuid-%06d' % n, (n,)) for n in range(20000))
    old = memory_census.take()
    kept = [_Grower() for _ in range(3000)]
    grower.by_uuid.update(('uuid-%06d' % n, (n,))
                          for n in range(20000, 50000))
    new = memory_census.take()
    growth = memory_census.compare(old, new, limit=5)
    name = '%s.%s' % (__name__, _Grower.__qualname__)
    # (old had one, below its top types)
    assert growth['types'][name] in (3000, 3001)
    grown = [c for c in growth['containers']
             if c['sample'] == repr('uuid-000000')]
    assert grown and grown[0]['len'] == 50000 and grown[0]['grew'] == 30000
    assert growth['scalars']['allocated_blocks'] > 0
    assert len(kept) == 3000


def test_frozen_objects_are_counted_and_stay_frozen():
    """The host view's objects are frozen (scheduler.view.gc_freeze): a
    census still counts them, and leaves them frozen."""
    kept = [_Grower() for _ in range(5000)]
    gc.freeze()
    try:
        census = memory_census.take()
        assert gc.get_freeze_count() > 0
        assert not any(obj is kept[0] for obj in gc.get_objects())
    finally:
        gc.unfreeze()
    assert census['types'][_Grower.__module__ + '._Grower'] >= len(kept)
