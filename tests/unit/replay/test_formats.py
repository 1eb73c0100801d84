"""Trace formats: the CSV's GPU columns, the Azure flavor sequence and
the Alibaba GPU trace read from small hand-written folders, format
detection and the fleet a trace brings."""

import pytest

from scheduler_tools.replay import alibaba_gpu
from scheduler_tools.replay import azure_flavor_seq
from scheduler_tools.replay import cli_options
from scheduler_tools.replay import formats
from scheduler_tools.replay import options
from scheduler_tools.replay import trace
from scheduler_tools.seed import FleetError

FLAVOR_MAP = '1,0.75 a\n1,1.75 b\n2,3.5 g\n'
# Bins 0-2 are 5-minute steps; bin 3 holds 900 s to 1500 s.
INTERVAL_MAP = '0 0\n300 1\n600 2\n900 3\n1200 3\n'
SEQUENCE = ('1000 b,b,|,g,|\n'
            '1300 a,|\n'
            '1600 b,g,|,b,|\n')
DURATIONS = ('1000 U0,U3,|,C1,|\n'
             '1300 U2,|\n'
             '1600 U1,U1,|,C3,|\n')
POD_HEADER = ('name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,'
              'pod_phase,creation_time,deletion_time,scheduled_time\n')
NODE_HEADER = 'sn,cpu_milli,memory_mib,gpu,model\n'


def _azure(folder, sequence=SEQUENCE, durations=DURATIONS):
    folder.mkdir(exist_ok=True)
    for name, text in (('flav_map.txt', FLAVOR_MAP),
                       ('v1.interval_map.txt', INTERVAL_MAP),
                       ('v1.test.txt', sequence),
                       ('v1.test.c2591400.txt', durations)):
        (folder / name).write_text(text)
    return folder


def _alibaba(folder, pods, nodes=('n0,32000,262144,0,',
                                  'n1,96000,393216,8,G2')):
    folder.mkdir(exist_ok=True)
    (folder / alibaba_gpu.NODE_LIST).write_text(
        NODE_HEADER + ''.join(row + '\n' for row in nodes))
    (folder / alibaba_gpu.DEFAULT_POD_LIST).write_text(
        POD_HEADER + ''.join(row + '\n' for row in pods))
    return folder


# -- the CSV's GPU columns ---------------------------------------------------

def test_csv_gpu_columns_are_read_and_written(tmp_path):
    path = tmp_path / 't.csv'
    path.write_text('vm_id,arrival_s,lifetime_s,vcpus,memory_mb,gpus,'
                    'gpu_milli\na,0,10,4,8192,1,250\nb,1,,2,4096,,\n'
                    'c,2,5,8,16384,2,\n')
    first, second, third = trace.read_trace(path)
    assert (first.gpus, first.gpu_milli, first.shares_gpu) == (1, 250, True)
    assert first.resources == (4, 8192, 0, 1)
    assert first.flavor_name == '4vcpu-8192mb-0gb-1gpu'
    assert (second.gpus, second.gpu_milli, second.shares_gpu) == (
        0, None, False)
    assert (third.gpus, third.shares_gpu) == (2, False)
    copy = tmp_path / 'copy.csv'
    trace.write_trace(copy, [first, second, third])
    assert trace.read_trace(copy) == [first, second, third]
    # Without GPUs the written columns are those of before.
    trace.write_trace(copy, [second])
    assert copy.read_text().splitlines()[0] == (
        'vm_id,arrival_s,lifetime_s,vcpus,memory_mb,disk_gb,project_id,'
        'availability_zone,flavor')


def test_csv_gpu_milli_needs_one_gpu(tmp_path):
    path = tmp_path / 't.csv'
    path.write_text('vm_id,arrival_s,lifetime_s,vcpus,memory_mb,gpus,'
                    'gpu_milli\na,0,10,4,8192,1,1000\nb,0,10,4,8192,2,500\n')
    with pytest.raises(trace.TraceError, match='line 3: gpu_milli 500'):
        trace.read_trace(path)


# -- the Azure flavor sequence -----------------------------------------------

