"""The scheduler service called by Nova's own code (Nova 34.0.0).

A driver process (``nova_driver/driver.py``) runs with the python of a
virtualenv holding ``nova==34.0.0`` (made by ``tools/test-setup.sh``:
``$SCHEDULER_NOVA_VENV``, default ``~/.cache/scheduler-tests/nova-34.0.0``)
and never imports this repository.  It builds RequestSpecs, Instances and
Aggregates with Nova's objects and sends them with Nova's
``SchedulerQueryClient`` / ``nova.scheduler.rpcapi.SchedulerAPI`` and
serializer to a ``scheduler-service`` process on the session's RabbitMQ,
under the ``[upgrade_levels] scheduler`` caps none (RPC 4.5), ``ocata``
(4.3) and ``4.0`` (the legacy dicts).  Errors are checked the way Nova's
conductor sees them (``caught_as``: the ``nova.exception`` classes the
error is an instance of).

Without the venv the tests fail with a hint, or are skipped when
``SCHEDULER_TEST_SKIP_NOVA=1``.
"""

import json
import os
import queue
import subprocess
import threading
import uuid

import pytest
from deployment import Deployment
from nova_venv import NOVA_VERSION
from nova_venv import nova_venv

from scheduler.db import api as db
from scheduler_tools import seed

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'nova_driver', 'driver.py')
ANSWER_TIMEOUT = 90
CAPS = [None, 'ocata', '4.0']
FILTERS = ['RetryFilter', 'AvailabilityZoneFilter', 'RamFilter',
           'CoreFilter', 'DiskFilter', 'ComputeFilter',
           'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
           'NUMATopologyFilter']
OPTIONS = {('filter_scheduler', 'enabled_filters'): FILTERS}


# -- the Nova side ------------------------------------------------------------



