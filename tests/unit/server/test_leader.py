"""The leader rule of the periodic host discovery (issue 32, item 3):
``scheduler.server.leader`` and its wiring in ``SchedulerService``.

Nova's rule (``SchedulerManager._discover_hosts_in_cells``): the first
host, sorted, of the enabled ``nova-scheduler`` services that are up.
"""

import datetime
import logging
from unittest import mock

import pytest
import sqlalchemy as sa

from scheduler.db import service_row
from scheduler.db.nova import schema
from scheduler.server import leader
from scheduler.server import service

pytestmark = pytest.mark.timeout(60)

NOW = datetime.datetime(2026, 11, 27, 12, 0, 0)


def _row(host, age_s=1, **values):
    return dict({'host': host, 'binary': 'nova-scheduler', 'disabled': False,
                 'forced_down': False, 'created_at': NOW - datetime.timedelta(
                     days=1),
                 'last_seen_up': NOW - datetime.timedelta(seconds=age_s)},
                **values)


def test_the_first_host_up_leads(conf):
    conf.set_override('service_down_time', 60)
    rows = [_row('sched-c'), _row('sched-b'), _row('sched-a', age_s=61)]
    assert leader.choose(rows, NOW) == 'sched-b'


@pytest.mark.parametrize('values', [
    {'disabled': True}, {'forced_down': True}, {'last_seen_up': None,
                                                'created_at': None}])
def test_disabled_forced_down_and_silent_schedulers_do_not_lead(conf,
                                                                values):
    conf.set_override('service_down_time', 60)
    rows = [_row('sched-b'), _row('sched-a', **values)]
    assert leader.choose(rows, NOW) == 'sched-b'


def test_no_leader_when_none_is_up(conf):
    conf.set_override('service_down_time', 60)
    assert leader.choose([_row('sched-a', age_s=600)], NOW) is None
    assert leader.choose([], NOW) is None


@pytest.fixture
def services(tmp_path):
    """A cell database's ``services`` with two schedulers and a compute
    on ``sched-0``; yields ``(engine, insert)``."""
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'cell0.sqlite'))
    schema.CELL.create_all(engine)

    def insert(host, binary='nova-scheduler', **values):
        with engine.begin() as connection:
            connection.execute(sa.insert(schema.SERVICES).values(
                dict(dict(host=host, binary=binary, topic='scheduler',
                          report_count=0, disabled=False, forced_down=False,
                          deleted=0, created_at=datetime.datetime.utcnow()),
                     **values)))
    insert('sched-0', binary='nova-compute')
    insert('sched-1', deleted=7)
    yield engine, insert
    engine.dispose()


def test_is_leader_reads_the_live_scheduler_rows(conf, services):
    engine, insert = services
    insert('sched-2')
    insert('sched-3')
    assert leader.is_leader(service_row.ServiceRow(
        engine, schema.SERVICES, 'sched-2'))
    assert not leader.is_leader(service_row.ServiceRow(
        engine, schema.SERVICES, 'sched-3'))


# -- wiring in the service ----------------------------------------------------

def test_standalone_schema_ignores_the_option_with_one_line(conf, caplog):
    conf.set_override('discover_hosts_in_cells_interval', 5, 'scheduler')
    made = service.SchedulerService(transport=mock.Mock())
    with mock.patch.object(service.threading, 'Thread') as thread:
        made._start_discovery()
    thread.assert_not_called()
    lines = [r for r in caplog.records
             if 'discover_hosts_in_cells_interval' in r.getMessage()]
    assert [r.levelname for r in lines] == ['WARNING']
    assert 'standalone schema' in lines[0].getMessage()


def test_a_negative_interval_starts_nothing(conf, caplog):
    conf.set_override('connection', 'sqlite://', 'api_database')
    made = service.SchedulerService(transport=mock.Mock())
    with mock.patch.object(service.threading, 'Thread') as thread:
        made._start_discovery()
    thread.assert_not_called()
    assert made._discovery is None and not caplog.records


@pytest.mark.parametrize('interval, spacing', [(0, 60), (7, 7)])
def test_nova_mode_starts_the_task_with_its_spacing(conf, interval,
                                                    spacing):
    conf.set_override('connection', 'sqlite://', 'api_database')
    conf.set_override('discover_hosts_in_cells_interval', interval,
                      'scheduler')
    made = service.SchedulerService(transport=mock.Mock())
    with mock.patch.object(service.threading, 'Thread') as thread:
        made._start_discovery()
    assert made._discovery is not None
    assert thread.call_args.kwargs['args'] == (spacing,)
    thread.return_value.start.assert_called_once_with()


def _loop(made, leads):
    """Run ``_run_discovery`` for one round per answer of ``leads`` (the
    leader rule's answers); the discovery's ``run`` calls."""
    answers = iter(leads)
    made._discovery = mock.Mock()
    waits = []

    def waited(seconds):
        waits.append(seconds)
        if len(waits) == len(leads):
            made._stopping.set()
    with mock.patch.object(service.leader, 'is_leader',
                           side_effect=lambda row: next(answers)), \
            mock.patch.object(made._stopping, 'wait', side_effect=waited):
        made._run_discovery(30)
    assert waits == [30] * len(leads)
    return made._discovery.run.call_count


def test_only_the_leader_runs_discovery():
    made = service.SchedulerService(transport=mock.Mock())
    assert _loop(made, [False, True, False]) == 1


def test_a_failed_run_is_logged_and_the_next_one_tried(caplog):
    made = service.SchedulerService(transport=mock.Mock())
    answers = iter([OSError('cell0 went away'), True])

    def lead(row):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer
    made._discovery = mock.Mock()
    waits = []

    def waited(seconds):
        waits.append(seconds)
        if len(waits) == 2:
            made._stopping.set()
    with mock.patch.object(service.leader, 'is_leader', side_effect=lead), \
            mock.patch.object(made._stopping, 'wait', side_effect=waited):
        made._run_discovery(30)
    assert made._discovery.run.call_count == 1 and waits == [30, 30]
    failed = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in failed] == [
        'Discovering hosts in cells failed: cell0 went away']
