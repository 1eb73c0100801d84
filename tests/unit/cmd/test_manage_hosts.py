"""``scheduler-manage host`` and ``aggregate`` on SQLite, in-process.

Each test runs ``scheduler.cmd.manage.main(argv)`` with a config file
naming a fresh SQLite database and the ``fake:`` transport, and reads
``--format json``.  The casts go to a recording stand-in of
``SchedulerAPI``.
"""

import datetime
import json
import uuid

import pytest
import sqlalchemy as sa
from oslo_utils import timeutils

from scheduler import context as scheduler_context
from scheduler.cmd import manage
from scheduler.cmd import manage_common
from scheduler.conf import CONF
from scheduler.db import api
from scheduler.db import claims
from scheduler.db import hosts
from scheduler.db import migration
from scheduler.objects import aggregate as aggregate_obj
from scheduler.server import rpcapi
from scheduler_tools import writers

SIZES = ['--vcpus', '8', '--memory-mb', '16384', '--disk-gb', '200']


class Casts:
    """Stands in for ``SchedulerAPI``: records the casts, or fails them
    all with ``error``."""

    def __init__(self):
        self.sent = []
        self.error = None

    def __call__(self, transport):
        recorder = self

        class Client:
            client = self

            def update_aggregates(self, ctxt, aggregates):
                recorder._send('update_aggregates', aggregates)

            def delete_aggregate(self, ctxt, aggregate):
                recorder._send('delete_aggregate', aggregate)

        return Client()

    def prepare(self, **kwargs):
        assert kwargs == {'retry': manage_common.CAST_RETRIES}
        return self

    def _send(self, method, payload):
        if self.error is not None:
            raise self.error
        self.sent.append((method, payload))


class Manage:
    """``run(*argv)`` -> ``(status, stdout, stderr)``; ``json(*argv)``
    -> the parsed JSON output of a successful run."""

    def __init__(self, conf_path, capsys):
        self.conf_path = conf_path
        self.capsys = capsys

    def run(self, *argv):
        self.capsys.readouterr()
        status = manage.main(['--config-file', str(self.conf_path)]
                             + list(argv))
        out, err = self.capsys.readouterr()
        return status, out, err

    def json(self, *argv):
        status, out, err = self.run(*argv, '--format', 'json')
        assert status == 0, err
        return json.loads(out)


def _config(tmp_path, url, extra=''):
    path = tmp_path / 'scheduler.conf'
    path.write_text('[DEFAULT]\ntransport_url = fake:/\n'
                    '[database]\nconnection = %s\n%s' % (url, extra))
    return path


@pytest.fixture
def casts(monkeypatch):
    recorder = Casts()
    monkeypatch.setattr(rpcapi, 'SchedulerAPI', recorder)
    return recorder


@pytest.fixture
def cli(ctx, tmp_path, capsys, casts):
    return Manage(_config(tmp_path, ctx.url), capsys)


def _rows(table, **where):
    statement = sa.select(table).where(
        *[table.c[name] == value for name, value in where.items()])
    with api.get_engine().connect() as connection:
        return [dict(row) for row in connection.execute(statement).mappings()]


# -- host add -------------------------------------------------------------

def test_host_add_writes_what_nova_compute_writes(cli):
    shown = cli.json('host', 'add', 'cmp1', *SIZES,
                     '--ram-allocation-ratio', '1.0',
                     '--hypervisor-version', '6.2.0', '--host-ip', '10.0.0.7')
    (service,) = _rows(api.SERVICES, host='cmp1')
    assert (service['binary'], service['topic']) == ('nova-compute',
                                                     'compute')
    assert service['report_count'] == 0 and not service['disabled']
    (node,) = _rows(api.COMPUTE_NODES, host='cmp1')
    assert node['service_id'] == service['id']
    assert node['hypervisor_hostname'] == 'cmp1'
    assert (node['vcpus'], node['memory_mb'], node['local_gb']) == (
        8, 16384, 200)
    assert (node['vcpus_used'], node['memory_mb_used'],
            node['local_gb_used']) == (0, 0, 0)
    assert (node['free_ram_mb'], node['free_disk_gb'],
            node['disk_available_least']) == (16384, 200, 200)
    assert node['ram_allocation_ratio'] == 1.0
    assert node['cpu_allocation_ratio'] is None
    assert node['hypervisor_type'] == 'QEMU'
    assert node['hypervisor_version'] == 6002000
    assert node['host_ip'] == '10.0.0.7'
    assert json.loads(node['cpu_info']) == {'arch': 'x86_64'}
    assert str(uuid.UUID(node['uuid'])) == node['uuid']
    assert shown['uuid'] == node['uuid']
    assert shown['state'] == 'up' and shown['status'] == 'enabled'
    assert shown['ram_mib'] == {'used': 0, 'claimed': 0, 'total': 16384,
                                'allocation_ratio': 1.0, 'capacity': 16384.0}
    # No ratio on the node: the configured one, else
    # initial_cpu_allocation_ratio (Nova's 4.0 since Stein).
    assert shown['vcpus']['allocation_ratio'] == 4.0


