"""AggregateInstanceExtraSpecsFilter: flavor extra specs against the
metadata of the host's aggregates."""

import fakes
import pytest

from scheduler.filters import aggregate_instance_extra_specs

SCOPE = 'aggregate_instance_extra_specs'


def _passes(extra_specs, *metadata):
    aggregates = [fakes.fake_aggregate(i, metadata=meta)
                  for i, meta in enumerate(metadata, 1)]
    host = fakes.fake_host_state(aggregates=aggregates)
    spec = fakes.fake_spec(extra_specs=extra_specs)
    host_filter = aggregate_instance_extra_specs.\
        AggregateInstanceExtraSpecsFilter()
    return host_filter.host_passes(host, spec)


def test_aggregate_filter_passes_no_extra_specs():
    spec = fakes.fake_spec()
    del spec.flavor.extra_specs
    host_filter = aggregate_instance_extra_specs.\
        AggregateInstanceExtraSpecsFilter()
    assert host_filter.host_passes(fakes.fake_host_state(), spec)


def test_aggregate_filter_passes_empty_extra_specs():
    assert _passes({}, {'opt1': '1'})
    assert _passes({})


def test_aggregate_filter_passes_extra_specs_simple():
    specs = {SCOPE + ':opt1': '1', SCOPE + ':opt2': '2'}
    assert _passes(specs, {'opt1': '1', 'opt2': '2'})
    # The keys may come from different aggregates.
    assert _passes(specs, {'opt1': '1'}, {'opt2': '2'})


def test_aggregate_filter_passes_extra_specs_simple_comma():
    specs = {SCOPE + ':opt1': '1', SCOPE + ':opt2': '5'}
    assert _passes(specs, {'opt1': '1, 3', 'opt2': '2,5'})


def test_aggregate_filter_passes_with_key_same_as_scope():
    assert _passes({SCOPE: '1'}, {SCOPE: '1'})
    assert not _passes({SCOPE: '1'}, {'other': '1'})


def test_aggregate_filter_fails_extra_specs_simple():
    specs = {SCOPE + ':opt1': '1', SCOPE + ':opt2': '222'}
    assert not _passes(specs, {'opt1': '1', 'opt2': '2'})


def test_aggregate_filter_fails_missing_key():
    assert not _passes({SCOPE + ':opt1': '1'}, {'opt2': '1'})
    assert not _passes({SCOPE + ':opt1': '1'})


def test_aggregate_filter_ignores_foreign_scopes():
    specs = {'hw:cpu_policy': 'dedicated', 'capabilities:cpu_info': 'x',
             'trust:trusted_host': 'trusted'}
    assert _passes(specs)


def test_aggregate_filter_checks_unscoped_keys():
    # As in Nova, a key with no scope (no ':') is checked by this filter
    # too, and fails on a host without aggregate metadata.
    assert not _passes({'foo': 'bar'})
    assert _passes({'foo': 'bar'}, {'foo': 'bar'})


def test_aggregate_filter_uses_the_operators():
    assert _passes({SCOPE + ':ram': '>= 2048'}, {'ram': '4096'})
    assert not _passes({SCOPE + ':ram': '>= 2048'}, {'ram': '1024'})
    # '=' means at least.
    assert _passes({SCOPE + ':ram': '= 2048'}, {'ram': '4096'})
    assert _passes({SCOPE + ':ssd': '<or> true <or> yes'}, {'ssd': 'yes'})
    assert _passes({SCOPE + ':cpu': '<in> avx'}, {'cpu': 'avx2 sse'})


def test_aggregate_filter_any_value_of_any_aggregate_matches():
    specs = {SCOPE + ':ram': '>= 2048'}
    assert _passes(specs, {'ram': '512'}, {'ram': '1024, 4096'})
    assert not _passes(specs, {'ram': '512'}, {'ram': '1024'})


@pytest.mark.parametrize('value', ['abc', ''])
def test_aggregate_filter_non_numeric_value_does_not_match(value):
    assert not _passes({SCOPE + ':ram': '>= 2048'}, {'ram': value})


def test_aggregate_filter_runs_once_per_request_not_on_rebuild():
    cls = aggregate_instance_extra_specs.AggregateInstanceExtraSpecsFilter
    assert cls.run_filter_once_per_request
    assert not cls.RUN_ON_REBUILD
