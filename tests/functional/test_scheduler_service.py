"""The real scheduler service, called through SchedulerAPI.

Each test runs against four deployments: the service in this process on
the in-memory ``fake://`` transport with SQLite, and a separate
``scheduler-service`` process on a real RabbitMQ with SQLite, with a
real PostgreSQL and with a real MariaDB (a fresh database on the
session's server for each test).
"""

import uuid

import pytest
from deployment import Deployment

from scheduler import exception
from scheduler.db import api as db
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj
from scheduler.objects import instance_group as group_obj
from scheduler_tools import seed

BACKENDS = ['fake-sqlite', 'rabbit-sqlite', 'rabbit-postgresql',
            'rabbit-mysql']


@pytest.fixture(params=BACKENDS)
def deploy(request, tmp_path):
    """``deploy(seed_fn, **options)``: seed a fresh database with
    ``seed_fn(ctx)``, start the service on it, return the Deployment."""
    transport, database = request.param.split('-')
    if database == 'sqlite':
        db_url = 'sqlite:///%s' % (tmp_path / 'scheduler.sqlite')
    else:
        # ``postgresql_url`` or ``mysql_url``: the session's server.
        make = request.getfixturevalue('fresh_database')
        db_url = make(request.getfixturevalue(database + '_url'))
    if transport == 'fake':
        mode, url = 'in-process', 'fake://'
    else:
        mode, url = 'process', request.getfixturevalue('rabbit_url')
    started = []

    def _deploy(seed_fn, options=None):
        deployment = Deployment(db_url, mode, url, str(tmp_path), options)
        seed_fn(deployment.ctx)
        started.append(deployment)
        return deployment.start()
    yield _deploy
    for deployment in started:
        deployment.stop()


def _four_hosts(ctx):
    for i in range(4):
        seed.add_compute(ctx, 'host%d' % i, vcpus=4,
                         memory_mb=4096 * (i + 1), local_gb=100)


def test_single_instance_gets_the_best_host_and_limits(deploy):
    dep = deploy(_four_hosts)
    result = dep.api.select_destinations(dep.ctx, seed.make_spec())
    # RAMWeigher spreads: the host with the most free RAM wins.
    assert result == [{'host': 'host3', 'nodename': 'host3',
                       'limits': {'memory_mb': 4096 * 4 * 1.5,
                                  'vcpu': 4 * 16.0,
                                  'disk_gb': 100.0}}]


def test_several_instances_with_alternates(deploy):
    dep = deploy(_four_hosts)
    uuids = [str(uuid.uuid4()) for _ in range(2)]
    spec = seed.make_spec(num_instances=2, memory_mb=4096)
    result = dep.api.select_destinations(dep.ctx, spec, uuids,
                                         return_objects=True,
                                         return_alternates=True)
    assert len(result) == 2
    chosen = [picks[0].service_host for picks in result]
    # host3 (16 GiB free) takes the first instance; then host2 and host3
    # tie at 12 GiB and the stable sort keeps host2 (lower id) first.
    assert chosen == ['host3', 'host2']
    for picks in result:
        # max_attempts (3) hosts in all; alternates by weight, unchosen.
        assert [p.service_host for p in picks[1:]] == ['host1', 'host0']
        assert all(p.nodename and p.compute_node_uuid for p in picks)
    assert result[0][0].limits.memory_mb == int(16384 * 1.5)


def test_no_valid_host_when_nothing_fits(deploy):
    dep = deploy(_four_hosts)
    with pytest.raises(exception.NoValidHost) as err:
        dep.api.select_destinations(dep.ctx, seed.make_spec(memory_mb=10**6))
    assert 'There are not enough hosts available.' in str(err.value)


def test_no_valid_host_releases_the_virtual_consumption(deploy):
    dep = deploy(_four_hosts)
    # 12000 MiB fits twice on host3 (limit 24576) and once on host2.
    spec = seed.make_spec(num_instances=5, memory_mb=12000)
    with pytest.raises(exception.NoValidHost):
        dep.api.select_destinations(dep.ctx, spec)
    # The three that fitted were released: all three fit again.
    result = dep.api.select_destinations(
        dep.ctx, seed.make_spec(num_instances=3, memory_mb=12000))
    assert sorted(r['host'] for r in result) == ['host2', 'host3', 'host3']


def test_legacy_4_0_call(deploy):
    dep = deploy(_four_hosts)
    spec = seed.make_spec(num_instances=2)
    result = dep.api.client.prepare(version='4.0').call(
        dep.ctx, 'select_destinations',
        request_spec=spec.to_legacy_request_spec_dict(),
        filter_properties={'ignore_hosts': ['host3']})
    # After host2 takes the first, the disk, CPU and I/O weighers put the
    # untouched host1 ahead of it.
    assert [r['host'] for r in result] == ['host2', 'host1']


