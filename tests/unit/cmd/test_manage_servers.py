"""``scheduler-manage server boot|delete``, in-process (``main(argv)``).

The RPC client is a recording stand-in of ``SchedulerAPI``: it checks
what the commands send (the conductor's ``select_destinations``, the
``delete_instance_info`` cast) and answers as a scheduler would.
``tests/functional/test_operator_tutorial.py`` runs both against a real
service through RabbitMQ.
"""

import json
import uuid

import pytest

from scheduler import exception
from scheduler.cmd import manage
from scheduler.cmd import manage_common
from scheduler.objects import selection as selection_obj
from scheduler.server import rpcapi


def _selection(host):
    return selection_obj.Selection(
        service_host=host, nodename=host, compute_node_uuid=str(uuid.uuid4()),
        cell_uuid=str(uuid.uuid4()), limits=None, allocation_request=None,
        allocation_request_version=None)


class Scheduler:
    """Stands in for ``SchedulerAPI``: records the calls and casts;
    answers ``select_destinations`` with ``answer`` (a host per
    instance, then the alternates) or raises it."""

    def __init__(self):
        self.calls = []
        self.answer = ['cmp1', 'cmp2']
        self.transport = self

    def __call__(self, transport, timeout=None):
        self.timeout = timeout
        self.client = self
        return self

    def prepare(self, **kwargs):
        assert kwargs == {'retry': manage_common.CAST_RETRIES}
        return self

    def cleanup(self):
        self.calls.append(('cleanup',))

    def select_destinations(self, ctxt, spec_obj, instance_uuids,
                            return_objects=False, return_alternates=False):
        self.calls.append(('select_destinations', spec_obj, instance_uuids,
                           return_objects, return_alternates))
        if isinstance(self.answer, Exception):
            raise self.answer
        return [[_selection(host) for host in self.answer[index:]]
                for index, _ in enumerate(instance_uuids)]

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        self.calls.append(('delete_instance_info', host_name, instance_uuid))


@pytest.fixture
def cli(ctx, tmp_path, capsys, monkeypatch):
    scheduler = Scheduler()
    monkeypatch.setattr(rpcapi, 'SchedulerAPI', scheduler)
    conf = tmp_path / 'scheduler.conf'
    conf.write_text('[DEFAULT]\ntransport_url = fake:/\n'
                    '[database]\nconnection = %s\n' % ctx.url)

    def run(*argv):
        capsys.readouterr()
        status = manage.main(['--config-file', str(conf)] + list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    run.scheduler = scheduler
    return run


def test_boot_asks_as_the_conductor_and_prints_the_hosts(cli):
    status, out, err = cli('server', 'boot', '--vcpus', '2', '--memory-mb',
                           '4096', '--disk-gb', '20', '--availability-zone',
                           'az1', '--num-instances', '2', '--hint',
                           'group=g1', '--timeout', '7', '-f', 'json')
    assert (status, err) == (0, '')
    (call, cleanup) = cli.scheduler.calls
    assert cleanup == ('cleanup',)
    _, spec_obj, uuids, return_objects, return_alternates = call
    assert (return_objects, return_alternates) == (True, True)
    assert len(set(uuids)) == 2 and uuids[0] == spec_obj.instance_uuid
    assert (spec_obj.flavor.vcpus, spec_obj.flavor.memory_mb,
            spec_obj.flavor.root_gb) == (2, 4096, 20)
    assert (spec_obj.availability_zone, spec_obj.num_instances) == ('az1', 2)
    assert spec_obj.scheduler_hints == {'group': ['g1']}
    assert cli.scheduler.timeout == 7
    assert json.loads(out) == [
        {'Instance': uuids[0], 'Host': 'cmp1', 'Node': 'cmp1',
         'Alternates': ['cmp2/cmp2']},
        {'Instance': uuids[1], 'Host': 'cmp2', 'Node': 'cmp2',
         'Alternates': []}]


def test_no_valid_host_is_one_line_and_status_3(cli):
    cli.scheduler.answer = exception.NoValidHost(
        reason='There are not enough hosts available.\nTraceback...')
    status, out, err = cli('server', 'boot', '--memory-mb', '65536')
    assert (status, out) == (3, '')
    assert err == ('scheduler-manage server boot: No valid host was found. '
                   'There are not enough hosts available.\n')


def test_no_answer_is_one_line_and_status_1(cli):
    import oslo_messaging

    cli.scheduler.answer = oslo_messaging.MessagingTimeout('No reply')
    status, out, err = cli('server', 'boot', '--timeout', '2')
    assert (status, out) == (1, '')
    assert err == ('scheduler-manage server boot: no scheduler answered '
                   'within 2 s: is scheduler-service running on [DEFAULT] '
                   'transport_url?\n')


def test_delete_casts_delete_instance_info(cli):
    instance = str(uuid.uuid4())
    assert cli('server', 'delete', 'cmp1', instance) == (0, '', '')
    assert cli.scheduler.calls == [
        ('delete_instance_info', 'cmp1', instance), ('cleanup',)]
    status, out, err = cli('server', 'delete', 'cmp1', 'nope')
    assert (status, out) == (1, '')
    assert err == ("scheduler-manage server delete: 'nope' is not an "
                   'instance uuid\n')


def test_help_says_how_the_claim_is_released(cli):
    status, out, _ = cli('server', 'boot', '--help')
    assert status == 0
    assert 'server delete HOST INSTANCE' in ' '.join(out.split())
