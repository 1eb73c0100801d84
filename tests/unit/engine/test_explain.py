"""``scheduler.engine.explain`` on SQLite: reasons, summary, weights."""

import datetime

import pytest
from oslo_utils import timeutils

from scheduler import filters
from scheduler import weights
from scheduler.conf import scheduler as scheduler_conf
from scheduler.engine import explain
from scheduler.filters import core_filter
from scheduler.filters import disk_filter
from scheduler.filters import ram_filter
from scheduler.view.host_state import HostState
from scheduler_tools import seed
from scheduler_tools import writers

FAILING = ('0/4 hosts available: 1 disabled, 1 down, 1 insufficient RAM, '
           '1 not in availability zone nova')


@pytest.fixture
def ctx(tmp_path, conf):
    # The Ocata-era filters (AvailabilityZoneFilter, RamFilter...) and RAM
    # ratio, which these tests explain; Nova 34's defaults differ.
    conf.set_override('enabled_filters', scheduler_conf.NEWTON_DEFAULT_FILTERS,
                      'filter_scheduler')
    conf.set_override('ram_allocation_ratio', 1.5)
    context = seed.use_database('sqlite:///%s' % (tmp_path / 's.sqlite'))
    yield context
    writers.reset_engine()


def fleet(ctx):
    """A disabled host, a down one, one short of RAM, one in az2."""
    seed.add_compute(ctx, 'host-a', disabled=True)
    seed.add_compute(ctx, 'host-b', last_seen_up=timeutils.utcnow()
                     - datetime.timedelta(hours=1))
    seed.add_compute(ctx, 'host-c', memory_mb=4096, memory_mb_used=4608)
    seed.add_compute(ctx, 'host-d')
    seed.add_aggregate(ctx, 'az2', ['host-d'], {'availability_zone': 'az2'})


def _reasons(result):
    return {item.host: (step.name, item.reason) for step in result.steps
            for item in step.removed}


def test_a_request_nothing_fits_is_explained_host_by_host(ctx):
    fleet(ctx)
    spec = seed.make_spec(memory_mb=2048, availability_zone='nova')
    result = explain.explain(ctx, spec)
    assert result.summary == FAILING
    assert result.available == 0 and result.chosen == []
    assert result.weighed == []
    reasons = _reasons(result)
    assert reasons['host-a'] == (
        'ComputeFilter', 'compute service disabled (reason: none given)')
    assert reasons['host-b'][0] == 'ComputeFilter'
    assert reasons['host-b'][1].startswith('compute service down: last '
                                           'heartbeat ')
    assert reasons['host-c'] == (
        'ClaimCapacityFilter', 'claim refused: memory_mb: 1,536 free of '
        '4,096 x 1.5, 2,048 asked')
    assert reasons['host-d'] == ('AvailabilityZoneFilter',
                                 'in availability zone az2, nova asked')
    steps = {step.name: (step.hosts_in, step.hosts_out)
             for step in result.steps}
    assert steps['ClaimCapacityFilter'] == (4, 3)
    assert steps['ComputeFilter'] == (2, 0)
    # host-c fails the claims' check and the RamFilter: not a near miss.
    assert sorted(miss.host for miss in result.near_misses) == [
        'host-a', 'host-b', 'host-d']
    assert all(len(miss.failed) == 1 for miss in result.near_misses)
    data = result.to_dict()
    assert data['summary'] == FAILING and data['choice'] is None
    assert data['groups']['down'] == 1


def test_a_request_that_fits_gives_the_best_host_and_its_weights(ctx):
    fleet(ctx)
    seed.add_compute(ctx, 'good-1', memory_mb_used=4096)
    seed.add_compute(ctx, 'good-2', memory_mb=32768)
    spec = seed.make_spec(memory_mb=2048)
    result = explain.explain(ctx, spec)
    assert result.chosen == [('good-2', 'good-2')]
    assert result.to_dict()['choice'] == 'best by weight'
    # host-d is in the request's (any) zone now.
    assert result.summary == ('3/6 hosts available: 1 disabled, 1 down, '
                              '1 insufficient RAM')
    assert [detail.host for detail in result.weighed][0] == 'good-2'
    assert len(result.weighed) == 3
    for detail in result.weighed:
        assert detail.weight == pytest.approx(
            sum(value.weighted for value in detail.weighers))
        ram = next(value for value in detail.weighers
                   if value.name == 'RAMWeigher')
        assert ram.multiplier == 1.0
        assert ram.weighted == pytest.approx(ram.normalised)
    best = {value.name: value for value in result.weighed[0].weighers}
    assert best['RAMWeigher'].raw == 32768.0
    assert best['RAMWeigher'].normalised == 1.0


