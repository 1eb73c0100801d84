"""Reading traces, grouping VMs into requests and ordering events."""

import gzip

import pytest

from scheduler_tools.replay import cli_options
from scheduler_tools.replay import trace

HEADER = 'vm_id,arrival_s,lifetime_s,vcpus,memory_mb,project_id\n'


def _vm(vm_id, arrival_s, project_id='p1', vcpus=1, memory_mb=1792,
        lifetime_s=600.0, **kwargs):
    return trace.VM(vm_id, arrival_s, lifetime_s, vcpus, memory_mb,
                    project_id=project_id, **kwargs)


def _write(path, text):
    if str(path).endswith('.gz'):
        with gzip.open(path, 'wt', encoding='utf-8') as out:
            out.write(text)
    else:
        path.write_text(text)
    return path


# -- reading ---------------------------------------------------------------

def test_read_plain_and_gzip_give_the_same_vms(tmp_path):
    text = HEADER + 'a,0.0,1050,8,14336,t0\nb,2.5,,1,1792,t1\n'
    plain = trace.read_trace(_write(tmp_path / 't.csv', text))
    packed = trace.read_trace(_write(tmp_path / 't.csv.gz', text))
    assert plain == packed
    assert plain[0] == trace.VM('a', 0.0, 1050.0, 8, 14336,
                                project_id='t0')
    assert plain[1].lifetime_s is None  # never deleted


def test_optional_columns(tmp_path):
    text = ('vm_id,arrival_s,lifetime_s,vcpus,memory_mb,disk_gb,'
            'availability_zone,flavor,extra\n'
            'a,1,2,2,4096,20,az1,m1.medium,ignored\n'
            'b,1,2,2,4096,,,,\n')
    first, second = trace.read_trace(_write(tmp_path / 't.csv', text))
    assert (first.disk_gb, first.availability_zone, first.flavor) == (
        20, 'az1', 'm1.medium')
    assert first.project_id is None
    assert (second.disk_gb, second.availability_zone, second.flavor) == (
        0, None, None)
    assert second.flavor_name == '2vcpu-4096mb-0gb'
    assert first.flavor_name == 'm1.medium'


def test_limit_stops_reading(tmp_path):
    rows = ''.join('vm%d,%d,,1,512,p\n' % (i, i) for i in range(10))
    path = _write(tmp_path / 't.csv', HEADER + rows)
    assert [vm.vm_id for vm in trace.read_trace(path, limit=3)] == [
        'vm0', 'vm1', 'vm2']


def test_read_sorts_by_arrival_keeping_file_order_on_ties(tmp_path):
    text = HEADER + 'late,9,,1,512,p\nx,1,,1,512,p\ny,1,,1,512,p\n'
    vms = trace.read_trace(_write(tmp_path / 't.csv', text))
    assert [vm.vm_id for vm in vms] == ['x', 'y', 'late']


def test_missing_column_is_an_error(tmp_path):
    path = _write(tmp_path / 't.csv', 'vm_id,arrival_s,vcpus\na,0,1\n')
    with pytest.raises(trace.TraceError, match='lifetime_s, memory_mb'):
        trace.read_trace(path)


@pytest.mark.parametrize('row, message', [
    ('a,soon,,1,512,p', 'line 2: arrival_s'),
    ('a,0,,-1,512,p', 'line 2: vcpus .* negative'),
    ('a,0,nan,1,512,p', 'line 2: lifetime_s .* not finite'),
    (',0,,1,512,p', 'line 2: vm_id is empty'),
])
def test_bad_values_name_the_line(tmp_path, row, message):
    path = _write(tmp_path / 't.csv', HEADER + row + '\n')
    with pytest.raises(trace.TraceError, match=message):
        trace.read_trace(path)


def test_write_then_read_round_trips(tmp_path):
    vms = [_vm('a', 0.5, disk_gb=10, availability_zone='az1',
               flavor='f1'),
           _vm('b', 1.0, project_id=None, lifetime_s=None)]
    path = tmp_path / 'out.csv.gz'
    trace.write_trace(path, vms)
    assert trace.read_trace(path) == vms


def test_shipped_slice_reads():
    vms = trace.read_trace(cli_options.DEFAULT_TRACE)
    assert len(vms) == 3000
    assert vms[0].vm_id == 'azure-0'


# -- grouping --------------------------------------------------------------

def test_consecutive_vms_of_one_tenant_size_and_bin_form_one_request():
    vms = [_vm('a', 0.0), _vm('b', 2.0), _vm('c', 4.0),
           _vm('d', 6.0, vcpus=2, memory_mb=3584),   # another size
           _vm('e', 8.0, project_id='p2'),            # another tenant
           _vm('f', 10.0)]                            # not consecutive
    requests = trace.group_requests(vms)
    assert [[vm.vm_id for vm in r.vms] for r in requests] == [
        ['a', 'b', 'c'], ['d'], ['e'], ['f']]
    assert [r.index for r in requests] == [0, 1, 2, 3]
    assert requests[0].time_s == 0.0
    assert requests[0].num_instances == 3


def test_bins_split_requests():
    vms = [_vm('a', 290.0), _vm('b', 299.9), _vm('c', 300.0)]
    assert [r.num_instances for r in trace.group_requests(vms)] == [2, 1]
    # Another window moves the boundary.
    assert [r.num_instances
            for r in trace.group_requests(vms, bin_s=600)] == [3]


def test_zone_and_flavor_name_split_requests():
    vms = [_vm('a', 0, availability_zone='az1'),
           _vm('b', 1, availability_zone='az2'),
           _vm('c', 2, availability_zone='az2', flavor='named')]
    assert [r.num_instances for r in trace.group_requests(vms)] == [1, 1, 1]


def test_no_project_or_no_window_means_no_grouping():
    anonymous = [_vm('a', 0, project_id=None), _vm('b', 1, project_id=None)]
    assert len(trace.group_requests(anonymous)) == 2
    tenant = [_vm('a', 0), _vm('b', 1)]
    assert len(trace.group_requests(tenant, bin_s=0)) == 2


# -- events ----------------------------------------------------------------

def test_events_come_by_time_with_deletions_first_at_equal_times():
    requests = trace.group_requests([_vm('a', 0.0, project_id=None),
                                     _vm('b', 10.0, project_id=None),
                                     _vm('c', 10.0, project_id=None)])
    queue = trace.EventQueue(requests)
    queue.push_deletion(10.0, 'gone-1')
    queue.push_deletion(5.0, 'gone-0')
    queue.push_deletion(10.0, 'gone-2')
    order = []
    while queue:
        event = queue.pop()
        order.append(event.payload if event.kind == trace.DELETION
                     else event.payload.first.vm_id)
    assert order == ['a', 'gone-0', 'gone-1', 'gone-2', 'b', 'c']


def test_peek_time_and_empty_queue():
    queue = trace.EventQueue()
    assert queue.peek_time() is None and queue.peek() is None
    assert len(queue) == 0
    queue.push_deletion(3.0, 'x')
    assert queue.peek_time() == 3.0
    assert queue.peek().payload == 'x' and len(queue) == 1
    queue.pop()
    with pytest.raises(IndexError):
        queue.pop()
