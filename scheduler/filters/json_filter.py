"""Filter hosts with a query written in Nova's small JSON language.

Follows Nova's ``json_filter``.  The ``query``
scheduler hint is a JSON string such as::

    ["and", [">=", "$free_ram_mb", 1024],
            [">=", "$free_disk_mb", 204800],
            ["=", "$stats.cpu_arch", "x86_64"]]

The query is parsed and checked once (per distinct query text, cached on
the filter) into a tree, then evaluated for each host by a small
recursive interpreter: no ``eval``/``exec``, nothing user-named is ever
called.  Differences from Nova, which raise exceptions that fail the whole
request, are all on malformed input: a malformed query (bad JSON, a
non-list node, an unknown or non-string operator, a JSON object literal,
nesting deeper than MAX_DEPTH) or a comparison between values that cannot
be compared makes the host fail, and a warning is logged once per query.
"""

import functools
import json
import numbers
import operator

from oslo_log import log as logging

from scheduler.filters import BaseHostFilter
from scheduler.resources import attributes

LOG = logging.getLogger(__name__)

# Deepest accepted nesting of operator lists (the top level is depth 1).
MAX_DEPTH = 32
# Distinct query texts kept compiled per filter instance.
CACHE_SIZE = 64
# What a ``$variable`` may resolve to: scalars.  Anything else (objects,
# callables, containers of objects, datetimes ...) is treated as unknown,
# so no foreign code runs when it is compared.
_SCALAR_TYPES = (str, numbers.Real)
# Class attributes that are attributes of the instance, not methods.
class MalformedQuery(ValueError):
    """The query is not a valid JsonFilter query."""


def _compare(op, args):
    """``args[0] op arg`` for every later argument; False with fewer than
    two arguments (Nova)."""
    if len(args) < 2:
        return False
    first = args[0]
    return all(op(first, arg) for arg in args[1:])


def _in(args):
    """The first argument is among the others."""
    return len(args) >= 2 and args[0] in args[1:]


OPERATORS = {
    '=': functools.partial(_compare, operator.eq),
    '<': functools.partial(_compare, operator.lt),
    '>': functools.partial(_compare, operator.gt),
    '<=': functools.partial(_compare, operator.le),
    '>=': functools.partial(_compare, operator.ge),
    'in': _in,
    # ``not`` negates each argument and returns the list (Nova).
    'not': lambda args: [not arg for arg in args],
    'or': any,
    'and': all,
}


class _Variable:
    """A ``$name.key.key`` reference into the HostState."""

    __slots__ = ('path',)

    def __init__(self, path):
        self.path = path

    def resolve(self, host_state):
        """The value, or None when the path leads nowhere allowed.

        The first name must be a public attribute of the HostState; every
        later name is a key of a dict value; the result must be a scalar.
        """
        value = attributes.public_attribute(host_state, self.path[0])
        for key in self.path[1:]:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value if isinstance(value, _SCALAR_TYPES) else None


class _Node:
    """An operator applied to its arguments: literals, variables and
    nested nodes."""

    __slots__ = ('function', 'args')

    def __init__(self, function, args):
        self.function = function
        self.args = args

    def evaluate(self, host_state):
        cooked = []
        for arg in self.args:
            if isinstance(arg, _Node):
                arg = arg.evaluate(host_state)
            elif isinstance(arg, _Variable):
                arg = arg.resolve(host_state)
            if arg is not None:
                cooked.append(arg)
        return self.function(cooked)


# An empty query (or sub-query): true for every host (Nova).
_EMPTY = _Node(lambda args: True, [])


def _compile(node, depth=1):
    """Turn a parsed query list into a tree; raise MalformedQuery."""
    if depth > MAX_DEPTH:
        raise MalformedQuery('nested deeper than %d levels' % MAX_DEPTH)
    if not isinstance(node, list):
        raise MalformedQuery('%r is not a list' % (node,))
    if not node:
        return _EMPTY
    op = node[0]
    if not isinstance(op, str) or op not in OPERATORS:
        raise MalformedQuery('unknown operator %r' % (op,))
    return _Node(OPERATORS[op],
                 [_compile_arg(arg, depth) for arg in node[1:]])


