"""JsonFilter: Nova's JSON query language over HostState attributes."""

import json
import logging

import fakes
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.filters import json_filter
from scheduler.view import host_state

QUERY = ['and', ['>=', '$free_ram_mb', 1024],
         ['>=', '$free_disk_mb', 200 * 1024]]


def _spec(query):
    text = query if isinstance(query, str) else json.dumps(query)
    return fakes.fake_spec(scheduler_hints={'query': text})


def _passes(query, host=None, host_filter=None):
    host = host if host is not None else fakes.fake_host_state()
    host_filter = host_filter or json_filter.JsonFilter()
    return host_filter.host_passes(host, _spec(query))


def _host(free_ram_mb=1024, free_disk_mb=200 * 1024, **attrs):
    return fakes.fake_host_state(free_ram_mb=free_ram_mb,
                                 free_disk_mb=free_disk_mb, **attrs)


def test_json_filter_passes():
    assert _passes(QUERY, _host())


def test_json_filter_passes_with_no_query():
    host = _host(0, 0)
    assert json_filter.JsonFilter().host_passes(host, fakes.fake_spec())
    assert _passes('', host)


def test_json_filter_fails_on_memory():
    assert not _passes(QUERY, _host(free_ram_mb=1023))


def test_json_filter_fails_on_disk():
    assert not _passes(QUERY, _host(free_disk_mb=200 * 1024 - 1))


def test_json_filter_service_disabled():
    query = QUERY + [['not', '$service.disabled']]
    # No service: the variable is dropped, 'not' gives [], which is false.
    assert not _passes(query, _host())
    # Nova's quirk: 'not' returns a list, and a non-empty list is true
    # inside 'and', so only a top-level 'not' really negates.
    assert _passes(query, _host(service={'disabled': True}))
    assert not _passes(['not', '$service.disabled'],
                       _host(service={'disabled': True}))
    assert _passes(['not', '$service.disabled'],
                   _host(service={'disabled': False}))


def test_json_filter_happy_day():
    query = ['and', '$stats.enabled', ['=', '$stats.opt1', 'match'],
             ['or', ['and', ['<', '$free_ram_mb', 30],
                     ['<', '$free_disk_mb', 300]],
              ['and', ['>', '$free_ram_mb', 30],
               ['>', '$free_disk_mb', 300]]]]

    def host(ram, disk, **stats):
        return _host(ram, disk, stats=stats)

    # An unknown variable ($stats.enabled) is dropped.
    assert _passes(query, host(10, 200, opt1='match'))
    assert _passes(query, host(40, 400, opt1='match'))
    assert not _passes(query, host(40, 400, enabled=False, opt1='match'))
    assert not _passes(query, host(30, 300, enabled=True, opt1='match'))
    assert not _passes(query, host(20, 400, enabled=True, opt1='match'))
    assert not _passes(query, host(20, 400, enabled=True, opt1='no-match'))


@pytest.mark.parametrize('op,args,expected', [
    ('=', [1, 1], True), ('=', [1, 2], False), ('=', [1, 1, 1], True),
    ('=', [1, 1, 2], False),
    ('<', [1, 2], True), ('<', [1, 1], False), ('<', [2, 1], False),
    ('>', [2, 1], True), ('>', [2, 2], False), ('>', [2, 3], False),
    ('<=', [1, 2], True), ('<=', [1, 1], True), ('<=', [2, 1], False),
    ('>=', [2, 1], True), ('>=', [2, 2], True), ('>=', [2, 3], False),
    ('in', [1, 1], True), ('in', [1, 1, 2, 3], True),
    ('in', [4, 1, 2, 3], False), ('in', ['a', 'b'], False),
    ('not', [True], False), ('not', [False], True),
    ('not', [True, False, True, False], True),
    ('not', [True, True, True], False),
    ('or', [True, False], True), ('or', [False, False], False),
    ('and', [True, True], True), ('and', [False, False], False),
    ('and', [True, False], False),
    ('and', [['or', True, False], ['>', 2, 1]], True),
    ('=', ['x86_64', 'x86_64'], True), ('<', ['a', 'b'], True),
])
def test_json_filter_basic_operators(op, args, expected):
    assert _passes([op] + args) is expected


def test_json_filter_unknown_operator_fails():
    # Nova raises KeyError, failing the whole request; here the host
    # fails.
    assert not _passes(['!=', 1, 2])
    assert not _passes([['=', 1, 1], 1])
    assert not _passes(['and', ['bogus', 1]])


def test_json_filter_empty_filters_pass():
    for query in ([], {}, None, '', 0):
        assert _passes(json.dumps(query))
    assert _passes(['and', [], True])


def test_json_filter_invalid_num_arguments_fails():
    assert not _passes(['>', ['and', ['or', ['not', ['<', ['>=', ['<=', [
        'in']]]]]]]])
    assert not _passes(['>', 1])
    assert not _passes(['in', 1])


def test_json_filter_unknown_variable_ignored():
    assert _passes(['=', '$........', 1, 1])
    assert _passes(['=', '$foo', 2, 2])
    assert _passes(['=', '$stats.missing.deeper', 2, 2])
    assert _passes(['=', '$free_ram_mb.not_a_dict', 2, 2])


def test_json_filter_null_and_empty_arguments_are_dropped():
    assert _passes(['=', None, '', 3, 3])
    assert not _passes(['=', None, 3])


def test_json_filter_variables():
    host = _host(stats={'num_instances': '5', 'a': {'b': 7}},
                 service={'disabled': False})
    assert _passes(['=', '$stats.num_instances', '5'], host)
    assert _passes(['=', '$stats.a.b', 7], host)
    assert _passes(['=', '$host', 'host1'], host)
    assert _passes(['=', '$service.disabled', False], host)
    assert _passes(['in', '$free_ram_mb', 1, 1024], host)


