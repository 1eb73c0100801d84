"""Nova database mode when one cell database fails, and cell mappings
written as templates (issue 31, items 5 and 8c).

Nova 34's own migrations and ``nova-manage cell_v2`` make the API
database, cell0 and ``cell1`` on the session's PostgreSQL, and ``cell2``
on a PostgreSQL of this module's own, which the tests may freeze
(SIGSTOP: it keeps its sockets and answers nothing) and thaw; Nova's
objects write the rows (``nova_databases.NovaDatabases``, its driver
process: this process never imports Nova).

* ``test_the_healthy_cell_is_scheduled_to_while_the_other_is_frozen``: a
  ``scheduler-service`` process on RabbitMQ, cell2 frozen for
  ``FREEZE_S`` s under a caller asking one request after the other: every
  request is placed in cell1, the first within ``[scheduler]
  cell_timeout`` and the next ones without waiting for cell2, the
  service's threads do not grow with the requests, the outage is logged
  once, and cell2 is scheduled to again soon after the thaw.
* ``test_templated_cell_mappings_are_filled_as_nova_fills_them``: cell
  mappings whose ``database_connection`` is a template (stored by
  ``nova-manage cell_v2 update_cell``) are filled from ``[api_database]
  connection``, or from ``[scheduler] cell_template_connection``.

Each test prints its figures in one line (``-s`` shows them).
"""

import contextlib
import dataclasses
import time
import uuid

import psutil
import pytest
import sqlalchemy as sa
from deployment import Deployment
from nova_databases import NovaDatabases
from nova_databases import _nova_conf

from scheduler import context as scheduler_context
from scheduler.db import claims
from scheduler.db import source as db_source
from scheduler.db.nova import ids
from scheduler.drivers import filter_scheduler
from scheduler.objects import cell_mapping
from scheduler.objects import request_spec
from scheduler.server import rpcapi
from scheduler.server import service
from scheduler_tools import databases
from scheduler_tools import seed
from scheduler_tools import writers

GiB = 1024
FILTERS = ['AvailabilityZoneFilter', 'RamFilter', 'ComputeFilter']
# Seconds cell2 stays frozen, and between two requests of the caller.
FREEZE_S = 12.0
PAUSE_S = 0.1
# Most seconds until cell2 is scheduled to again after the thaw.
RECOVERY_BOUND = 20.0
# Nova's rpc_response_timeout default: the caller's patience.
CALL_TIMEOUT = 60

pytestmark = pytest.mark.timeout(600)


# -- the databases ------------------------------------------------------------

class SplitNovaDatabases(NovaDatabases):
    """``NovaDatabases`` with ``cell2`` on the server of
    ``cell2_admin_url`` (the others on ``admin_url``'s)."""

    def __init__(self, admin_url, cell2_admin_url, workdir):
        super().__init__(admin_url, workdir)
        databases.drop_database(self.urls['cell2'])
        self.urls['cell2'] = databases.create_database(cell2_admin_url,
                                                       'nova_cell2')
        _nova_conf(self.confs['cell2'], self.urls['api'],
                   self.urls['cell2'], self.workdir)


@pytest.fixture(scope='module')
def freezable(module_server):
    """cell2's PostgreSQL server (thawed again by each test)."""
    return module_server('postgresql')


@pytest.fixture(scope='module')
def nova_dbs(postgresql_url, freezable, tmp_path_factory):
    with SplitNovaDatabases(postgresql_url, freezable.url,
                            tmp_path_factory.mktemp('nova')) as made:
        made.ids = {cell['name']: cell['id']
                    for cell in made.nova.request('cells')}
        yield made


@pytest.fixture
def own_url(postgresql_url, fresh_database):
    return fresh_database(postgresql_url, prefix='scheduler_own')


@pytest.fixture
def nova(nova_dbs, own_url, conf, freezable):
    """The Nova driver, with this process configured in Nova database
    mode; the test's Nova rows are destroyed afterwards."""
    conf.set_override('connection', nova_dbs.urls['api'], 'api_database')
    conf.set_override('enabled_filters', FILTERS, 'filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'], 'filter_scheduler')
    db_source.reset()
    seed.use_database(own_url)
    yield nova_dbs.nova
    freezable.thaw()
    db_source.reset()
    writers.reset_engine()
    nova_dbs.nova.request('clear')


