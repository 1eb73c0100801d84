"""JsonFilter queries and extra specs cannot run code or read private data.

The host state the filters see is a ``SpyHostState``: a real HostState
whose ``__getattribute__`` records every attribute name read on it (and
every key read through its ``__dict__``), raises for private attributes,
and hands out methods that record a call and raise.  Hand-written attacks
(``$__class__``, ``$__dict__``, ``$_lock``, ``$update``,
``$limits.__class__``, dunder keys in ``stats``,
``capabilities:__class__:__init__``, gigantic numbers, deep recursion) and
hypothesis-generated queries and extra specs then check that:

* only HostState's public data fields (and its public properties) are
  read, plus ``__class__`` / ``__dict__``, which the interpreter and the
  lookup itself read (``isinstance``, ``vars``) - and the values a query
  reaches are checked to be data, never the class or the dict;
* nothing callable on the host state is ever called;
* a filter answers True or False and never raises.
"""

import json

import fakes
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from scheduler.filters import aggregate_instance_extra_specs
from scheduler.filters import compute_capabilities_filter
from scheduler.filters import extra_specs_ops
from scheduler.filters import json_filter
from scheduler.view import host_state

PUBLIC_FIELDS = frozenset(name for name in host_state.HostState.__slots__
                          if not name.startswith('_'))
PUBLIC_PROPERTIES = frozenset(
    name for name, value in vars(host_state.HostState).items()
    if isinstance(value, property) and not name.startswith('_'))
# Read by the interpreter (isinstance) and by the lookup of instance
# attributes (a plug-in's own attributes live in ``__dict__``); what is
# read through ``__dict__`` is recorded too.
INTROSPECTION = frozenset(('__class__', '__dict__'))
ALLOWED_READS = PUBLIC_FIELDS | PUBLIC_PROPERTIES | INTROSPECTION
METHODS = frozenset(
    name for name in dir(host_state.HostState)
    if callable(getattr(host_state.HostState, name)) and
    not isinstance(getattr(host_state.HostState, name), type))
PUBLIC_METHODS = frozenset(name for name in METHODS
                           if not name.startswith('_'))

# Attack names for ``$`` variables and capability paths.
ATTACK_NAMES = sorted({
    '__class__', '__dict__', '__init__', '__globals__', '__builtins__',
    '__module__', '__subclasses__', '__getattribute__', '__reduce__',
    '__repr__', '_lock', '_update_from_compute_node', '_copy_resources',
    'update', 'consume_from_request', 'mro', '__mro__', '__weakref__',
    'f_globals', 'gi_frame', '__code__', '__closure__', '__self__',
    '__func__', '__wrapped__', 'im_func', 'func_globals', '', ' '})


class SpyLog:
    def __init__(self):
        self.reads = []
        self.dict_reads = []
        self.calls = []

    def check(self):
        """Only allowed names were read, nothing was called."""
        assert set(self.reads) <= ALLOWED_READS, (
            set(self.reads) - ALLOWED_READS)
        assert set(self.dict_reads) <= PUBLIC_FIELDS, (
            set(self.dict_reads) - PUBLIC_FIELDS)
        assert self.calls == []