def test_azure_flavor_sequence_becomes_vms(tmp_path):
    vms = list(azure_flavor_seq.iter_vms(str(_azure(tmp_path / 'azure'))))
    assert [vm.vm_id for vm in vms] == ['azure-%d' % n for n in range(7)]
    # Three VMs in the first bin, 100 s apart; times from the first bin.
    assert [vm.arrival_s for vm in vms] == [0.0, 100.0, 200.0, 300.0,
                                            600.0, 700.0, 800.0]
    # Sizes: 1.75 GB = 1792 MiB, 0.75 GB = 768 MiB.
    assert [(vm.vcpus, vm.memory_mb) for vm in vms[:4]] == [
        (1, 1792), (1, 1792), (2, 3584), (1, 768)]
    # One project per batch; a batch's VMs share it.
    assert [vm.project_id for vm in vms] == [
        'tenant-0', 'tenant-0', 'tenant-1', 'tenant-2', 'tenant-3',
        'tenant-3', 'tenant-4']
    # U<k>: the midpoint of bin k's [smallest, largest + 300) seconds;
    # C<k>: never deleted.
    assert [vm.lifetime_s for vm in vms] == [150.0, 1200.0, None, 750.0,
                                             450.0, 450.0, None]
    requests = trace.group_requests(sorted(vms, key=lambda vm:
                                           vm.arrival_s))
    assert [r.num_instances for r in requests] == [2, 1, 1, 1, 1, 1]


def test_azure_sequence_file_limit_and_detection(tmp_path):
    folder = _azure(tmp_path / 'azure')
    assert formats.detect_format(folder) == formats.AZURE_FLAVOR_SEQ
    assert formats.detect_format(folder / 'v1.test.txt') == (
        formats.AZURE_FLAVOR_SEQ)
    vms = formats.read_vms(folder / 'v1.test.txt', limit=4)
    assert [vm.vm_id for vm in vms] == ['azure-0', 'azure-1', 'azure-2',
                                        'azure-3']


@pytest.mark.parametrize('sequence, durations, where, message', [
    ('1000 b,x,|\n', '1000 U0,U0,|\n', 'v1.test.txt:1', "flavor 'x'"),
    ('1000 b,|\n1300 b,|\n', '1000 U0,|\n1300 U9,|\n',
     'v1.test.c2591400.txt:2', "duration 'U9'"),
    ('1000 b,b,|\n', '1000 U0,|,U0\n', 'v1.test.c2591400.txt:1',
     'a batch ends'),
    ('1000 b,|\n1300 b,|\n', '1000 U0,|\n1600 U0,|\n',
     'v1.test.c2591400.txt:2', 'does not match'),
    ('1000 b,|\n', '1000 U0,|\n1300 U0,|\n', 'v1.test.c2591400.txt:2',
     'ends before'),
])
def test_azure_format_errors_name_the_file_and_line(tmp_path, sequence,
                                                     durations, where,
                                                     message):
    folder = _azure(tmp_path / 'azure', sequence, durations)
    with pytest.raises(trace.TraceError) as caught:
        list(azure_flavor_seq.iter_vms(str(folder)))
    assert where in str(caught.value) and message in str(caught.value)


def test_azure_folder_needs_one_split(tmp_path):
    folder = _azure(tmp_path / 'azure')
    (folder / 'v1.dev.txt').write_text(SEQUENCE)
    (folder / 'v1.dev.c2100000.txt').write_text(DURATIONS)
    with pytest.raises(trace.TraceError, match='found 2 split'):
        list(azure_flavor_seq.iter_vms(str(folder)))
    assert len(list(azure_flavor_seq.iter_vms(
        str(folder / 'v1.dev.txt')))) == 7
    (folder / 'flav_map.txt').write_text('1,1.75 b\nnonsense\n')
    with pytest.raises(trace.TraceError, match='flav_map.txt:2'):
        list(azure_flavor_seq.iter_vms(str(folder / 'v1.dev.txt')))


# -- the Alibaba GPU trace ---------------------------------------------------

PODS = ('p0,3152,5600,1,460,,LS,Running,0,600,0',
        'p1,8000,30517,0,0,,BE,Succeeded,10,70,10',
        'p2,12000,47104,8,1000,,LS,Pending,20,45,',
        'p3,1000,1024,1,1000,,BE,Failed,30,30,30')


def test_alibaba_pods_become_vms(tmp_path):
    folder = _alibaba(tmp_path / 'openb', PODS)
    assert formats.detect_format(folder) == formats.ALIBABA_GPU
    vms = formats.read_vms(folder)
    # CPU thousandths rounded up to whole vCPUs: 3.152 -> 4.
    assert [(vm.vm_id, vm.vcpus, vm.memory_mb, vm.gpus, vm.gpu_milli)
            for vm in vms] == [('p0', 4, 5600, 1, 460),
                               ('p1', 8, 30517, 0, None),
                               ('p2', 12, 47104, 8, None),
                               ('p3', 1, 1024, 1, 1000)]
    # Pending and Failed pods are requests too; lifetime = deletion -
    # creation, from the creation.
    assert [(vm.arrival_s, vm.lifetime_s) for vm in vms] == [
        (0.0, 600.0), (10.0, 60.0), (20.0, 25.0), (30.0, 0.0)]
    assert [vm.shares_gpu for vm in vms] == [True, False, False, False]
    assert all(vm.project_id is None and vm.disk_gb == 0 for vm in vms)


