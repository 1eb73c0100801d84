"""Finding filter and weigher classes by name, dotted path or Nova path."""

import importlib.metadata

import pytest

from scheduler import exception
from scheduler import filters
from scheduler import loadables
from scheduler import weights
from scheduler.filters import compute_filter
from scheduler.filters import ram_filter
from scheduler.weights import ram as ram_weigher

FILTERS = filters.NAMESPACE
WEIGHERS = weights.NAMESPACE


class ExtraFilter(filters.BaseHostFilter):
    """A third-party filter, found by its dotted path."""

    def host_passes(self, host_state, spec_obj):
        return True


class NotAFilter:
    pass


def extra_filters():
    """A function returning filter classes, as ``all_filters`` does."""
    return [ExtraFilter, ram_filter.RamFilter]


def mixed_classes():
    return [ExtraFilter, ram_weigher.RAMWeigher, NotAFilter]


def _path(name):
    return '%s.%s' % (__name__, name)


def _resolve_filters(*paths):
    return loadables.resolve(list(paths), FILTERS, filters.BaseHostFilter)


def _resolve_weighers(*paths):
    return loadables.resolve(list(paths), WEIGHERS, weights.BaseHostWeigher)


def _entry_point_names(group):
    return {ep.name for ep in importlib.metadata.entry_points(group=group)}


# -- entry points -----------------------------------------------------------

def test_entry_point_classes_has_every_registered_name():
    classes = loadables.entry_point_classes(FILTERS)
    assert set(classes) == _entry_point_names(FILTERS)
    for name, cls in classes.items():
        assert cls.__name__ == name
        assert issubclass(cls, filters.BaseHostFilter)


def test_entry_point_classes_of_weighers():
    classes = loadables.entry_point_classes(WEIGHERS)
    assert set(classes) == _entry_point_names(WEIGHERS)
    assert classes['RAMWeigher'] is ram_weigher.RAMWeigher


def test_unknown_namespace_has_no_classes():
    assert loadables.entry_point_classes('scheduler.no_such_namespace') == {}


# -- resolve: names, dotted paths, functions ---------------------------------

def test_names_in_the_namespace_resolve():
    assert _resolve_filters('RamFilter', 'ComputeFilter') == [
        ram_filter.RamFilter, compute_filter.ComputeFilter]
    assert _resolve_weighers('RAMWeigher') == [ram_weigher.RAMWeigher]


def test_dotted_class_path_resolves():
    assert _resolve_filters('scheduler.filters.ram_filter.RamFilter') == [
        ram_filter.RamFilter]
    assert _resolve_filters(_path('ExtraFilter')) == [ExtraFilter]
    assert _resolve_weighers('scheduler.weights.ram.RAMWeigher') == [
        ram_weigher.RAMWeigher]


def test_function_path_returns_its_classes():
    assert _resolve_filters(_path('extra_filters')) == [
        ExtraFilter, ram_filter.RamFilter]


def test_all_filters_and_all_weighers_functions():
    all_filters = _resolve_filters('scheduler.filters.all_filters')
    assert {cls.__name__ for cls in all_filters} == _entry_point_names(
        FILTERS)
    all_weighers = _resolve_weighers('scheduler.weights.all_weighers')
    assert {cls.__name__ for cls in all_weighers} == _entry_point_names(
        WEIGHERS)


def test_surrounding_whitespace_is_ignored():
    assert _resolve_filters(' RamFilter ', '\tComputeFilter') == [
        ram_filter.RamFilter, compute_filter.ComputeFilter]


def test_empty_list_resolves_to_nothing():
    assert _resolve_filters() == []


# -- Nova paths ---------------------------------------------------------------

def test_nova_all_filters_maps_to_every_filter():
    assert _resolve_filters('nova.scheduler.filters.all_filters') == (
        _resolve_filters('scheduler.filters.all_filters'))


def test_nova_all_weighers_maps_to_every_weigher():
    assert _resolve_weighers('nova.scheduler.weights.all_weighers') == (
        _resolve_weighers('scheduler.weights.all_weighers'))


@pytest.mark.parametrize('path,expected', [
    ('nova.scheduler.filters.ram_filter.RamFilter', ram_filter.RamFilter),
    ('nova.scheduler.filters.compute_filter.ComputeFilter',
     compute_filter.ComputeFilter),
])
def test_nova_filter_path_maps_to_the_same_name(path, expected):
    assert _resolve_filters(path) == [expected]


def test_nova_weigher_path_maps_to_the_same_name():
    assert _resolve_weighers('nova.scheduler.weights.ram.RAMWeigher') == [
        ram_weigher.RAMWeigher]