class _RecordingDict(dict):
    """A copy of the instance ``__dict__`` that records the keys read."""

    def __init__(self, values, log):
        super().__init__(values)
        self._log = log

    def __getitem__(self, key):
        self._log.dict_reads.append(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._log.dict_reads.append(key)
        return super().get(key, default)


_LOGS = {}


class SpyHostState(host_state.HostState):
    """A HostState that records what is read on it and poisons the rest."""

    def __getattribute__(self, name):
        log = _LOGS.get(id(self))
        value = object.__getattribute__(self, name)
        if log is None:
            return value
        log.reads.append(name)
        if name == '__dict__':
            return _RecordingDict(value, log)
        if name in METHODS:
            def poisoned(*args, **kwargs):
                log.calls.append(name)
                raise AssertionError('%s was called' % name)
            return poisoned
        if name.startswith('_') and name not in INTROSPECTION:
            raise AttributeError('private attribute %s was read' % name)
        return value


def spy_host(**attrs):
    """A SpyHostState with realistic data, dunder keys in its dicts, and
    JSON text to walk into; returns ``(host, log)``."""
    host = SpyHostState('host1', 'node1')
    values = dict(
        free_ram_mb=1024, free_disk_mb=204800, vcpus_total=8, vcpus_used=2,
        total_usable_ram_mb=2048, num_instances=3, num_io_ops=1,
        hypervisor_type='QEMU', hypervisor_version=2011000,
        hypervisor_hostname='node1', host_ip='10.0.0.1',
        cpu_info=json.dumps({'arch': 'x86_64', 'features': ['aes', 'mmx'],
                             '__class__': 'cpu-class'}),
        stats={'__class__': 'stat-class', '__dict__': 'stat-dict',
               '__init__': 'stat-init', 'cpu_arch': 'x86_64',
               'nested': '{"a": {"b": "c"}}', 'num_instances': '3'},
        limits={'memory_mb': 2048.0},
        service={'disabled': False, '__class__': 'service-class'},
        supported_instances=[['x86_64', 'kvm', 'hvm']],
        metrics=[{'name': 'cpu.frequency', 'value': 1000}])
    values.update(attrs)
    for name, value in values.items():
        assert name in PUBLIC_FIELDS, name
        setattr(host, name, value)
    log = SpyLog()
    _LOGS[id(host)] = log
    return host, log


@pytest.fixture(autouse=True)
def _forget_spies():
    yield
    _LOGS.clear()


def test_the_spy_catches_what_it_should():
    host, log = spy_host()
    assert host.free_ram_mb == 1024
    assert host.stats['cpu_arch'] == 'x86_64'
    assert vars(host).get('stats') is None   # the fields are slots
    with pytest.raises(AttributeError):
        host._lock  # noqa: B018
    with pytest.raises(AssertionError):
        host.update()
    assert log.reads == ['free_ram_mb', 'stats', '__dict__', '_lock',
                         'update']
    assert log.dict_reads == ['stats']
    assert log.calls == ['update']


# -------------------------------------------------------------- JsonFilter --

def _json_passes(query, host):
    text = query if isinstance(query, str) else json.dumps(query)
    spec = fakes.fake_spec(scheduler_hints={'query': text})
    result = json_filter.JsonFilter().host_passes(host, spec)
    assert result in (True, False)
    return result


ATTACK_VARIABLES = (
    ['$' + name for name in ATTACK_NAMES] +
    ['$limits.__class__', '$limits.__class__.__name__',
     '$free_ram_mb.__class__', '$free_ram_mb.real', '$host.__len__',
     '$stats.__class__.__name__', '$service.__class__.__init__',
     '$availability_zone.__class__', '$cpu_info.__class__',
     '$stats.nested.a.b', '$__class__.__init__.__globals__',
     '$update.__self__', '$_lock._is_owned', '$__dict__._lock',
     '$', '$.', '$..', '$free_ram_mb.', '$.free_ram_mb',
     '$ free_ram_mb', '$stats..cpu_arch'])


@pytest.mark.parametrize('variable', ATTACK_VARIABLES)
def test_attack_variables_resolve_to_nothing(variable):
    """Compared with itself, a variable that resolves to a value is
    true: these resolve to nothing, read nothing private, call nothing."""
    host, log = spy_host()
    assert not _json_passes(['=', variable, variable], host)
    assert not _json_passes(['in', variable, variable], host)
    log.check()


def test_public_fields_and_stats_keys_are_readable():
    """The control: public data (and stats keys, even dunder-named ones,
    which are data) do resolve."""
    host, log = spy_host()
    for query in (['=', '$free_ram_mb', 1024],
                  ['=', '$free_ram_mb', '$free_ram_mb'],
                  ['=', '$stats.cpu_arch', 'x86_64'],
                  ['=', '$stats.__class__', 'stat-class'],
                  ['=', '$stats.__dict__', 'stat-dict'],
                  ['=', '$limits.memory_mb', 2048],
                  ['=', '$service.disabled', False],
                  ['=', '$availability_zone', 'nova'],
                  ['>', '$free_ram_mb', -1e308],
                  ['<', '$free_ram_mb', 10 ** 400]):
        assert _json_passes(query, host), query
    log.check()


def test_containers_and_objects_are_never_values():
    """``$stats`` (a dict), ``$limits``, ``$supported_instances`` (a
    list) and ``$aggregates`` (objects) are not scalars: unknown."""
    host, log = spy_host(aggregates=[fakes.fake_aggregate()])
    for name in ('stats', 'limits', 'supported_instances', 'aggregates',
                 'metrics', 'service', 'instances'):
        assert not _json_passes(['=', '$' + name, '$' + name], host), name
    log.check()


@pytest.mark.parametrize('query', [
    '9' * 5000,                                   # more digits than int()
    '[">", "$free_ram_mb", %s]' % ('9' * 5000),
    '[">", "$free_ram_mb", 1e999]',
    '["<", "$free_ram_mb", -1e999]',
    '["=", "$free_ram_mb", NaN]',
    '[' * 100000 + ']' * 100000,                  # beyond the parser
    json.dumps(['and'] * 1 + [['and'] * 1] * 1),
    '["and", ' * 40 + 'true' + ']' * 40,          # beyond MAX_DEPTH
    '{"__class__": 1}',
    '["__import__", "os"]',
    '["eval", "1"]',
    '[["=", 1, 1]]',
    '[5, 1, 2]',
    '["=", {"$free_ram_mb": 1}, 1]',
    '"$__class__"',
    '["and"' + ', ["=", 1, 1]' * 100000 + ']',    # very wide
    '\udc80',
    '["=", "$\ud800", "\udfff"]',
], ids=lambda query: 'q%d' % len(query))
def test_hostile_queries_answer_without_raising(query):
    """Never raises (ids: the parameter index; long texts)."""
    host, log = spy_host()
    _json_passes(query, host)
    log.check()


def test_a_gigantic_number_compares_as_a_number():
    host, log = spy_host(free_ram_mb=10 ** 400)
    assert _json_passes(['>', '$free_ram_mb', 1e308], host)
    assert _json_passes(['<', '$free_ram_mb', 1e999], host)
    log.check()


_OPERATORS = sorted(json_filter.OPERATORS) + ['', 'eval', '__class__']
_variable_names = st.one_of(
    st.sampled_from(sorted(PUBLIC_FIELDS | PUBLIC_PROPERTIES)),
    st.sampled_from(ATTACK_NAMES), st.text(max_size=8))
_variables = st.builds(
    lambda names: '$' + '.'.join(names),
    st.lists(st.one_of(_variable_names, st.sampled_from(
        ['__class__', 'cpu_arch', 'nested', '__dict__', 'memory_mb'])),
        min_size=1, max_size=4))
_literals = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(),
    st.sampled_from([10 ** 400, -10 ** 400, 2 ** 63]), st.text(max_size=8))
