"""AggregateMultiTenancyIsolation: aggregates reserved for tenants."""

import fakes

from scheduler.filters import aggregate_multitenancy_isolation


def _passes(project_id, *metadata):
    aggregates = [fakes.fake_aggregate(i, metadata=meta)
                  for i, meta in enumerate(metadata, 1)]
    host = fakes.fake_host_state(aggregates=aggregates)
    spec = fakes.fake_spec(project_id=project_id)
    host_filter = aggregate_multitenancy_isolation.\
        AggregateMultiTenancyIsolation()
    return host_filter.host_passes(host, spec)


def test_aggregate_multi_tenancy_isolation_with_meta_passes():
    assert _passes('my_tenantid', {'filter_tenant_id': 'my_tenantid'})


def test_aggregate_multi_tenancy_isolation_with_meta_passes_comma():
    assert _passes('my_tenantid',
                   {'filter_tenant_id': 'my_tenantid,mytenantid2'})
    assert _passes('mytenantid2',
                   {'filter_tenant_id': 'my_tenantid, mytenantid2'})


def test_aggregate_multi_tenancy_isolation_fails():
    assert not _passes('my_tenantid', {'filter_tenant_id': 'other'})


def test_aggregate_multi_tenancy_isolation_fails_comma():
    assert not _passes('my_tenantid',
                       {'filter_tenant_id': 'other,other2'})


def test_aggregate_multi_tenancy_isolation_no_meta_passes():
    assert _passes('my_tenantid')
    assert _passes('my_tenantid', {'other_key': 'x'})


def test_aggregate_multi_tenancy_isolation_union_of_aggregates():
    metadata = ({'filter_tenant_id': 'a'}, {'filter_tenant_id': 'b'},
                {'availability_zone': 'az1'})
    assert _passes('a', *metadata)
    assert _passes('b', *metadata)
    assert not _passes('c', *metadata)


def test_aggregate_multi_tenancy_isolation_prefixed_keys():
    # Nova 2024.2+: every key starting with filter_tenant_id counts.
    metadata = {'filter_tenant_id': 'a,b', 'filter_tenant_id2': 'c',
                'filter_tenant_id_extra': 'd, e'}
    for tenant in 'abcde':
        assert _passes(tenant, metadata)
    assert not _passes('f', metadata)
    assert not _passes('a', {'filter_tenant_id_extra': 'b'})
    # A key that does not start with the prefix does not restrict.
    assert _passes('a', {'x_filter_tenant_id': 'b'})


def test_aggregate_multi_tenancy_isolation_empty_value_passes():
    assert _passes('my_tenantid', {'filter_tenant_id': ''})
    assert _passes('my_tenantid', {'filter_tenant_id': ' , '})


def test_aggregate_multi_tenancy_isolation_no_project_fails():
    assert not _passes(None, {'filter_tenant_id': 'a'})


def test_aggregate_multi_tenancy_isolation_flags():
    cls = aggregate_multitenancy_isolation.AggregateMultiTenancyIsolation
    assert cls.run_filter_once_per_request
    assert not cls.RUN_ON_REBUILD
