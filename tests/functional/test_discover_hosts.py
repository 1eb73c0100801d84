"""``[scheduler] discover_hosts_in_cells_interval`` with two schedulers
on a Nova deployment's own databases (issue 32, item 3).

Nova 34's own migrations and ``nova-manage cell_v2`` make the API
database, cell0, ``cell1`` and ``cell2`` on the session's PostgreSQL;
Nova's objects write the compute nodes (``nova_databases.NovaDatabases``,
its driver process).  Two ``scheduler-service`` processes on RabbitMQ,
``discover-a`` and ``discover-b``, keep their ``nova-scheduler`` rows in
cell0 and run the discovery every second (heartbeat every second,
``service_down_time`` 3 s).

``test_the_leader_maps_new_hosts_and_the_other_takes_over``: a compute
node appears unmapped in cell1 (``mapped = 0``, no ``host_mappings``
row, as ``nova-compute`` leaves it); within a few intervals it has
exactly one mapping, to cell1, and is marked mapped, by ``discover-a``
(the first host up, sorted), while ``discover-b`` logs that it is not
the leader.  ``discover-a`` stops; ``discover-b`` maps the next new
node, in cell2, once ``discover-a``'s heartbeat is 3 s old.  Nova's
own ``nova-manage cell_v2 list_hosts`` then reads both mappings, and its
``discover_hosts`` finds nothing left to map.  It prints its figures in
one line (``-s`` shows them).
"""

import time

import pytest
import sqlalchemy as sa
from deployment import Deployment
from nova_databases import NovaDatabases

from scheduler.db import source as db_source
from scheduler_tools import seed
from scheduler_tools import writers

pytestmark = pytest.mark.timeout(300)

LEADER, OTHER = 'discover-a', 'discover-b'
INTERVAL = 1
SERVICE_DOWN_TIME = 3
# Most seconds for a new node to be mapped while the leader runs, and
# after the leader stopped (its heartbeat must first grow old).
MAP_BOUND = 10
TAKEOVER_BOUND = SERVICE_DOWN_TIME + 10
DISCOVERED = 'Discovered 1 new host(s) in cell %s (%s): %s'


@pytest.fixture(scope='module')
def nova_dbs(postgresql_url, tmp_path_factory):
    with NovaDatabases(postgresql_url,
                       tmp_path_factory.mktemp('nova')) as made:
        made.ids = {cell['name']: cell['id']
                    for cell in made.nova.request('cells')}
        yield made


@pytest.fixture
def own_url(postgresql_url, fresh_database):
    return fresh_database(postgresql_url, prefix='scheduler_own')


@pytest.fixture
def nova(nova_dbs, own_url, conf):
    conf.set_override('connection', nova_dbs.urls['api'], 'api_database')
    db_source.reset()
    seed.use_database(own_url)
    yield nova_dbs.nova
    db_source.reset()
    writers.reset_engine()
    nova_dbs.nova.request('clear')


def _new_compute(nova_dbs, cell, host):
    """A compute node of ``host`` in ``cell``, written by Nova's objects,
    left as ``nova-compute`` leaves a new one: ``mapped = 0`` and no
    host mapping (the driver maps every host it adds: that mapping is
    removed)."""
    nova_dbs.nova.request('add_compute', cell=cell, host=host)
    _execute(nova_dbs.urls['api'], 'DELETE FROM host_mappings '
             'WHERE host = :host', host=host)
    _execute(nova_dbs.urls[cell], 'UPDATE compute_nodes SET mapped = 0 '
             'WHERE host = :host', host=host)


