"""No false NoValidHost: the hosts a claim would refuse are never ranked.

The case that was found by a trace replay: default filters (no
CoreFilter), allocation ratios 1.0, stacking by RAM
(``ram_weight_multiplier = -1.0``).  A 64 vCPU / 128 GiB request was
refused while two hosts had 67 vCPU / 161,792 MiB and 65 vCPU / 156,672
MiB free: the RAM filter passed hosts with the RAM but not the vCPUs,
stacking ranked them first, their claims were refused (the claim always
enforces vCPUs), and the retry claimed only among the chosen host and
its alternates.
"""

import logging
import uuid

import pytest

from scheduler.db import api as db
from scheduler.db import claim_sql
from scheduler.db import claims
from scheduler.drivers import filter_scheduler
from scheduler.engine import reservation
from scheduler.filters import claim_capacity
from scheduler.view.host_state import HostState
from scheduler_tools import seed
from scheduler_tools import writers

HOST_VCPUS = 80
HOST_MEMORY_MB = 180 * 1024
# (vCPUs free, MiB free) per host.  The four first have the RAM (and
# less of it: stacking ranks them first, the default CPU weigher's
# spreading notwithstanding) but not 64 vCPUs.
FREE = [(60, 140000), (61, 141000), (62, 142000), (63, 143000),
        (67, 161792), (65, 156672)]


@pytest.fixture(params=['sqlite', 'postgresql'])
def ctx(request, tmp_path, conf):
    for name in claim_sql.RATIO_NAMES:
        conf.set_override(name, 1.0)
    conf.set_override('ram_weight_multiplier', -1.0,
                      group='filter_scheduler')
    if request.param == 'sqlite':
        url = 'sqlite:///%s' % (tmp_path / 'capacity.sqlite')
    else:
        url = request.getfixturevalue('postgresql_db_url')
    context = seed.use_database(url)
    for index, (vcpus_free, memory_free) in enumerate(FREE):
        seed.add_compute(context, 'compute-%04d' % index, vcpus=HOST_VCPUS,
                         memory_mb=HOST_MEMORY_MB, local_gb=1000,
                         vcpus_used=HOST_VCPUS - vcpus_free,
                         memory_mb_used=HOST_MEMORY_MB - memory_free)
    yield context
    writers.reset_engine()


def _big_spec(**kwargs):
    return seed.make_spec(vcpus=64, memory_mb=128 * 1024, root_gb=0,
                          **kwargs)


def test_a_host_that_holds_the_request_gets_it(ctx, caplog):
    driver = filter_scheduler.FilterScheduler(ctx)
    with caplog.at_level(logging.INFO):
        selections = driver.select_destinations(ctx, _big_spec(),
                                                return_alternates=True)
    # Stacking: the host with less free RAM of the two that fit.
    assert [s.service_host for s in selections[0]] == [
        'compute-0005', 'compute-0004']
    assert filter_scheduler.LOST_RACE not in caplog.text
    assert 'was refused' not in caplog.text
    assert claims.claims_count(ctx) == 1


def test_two_instances_use_both_hosts_that_fit(ctx):
    driver = filter_scheduler.FilterScheduler(ctx)
    selections = driver.select_destinations(ctx, _big_spec(num_instances=2))
    assert sorted(s[0].service_host for s in selections) == [
        'compute-0004', 'compute-0005']
    assert claims.claims_count(ctx) == 2


def test_the_claim_check_runs_first_and_is_named(ctx, caplog):
    driver = filter_scheduler.FilterScheduler(ctx)
    assert isinstance(driver.pipeline.filters[0],
                      claim_capacity.ClaimCapacityFilter)
    # Three instances: only two hosts can hold one.
    with caplog.at_level(logging.INFO):
        with pytest.raises(Exception, match='not enough hosts'):
            driver.select_destinations(ctx, _big_spec(num_instances=3))
    assert claims.claims_count(ctx) == 0


def test_without_claims_the_filters_alone_decide(ctx, conf):
    conf.set_override('claim_resources', False, group='scheduler')
    conf.set_override('cpu_weight_multiplier', 0.0,
                      group='filter_scheduler')
    driver = filter_scheduler.FilterScheduler(ctx)
    assert not any(isinstance(f, claim_capacity.ClaimCapacityFilter)
                   for f in driver.pipeline.filters)
    selections = driver.select_destinations(ctx, _big_spec())
    # Nova's Newton pipeline: no CoreFilter, so the RAM-stacked host wins
    # although it lacks the vCPUs (and nothing claims them).
    assert selections[0][0].service_host == 'compute-0000'


