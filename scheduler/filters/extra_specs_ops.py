"""The flavor extra-spec requirement language (Nova's extra_specs_ops).

``match(value, req)`` tells whether a host-side ``value`` satisfies a
requirement string ``req`` from a flavor's extra specs.  It is shared by
ComputeCapabilitiesFilter and AggregateInstanceExtraSpecsFilter, and
follows Nova:

* ``req`` is split on whitespace; its first word is the operator;
* a first word that is not an operator makes the test a plain equality
  of ``value`` and the *whole* ``req`` (so ``"> 2"`` only matches the
  literal string ``"> 2"``: there is no ``<`` or ``>`` operator);
* ``=`` means numerically *at least*, not equal.

Operators (``v`` is the value, ``a`` the first argument):

==============  ==========================================================
``=``           ``float(v) >= float(a)``
``==``          ``float(v) == float(a)``
``!=``          ``float(v) != float(a)``
``>=``          ``float(v) >= float(a)``
``<=``          ``float(v) <= float(a)``
``s==`` ...     string comparisons ``s==``, ``s!=``, ``s<``, ``s<=``,
                ``s>``, ``s>=``
``<in>``        ``a`` is a substring (or member) of ``v``
``<all-in>``    every argument is an element of ``v``, read as a list
``<or>``        ``<or> a <or> b ...``: ``v`` equals one alternative
==============  ==========================================================

Deliberate differences from Nova, both safer and neither changing a
well-formed answer: nothing is ever evaluated, and a value or argument
that is not a number makes a numeric test false instead of raising.
A missing value (None) never matches; an operator without argument is
false.
"""

import operator

_NUMERIC_OPS = {
    '=': operator.ge,
    '==': operator.eq,
    '!=': operator.ne,
    '>=': operator.ge,
    '<=': operator.le,
}

_STRING_OPS = {
    's==': operator.eq,
    's!=': operator.ne,
    's<': operator.lt,
    's<=': operator.le,
    's>': operator.gt,
    's>=': operator.ge,
}

OR = '<or>'
IN = '<in>'
ALL_IN = '<all-in>'

OPERATORS = frozenset(_NUMERIC_OPS) | frozenset(_STRING_OPS) | {
    OR, IN, ALL_IN}


def match(value, req):
    """Whether ``value`` satisfies the requirement ``req`` (a string)."""
    words = req.split()
    op = words[0] if words else None
    if op not in OPERATORS:
        return value is not None and value == req
    if value is None:
        return False
    args = words[1:]
    if op == OR:
        return _match_or(value, args)
    if not args:
        return False
    if op == ALL_IN:
        return _match_all_in(value, args)
    if op == IN:
        return _match_in(value, args[0])
    if op in _STRING_OPS:
        return _STRING_OPS[op](_as_text(value), args[0])
    return _match_numeric(_NUMERIC_OPS[op], value, args[0])


def _as_text(value):
    return value if isinstance(value, str) else str(value)


def _match_numeric(compare, value, arg):
    try:
        return compare(float(value), float(arg))
    except (TypeError, ValueError):
        return False


def _match_in(value, arg):
    """``arg`` is a member of a list value, or a substring of a text."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return arg in {_as_text(item) for item in value}
    return arg in _as_text(value)


def _match_or(value, args):
    """``a <or> b <or> c`` (after the leading ``<or>``): ``value`` equals
    one of the alternatives; a trailing ``<or>`` is allowed."""
    alternatives = args[0::2]
    return _as_text(value) in alternatives


def _match_all_in(value, args):
    """Every argument is an element of ``value``.

    ``value`` is a list (or set/tuple), or the text of one such as
    ``"['aes', 'mmx']"``, read without evaluating it.  A value that is not
    list-shaped falls back to Nova's substring test for each argument.
    """
    elements = _as_elements(value)
    if elements is None:
        text = _as_text(value)
        return all(arg in text for arg in args)
    return all(arg in elements for arg in args)


def _as_elements(value):
    """The elements of a list value or of its text form, else None."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return {_as_text(item) for item in value}
    text = _as_text(value).strip()
    if len(text) < 2 or (text[0], text[-1]) not in (('[', ']'), ('(', ')'),
                                                     ('{', '}')):
        return None
    inner = text[1:-1]
    return {item.strip().strip('\'"') for item in inner.split(',')
            if item.strip()}
