"""Why a request has no allocation candidate, against a real Placement.

Four compute nodes of this module's own Placement (``module_placement``:
the counts are over every provider it holds): two too small for 8 vCPUs
but with the trait asked, one big enough without it, one with neither.
``scheduler-manage explain`` (Placement mode) and the driver's
NoValidHost log line both say how many compute nodes each requirement
eliminates and name the nearest misses with what they lack; Placement
itself answers an empty list.  Then ``[placement]
apply_max_placement_results``: off, every compute node is a candidate;
on, as many as Placement returns with Nova's ``limit``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import uuid

import fakes
import pytest
from placement_api import ComputeProvider
from placement_api import PlacementAPI

from scheduler import exception
from scheduler.conf import CONF
from scheduler.drivers import filter_scheduler
from scheduler.placement import refusals
from scheduler.placement import view as view_lib
from scheduler_tools import seed

pytestmark = pytest.mark.timeout(180)

GOLD = 'CUSTOM_MISS_GOLD'
NAMES = ('miss-small-a', 'miss-small-b', 'miss-plain', 'miss-nothing')


def _node(name, vcpus, traits=()):
    return ComputeProvider(
        name=name, vcpus=vcpus, memory_mb=8192, disk_gb=100,
        cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
        reserved_host_memory_mb=0,
        traits=('COMPUTE_NET_ATTACH_INTERFACE',) + tuple(traits))


@pytest.fixture(scope='module')
def nodes(module_placement):
    """The four providers, in creation (provider id) order."""
    api = PlacementAPI(module_placement.url)
    made = [_node(NAMES[0], 4, [GOLD]), _node(NAMES[1], 6, [GOLD]),
            _node(NAMES[2], 16), _node(NAMES[3], 2)]
    for node in made:
        api.add_compute(node)
    return made


@pytest.fixture
def db_url(tmp_path):
    return 'sqlite:///%s' % (tmp_path / 'own.sqlite')


@pytest.fixture
def ctx(db_url, nodes):
    """The scheduler's own database, with the four compute nodes."""
    context = seed.use_database(db_url)
    for node in nodes:
        seed.add_compute(context, node.name, uuid=node.uuid,
                         vcpus=node.vcpus, memory_mb=node.memory_mb,
                         local_gb=node.disk_gb)
    return context


@pytest.fixture(scope='module')
def placement_server(module_placement):
    """This module's Placement for ``placement_conf``: the tests must
    know every provider it holds."""
    return module_placement


SUMMARY = ('0/4 compute nodes are allocation candidates; eliminated '
           '(alone): 3 by resources=VCPU:8, 2 by required=%s; nearest '
           'misses: %s (resources=VCPU:8: needs 8, 4 free); %s '
           '(resources=VCPU:8: needs 8, 6 free); %s (required=%s: lacks '
           'trait %s)' % (GOLD, NAMES[0], NAMES[1], NAMES[2], GOLD, GOLD))


def test_placement_answers_nothing_and_says_not_why(module_placement,
                                                     nodes):
    api = PlacementAPI(module_placement.url)
    found = api.allocation_candidates(resources='VCPU:8', required=GOLD)
    assert found['allocation_requests'] == []


def test_the_no_valid_host_line_names_requirements_and_misses(
        ctx, placement_conf, caplog):
    driver = filter_scheduler.FilterScheduler(ctx)
    try:
        spec = fakes.fake_spec(vcpus=8, memory_mb=1024, root_gb=10,
                               extra_specs={'trait:' + GOLD: 'required'},
                               project_id='p', user_id='u')
        with caplog.at_level(logging.INFO, logger=refusals.__name__), (
                pytest.raises(exception.NoValidHost)):
            driver.select_destinations(ctx, spec, [str(uuid.uuid4())])
    finally:
        driver.stop()
    lines = [record.getMessage() for record in caplog.records
             if record.name == refusals.__name__]
    assert len(lines) == 1, lines
    assert SUMMARY in lines[0]


def _manage(argv):
    """``scheduler-manage argv`` in a process of its own (it parses its
    config file into the global configuration and sets up logging):
    its output; fails with its output unless it exits 3 (``explain``:
    nothing fits, as every request of this module)."""
    result = subprocess.run([sys.executable, '-m', 'scheduler.cmd.manage']
                            + list(argv), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 3, (result.stdout, result.stderr[-3000:])
    return result.stdout


def test_explain_shows_the_placement_section_first(
        ctx, db_url, module_placement, tmp_path):
    conf_file = tmp_path / 'scheduler.conf'
    conf_file.write_text(
        '[DEFAULT]\ntransport_url = fake:/\n'
        '[database]\nconnection = %s\n'
        '[scheduler]\nuse_placement = True\n'
        '[placement]\nauth_type = admin_token\nendpoint = %s\n'
        'token = admin\n'
        '[placement_database]\nconnection = %s\n' % (
            db_url, module_placement.url,
            module_placement.database_url))
    argv = ['--config-file', str(conf_file), 'explain', '--vcpus', '8',
            '--memory-mb', '1024', '--disk-gb', '10', '--extra-spec',
            'trait:%s=required' % GOLD]
    out = _manage(argv)
    placement, _, filters = out.partition('Filters (hosts in -> out):')
    assert 'Placement (allocation candidates' in placement
    assert '0/4 compute nodes are allocation candidates' in placement
    rows = {line.split()[0]: line for line in placement.splitlines()
            if line.startswith('  ') and 'eliminated alone' in line}
    assert '3 eliminated alone, 4 -> 1' in rows['resources=VCPU:8']
    assert '2 eliminated alone, 1 -> 0' in rows['required=' + GOLD]
    assert ('    %s: resources=VCPU:8: needs 8, 4 free' % NAMES[0]
            in placement)
    assert ('    %s: required=%s: lacks trait %s' % (NAMES[2], GOLD, GOLD)
            in placement)
    # The one failing two requirements comes last.
    assert placement.index(NAMES[3]) > placement.index(NAMES[2])
    # The filters then see no host: PlacementCandidatesFilter ran first.
    assert 'PlacementCandidatesFilter' in filters

    data = json.loads(_manage(argv + ['-f', 'json']))['placement']
    assert data['candidates'] == 0 and data['roots'] == 4
    assert [miss['name'] for miss in data['nearest']] == [
        NAMES[0], NAMES[1], NAMES[2], NAMES[3]]
    assert data['nearest'][3]['lacks'] == [
        {'requirement': 'resources=VCPU:8', 'reason': 'needs 8, 2 free'},
        {'requirement': 'required=' + GOLD,
         'reason': 'lacks trait %s' % GOLD}]


def test_max_placement_results_as_nova_only_when_asked(
        module_placement, nodes, placement_conf):
    api = PlacementAPI(module_placement.url)
    view = view_lib.from_config(CONF)
    try:
        params = [('resources', 'VCPU:1'), ('limit', '2')]
        uuids = [node.uuid for node in nodes]
        view.current = view.candidates(params)
        assert view.passes(uuids).tolist() == [True] * 4
        placement_conf.set_override('apply_max_placement_results', True,
                                    'placement')
        view.current = view.candidates(params)
        # As many as Placement returns; ours are the first by provider id.
        limited = api.allocation_candidates(resources='VCPU:1', limit=2)
        assert len(limited['allocation_requests']) == 2
        assert view.passes(uuids).tolist() == [True, True, False, False]
    finally:
        view.close()