_queries = st.recursive(
    st.one_of(_variables, _literals),
    lambda kids: st.builds(lambda op, args: [op] + args,
                           st.sampled_from(_OPERATORS),
                           st.lists(kids, max_size=4)),
    max_leaves=12)


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(query=_queries)
def test_random_queries_read_only_public_data(query):
    host, log = spy_host()
    _json_passes(json.dumps(query), host)
    log.check()


# ------------------------------------------------ ComputeCapabilitiesFilter --

def _capabilities_pass(extra_specs, host):
    spec = fakes.fake_spec(extra_specs=extra_specs)
    result = compute_capabilities_filter.ComputeCapabilitiesFilter(
    ).host_passes(host, spec)
    assert result in (True, False)
    return result


CAPABILITY_ATTACKS = (
    ['capabilities:' + name for name in ATTACK_NAMES
     if name not in PUBLIC_METHODS] +
    ['capabilities:__class__:__init__',
     'capabilities:__class__:__init__:__globals__',
     'capabilities:_lock:_is_owned', 'capabilities:__dict__:_lock',
     'capabilities:limits:__class__:__name__',
     'capabilities:free_ram_mb:__class__',
     'capabilities:free_ram_mb:real',
     'capabilities:cpu_info:__class__:__init__',
     'capabilities:stats:nested:__class__',
     'capabilities:aggregates:__class__',
     'capabilities:', 'capabilities::', 'capabilities:::free_ram_mb',
     '__class__', '__dict__', '_lock', '__init__'])


@pytest.mark.parametrize('key', CAPABILITY_ATTACKS)
@pytest.mark.parametrize('requirement', [
    's== x', '<in> __', '= 0', '<or> a <or> b', '<all-in> x', 'x', ''])
def test_capability_attacks_read_only_public_data(key, requirement):
    host, log = spy_host()
    _capabilities_pass({key: requirement}, host)
    log.check()


@pytest.mark.parametrize('key,passes', [
    ('capabilities:update', False),
    ('capabilities:consume_from_request', False),
    # Unscoped keys that are not host data are ignored (Nova's rule for
    # unknown unscoped keys): a method name is not host data.
    ('update', True), ('consume_from_request', True)])
