"""scheduler.engine.answer.selections: each instance placed on a host
carries the allocation request it took (Nova 34's ``selected_alloc_reqs``);
an alternate carries its host's next one; a host in several lists as an
alternate is one Selection object."""

import fakes

from scheduler.engine import answer

CELL = '6c1b5d2e-1b0a-4c43-9d2c-0d6f3b8f1a77'


class Source:
    """A candidate source whose ``nth`` allocation request on a host is
    ``"<host>#<nth>"``."""

    def __init__(self):
        self.asked = []

    def allocation_request(self, state, nth=0):
        self.asked.append((state.host, nth))
        return '%s#%d' % (state.host, nth), '1.36'


def test_each_instance_on_a_host_has_its_own_allocation_request():
    h1 = fakes.fake_host_state('h1', 'n1', cell_uuid=CELL)
    h2 = fakes.fake_host_state('h2', 'n2', cell_uuid=CELL)
    h3 = fakes.fake_host_state('h3', 'n3', cell_uuid=CELL)
    source = Source()
    lists = answer.selections([h1, h1, h2], [h3], 2, source)
    assert [[s.allocation_request for s in picks] for picks in lists] == [
        ['h1#0', 'h3#0'], ['h1#1', 'h3#0'], ['h2#0', 'h3#0']]
    assert lists[0][1] is lists[1][1] is lists[2][1]
    assert lists[0][0] is not lists[1][0]
    assert sorted(source.asked) == [('h1', 0), ('h1', 1), ('h2', 0),
                                    ('h3', 0)]


OTHER_CELL = '0a3c9e1f-5d2b-4e6a-8f70-91b2c3d4e5f6'


def test_alternates_are_the_best_unchosen_hosts_of_the_instances_cell():
    # Ranked best first: a (chosen), x (other cell), b (chosen), c, y, d.
    a, b, c, d = (fakes.fake_host_state(name, name, cell_uuid=CELL)
                  for name in 'abcd')
    x, y = (fakes.fake_host_state(name, name, cell_uuid=OTHER_CELL)
            for name in 'xy')
    z = fakes.fake_host_state('z', 'z', cell_uuid=OTHER_CELL)
    lists = answer.selections([a, b, z], [a, x, b, c, y, d], 3, Source())
    assert [[s.service_host for s in picks] for picks in lists] == [
        ['a', 'c', 'd'], ['b', 'c', 'd'], ['z', 'x', 'y']]
    # One list, no alternates.
    assert [[s.service_host for s in picks] for picks in answer.selections(
        [a, b], [a, x, b, c], 1, Source())] == [['a'], ['b']]