def test_a_duplicate_node_is_refused_in_one_line(cli):
    assert cli.run('host', 'add', 'cmp1', *SIZES)[0] == 0
    status, out, err = cli.run('host', 'add', 'cmp1', *SIZES)
    assert status == 1 and out == ''
    assert err == ('scheduler-manage host add: compute node cmp1 of host '
                   'cmp1 is already registered\n')
    assert len(_rows(api.COMPUTE_NODES)) == 1


def test_a_second_node_joins_the_hosts_service(cli):
    cli.run('host', 'add', 'ironic', '--node', 'n1', *SIZES)
    cli.run('host', 'add', 'ironic', '--node', 'n2', *SIZES)
    assert len(_rows(api.SERVICES, host='ironic')) == 1
    assert [row['Node'] for row in cli.json('host', 'list')] == ['n1', 'n2']
    status, _, err = cli.run('host', 'show', 'ironic')
    assert status == 1 and 'choose one with --node' in err
    assert cli.json('host', 'show', 'ironic', '--node', 'n2')['node'] == 'n2'


@pytest.mark.parametrize('args, message', [
    (['--vcpus', '-1', '--memory-mb', '1', '--disk-gb', '1'],
     'vcpus cannot be negative'),
    (SIZES + ['--cpu-allocation-ratio', '0'],
     'cpu_allocation_ratio must be a positive number'),
    (SIZES + ['--hypervisor-version', 'v1'], 'neither an integer'),
])
def test_bad_values_are_refused(cli, args, message):
    status, _, err = cli.run('host', 'add', 'cmp1', *args)
    assert status == 1 and message in err
    assert _rows(api.COMPUTE_NODES) == []


def test_missing_sizes_are_a_usage_error(cli):
    status, _, err = cli.run('host', 'add', 'cmp1', '--vcpus', '8')
    assert status == 2 and 'usage:' in err


# -- host list and show ----------------------------------------------------

def test_host_list_shows_usage_claims_instances_and_zone(cli, ctx):
    cli.run('host', 'add', 'cmp1', *SIZES, '--cpu-allocation-ratio', '2')
    cli.run('host', 'add', 'cmp2', *SIZES)
    (node,) = _rows(api.COMPUTE_NODES, host='cmp1')
    writers.compute_node_update(ctx, node['id'], {
        'vcpus_used': 2, 'memory_mb_used': 4096, 'local_gb_used': 20})
    writers.instance_create(ctx, {'uuid': str(uuid.uuid4()), 'host': 'cmp1',
                                  'node': 'cmp1'})
    assert claims.claim(ctx, node['id'], str(uuid.uuid4()), 1, 512, 5)
    cli.run('aggregate', 'create', 'fast', '--zone', 'az1')
    cli.run('aggregate', 'add-host', 'fast', 'cmp1')

    listed = cli.json('host', 'list')
    assert [row['Host'] for row in listed] == ['cmp1', 'cmp2']
    first = listed[0]
    assert set(first) == {heading for heading, _ in
                          manage.manage_hosts.LIST_COLUMNS}
    assert first['Zone'] == 'az1' and first['Aggregates'] == ['fast']
    assert (first['State'], first['Status']) == ('up', 'enabled')
    assert first['vCPUs'] == {'used': 2, 'claimed': 1, 'total': 8,
                              'allocation_ratio': 2.0, 'capacity': 16.0}
    # No RAM ratio anywhere: initial_ram_allocation_ratio (1.0).
    assert first['RAM MiB'] == {'used': 4096, 'claimed': 512,
                                'total': 16384, 'allocation_ratio': 1.0,
                                'capacity': 16384.0}
    assert first['Disk GiB']['used'] == 20
    assert first['Disk GiB']['claimed'] == 5
    assert (first['Claims'], first['Instances']) == (1, 1)
    assert listed[1]['Zone'] == CONF.default_availability_zone
    assert (listed[1]['Claims'], listed[1]['Instances']) == (0, 0)

    status, out, _ = cli.run('host', 'list', '-f', 'csv')
    assert status == 0
    assert '"2+1/8 x2.0","4096+512/16384 x1.0","20+5/200 x1.0"' in out
    status, out, _ = cli.run('host', 'list')
    assert status == 0 and '| cmp1 ' in out and 'az1' in out