def _execute(url, statement, **params):
    """Run one SQL ``statement``; its rows when it is a SELECT."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as connection:
            result = connection.execute(sa.text(statement), params)
            return result.all() if result.returns_rows else None
    finally:
        engine.dispose()


def _state(nova_dbs, cell, host):
    """``(host_mappings cell ids of host, mapped of its nodes)``."""
    mappings = [row[0] for row in _execute(
        nova_dbs.urls['api'], 'SELECT cell_id FROM host_mappings '
        'WHERE host = :host', host=host)]
    mapped = [row[0] for row in _execute(
        nova_dbs.urls[cell], 'SELECT mapped FROM compute_nodes '
        'WHERE host = :host AND deleted = 0', host=host)]
    return mappings, mapped


def _wait_mapped(nova_dbs, cell, host, bound):
    """Seconds until ``host`` is mapped to ``cell`` with its node marked;
    fails after ``bound`` seconds with what was seen."""
    started = time.monotonic()
    wanted = ([nova_dbs.ids[cell]], [1])
    while True:
        seen = _state(nova_dbs, cell, host)
        if seen == wanted:
            return time.monotonic() - started
        assert time.monotonic() - started < bound, (
            '%s not mapped to %s within %d s: host_mappings cell ids %s, '
            'compute_nodes.mapped %s' % (host, cell, bound, *seen))
        time.sleep(0.2)


def _scheduler(nova_dbs, own_url, rabbit_url, workdir, host):
    return Deployment(own_url, 'process', rabbit_url, str(workdir),
                      host=host, options={
                          ('api_database', 'connection'): nova_dbs.urls['api'],
                          ('scheduler', 'discover_hosts_in_cells_interval'):
                              INTERVAL,
                          (None, 'report_interval'): 1,
                          (None, 'service_down_time'): SERVICE_DOWN_TIME,
                          ('scheduler', 'workers'): 1,
                          (None, 'debug'): True})


def test_the_leader_maps_new_hosts_and_the_other_takes_over(
        nova_dbs, nova, own_url, rabbit_url, tmp_path):
    (tmp_path / LEADER).mkdir()
    (tmp_path / OTHER).mkdir()
    first = _scheduler(nova_dbs, own_url, rabbit_url, tmp_path / LEADER,
                       LEADER)
    second = _scheduler(nova_dbs, own_url, rabbit_url, tmp_path / OTHER,
                        OTHER)
    started = time.monotonic()
    try:
        first.start()
        second.start()
        # (The first answers the second's ping: wait for its own row.)
        second.wait_for(lambda: _execute(
            nova_dbs.urls['cell0'], "SELECT id FROM services WHERE host = "
            ":host AND last_seen_up IS NOT NULL", host=OTHER), timeout=60)
        _new_compute(nova_dbs, 'cell1', 'new-1')
        mapped_in = _wait_mapped(nova_dbs, 'cell1', 'new-1', MAP_BOUND)
        time.sleep(2 * INTERVAL)   # more runs of both: nothing changes
        first_state = _state(nova_dbs, 'cell1', 'new-1')
        stopped = time.monotonic()
        first.stop()
        stop_took = time.monotonic() - stopped
        _new_compute(nova_dbs, 'cell2', 'new-2')
        taken_over_in = _wait_mapped(nova_dbs, 'cell2', 'new-2',
                                     TAKEOVER_BOUND)
        since_stop = time.monotonic() - stopped
    finally:
        first.stop()
        second.stop()
    # (Read once stopped: a service's log file is written in blocks.)
    leader_log, other_log = first.log(tail=None), second.log(tail=None)
    services_took = time.monotonic() - started
    hosts = nova_dbs.manage('cell1', 'cell_v2', 'list_hosts')
    left = nova_dbs.manage('cell1', 'cell_v2', 'discover_hosts', '--verbose')
    print('\ndiscover hosts: mapped by the leader in %.1f s, by the other '
          '%.1f s after the leader stopped (%.1f s after the node '
          'appeared; the stop took %.1f s); leader runs logged %d, '
          'other skips logged %d; services %.1f s, Nova checks %.1f s'
          % (mapped_in, since_stop, taken_over_in, stop_took,
             leader_log.count('Discovered'),
             other_log.count('Current leader is %s' % LEADER),
             services_took, time.monotonic() - started - services_took))
    # Exactly one mapping, to cell1, and the node marked; runs after it
    # change nothing.
    assert first_state == ([nova_dbs.ids['cell1']], [1])
    # Only the leader ran the discovery while it led; the other logged
    # why it did not, then mapped the next node once it led.
    new_1 = DISCOVERED % ('cell1', nova_dbs.cells['cell1'], 'new-1')
    new_2 = DISCOVERED % ('cell2', nova_dbs.cells['cell2'], 'new-2')
    assert leader_log.count('Discovered') == leader_log.count(new_1) == 1, \
        leader_log[-3000:]
    assert other_log.count('Discovered') == other_log.count(new_2) == 1, \
        other_log[-3000:]
    skipped = 'Current leader is %s, skipping discover hosts on %s' % (
        LEADER, OTHER)
    assert skipped in other_log.split(new_2)[0]
    assert 'Current leader is' not in leader_log
    # (its last heartbeat was at most report_interval before the stop)
    assert since_stop >= SERVICE_DOWN_TIME - 1 - 0.5, since_stop
    assert 'Discovering hosts in cells failed' not in leader_log + other_log
    # Nova reads the mappings, and finds nothing left to map.
    for host, cell in (('new-1', 'cell1'), ('new-2', 'cell2')):
        assert any(host in line and cell in line
                   for line in hosts.splitlines()), hosts
    assert 'Found 0 unmapped computes in cell: %s' % nova_dbs.cells[
        'cell1'] in left, left
    assert 'Found 0 unmapped computes in cell: %s' % nova_dbs.cells[
        'cell2'] in left, left