def _compile_arg(arg, depth):
    if isinstance(arg, list):
        return _compile(arg, depth + 1)
    if isinstance(arg, dict):
        raise MalformedQuery('JSON objects are not allowed: %r' % (arg,))
    if isinstance(arg, str):
        if not arg:
            return None
        if arg.startswith('$'):
            return _Variable(arg[1:].split('.'))
    return arg


def compile_query(text):
    """Parse and check a query text; return an object with
    ``evaluate(host_state)``.  Raise MalformedQuery."""
    if not isinstance(text, str):
        raise MalformedQuery('the query must be a JSON string')
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MalformedQuery('invalid JSON: %s' % exc) from exc
    if not parsed:
        # Nova: any empty value (``[]``, ``null``, ``""``...) passes.
        return _Query(text, _EMPTY)
    return _Query(text, _compile(parsed))


class _Query:
    """A compiled query; warns once about hosts it cannot be evaluated
    on."""

    def __init__(self, text, tree):
        self.text = text
        self.tree = tree
        self.warned = False

    def evaluate(self, host_state):
        try:
            result = self.tree.evaluate(host_state)
        except (TypeError, ValueError) as exc:
            if not self.warned:
                self.warned = True
                LOG.warning('JsonFilter query %(query)s cannot be '
                            'evaluated (%(error)s); hosts where it fails '
                            'are rejected', {'query': self.text,
                                             'error': exc})
            return False
        if isinstance(result, list):
            # A top-level ``not``: any negated argument being true.
            return any(result)
        return bool(result)


class _RejectAll:
    """What a malformed query compiles to: every host fails."""

    @staticmethod
    def evaluate(host_state):
        return False


class JsonFilter(BaseHostFilter):
    """Pass the hosts for which the ``query`` scheduler hint is true.

    Grammar: a query is a list ``[operator, arg, ...]``; an argument is a
    nested query (evaluated first), a ``$attribute.key...`` variable (a
    public HostState attribute or property, then keys into dict values,
    e.g. ``$free_ram_mb``, ``$stats.num_instances``, ``$service.disabled``;
    only strings, numbers and booleans are used, anything else counts as
    unknown), or a JSON literal other than an object.  Arguments that are
    ``null``, the empty string, or variables that resolve to nothing are
    dropped.  Operators: ``=`` ``<`` ``>`` ``<=`` ``>=`` (the first
    argument against every later one; false with fewer than two), ``in``
    (the first argument is among the others), ``not`` (the list of negated
    arguments; a top-level list passes when any element is true), ``or``
    (any), ``and`` (all).  No hint or an empty query passes every host.
    A malformed query, or one comparing values that cannot be compared
    (``["<", "$host", 1]``), rejects the host instead of failing the
    request as in Nova.  Units are the HostState's (MiB for RAM and
    ``free_disk_mb``).
    """

    HOST_LOCAL = True

    def __init__(self):
        self._compiled = functools.lru_cache(maxsize=CACHE_SIZE)(
            self._compile_or_reject)

    @staticmethod
    def _compile_or_reject(text):
        try:
            return compile_query(text)
        except MalformedQuery as exc:
            LOG.warning('Rejecting every host for the malformed JsonFilter '
                        'query %(query)r: %(error)s',
                        {'query': text, 'error': exc})
            return _RejectAll

    def host_passes(self, host_state, spec_obj):
        text = spec_obj.get_scheduler_hint('query')
        if not text:
            return True
        if isinstance(text, list):
            # Several ``query`` hints: malformed, but hashable for the
            # cache so that the warning is logged once.
            text = tuple(text)
        return self._compiled(text).evaluate(host_state)
