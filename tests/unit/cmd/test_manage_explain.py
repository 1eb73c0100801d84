"""``scheduler-manage explain`` on SQLite, in-process (``main(argv)``)."""

import datetime
import json

import pytest
import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler.cmd import manage
from scheduler.conf import scheduler as scheduler_conf
from scheduler.db import api
from scheduler.db import models
from scheduler_tools import seed

FAILING = ('0/4 hosts available: 1 disabled, 1 down, 1 insufficient RAM, '
           '1 not in availability zone nova')


@pytest.fixture
def cli(ctx, tmp_path, capsys):
    url = ctx.url
    context = ctx
    seed.add_compute(context, 'host-a', disabled=True)
    seed.add_compute(context, 'host-b', last_seen_up=timeutils.utcnow()
                     - datetime.timedelta(hours=1))
    seed.add_compute(context, 'host-c', memory_mb=4096, memory_mb_used=4608)
    seed.add_compute(context, 'host-d')
    seed.add_aggregate(context, 'az2', ['host-d'],
                       {'availability_zone': 'az2'})
    conf = tmp_path / 'scheduler.conf'
    # The Ocata-era filters (AvailabilityZoneFilter...) and RAM ratio,
    # which these tests explain; Nova 34's defaults differ.
    conf.write_text('[DEFAULT]\ntransport_url = fake:/\n'
                    'ram_allocation_ratio = 1.5\n'
                    '[database]\nconnection = %s\n'
                    '[filter_scheduler]\nenabled_filters = %s\n' % (
                        url, ','.join(scheduler_conf.NEWTON_DEFAULT_FILTERS)))

    def run(*argv):
        capsys.readouterr()
        status = manage.main(['--config-file', str(conf)] + list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    run.context = context
    return run


def _rows():
    """Every row explain must leave alone: claims and compute nodes."""
    with api.get_engine().connect() as connection:
        return [[dict(row) for row in connection.execute(
            sa.select(table)).mappings()]
            for table in (models.SchedulerClaim.__table__,
                          models.NodeClaims.__table__, api.COMPUTE_NODES)]


def test_a_failing_request_is_explained(cli):
    status, out, err = cli('explain', '--memory-mb', '2048',
                           '--availability-zone', 'nova')
    assert status == 3, err
    assert FAILING in out
    assert ('host-c: claim refused: memory_mb: 1,536 free of 4,096 x 1.5, '
            '2,048 asked') in out
    assert 'host-a: compute service disabled (reason: none given)' in out
    assert 'host-d: in availability zone az2, nova asked' in out
    assert 'ComputeFilter                      2 -> 0' in out
    assert 'Nearest misses (failing 1 filter):' in out
    assert 'host-d: AvailabilityZoneFilter: in availability zone az2' in out
    assert 'Chosen' not in out


def test_a_fitting_request_claims_nothing(cli):
    seed.add_compute(cli.context, 'good', memory_mb=32768)
    before = _rows()
    status, out, err = cli('explain', '--memory-mb', '2048', '--vcpus', '2',
                           '--extra-spec', 'hw:cpu_policy=shared',
                           '--hint', 'a=1', '--format', 'json')
    assert status == 0, err
    data = json.loads(out)
    assert data['chosen'] == [{'host': 'good', 'node': 'good'}]
    assert data['choice'] == 'best by weight'
    assert data['summary'] == ('2/5 hosts available: 1 disabled, 1 down, '
                               '1 insufficient RAM')
    assert data['request']['extra_specs'] == {'hw:cpu_policy': 'shared'}
    assert data['request']['scheduler_hints'] == {'a': ['1']}
    best = data['weighed'][0]
    assert best['host'] == 'good'
    assert {w['name'] for w in best['weighers']} >= {'RAMWeigher'}
    assert _rows() == before
    status, out, _ = cli('explain', '--memory-mb', '2048')
    assert 'Chosen (best by weight): good' in out
    assert 'Best hosts by weight' in out
    assert 'RAMWeigher' in out and 'raw 32768, normalised 1, x 1 = 1' in out
    assert _rows() == before


def test_a_spec_file_is_read_as_the_service_reads_it(cli, tmp_path):
    spec = seed.make_spec(memory_mb=2048, availability_zone='nova')
    path = tmp_path / 'spec.json'
    path.write_text(json.dumps(spec.obj_to_primitive(), default=str))
    status, out, err = cli('explain', '--spec', str(path), '-f', 'json')
    assert status == 3, err     # the request fails: NoValidHost
    data = json.loads(out)
    assert data['summary'] == FAILING
    assert data['request']['instance_uuid'] == spec.instance_uuid
    assert [miss['host'] for miss in data['near_misses']] == [
        'host-a', 'host-b', 'host-d']


def test_bad_requests_are_refused(cli, tmp_path):
    path = tmp_path / 'spec.json'
    path.write_text(json.dumps({'nova_object.name': 'Nothing'}))
    status, out, err = cli('explain', '--spec', str(path))
    assert status == 1 and out == ''
    assert err.startswith('scheduler-manage explain: ')
    status, _, err = cli('explain', '--spec', str(path), '--vcpus', '2')
    assert status == 2 and '--spec excludes --vcpus' in err
    status, _, err = cli('explain', '--extra-spec', 'resources:VGPU=1')
    assert status == 1 and 'Placement' in err
    status, _, err = cli('explain', '--hint', 'novalue')
    assert status == 1 and 'KEY=VALUE' in err


def test_cliff_formatters_and_columns(cli):
    """openstackclient's ``-f``/``-c``: the fields of the JSON output,
    chosen by name, in any of cliff's formats."""
    seed.add_compute(cli.context, 'good', memory_mb=32768)
    status, out, err = cli('explain', '--memory-mb', '2048', '-f', 'json')
    assert status == 0, err
    everything = json.loads(out)
    status, out, err = cli('explain', '--memory-mb', '2048', '-f', 'json',
                           '-c', 'summary', '-c', 'chosen')
    assert status == 0, err
    assert json.loads(out) == {'summary': everything['summary'],
                               'chosen': [{'host': 'good', 'node': 'good'}]}
    status, out, err = cli('explain', '--memory-mb', '2048', '-f', 'value',
                           '-c', 'summary')
    assert (status, out) == (0, everything['summary'] + '\n'), err
    status, out, err = cli('explain', '--memory-mb', '2048', '-f', 'yaml',
                           '-c', 'choice')
    assert (status, out) == (0, 'choice: best by weight\n'), err
    # A table of the fields asked for; the whole text without -c.
    status, out, err = cli('explain', '--memory-mb', '2048', '-c', 'chosen')
    assert status == 0, err
    assert '| chosen | [{"host": "good", "node": "good"}] |' in out
    status, out, err = cli('explain', '--memory-mb', '2048', '-f', 'csv')
    assert status == 2 and "invalid choice: 'csv'" in err
    status, out, err = cli('explain', '--memory-mb', '2048', '-c', 'nothing')
    assert status == 1 and 'nothing' in err



def test_the_warnings_go_to_the_log_file_alone(cli, tmp_path):
    """With ``log_file``, the filters' warnings (host-b is down) are in
    the file, not on the terminal; a request that fits exits 0, and one
    that fits fewer instances than asked exits 3."""
    log_file = tmp_path / 'scheduler.log'
    extra = tmp_path / 'log.conf'
    extra.write_text('[DEFAULT]\nlog_file = %s\n' % log_file)
    status, out, err = cli('--config-file', str(extra), 'explain',
                           '--memory-mb', '2048')
    assert (status, err) == (0, '')
    assert 'Chosen (best by weight): host-d' in out
    assert 'WARNING scheduler.filters.compute_filter' in (
        log_file.read_text())
    status, out, err = cli('--config-file', str(extra), 'explain',
                           '--memory-mb', '2048', '--num-instances', '100')
    assert (status, err) == (3, '')
    assert 'of 100 instances fit: the request would fail' in out