def test_several_instances_are_placed_one_after_the_other(ctx):
    seed.add_compute(ctx, 'big', memory_mb=16384)
    seed.add_compute(ctx, 'small', memory_mb=12288)
    spec = seed.make_spec(num_instances=3, memory_mb=8192)
    result = explain.explain(ctx, spec)
    # 16 GiB then 12 GiB free; then 8 GiB on big after the first.
    assert [host for host, _ in result.chosen] == ['big', 'small', 'big']


def test_forced_hosts_skip_the_filters(ctx):
    fleet(ctx)
    spec = seed.make_spec(force_hosts=['host-a'])
    result = explain.explain(ctx, spec)
    assert result.forced and result.chosen == [('host-a', 'host-a')]
    assert [step.name for step in result.steps] == [explain.PREFILTER]
    assert result.summary == '1/4 hosts available: 3 not requested'


class _OnlyBig(filters.BaseHostFilter):
    """A candidate source's check: only the host ``big``."""

    def host_passes(self, host_state, spec_obj):
        return host_state.host == 'big'


class _Source:
    """A candidate source (``scheduler.engine.candidates``) recording
    the request it was given."""

    def __init__(self):
        self.selected = []

    def check(self):
        return _OnlyBig()

    def select(self, spec_obj, states, aggregates):
        self.selected.append((spec_obj, sorted(s.host for s in states)))


class _Section:
    def lines(self):
        return ['Placement: 1/2']

    def to_dict(self):
        return {'candidates': 1}


def test_a_candidate_source_checks_first_and_adds_its_section(ctx):
    seed.add_compute(ctx, 'big', memory_mb=16384)
    seed.add_compute(ctx, 'small', memory_mb=16384)
    spec = seed.make_spec(memory_mb=1024)
    source = _Source()
    result = explain.explain(ctx, spec, source=source, section=_Section)
    assert source.selected == [(spec, ['big', 'small'])]
    assert result.steps[0].name == '_OnlyBig'
    assert [item.host for item in result.steps[0].removed] == ['small']
    assert result.chosen == [('big', 'big')]
    assert result.placement.lines() == ['Placement: 1/2']
    assert result.to_dict()['placement'] == {'candidates': 1}
    assert explain.explain(ctx, spec).to_dict()['placement'] is None


def _state(**values):
    state = HostState('h1', 'n1')
    for name, value in values.items():
        setattr(state, name, value)
    return state


def test_the_resource_filters_explain_in_their_units():
    spec = seed.make_spec(memory_mb=2048, vcpus=4, root_gb=20, swap=512)
    state = _state(total_usable_ram_mb=4096, free_ram_mb=-1024,
                   ram_allocation_ratio=1.5, vcpus_total=2, vcpus_used=0,
                   cpu_allocation_ratio=16.0, total_usable_disk_gb=100,
                   free_disk_mb=10240, disk_allocation_ratio=1.0)
    ram = ram_filter.RamFilter()
    assert not ram.host_passes(state, spec)
    assert ram.explain(state, spec) == ('1,024 MiB free RAM after ratio '
                                        '1.5, 2,048 MiB asked')
    assert ram.explain_group(state, spec) == 'insufficient RAM'
    core = core_filter.CoreFilter()
    assert core.explain(state, spec) == ("4 vCPUs asked, more than the "
                                         "host's 2 in total")
    disk = disk_filter.DiskFilter()
    assert disk.explain(state, spec) == ('10,240 MiB free disk after ratio '
                                         '1.0, 20,992 MiB asked')


def test_a_filter_without_explain_names_itself():
    class Picky(filters.BaseHostFilter):
        def host_passes(self, host_state, spec_obj):
            return False

    assert Picky().explain(None, None) == 'rejected by Picky'
    assert Picky().explain_group(None, None) == 'rejected by Picky'


def test_the_no_valid_host_log_line_counts_per_filter(caplog):
    class Nobody(filters.BaseHostFilter):
        def host_passes(self, host_state, spec_obj):
            return False

    class Odd(filters.BaseHostFilter):
        def host_passes(self, host_state, spec_obj):
            return host_state.host in ('h1', 'h3')

    hosts = [HostState('h%d' % i, 'n%d' % i) for i in range(4)]
    caplog.set_level('INFO')
    assert filters.HostFilterHandler().get_filtered_objects(
        [Odd(), Nobody()], hosts, seed.make_spec()) == []
    assert '0/4 hosts available: 2 Nobody, 2 Odd' in caplog.text
    assert filters.removal_summary([]) == '0/0 hosts available'


def test_weights_match_the_handler():
    hosts = []
    for name, free in (('a', 1000), ('b', 3000), ('c', 2000)):
        hosts.append(_state(free_ram_mb=free))
        hosts[-1].host = hosts[-1].nodename = name
    weighers = weights.load_weighers(['scheduler.weights.ram.RAMWeigher'])
    result = explain.explain_hosts([], weighers, hosts, seed.make_spec())
    assert [(d.host, d.weight) for d in result.weighed] == [
        ('b', 1.0), ('c', pytest.approx(2 / 3)), ('a', pytest.approx(1 / 3))]