def test_nova_path_of_a_missing_plug_in_is_not_found():
    path = 'nova.scheduler.filters.legacy_filter.NoSuchLegacyFilter'
    with pytest.raises(exception.ClassNotFound) as info:
        _resolve_filters(path)
    assert path in str(info.value)
    assert 'NoSuchLegacyFilter' in str(info.value)


# -- errors -------------------------------------------------------------------

@pytest.mark.parametrize('path', [
    'NoSuchFilter',
    'no_such_package.filters.SomeFilter',
    'scheduler.filters.ram_filter.NoSuchFilter',
    'scheduler.filters.no_such_module.RamFilter',
    '',
])
def test_unknown_path_is_class_not_found(path):
    with pytest.raises(exception.ClassNotFound) as info:
        _resolve_filters(path)
    assert str(info.value).startswith('Class %s could not be found' % path)


@pytest.mark.parametrize('path', [
    'scheduler.weights.ram.RAMWeigher',
    'collections.OrderedDict',
    _path('NotAFilter'),
    'scheduler.filters.ram_filter',
    'os.sep',
])
def test_wrong_kind_of_object_is_class_not_found(path):
    with pytest.raises(exception.ClassNotFound) as info:
        _resolve_filters(path)
    assert path in str(info.value)


def test_filter_class_is_not_a_weigher():
    with pytest.raises(exception.ClassNotFound):
        _resolve_weighers('scheduler.filters.ram_filter.RamFilter')


def test_function_returning_the_wrong_kind_is_class_not_found():
    with pytest.raises(exception.ClassNotFound):
        _resolve_filters(_path('mixed_classes'))


def test_one_bad_entry_fails_the_whole_list():
    with pytest.raises(exception.ClassNotFound):
        _resolve_filters('RamFilter', 'no.such.Filter', 'ComputeFilter')


# -- duplicates ---------------------------------------------------------------

def test_duplicates_are_dropped_keeping_the_first_position():
    assert _resolve_filters(
        'RamFilter',
        'scheduler.filters.ram_filter.RamFilter',
        'nova.scheduler.filters.ram_filter.RamFilter',
        'ComputeFilter',
        'RamFilter',
    ) == [ram_filter.RamFilter, compute_filter.ComputeFilter]


def test_function_results_are_deduplicated_too():
    resolved = _resolve_filters('ComputeFilter',
                                'scheduler.filters.all_filters',
                                'nova.scheduler.filters.all_filters',
                                _path('extra_filters'))
    assert len(resolved) == len(set(resolved))
    assert resolved[0] is compute_filter.ComputeFilter
    assert resolved[-1] is ExtraFilter
    assert len(resolved) == len(_entry_point_names(FILTERS)) + 1


# -- the loaders built on resolve ---------------------------------------------

def test_load_filters_with_nova_style_configuration():
    loaded = filters.load_filters(
        ['nova.scheduler.filters.all_filters', _path('ExtraFilter')],
        ['RamFilter', 'ExtraFilter', 'ComputeFilter'])
    assert [type(f) for f in loaded] == [
        ram_filter.RamFilter, ExtraFilter, compute_filter.ComputeFilter]


def test_load_filters_names_every_missing_filter():
    with pytest.raises(exception.SchedulerHostFilterNotFound) as info:
        filters.load_filters(['RamFilter'], ['RamFilter', 'NoSuchFilter',
                                             'OtherMissingFilter'])
    assert 'NoSuchFilter' in str(info.value)
    assert 'OtherMissingFilter' in str(info.value)


def test_load_weighers_with_a_nova_path():
    loaded = weights.load_weighers(['nova.scheduler.weights.ram.RAMWeigher'])
    assert [type(w) for w in loaded] == [ram_weigher.RAMWeigher]


# -- declares ---------------------------------------------------------------

class Weighs:
    LOCAL = True

    def weigh(self):
        return 1.0


class WeighsOtherwise(Weighs):
    """Overrides how it weighs, and so does not inherit LOCAL's promise."""

    def weigh(self):
        return 2.0


class WeighsOtherwiseLocally(WeighsOtherwise):
    LOCAL = True


class WeighsAlike(Weighs):
    """Inherits both the method and the promise about it."""


def test_declares_holds_for_the_class_defining_the_reference_or_below():
    assert loadables.declares(Weighs(), 'LOCAL', ('weigh',))
    assert loadables.declares(WeighsAlike(), 'LOCAL', ('weigh',))
    assert loadables.declares(WeighsOtherwiseLocally(), 'LOCAL', ('weigh',))
    assert not loadables.declares(WeighsOtherwise(), 'LOCAL', ('weigh',))
    assert not loadables.declares(Weighs(), 'MISSING', ('weigh',))