def test_json_filter_reads_properties():
    host = _host(aggregates=[fakes.fake_aggregate(
        1, metadata={'availability_zone': 'az1'})])
    assert _passes(['=', '$availability_zone', 'az1'], host)


@pytest.mark.parametrize('name', [
    '$update', '$consume_from_request', '$__class__', '$__dict__',
    '$_lock', '$__init__.__globals__', '$__repr__', '$limits',
    '$aggregates', '$instances', '$updated', '$stats'])
def test_json_filter_only_scalar_public_attributes(name):
    host = _host(limits={'a': 1}, stats={'x': '1'})
    # The variable is dropped: '=' is left with one argument.
    assert not _passes(['=', name, 1], host)
    assert _passes(['=', name, 1, 1], host)


def test_json_filter_private_attributes_are_not_read():
    host = _host()
    host._secret = 5
    assert not _passes(['=', '$_secret', 5], host)


class _HostStateWithClassAttributes(host_state.HostState):
    version = 3

    @property
    def doubled_ram(self):
        return 2 * self.free_ram_mb


def test_json_filter_reads_properties_not_class_attributes():
    host = _HostStateWithClassAttributes('host1', 'node1')
    host.free_ram_mb = 10
    assert _passes(['=', '$doubled_ram', 20], host)
    assert not _passes(['=', '$version', 3], host)


def test_json_filter_never_calls_values():
    calls = []

    def trap(*args, **kwargs):
        calls.append(args)
        return True

    host = _host(stats={'f': trap})
    host.trap = trap
    for name in ('$trap', '$stats.f'):
        assert not _passes(['=', name, True], host)
        assert _passes(['=', name, 1, 1], host)
    assert calls == []


def test_json_filter_type_mismatch_fails_host_and_warns_once(caplog):
    host_filter = json_filter.JsonFilter()
    spec = _spec(['<', '$free_ram_mb', 'abc'])
    hosts = [_host() for _ in range(5)]
    with caplog.at_level(logging.WARNING):
        assert list(host_filter.filter_all(hosts, spec)) == []
        assert list(host_filter.filter_all(hosts, spec)) == []
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1


@pytest.mark.parametrize('text', [
    '[', 'not json', '"and"', '5', '{"a": 1}', '["=", {"a": 1}, 1]',
    '[["=", 1, 1]]', '[1, 2]', '[null]', '1' * 5000])
def test_json_filter_malformed_query_fails_and_warns_once(caplog, text):
    host_filter = json_filter.JsonFilter()
    spec = _spec(text)
    with caplog.at_level(logging.WARNING):
        assert list(host_filter.filter_all([_host(), _host()], spec)) == []
        assert not host_filter.host_passes(_host(), spec)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1


def test_json_filter_several_query_hints_fail():
    spec = fakes.fake_spec(scheduler_hints={'query': ['[]', '[]']})
    assert not json_filter.JsonFilter().host_passes(_host(), spec)


def _nested(depth):
    query = ['=', 1, 1]
    for _ in range(depth - 1):
        query = ['and', query]
    return query


def test_json_filter_depth_is_bounded():
    assert _passes(_nested(json_filter.MAX_DEPTH))
    assert not _passes(_nested(json_filter.MAX_DEPTH + 1))
    assert not _passes(_nested(50))
    # Deeper than the JSON parser's own limit.
    assert not _passes('[' * 100000 + ']' * 100000)


def test_json_filter_flags():
    assert not json_filter.JsonFilter.run_filter_once_per_request
    assert not json_filter.JsonFilter.RUN_ON_REBUILD


# -- property: random queries never raise and never call anything ---------

class _Trap:
    """A value that records any use of it."""

    calls = []

    def _record(self, *args, **kwargs):
        type(self).calls.append(args)
        return True

    __call__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _record
    __bool__ = __contains__ = __str__ = __repr__ = _record
    __hash__ = object.__hash__


_VARIABLES = [
    '$free_ram_mb', '$free_disk_mb', '$num_instances', '$host', '$stats',
    '$stats.n', '$stats.trap', '$stats.nested.trap', '$stats.nested.n',
    '$trap', '$trap.x', '$update', '$consume_from_request', '$__class__',
    '$__dict__', '$_lock', '$__init__.__globals__', '$service.disabled',
    '$availability_zone', '$limits', '$aggregates', '$instances', '$',
    '$.', '$free_ram_mb.x', '$updated', '$__repr__']
_OPERATORS = list(json_filter.OPERATORS) + ['!=', 'bogus', '']
_LEAVES = st.one_of(
    st.integers(-10 ** 6, 10 ** 6), st.floats(), st.booleans(), st.none(),
    st.text(max_size=5), st.sampled_from(_VARIABLES + _OPERATORS),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_QUERIES = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(st.sampled_from(_OPERATORS),
                  st.lists(children, max_size=4)).map(
                      lambda t: [t[0]] + t[1])),
    max_leaves=30)


def _trapped_host():
    host = _host(stats={'n': '5', 'trap': _Trap(),
                        'nested': {'trap': _Trap(), 'n': 3}},
                 service={'disabled': False}, limits={'vcpu': 4})
    host.trap = _Trap()
    host.aggregates = [fakes.fake_aggregate(1)]
    return host


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(query=_QUERIES)
def test_random_queries_never_raise_or_call(query):
    _Trap.calls.clear()
    result = _passes(json.dumps(query, allow_nan=True), _trapped_host())
    assert isinstance(result, bool)
    assert _Trap.calls == []


@given(text=st.text(max_size=50))
def test_random_text_never_raises(text):
    assert isinstance(_passes(text, _trapped_host()), bool)