def test_a_host_is_down_after_service_down_time_until_it_beats(cli, ctx):
    cli.run('host', 'add', 'cmp1', *SIZES)
    cli.run('host', 'add', 'cmp2', *SIZES)
    long_ago = timeutils.utcnow() - datetime.timedelta(
        seconds=CONF.service_down_time + 5)
    with api.get_engine().begin() as connection:
        connection.execute(sa.update(api.SERVICES).values(
            created_at=long_ago))
    assert [row['State'] for row in cli.json('host', 'list')] == [
        'down', 'down']

    assert cli.run('host', 'heartbeat', 'cmp1') == (0, '', '')
    shown = cli.json('host', 'show', 'cmp1')
    assert (shown['state'], shown['report_count']) == ('up', 1)
    assert cli.json('host', 'show', 'cmp2')['state'] == 'down'
    assert cli.run('host', 'heartbeat', '--all')[0] == 0
    assert [row['State'] for row in cli.json('host', 'list')] == ['up', 'up']


def test_heartbeat_every_keeps_beating_for_its_duration(cli):
    """``--every 0.2 --for 0.5``: beats at 0, 0.2 and 0.4 s, then exits
    0; ``--for`` alone is a usage error."""
    cli.run('host', 'add', 'cmp1', *SIZES)
    assert cli.run('host', 'heartbeat', '--all', '--every', '0.2',
                   '--for', '0.5') == (0, '', '')
    assert _rows(api.SERVICES, host='cmp1')[0]['report_count'] == 3
    status, _, err = cli.run('host', 'heartbeat', '--all', '--for', '5')
    assert status == 2 and '--for needs --every' in err
    status, _, err = cli.run('host', 'heartbeat', '--all', '--every', '0')
    assert status == 2 and '--every' in err


def test_heartbeat_names_hosts_or_all(cli):
    cli.run('host', 'add', 'cmp1', *SIZES)
    status, _, err = cli.run('host', 'heartbeat')
    assert status == 2 and 'name hosts, or give --all' in err
    status, _, err = cli.run('host', 'heartbeat', 'cmp1', '--all')
    assert status == 2
    status, _, err = cli.run('host', 'heartbeat', 'cmp1', 'nowhere')
    assert status == 1 and 'nowhere' in err
    assert _rows(api.SERVICES, host='cmp1')[0]['report_count'] == 1


def test_unknown_host_is_one_line(cli):
    status, out, err = cli.run('host', 'show', 'nowhere')
    assert (status, out) == (1, '')
    assert err == ('scheduler-manage host show: Compute host nowhere could '
                   'not be found.\n')


# -- disable, enable, delete ----------------------------------------------

def test_disable_and_enable(cli):
    cli.run('host', 'add', 'cmp1', *SIZES)
    assert cli.run('host', 'disable', 'cmp1', '--reason', 'maintenance') == (
        0, '', '')
    shown = cli.json('host', 'show', 'cmp1')
    assert (shown['status'], shown['disabled_reason']) == (
        'disabled', 'maintenance')
    assert cli.run('host', 'enable', 'cmp1')[0] == 0
    shown = cli.json('host', 'show', 'cmp1')
    assert (shown['status'], shown['disabled_reason']) == ('enabled', None)
    assert cli.run('host', 'disable', 'nowhere')[0] == 1


def test_delete_is_refused_with_instances_then_soft_deletes(cli, ctx, casts):
    cli.run('host', 'add', 'cmp1', *SIZES)
    cli.run('aggregate', 'create', 'agg')
    cli.run('aggregate', 'add-host', 'agg', 'cmp1')
    instance = str(uuid.uuid4())
    writers.instance_create(ctx, {'uuid': instance, 'host': 'cmp1',
                                  'node': 'cmp1'})
    status, _, err = cli.run('host', 'delete', 'cmp1')
    assert status == 1 and 'has 1 instance(s)' in err
    writers.instance_destroy(ctx, instance)
    casts.sent.clear()

    assert cli.run('host', 'delete', 'cmp1') == (0, '', '')
    (service,) = _rows(api.SERVICES, host='cmp1')
    (node,) = _rows(api.COMPUTE_NODES, host='cmp1')
    assert service['deleted'] == service['id']
    assert node['deleted'] == node['id'] and node['deleted_at'] is not None
    assert cli.json('host', 'list') == []
    assert cli.json('aggregate', 'show', 'agg')['hosts'] == []
    ((method, (sent,)),) = casts.sent
    assert method == 'update_aggregates' and sent.hosts == []
    # The host can be registered again.
    assert cli.run('host', 'add', 'cmp1', *SIZES)[0] == 0