def test_a_refused_claim_tries_every_ranked_host(ctx, caplog):
    """Claiming one by one (after a lost race) walks the whole ranked
    list, not just the chosen host and its alternates, and says why each
    claim was refused."""
    driver = filter_scheduler.FilterScheduler(ctx)
    manager = driver.host_manager
    manager.get_all_host_states(ctx)
    # Behind this view's back, another scheduler takes every vCPU of all
    # hosts but the one this request's ranking puts last.
    for node in db.compute_node_get_all(ctx):
        if node['host'] != 'compute-0005':
            assert claims.claim(ctx, node['id'], str(uuid.uuid4()),
                                node['vcpus'] - node['vcpus_used'], 0, 0)
    small = seed.make_spec(vcpus=4, memory_mb=8192, root_gb=0)
    decision = driver._decision(ctx, small, [small.instance_uuid])
    with caplog.at_level(logging.INFO):
        with manager.lock:
            driver._place(decision, return_alternates=False,
                          claim_each=True)
    assert [state.host for state in decision.selected] == ['compute-0005']
    # Ranked fifth or sixth: past the chosen host and its alternates.
    assert caplog.text.count(filter_scheduler.LOST_RACE) >= 4
    assert 'vcpus: 0.0 free of 80 x 1.0, 4 asked' in caplog.text


def test_the_refusal_is_explained(ctx, caplog):
    driver = filter_scheduler.FilterScheduler(ctx)
    manager = driver.host_manager
    manager.get_all_host_states(ctx)
    nodes = {node['host']: node for node in db.compute_node_get_all(ctx)}
    assert claims.claim(ctx, nodes['compute-0005']['id'], str(uuid.uuid4()),
                        64, 128 * 1024, 0)
    state = manager.host_state_map[('compute-0005', 'compute-0005')]
    with caplog.at_level(logging.INFO):
        reservation.log_refusal(
            ctx, state, claim_capacity.capacity.claim_amounts(_big_spec()))
    assert (filter_scheduler.LOST_RACE +
            'compute-0005:compute-0005: it changed') in caplog.text
    assert 'vcpus: 1.0 free of 80 x 1.0, 64 asked' in caplog.text


def test_the_host_state_form_agrees_with_the_table_form(ctx):
    driver = filter_scheduler.FilterScheduler(ctx)
    manager = driver.host_manager
    states = manager.get_all_host_states(ctx)
    check = claim_capacity.ClaimCapacityFilter()
    spec = _big_spec()
    per_host = [check.host_passes(s, spec) for s in states]
    mask = check.host_mask(manager.table, manager.table.all_rows, spec)
    assert per_host == mask.tolist() == [False] * 4 + [True] * 2
    assert isinstance(states[0], HostState)


def test_a_boot_from_volume_root_disk_takes_no_local_disk(ctx, conf):
    """``is_bfv``: the root disk is a volume, so neither the candidate
    check, the DiskFilter, the consumption nor the claim counts it."""
    nodes = db.compute_node_get_all(ctx)
    for node in nodes:   # 100 GiB of local disk left on every host
        writers.compute_node_update(ctx, node['id'], {
            'local_gb_used': 900, 'free_disk_gb': 100,
            'disk_available_least': 100})
    driver = filter_scheduler.FilterScheduler(ctx)
    image_spec = seed.make_spec(vcpus=1, memory_mb=1024, root_gb=500)
    with pytest.raises(Exception, match='not enough hosts'):
        driver.select_destinations(ctx, image_spec)
    volume_spec = seed.make_spec(vcpus=1, memory_mb=1024, root_gb=500,
                                 is_bfv=True)
    selections = driver.select_destinations(ctx, volume_spec)
    state = driver.host_manager.host_state_map[
        (selections[0][0].service_host, selections[0][0].nodename)]
    assert state.local_gb_used == 900
    assert [row['disk_gb'] for row in claims.get_claims(ctx)] == [0]