def test_alibaba_node_list_is_the_fleet(tmp_path):
    folder = _alibaba(tmp_path / 'openb', PODS)
    hosts = formats.trace_fleet(folder)
    assert [(h.host, h.nodename, h.vcpus, h.memory_mb, h.local_gb, h.gpus,
             h.gpu_model) for h in hosts] == [
        ('n0', 'n0', 32, 262144, 0, 0, None),
        ('n1', 'n1', 96, 393216, 0, 8, 'G2')]
    # A pod list given as a file finds the node list next to it.
    pods = folder / alibaba_gpu.DEFAULT_POD_LIST
    assert formats.detect_format(pods) == formats.ALIBABA_GPU
    assert len(formats.trace_fleet(pods)) == 2
    assert formats.trace_fleet(_azure(tmp_path / 'azure')) is None


@pytest.mark.parametrize('row, message', [
    ('p9,1000,x,0,0,,LS,Running,0,1,0', "memory_mib 'x' is not an integer"),
    ('p9,1000,1024,0,0,,LS,Running,9,1,0', 'deletion_time 1 is before'),
    ('p9,1000,1024,1,0,,LS,Running,0,1,0', 'gpu_milli 0'),
    ('p9,1000,1024,1,500,T4|V100M16,LS,Running,0,1,0', 'gpu_spec'),
])
def test_alibaba_pod_errors_name_the_file_and_line(tmp_path, row, message):
    folder = _alibaba(tmp_path / 'openb', PODS + (row,))
    with pytest.raises(trace.TraceError) as caught:
        formats.read_vms(folder)
    assert '%s:6:' % alibaba_gpu.DEFAULT_POD_LIST in str(caught.value)
    assert message in str(caught.value)


def test_alibaba_node_errors(tmp_path):
    folder = _alibaba(tmp_path / 'openb', PODS,
                      nodes=('n0,32000,262144,0,', 'n1,96000,393216,8,'))
    with pytest.raises(FleetError, match=':3: 8 GPUs of no model'):
        formats.trace_fleet(folder)


def test_detection_and_override(tmp_path):
    path = tmp_path / 'vms.csv'
    path.write_text('vm_id,arrival_s,lifetime_s,vcpus,memory_mb\n'
                    'a,0,,1,512\n')
    assert formats.detect_format(path) == formats.CSV
    assert [vm.vm_id for vm in formats.read_vms(path, formats.CSV)] == ['a']
    with pytest.raises(trace.TraceError, match='no known trace format'):
        formats.detect_format(tmp_path)
    with pytest.raises(trace.TraceError, match='no such file'):
        formats.detect_format(tmp_path / 'missing.csv')
    # An explicit format is taken as given.
    pods = _alibaba(tmp_path / 'openb', PODS) / alibaba_gpu.DEFAULT_POD_LIST
    with pytest.raises(trace.TraceError, match='missing column'):
        formats.read_vms(pods, formats.CSV)


def test_settings_use_the_trace_fleet(tmp_path):
    folder = _alibaba(tmp_path / 'openb', PODS)
    conf = _Conf(trace=str(folder))
    settings = options.Settings(conf)
    assert settings.trace_format == formats.ALIBABA_GPU
    assert [spec.host for spec in settings.fleet_specs()] == ['n0', 'n1']
    assert settings.describe(conf)['fleet'] == {
        'trace_nodes': str(folder)}
    assert options.Settings(_Conf(trace=str(folder),
                                  fleet='f.csv')).trace_fleet is None
    with pytest.raises(options.ReplayError, match='brings its own'):
        options.Settings(_Conf(trace=str(folder), hosts_factor=1.2))


class _Conf:
    """The parsed options ``options.Settings`` reads, with defaults."""

    def __init__(self, **values):
        from scheduler.conf import CONF

        for opt in cli_options.REPLAY_OPTS:
            setattr(self, opt.dest, opt.default)
        for name in ('filter_scheduler', 'scheduler'):
            setattr(self, name, getattr(CONF, name))
        self.__dict__.update(values)


def test_fleet_csv_gpu_columns(tmp_path):
    from scheduler_tools.replay import fleet

    hosts = [fleet.HostSpec('g', 'g', 32, 131072, 0, gpus=4,
                            gpu_model='T4'),
             fleet.HostSpec('c', 'c', 32, 131072, 0)]
    path = tmp_path / 'fleet.csv'
    fleet.write_fleet(path, hosts)
    assert path.read_text().splitlines()[0].endswith(',gpus,gpu_model')
    assert fleet.read_fleet(path) == hosts
    fleet.write_fleet(path, hosts[1:])
    assert 'gpus' not in path.read_text()