class NovaDriver:
    """The driver process: ``request(op, **args)`` returns its answer,
    ``{'ok': result}`` or ``{'error': {...}}``, within ANSWER_TIMEOUT."""

    def __init__(self, venv, transport_url, log_path, placement_url=None):
        self._log = open(log_path, 'w')
        env = {key: value for key, value in os.environ.items()
               if not key.startswith('PYTHON')}
        self._process = subprocess.Popen(
            [os.path.join(venv, 'bin', 'python'), '-I', DRIVER,
             transport_url] + ([placement_url] if placement_url else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, env=env,
            cwd=os.path.dirname(log_path))
        self._answers = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self._next() == {'ok': 'ready'}

    def _read(self):
        for line in self._process.stdout:
            self._answers.put(json.loads(line))
        self._answers.put(None)

    def _next(self):
        try:
            answer = self._answers.get(timeout=ANSWER_TIMEOUT)
        except queue.Empty:
            answer = None
        if answer is None:
            self.close()
            with open(self._log.name) as log:
                raise AssertionError('the Nova driver did not answer:\n%s'
                                     % log.read()[-5000:])
        return answer

    def request(self, op, **args):
        self._process.stdin.write(json.dumps(dict(args, op=op)) + '\n')
        self._process.stdin.flush()
        return self._next()

    def close(self):
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()


@pytest.fixture(scope='module')
def nova(rabbit_url, tmp_path_factory):
    driver = NovaDriver(nova_venv(), rabbit_url,
                        str(tmp_path_factory.mktemp('nova') / 'driver.log'))
    assert driver.request('version') == {'ok': NOVA_VERSION}
    yield driver
    driver.close()


def select(nova, cap, spec=None, **args):
    """Nova's select_destinations; the result, or AssertionError."""
    answer = nova.request('select', cap=cap, spec=spec or {}, **args)
    assert 'ok' in answer, answer
    return answer['ok']


def select_error(nova, cap, spec=None, **args):
    """Nova's select_destinations that must fail: the error's
    description."""
    answer = nova.request('select', cap=cap, spec=spec or {}, **args)
    assert 'error' in answer, answer
    return answer['error']


def hosts_of(result):
    return [pick['host'] for pick in result]


# -- the service ------------------------------------------------------------

def _topology(cells, cpus, memory_mb):
    """A host NUMA topology (plain form): ``cells`` cells of ``cpus``
    CPUs and ``memory_mb`` MiB, one thread per core."""
    return json.dumps({'cells': [
        {'id': cell, 'cpuset': list(range(cell * cpus, (cell + 1) * cpus)),
         'memory': memory_mb, 'siblings': [
             [cpu] for cpu in range(cell * cpus, (cell + 1) * cpus)]}
        for cell in range(cells)]})


def _fleet(ctx):
    """host0 (az1), host1, host2 (two NUMA cells of 8 CPUs, the most RAM),
    host3 (one NUMA cell of 32 CPUs).  Big enough that the requests of
    the class never run out."""
    hosts = [(65536, None), (66560, None),
             (70000, _topology(2, 8, 32768)), (67000, _topology(1, 32, 32768))]
    for i, (memory_mb, topology) in enumerate(hosts):
        extra = {'numa_topology': topology} if topology else {}
        seed.add_compute(ctx, 'host%d' % i, vcpus=64, memory_mb=memory_mb,
                         local_gb=2000, **extra)
    seed.add_aggregate(ctx, 'az1-agg', hosts=['host0'],
                       metadata={'availability_zone': 'az1'})


def _service(rabbit_url, workdir, seed_fn):
    """A started scheduler-service on the session's RabbitMQ, with a
    fresh SQLite database in ``workdir`` seeded by ``seed_fn(ctx)``."""
    deployment = Deployment('sqlite:///%s' % (workdir / 'scheduler.sqlite'),
                            'process', rabbit_url, str(workdir), OPTIONS)
    try:
        seed_fn(deployment.ctx)
        return deployment.start()
    except BaseException:
        deployment.stop()
        raise


@pytest.fixture(scope='class')
def fleet(rabbit_url, tmp_path_factory):
    deployment = _service(rabbit_url, tmp_path_factory.mktemp('fleet'),
                          _fleet)
    yield deployment
    deployment.stop()


@pytest.mark.usefixtures('fleet')
@pytest.mark.parametrize('cap', CAPS)
class TestSelectDestinations:
    """select_destinations from Nova 34's conductor code, at each cap."""

    def test_one_instance(self, nova, cap):
        result = select(nova, cap)
        assert len(result) == 1
        assert result[0]['host'] in ('host0', 'host1', 'host2', 'host3')
        assert result[0]['nodename'] == result[0]['host']
        assert result[0]['limits']['memory_mb'] > 0

    def test_three_instances(self, nova, cap):
        result = select(nova, cap, {'num_instances': 3})
        assert len(result) == 3

    def test_return_objects_with_alternates(self, nova, cap):
        args = {'spec': {'num_instances': 3}, 'return_objects': True,
                'return_alternates': True}
        if cap is not None:
            # Nova's client refuses to ask for objects below RPC 4.5.
            error = select_error(nova, cap, **args)
            assert error['caught_as'] == [
                'SelectionObjectsWithOldRPCVersionNotSupported']
            return
        result = select(nova, cap, **args)
        assert len(result) == 3
        chosen = {picks[0]['service_host'] for picks in result}
        for picks in result:
            # The chosen host first, then up to max_attempts - 1 (2)
            # alternates among the hosts no instance was given.
            alternates = [pick['service_host'] for pick in picks[1:]]
            assert len(alternates) == min(2, 4 - len(chosen))
            assert not chosen & set(alternates)
            assert len(set(alternates)) == len(alternates)
            for pick in picks:
                assert pick['version'] == '1.1'
                assert pick['nodename'] == pick['service_host']
                assert uuid.UUID(pick['compute_node_uuid'])
                assert uuid.UUID(pick['cell_uuid'])

    def test_one_instance_as_a_selection(self, nova, cap):
        if cap is not None:
            pytest.skip('objects need RPC 4.5')
        result = select(nova, cap, {'availability_zone': 'az1'},
                        return_objects=True)
        assert len(result) == 1 and len(result[0]) == 1
        assert result[0][0]['service_host'] == 'host0'
        assert result[0][0]['availability_zone'] == 'az1'

    def test_availability_zone(self, nova, cap):
        assert hosts_of(select(nova, cap, {'availability_zone': 'az1'})) == [
            'host0']

    def test_ignore_hosts(self, nova, cap):
        spec = {'ignore_hosts': ['host0', 'host1', 'host2'],
                'num_instances': 2}
        assert hosts_of(select(nova, cap, spec)) == ['host3', 'host3']

    def test_force_hosts_and_nodes(self, nova, cap):
        assert hosts_of(select(nova, cap, {'force_hosts': ['host1']})) == [
            'host1']
        spec = {'force_hosts': ['host2'], 'force_nodes': ['host2']}
        assert hosts_of(select(nova, cap, spec)) == ['host2']

    def test_requested_destination(self, nova, cap):
        spec = {'destination': {'host': 'host1', 'node': 'host1'}}
        assert hosts_of(select(nova, cap, spec)) == ['host1']

    def test_affinity_group(self, nova, cap):
        spec = {'group': {'policy': 'affinity', 'hosts': ['host2'],
                          'members': [str(uuid.uuid4())]}}
        assert hosts_of(select(nova, cap, spec)) == ['host2']

    def test_anti_affinity_group(self, nova, cap):
        spec = {'group': {'policy': 'anti-affinity',
                          'hosts': ['host0', 'host1', 'host3'],
                          'members': [str(uuid.uuid4())] * 3}}
        assert hosts_of(select(nova, cap, spec)) == ['host2']

    def test_numa_flavor_needs_two_cells(self, nova, cap):
        spec = {'vcpus': 4, 'memory_mb': 2048,
                'extra_specs': {'hw:numa_nodes': '2'}}
        assert hosts_of(select(nova, cap, spec)) == ['host2']

    def test_pinned_cpus_are_counted(self, nova, cap):
        """Nova 34 sends a dedicated cell's vCPUs in ``pcpuset``
        (InstanceNUMACell 1.6): 10 of them fit only host3's 32-CPU cell,
        though host2 (8-CPU cells) has more free RAM."""
        spec = {'vcpus': 10, 'memory_mb': 1024,
                'extra_specs': {'hw:cpu_policy': 'dedicated',
                                'hw:numa_nodes': '1'}}
        assert hosts_of(select(nova, cap, spec)) == ['host3']

    def test_image_properties(self, nova, cap):
        props = {'hw_architecture': 'x86_64', 'hw_vm_mode': 'hvm',
                 'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35',
                 'hw_video_model': 'virtio', 'hw_input_bus': 'virtio'}
        assert select(nova, cap, {'image_properties': props})
        props['hw_architecture'] = 'aarch64'
        error = select_error(nova, cap, {'image_properties': props})
        assert error['caught_as'] == ['NoValidHost']

    def test_boot_from_volume_is_accepted(self, nova, cap):
        assert select(nova, cap, {'is_bfv': True, 'root_gb': 20})

    def test_impossible_flavor_is_nova_no_valid_host(self, nova, cap):
        error = select_error(nova, cap, {'memory_mb': 10 ** 7})
        assert error['caught_as'] == ['NoValidHost']
        assert error['class'] == 'nova.exception_Remote.NoValidHost_Remote'
        assert 'No valid host was found.' in error['message']

    @pytest.mark.parametrize('spec,named', [
        ({'extra_specs': {'resources:VGPU': '1'}}, 'resources:VGPU=1'),
        ({'extra_specs': {'trait:HW_CPU_X86_AVX2': 'required'}},
         'trait:HW_CPU_X86_AVX2=required'),
        ({'extra_specs': {'resources1:CUSTOM_FPGA': '2'}},
         'resources1:CUSTOM_FPGA=2'),
        ({'image_properties': {'hw_mem_encryption': True,
                               'hw_firmware_type': 'uefi',
                               'hw_machine_type': 'q35'}},
         'memory encryption'),
    ], ids=['vgpu', 'trait', 'custom-resource', 'mem-encryption'])
    def test_placement_only_request_is_refused(self, nova, cap, spec,
                                               named):
        error = select_error(nova, cap, spec)
        assert error['caught_as'] == ['NoValidHost']
        assert 'no Placement service' in error['message']
        assert named in error['message']

    @pytest.mark.parametrize('spec,named', [
        ({'port_requests': [{'resources': {'NET_BW_EGR_KILOBIT_PER_SEC':
                                           1000},
                             'required': ['CUSTOM_PHYSNET_PHYSNET1']}]},
         'NET_BW_EGR_KILOBIT_PER_SEC=1000'),
        ({'root_required': ['COMPUTE_STATUS_X']},
         'root trait COMPUTE_STATUS_X required'),
    ], ids=['port-request-group', 'root-trait'])
    def test_placement_only_request_objects_are_refused(self, nova, cap,
                                                        spec, named):
        if cap == '4.0':
            pytest.skip("Nova's legacy 4.0 dicts cannot carry them")
        error = select_error(nova, cap, spec)
        assert error['caught_as'] == ['NoValidHost']
        assert named in error['message']

    def test_newer_request_spec_version_is_refused_by_name(self, nova, cap):
        if cap is not None:
            pytest.skip('one raw 4.5 call is enough')
        answer = nova.request('select_raw', version='1.99')
        error = answer['error']
        assert error['remote_exc_type'] == 'ObjectVersionNotSupported'
        assert 'RequestSpec version 1.99 is not supported' in (
            error['message'])
        assert 'up to version 1.15' in error['message']


# -- Nova's casts change later decisions --------------------------------------

def _four_hosts_az1_on_host0(ctx):
    for i in range(4):
        seed.add_compute(ctx, 'host%d' % i, vcpus=16,
                         memory_mb=16384 * (i + 1), local_gb=500)
    seed.add_aggregate(ctx, 'az1-agg', hosts=['host0'],
                       metadata={'availability_zone': 'az1'})


@pytest.fixture
def service(rabbit_url, tmp_path):
    """A scheduler-service of the test's own: four hosts, az1 = host0."""
    deployment = _service(rabbit_url, tmp_path, _four_hosts_az1_on_host0)
    yield deployment
    deployment.stop()


def test_compute_casts_change_anti_affinity(nova, service):
    dep = service
    member = str(uuid.uuid4())
    # With the max_server_per_host rule the filter counts the group's
    # members among the host's instances, which the casts keep.
    spec = {'memory_mb': 1, 'root_gb': 1,
            'ignore_hosts': ['host0', 'host1', 'host2'],
            'group': {'policy': 'anti-affinity', 'members': [member],
                      'hosts': [], 'rules': {'max_server_per_host': '1'}}}

    def host3_takes_a_member():
        answer = nova.request('select', cap=None, spec=spec)
        if 'error' in answer:
            assert answer['error']['caught_as'] == ['NoValidHost'], answer
            return False
        assert hosts_of(answer['ok']) == ['host3']
        return True

    def host3_refuses():
        return not host3_takes_a_member()

    assert host3_takes_a_member()
    member_on_host3 = {'host': 'host3', 'instances': [
        {'uuid': member, 'host': 'host3', 'memory_mb': 1}]}
    assert nova.request('update_instance_info', **member_on_host3) == {
        'ok': None}
    assert dep.wait_for(host3_refuses)
    # The compute host says it has no instance at all: out of sync, so
    # the service re-reads host3 from its database, which has none.
    assert nova.request('sync_instance_info', host='host3',
                        instance_uuids=[]) == {'ok': None}
    assert dep.wait_for(host3_takes_a_member)
    nova.request('update_instance_info', **member_on_host3)
    assert dep.wait_for(host3_refuses)
    assert nova.request('delete_instance_info', host='host3',
                        instance_uuid=member) == {'ok': None}
    assert dep.wait_for(host3_takes_a_member)


def test_api_aggregate_casts_change_availability_zones(nova, service):
    dep = service
    row = db.aggregate_get_all(dep.ctx)[0]
    aggregate = {'id': row['id'], 'uuid': row['uuid'] or str(uuid.uuid4()),
                 'name': row['name'], 'hosts': ['host0'],
                 'metadata': {'availability_zone': 'az1'}}
    in_az1 = {'availability_zone': 'az1', 'ignore_hosts': ['host0']}

    def az1_hosts():
        answer = nova.request('select', cap=None, spec=in_az1)
        return hosts_of(answer['ok']) if 'ok' in answer else None

    assert az1_hosts() is None
    assert nova.request('update_aggregates', aggregates=[
        dict(aggregate, hosts=['host0', 'host1'])]) == {'ok': None}
    assert dep.wait_for(az1_hosts) == ['host1']
    assert nova.request('delete_aggregate', aggregate=aggregate) == {
        'ok': None}

    def az1_gone():
        answer = nova.request('select', cap=None,
                              spec={'availability_zone': 'az1'})
        return 'error' in answer and answer['error']['caught_as'] == [
            'NoValidHost']
    assert dep.wait_for(az1_gone)