def _add(nova, cell, host, memory_mb):
    return nova.request('add_compute', cell=cell, host=host, vcpus=1000,
                        memory_mb=memory_mb, local_gb=10000)


def _report(name, **figures):
    print('\ncells faults: %s: %s' % (name, ', '.join(
        '%s %s' % (key.replace('_', ' '),
                   '%.3f s' % value if isinstance(value, float) else value)
        for key, value in figures.items())))


# -- a frozen cell ------------------------------------------------------------

@dataclasses.dataclass
class Asked:
    """One request as the caller saw it (monotonic times)."""

    instance: str
    sent: float
    done: float
    outcome: str            # 'ok' or the exception's class name
    host: str | None

    @property
    def took(self):
        return self.done - self.sent


def _ask(api, ctx):
    instance = str(uuid.uuid4())
    sent = time.monotonic()
    try:
        picks = api.select_destinations(
            ctx, seed.make_spec(memory_mb=16, vcpus=1, root_gb=1),
            instance_uuids=[instance], return_objects=True)
    except Exception as exc:
        return Asked(instance, sent, time.monotonic(), type(exc).__name__,
                     None)
    return Asked(instance, sent, time.monotonic(), 'ok',
                 picks[0][0].service_host)


@contextlib.contextmanager
def _frozen(server):
    server.freeze()
    try:
        yield
    finally:
        server.thaw()


def _threads(dep):
    """The threads of the service's processes (the launcher forks the
    one that serves)."""
    main = psutil.Process(dep.pid)
    return sum(process.num_threads() for process in
               [main] + main.children(recursive=True))


SKIPPED = 'is skipped until its database answers again'