# -- aggregates ------------------------------------------------------------

def test_aggregate_commands_write_and_cast(cli, casts):
    cli.run('host', 'add', 'cmp1', *SIZES)
    created = cli.json('aggregate', 'create', 'az1-hosts', '--zone', 'az1',
                       '--property', 'ssd=true')
    assert created['availability_zone'] == 'az1'
    assert created['properties'] == {'ssd': 'true'}
    added = cli.json('aggregate', 'add-host', 'az1-hosts', 'cmp1')
    assert added['hosts'] == ['cmp1']
    meta = cli.json('aggregate', 'set-metadata', str(created['id']),
                    'ssd', 'gpu=2')
    assert meta['properties'] == {'gpu': '2'}
    removed = cli.json('aggregate', 'remove-host', 'az1-hosts', 'cmp1')
    assert removed['hosts'] == []
    assert cli.run('aggregate', 'delete', 'az1-hosts') == (0, '', '')
    assert cli.json('aggregate', 'list') == []

    assert [method for method, _ in casts.sent] == [
        'update_aggregates'] * 4 + ['delete_aggregate']
    for _, payload in casts.sent[:4]:
        (sent,) = payload
        assert isinstance(sent, aggregate_obj.Aggregate)
        assert sent.id == created['id'] and sent.uuid == created['uuid']
    assert casts.sent[1][1][0].hosts == ['cmp1']
    assert casts.sent[1][1][0].availability_zone == 'az1'
    assert casts.sent[2][1][0].metadata == {'availability_zone': 'az1',
                                            'gpu': '2'}
    deleted = casts.sent[4][1]
    assert isinstance(deleted, aggregate_obj.Aggregate)
    assert deleted.name == 'az1-hosts'


def test_aggregate_refusals(cli):
    cli.run('host', 'add', 'cmp1', *SIZES)
    cli.run('aggregate', 'create', 'a1', '--zone', 'az1')
    cli.run('aggregate', 'create', 'a2', '--zone', 'az2')
    cli.run('aggregate', 'create', 'plain')
    cli.run('aggregate', 'add-host', 'a1', 'cmp1')
    cases = [
        (('aggregate', 'create', 'a1'), 'aggregate a1 already exists'),
        (('aggregate', 'create', 'x', '--zone', 'a:b'), 'no ":"'),
        (('aggregate', 'add-host', 'a1', 'cmp1'), 'already in aggregate'),
        (('aggregate', 'add-host', 'a2', 'cmp1'),
         'cmp1 already in availability zone az1'),
        (('aggregate', 'add-host', 'a1', 'nowhere'),
         'Compute host nowhere could not be found'),
        (('aggregate', 'add-host', 'missing', 'cmp1'),
         'Aggregate missing could not be found'),
        (('aggregate', 'remove-host', 'plain', 'cmp1'), 'is not in'),
        (('aggregate', 'delete', 'a1'), 'a1 has host(s) cmp1'),
        (('aggregate', 'set-metadata', 'a1', '=x'), 'is not KEY=VALUE'),
    ]
    for argv, message in cases:
        status, out, err = cli.run(*argv)
        assert (status, out) == (1, ''), argv
        assert message in err and err.count('\n') == 1, (argv, err)
    # A plain aggregate takes the host; moving it to another zone does not.
    assert cli.json('aggregate', 'add-host', 'plain', 'cmp1')['hosts'] == [
        'cmp1']
    status, _, err = cli.run('aggregate', 'set-metadata', 'plain',
                             'availability_zone=az2')
    assert status == 1 and 'already in availability zone az1' in err
    assert cli.json('aggregate', 'set-metadata', 'plain',
                    'availability_zone=az1')['availability_zone'] == 'az1'


