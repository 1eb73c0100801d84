"""The extra-spec requirement language (extra_specs_ops.match)."""

import pytest

from scheduler.filters import extra_specs_ops

CPU_FLAGS = str(['aes', 'mmx', 'aux'])

MATCHES = [
    # plain equality (no operator)
    ('1', '1'),
    ('abc', 'abc'),
    # "=" is "at least", numerically
    ('123', '= 123'),
    ('124', '= 123'),
    ('124', '= 123.0'),
    ('2.5', '= 2'),
    # numeric operators
    ('123', '== 123'),
    ('123.0', '== 123'),
    ('123', '!= 124'),
    ('12', '>= 2'),
    ('2', '>= 2'),
    ('2', '<= 10'),
    ('10', '<= 10'),
    # string operators
    ('123', 's== 123'),
    ('1234', 's!= 123'),
    ('12', 's< 2'),
    ('2', 's<= 2'),
    ('b', 's> a'),
    ('a', 's>= a'),
    ('12', 's>= 1'),
    # substring
    ('12311321', '<in> 11'),
    ('12311321', '<in> 12311321'),
    ('12311321', '<in> 12311321 <in>'),
    (CPU_FLAGS, '<in> aes'),
    # all-in, on a list text and on a list
    (CPU_FLAGS, '<all-in> aes mmx'),
    (CPU_FLAGS, '<all-in> aux'),
    (str(('aes', 'mmx')), '<all-in> mmx'),
    (['aes', 'mmx'], '<all-in> aes mmx'),
    ('aes mmx aux', '<all-in> mmx aes'),
    # alternatives
    ('12', '<or> 11 <or> 12'),
    ('12', '<or> 11 <or> 12 <or>'),
    ('11', '<or> 11 <or> 12'),
    ('x', '<or> x'),
]

MISMATCHES = [
    ('1', '2'),
    ('2', '1'),
    ('12', '2'),
    # an unknown first word: the whole requirement is a literal
    ('bogus', '> 2'),
    ('3', '> 2'),
    ('1', '< 2'),
    ('123', 'bogus-op 123'),
    ('123', '= 124'),
    ('12', '== 11'),
    ('124', '!= 124'),
    ('11', '>= 12'),
    ('13', '<= 12'),
    ('124', 's== 123'),
    ('123', 's!= 123'),
    ('2', 's< 12'),
    ('3', 's<= 2'),
    ('10', 's> 2'),
    ('1', 's>= 2'),
    ('12310321', '<in> 11'),
    ('12310321', '<in> 11 <in>'),
    ('13', '<or> 11 <or> 12'),
    ('13', '<or> 11 <or> 12 <or>'),
    ('13', '<or>'),
    (CPU_FLAGS, '<all-in> txt'),
    (CPU_FLAGS, '<all-in> txt 3dnow'),
    (CPU_FLAGS, '<all-in> txt aes'),
    # elements, not substrings, when the value is a list
    (CPU_FLAGS, '<all-in> ae'),
    (['aes'], '<all-in> ae'),
    (['aes', 'mmx'], '<in> ae'),
]


@pytest.mark.parametrize('value, req', MATCHES)
def test_extra_specs_matches(value, req):
    assert extra_specs_ops.match(value, req)


@pytest.mark.parametrize('value, req', MISMATCHES)
def test_extra_specs_fails(value, req):
    assert not extra_specs_ops.match(value, req)


@pytest.mark.parametrize('req', ['=', '==', '!=', '>=', '<=', 's==', 's<',
                                 '<in>', '<all-in>', '<or>'])
def test_operator_without_argument_is_false(req):
    assert not extra_specs_ops.match('1', req)


@pytest.mark.parametrize('req', ['= 1', '1', '<or> 1', '<in> 1', 's== 1',
                                 '<all-in> 1'])
def test_none_value_never_matches(req):
    assert not extra_specs_ops.match(None, req)


@pytest.mark.parametrize('value, req', [('abc', '= 1'), ('1', '>= abc'),
                                        ('', '== 0'), ('1', '<= 1e')])
def test_non_numeric_value_fails_numeric_test_without_raising(value, req):
    assert not extra_specs_ops.match(value, req)


def test_empty_requirement_is_literal_equality():
    assert extra_specs_ops.match('', '')
    assert not extra_specs_ops.match('x', '')


def test_nothing_is_evaluated():
    req = '<all-in> x'
    # Would be a side effect (or an error) if the value were evaluated.
    value = "[__import__('os').getcwd(), 'x']"
    assert extra_specs_ops.match(value, req)
    assert not extra_specs_ops.match(value, '<all-in> os')


def test_extra_whitespace_is_ignored_between_words():
    assert extra_specs_ops.match('12', '  >=   2  ')
    assert extra_specs_ops.match('b', '<or>  a  <or>  b')


def test_numeric_value_may_be_a_number():
    assert extra_specs_ops.match(4096, '>= 2048')
    assert extra_specs_ops.match(4096, 's== 4096')