def test_malformed_request_gets_a_clear_error_and_service_goes_on(deploy):
    dep = deploy(_four_hosts)
    bad = seed.make_spec(memory_mb=-1)
    with pytest.raises(exception.InvalidRequestSpec) as err:
        dep.api.select_destinations(dep.ctx, bad)
    assert 'flavor.memory_mb' in str(err.value)
    with pytest.raises(exception.InvalidRequestSpec):
        dep.api.client.prepare(version='4.0').call(
            dep.ctx, 'select_destinations', request_spec='not a dict',
            filter_properties={})
    with pytest.raises(exception.InvalidObjectPrimitive):
        dep.api.client.prepare(version='4.5').call(
            dep.ctx, 'select_destinations',
            spec_obj={'nova_object.name': 'RequestSpec',
                      'nova_object.namespace': 'nova',
                      'nova_object.version': '9.9',
                      'nova_object.data': {}})
    assert dep.api.select_destinations(dep.ctx, seed.make_spec())


def _aggregate(ctx, row):
    return aggregate_obj.Aggregate.from_db(row)


def test_aggregate_casts_change_decisions(deploy):
    def _seed(ctx):
        _four_hosts(ctx)
        seed.add_aggregate(ctx, 'az1-agg', hosts=['host0'],
                           metadata={'availability_zone': 'az1'})
    dep = deploy(_seed)
    spec = seed.make_spec(availability_zone='az1')
    assert dep.api.select_destinations(dep.ctx, spec)[0]['host'] == 'host0'

    row = db.aggregate_get_all(dep.ctx)[0]
    dep.api.update_aggregates(dep.ctx, [_aggregate(
        dep.ctx, dict(row, hosts=['host0', 'host1']))])

    def _host1_in_az1():
        spec = seed.make_spec(availability_zone='az1', ignore_hosts=[
            'host0'])
        try:
            return dep.api.select_destinations(dep.ctx, spec)
        except exception.NoValidHost:
            return None
    assert dep.wait_for(_host1_in_az1)[0]['host'] == 'host1'

    dep.api.delete_aggregate(dep.ctx, _aggregate(dep.ctx, row))

    def _az1_gone():
        try:
            dep.api.select_destinations(
                dep.ctx, seed.make_spec(availability_zone='az1'))
        except exception.NoValidHost:
            return True
    assert dep.wait_for(_az1_gone)


def test_instance_casts_change_anti_affinity(deploy):
    dep = deploy(_four_hosts)
    member = str(uuid.uuid4())
    # With the ``max_server_per_host`` rule (Rocky+) the filter counts the
    # group's members in the service's view of each host's instances,
    # which the casts keep; without it, it reads only ``group.hosts``,
    # which the caller fills in.  Only host3 is considered, so that the
    # answer does not depend on the weighers (each answer's claim moves
    # them).
    group = group_obj.InstanceGroup(uuid=str(uuid.uuid4()),
                                    policy='anti-affinity',
                                    _rules={'max_server_per_host': '1'},
                                    members=[member], hosts=[])

    def _host3_takes_a_member():
        spec = seed.make_spec(memory_mb=1, root_gb=1,
                              instance_group=group.obj_clone(),
                              ignore_hosts=['host0', 'host1', 'host2'])
        try:
            result = dep.api.select_destinations(dep.ctx, spec)
        except exception.NoValidHost:
            return False
        assert result[0]['host'] == 'host3'
        return True
    assert _host3_takes_a_member()
    dep.api.update_instance_info(dep.ctx, 'host3', instance_obj.InstanceList(
        objects=[instance_obj.Instance(uuid=member, host='host3')]))
    assert dep.wait_for(lambda: not _host3_takes_a_member())
    dep.api.delete_instance_info(dep.ctx, 'host3', member)
    assert dep.wait_for(_host3_takes_a_member)


def test_bad_casts_are_dropped_and_service_goes_on(deploy):
    dep = deploy(_four_hosts)
    client = dep.api.client.prepare(fanout=True, version='4.2')
    client.cast(dep.ctx, 'update_instance_info', host_name=42,
                instance_info='nope')
    client.cast(dep.ctx, 'delete_instance_info', host_name='host1',
                instance_uuid={'x': 1})
    client.cast(dep.ctx, 'sync_instance_info', host_name='host1',
                instance_uuids=None)
    client.cast(dep.ctx, 'update_aggregates', aggregates=[1, 2])
    client.cast(dep.ctx, 'no_such_method')
    assert dep.api.select_destinations(dep.ctx, seed.make_spec())[0][
        'host'] == 'host3'


def test_service_stops_cleanly(deploy):
    dep = deploy(_four_hosts)
    assert dep.api.select_destinations(dep.ctx, seed.make_spec())
    # SIGTERM for the scheduler-service process: a clean exit, status 0.
    assert dep.stop() == 0