def test_the_healthy_cell_is_scheduled_to_while_the_other_is_frozen(
        nova_dbs, nova, own_url, freezable, rabbit_url, tmp_path):
    _add(nova, 'cell1', 'steady', 8 * GiB)
    _add(nova, 'cell2', 'frozen', 16 * GiB)
    dep = Deployment(own_url, 'process', rabbit_url, str(tmp_path), options={
        ('api_database', 'connection'): nova_dbs.urls['api'],
        ('filter_scheduler', 'enabled_filters'): FILTERS,
        ('filter_scheduler', 'weight_classes'): ['RAMWeigher'],
        (None, 'service_down_time'): 600,
        # oslo.messaging's executor starts a thread per message until it
        # has this many: the warm-up fills it, so that a thread more
        # during the freeze is one a read of cell2 holds.
        (None, 'executor_thread_pool_size'): 8})
    api = rpcapi.SchedulerAPI(dep.transport, timeout=CALL_TIMEOUT)
    try:
        dep.start()
        before = [_ask(api, dep.ctx) for _ in range(20)]
        threads_before = _threads(dep)
        during, threads = [], []
        with _frozen(freezable):
            frozen_at = time.monotonic()
            while time.monotonic() - frozen_at < FREEZE_S:
                during.append(_ask(api, dep.ctx))
                threads.append(_threads(dep))
                time.sleep(PAUSE_S)
        thawed_at = time.monotonic()
        after = [_ask(api, dep.ctx)]
        while (after[-1].host != 'frozen' and
               time.monotonic() - thawed_at < RECOVERY_BOUND):
            time.sleep(PAUSE_S)
            after.append(_ask(api, dep.ctx))
        back = after[-1].done - thawed_at
        log = dep.log(tail=None)
        claimed = {claim['instance_uuid']: claim['compute_node_id']
                   for claim in claims.get_claims(dep.ctx)}
    finally:
        freezable.thaw()
        dep.stop()
    _report('cell2 frozen %.0f s, two cells' % FREEZE_S,
            requests_while_frozen=len(during),
            outcomes=sorted({(a.outcome, a.host) for a in during}),
            before_median=sorted(a.took for a in before)[10],
            first_while_frozen=during[0].took,
            slowest_after_the_first=max(a.took for a in during[1:]),
            median_while_frozen=sorted(a.took for a in during)[
                len(during) // 2],
            threads_before=threads_before,
            threads_while_frozen='%d..%d' % (min(threads), max(threads)),
            scheduled_to_cell2_after_thaw=back,
            skipped_lines=log.count(SKIPPED))
    assert {a.host for a in before} == {'frozen'}, before
    # Every request of the freeze placed in cell1: the first within
    # cell_timeout (3 s), the next ones without waiting for cell2.
    assert [(a.outcome, a.host) for a in during] == [
        ('ok', 'steady')] * len(during), during
    assert during[0].took < 3.0 + 2.0
    # (Waiting for cell2 again would take cell_timeout, 3 s.)
    assert max(a.took for a in during[1:]) < 2.0
    assert len(during) >= 20
    # No thread piles up per request: at most the lane's stuck ones.
    assert max(threads) - threads_before <= 3, (threads_before, threads)
    assert max(threads) - min(threads) <= 2, threads
    # Logged once for the outage, and the end of it.
    assert log.count(SKIPPED) == 1, log[-3000:]
    assert 'answers again, after' in log
    # cell2 is back soon after the thaw.
    assert after[-1].host == 'frozen', after
    assert back < RECOVERY_BOUND
    # The claims are those of the answers, on the chosen cells' nodes.
    answered = {a.instance: a.host for a in before + during + after
                if a.outcome == 'ok'}
    assert claimed.keys() == answered.keys()
    for instance, host in answered.items():
        cell = 'cell2' if host == 'frozen' else 'cell1'
        assert ids.cell_id(claimed[instance]) == nova_dbs.ids[cell]


# -- templates ----------------------------------------------------------------

def _database(url):
    return sa.engine.make_url(url).database


@contextlib.contextmanager
def _templated(nova_dbs, name, template):
    """cell ``name``'s mapping holds ``template`` (stored with
    ``nova-manage cell_v2 update_cell``) until the block ends."""
    def update(url):
        # The transport URL create_cell gave it (else nova-manage takes
        # the config file's).
        nova_dbs.manage('cell1', 'cell_v2', 'update_cell', '--cell_uuid',
                        nova_dbs.cells[name], '--transport-url',
                        'fake://%s/' % name, '--database_connection', url)
    update(template)
    try:
        yield
    finally:
        update(nova_dbs.urls[name])


def _cells_of_hosts(ctx):
    driver = filter_scheduler.FilterScheduler(ctx)
    return driver, {state.host: state.cell_uuid for state in
                    driver.host_manager.get_all_host_states(ctx)}


def test_templated_cell_mappings_are_filled_as_nova_fills_them(
        nova_dbs, nova, conf, freezable):
    _add(nova, 'cell1', 'one', 8 * GiB)
    _add(nova, 'cell2', 'two', 16 * GiB)
    conf.set_override('max_retries', 1, 'api_database')
    conf.set_override('retry_interval', 0, 'api_database')
    ctx = scheduler_context.get_admin_context()
    wanted = {'one': nova_dbs.cells['cell1'], 'two': nova_dbs.cells['cell2']}
    # cell1 is on the API database's server: [api_database] connection
    # fills its template.
    cell1 = ('{scheme}://{username}@{hostname}:{port}/%s'
             % _database(nova_dbs.urls['cell1']))
    with _templated(nova_dbs, 'cell1', cell1):
        db_source.reset()
        assert service.check_databases() is None
        driver, found = _cells_of_hosts(ctx)
        assert found == wanted
        spec = seed.make_spec(memory_mb=GiB)
        spec.requested_destination = request_spec.Destination(
            cell=cell_mapping.CellMapping(uuid=nova_dbs.cells['cell1']))
        picks = driver.select_destinations(ctx, spec)
        assert [pick[0].service_host for pick in picks] == ['one']
    # cell2 is on another server: filled from the API database's URL,
    # its template names a database that server lacks; from
    # [scheduler] cell_template_connection, the right one.
    cell2 = ('{scheme}://{username}@{hostname}:{port}/%s'
             % _database(nova_dbs.urls['cell2']))
    with _templated(nova_dbs, 'cell2', cell2):
        db_source.reset()
        refused = service.check_databases()
        assert refused.startswith('cell cell2 (%s): cannot connect'
                                  % nova_dbs.cells['cell2']), refused
        assert '\n' not in refused
        conf.set_override('cell_template_connection', freezable.url,
                          'scheduler')
        db_source.reset()
        assert service.check_databases() is None
        assert _cells_of_hosts(ctx)[1] == wanted
    _report('templated cell mappings', cell1_template=cell1,
            cell2_template=cell2, without_the_option=refused[:120])