def test_an_unsent_cast_is_a_warning_and_the_write_stands(cli, casts):
    casts.error = OSError('connection refused')
    status, out, err = cli.run('aggregate', 'create', 'agg', '--zone', 'z1',
                               '-f', 'json')
    assert status == 0 and json.loads(out)['name'] == 'agg'
    assert err.startswith('warning: the database has the change, but the '
                          'schedulers could not be told (connection '
                          'refused)')
    assert 'restarted' in err
    assert [row['name'] for row in _rows(api.AGGREGATES)] == ['agg']


def test_aggregate_list_and_show(cli):
    cli.run('host', 'add', 'cmp1', *SIZES)
    cli.run('aggregate', 'create', 'a1', '--zone', 'az1', '--property',
            'k=v')
    cli.run('aggregate', 'add-host', 'a1', 'cmp1')
    (row,) = cli.json('aggregate', 'list')
    assert row == {'ID': 1, 'Name': 'a1', 'Availability Zone': 'az1',
                   'Hosts': ['cmp1'], 'Properties': {'k': 'v'}}
    shown = cli.json('aggregate', 'show', '1')
    assert shown['name'] == 'a1' and shown['hosts'] == ['cmp1']
    status, out, _ = cli.run('aggregate', 'list', '-f', 'value')
    assert out == "1 a1 az1 cmp1 k='v'\n"


# -- modes, usage, db ------------------------------------------------------

def test_nova_database_mode_refuses_in_one_line(ctx, tmp_path, capsys,
                                                casts):
    conf_path = _config(tmp_path, ctx.url, '[api_database]\nconnection = '
                        'sqlite:///%s\n' % (tmp_path / 'nova_api.sqlite'))
    cli = Manage(conf_path, capsys)
    for argv in (['host', 'list'], ['host', 'add', 'cmp1'] + SIZES,
                 ['aggregate', 'create', 'agg'], ['host', 'heartbeat',
                                                  '--all']):
        status, out, err = cli.run(*argv)
        assert (status, out) == (1, '')
        assert err == manage_common.NOVA_MODE_REFUSAL + '\n'
    assert _rows(api.COMPUTE_NODES) == [] and _rows(api.AGGREGATES) == []
    assert casts.sent == []


@pytest.mark.parametrize('argv, message', [
    ([], 'a command is required'),
    (['--bogus'], 'unrecognized arguments: --bogus'),
    (['db'], "unknown command 'db'; db takes one of: db sync, db version"),
    (['host', 'frob'], "unknown command 'host frob'"),
    (['frob'], 'unknown command'),
])
def test_bad_commands_are_usage_errors(cli, argv, message):
    status, out, err = cli.run(*argv)
    assert (status, out) == (2, '')
    assert err.startswith('usage: scheduler-manage')
    assert message in err


@pytest.mark.parametrize('argv', [['--help'], ['help'], ['help', 'host',
                                                       'heartbeat'],
                                   ['host', 'heartbeat', '--help']])
def test_help_exits_0(cli, argv):
    status, out, _ = cli.run(*argv)
    assert status == 0
    assert 'host heartbeat' in out or 'report_interval' in out
    if argv[-1] == '--help' and len(argv) > 1:
        # A command's --help is that command's help, as in the
        # openstack CLI, not the list of every command.
        assert out.startswith('usage: scheduler-manage host heartbeat')


def test_version(cli):
    status, out, _ = cli.run('--version')
    assert status == 0 and out.startswith('scheduler-manage ')


def test_db_commands_in_process(ctx, tmp_path, capsys):
    url = 'sqlite:///%s' % (tmp_path / 'other.sqlite')
    writers.reset_engine(url)
    cli = Manage(_config(tmp_path, url), capsys)
    status, out, _ = cli.run('db', 'version')
    assert (status, out.splitlines()[-1]) == (0, 'None')
    assert cli.run('db', 'sync')[0] == 0
    status, out, _ = cli.run('db', 'version')
    assert status == 0
    assert out.splitlines()[-1] == migration.head_revision()


def test_db_writes_join_an_enclosing_transaction(ctx):
    """The product writes are the tools' writers and share a
    transaction."""
    assert writers.service_create is hosts.service_create
    context = scheduler_context.get_admin_context()
    with pytest.raises(RuntimeError):
        with api.context_manager.writer.using(context):
            hosts.add_compute_node(context, hosts.empty_node_values(
                'cmp1', 'cmp1', 4, 4096, 40))
            raise RuntimeError('rolled back')
    assert _rows(api.SERVICES) == [] and _rows(api.COMPUTE_NODES) == []