def test_capability_paths_do_not_look_up_methods(key, passes):
    host, log = spy_host()
    assert _capabilities_pass({key: 's== x'}, host) is passes
    log.check()


def test_dunder_names_in_data_are_data():
    host, log = spy_host()
    assert _capabilities_pass({'capabilities:stats:__class__':
                               's== stat-class'}, host)
    assert _capabilities_pass({'capabilities:cpu_info:__class__':
                               's== cpu-class'}, host)
    assert _capabilities_pass({'capabilities:cpu_info:features':
                               '<in> aes'}, host)
    assert not _capabilities_pass({'capabilities:__class__:__name__':
                                   's== SpyHostState'}, host)
    log.check()


@pytest.mark.parametrize('text', [
    pytest.param('[' * 100000 + ']' * 100000, id='deep-list'),
    pytest.param('{"a": ' * 100000 + '1' + '}' * 100000, id='deep-dict'),
    pytest.param('9' * 5000, id='5000-digits'),
    pytest.param('\udc80', id='lone-surrogate'),
    pytest.param('{"a": NaN}', id='nan')])
def test_hostile_json_text_in_host_data(text):
    """Text a compute node reported, walked into by a capability path:
    too deep, too long a number, a lone surrogate - the host fails."""
    host, log = spy_host(stats={'weird': text}, cpu_info=text)
    for key in ('capabilities:stats:weird:a', 'capabilities:cpu_info:a'):
        assert not _capabilities_pass({key: 's== 1'}, host)
    log.check()


_capability_names = st.one_of(
    st.sampled_from(sorted(PUBLIC_FIELDS | PUBLIC_PROPERTIES)),
    st.sampled_from([n for n in ATTACK_NAMES if n not in PUBLIC_METHODS]),
    st.sampled_from(['cpu_arch', 'nested', 'a', 'b', 'features', 'arch']),
    st.text(max_size=6).filter(lambda n: n not in PUBLIC_METHODS))
_requirements = st.one_of(
    st.builds(lambda op, args: ' '.join([op] + args),
              st.sampled_from(sorted(extra_specs_ops.OPERATORS)),
              st.lists(st.one_of(st.text(max_size=6), st.sampled_from(
                  ['1e999', '-1e999', 'nan', '9' * 5000, '0x10', '__'])),
                  max_size=4)),
    st.text(max_size=12))


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(extra_specs=st.dictionaries(
    st.one_of(
        st.builds(lambda names: 'capabilities:' + ':'.join(names),
                  st.lists(_capability_names, min_size=1, max_size=4)),
        _capability_names,
        st.builds(lambda name: 'aggregate_instance_extra_specs:' + name,
                  _capability_names)),
    _requirements, max_size=4))
def test_random_extra_specs_read_only_public_data(extra_specs):
    host, log = spy_host(aggregates=[fakes.fake_aggregate(
        hosts=['host1'], metadata={'__class__': 'agg', 'cpu_arch': 'x86_64',
                                   'ssd': 'true'})])
    _capabilities_pass(extra_specs, host)
    spec = fakes.fake_spec(extra_specs=extra_specs)
    result = aggregate_instance_extra_specs.AggregateInstanceExtraSpecsFilter(
    ).host_passes(host, spec)
    assert result in (True, False)
    log.check()


# --------------------------------------------------------- extra_specs_ops --

@settings(max_examples=500, deadline=None, database=None)
@given(value=st.one_of(st.none(), st.integers(), st.floats(),
                       st.text(max_size=20),
                       st.lists(st.text(max_size=4), max_size=4)),
       requirement=_requirements)
def test_match_never_raises(value, requirement):
    assert extra_specs_ops.match(value, requirement) in (True, False)


@pytest.mark.parametrize('value,requirement,expected', [
    ('1e999', '= 1', True),                  # inf >= 1
    ('9' * 5000, '>= 1', True),              # float() takes any length
    ('1', '<= ' + '9' * 5000, True),
    ('nan', '== nan', False),
    ('1', '= __import__("os")', False),      # never evaluated
    ("['aes', 'mmx']", '<all-in> aes mmx', True),
    ("__import__('os').system('x')", '<all-in> x', True),  # a substring
    ('x' * 10 ** 6, '<in> ' + 'x' * 1000, True),
])
def test_match_on_hostile_values(value, requirement, expected):
    assert extra_specs_ops.match(value, requirement) is expected
