"""``etc/scheduler/packing.conf`` through the embedded service, end to
end: the MixedFitWeigher sees the sizes of the instances the replay's
agents report, and mixes.

Two hosts of 80 vCPUs and 184,320 MiB.  Four small VMs (46,000 +
46,000 + 30,000 + 20,000 MiB, each under a quarter of a host) fill
compute-0001 so that the large one (57,344 MiB) must go to compute-0002;
two of the small ones then leave, and compute-0001 is left with 118,320
MiB free against compute-0002's 126,976: the tighter by 4.7 % of a host.
RAM first fit alone puts the last small VM on compute-0001; the profile
puts it next to the large one, which is worth more (0.1 of a host).
"""

import csv

import pytest

from tests.functional.test_replay import _replay

RATIOS = '''\
[DEFAULT]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
disk_allocation_ratio = 1.0
'''
RAM_FIRST_FIT_ONLY = '''\
[filter_scheduler]
mixed_fit_weight_multiplier = 0.0
ram_first_fit_weight_multiplier = 1.0
'''
# vm_id, arrival_s, lifetime_s, vcpus, memory_mb
VMS = [('s1', 0, 100, 1, 46000), ('s2', 1, 10000, 1, 46000),
       ('s3', 2, 98, 1, 30000), ('s4', 3, 10000, 1, 20000),
       ('large', 4, 10000, 8, 57344), ('last', 200, 10000, 1, 1792)]


def _placements(tmp_path, packing, *configs):
    trace = tmp_path / 'trace.csv'
    with open(trace, 'w', newline='') as out:
        writer = csv.writer(out)
        writer.writerow(['vm_id', 'arrival_s', 'lifetime_s', 'vcpus',
                         'memory_mb'])
        writer.writerows(VMS)
    paths = ['--config-file', str(packing)]
    for index, text in enumerate((RATIOS,) + configs):
        path = tmp_path / ('extra%d.conf' % index)
        path.write_text(text)
        paths += ['--config-file', str(path)]
    placements = tmp_path / 'placements.csv'
    _replay(tmp_path, '--trace', str(trace), '--group-window', '0',
            '--hosts', '2', '--host-shape', '80:184320:100', '--noprogress',
            '--nocompare', '--noreport', '--placements', str(placements),
            *paths)
    with open(placements, newline='') as rows:
        return {row['vm_id']: row['host'] for row in csv.DictReader(rows)}


@pytest.fixture
def packing(request):
    return request.config.rootpath / 'etc' / 'scheduler' / 'packing.conf'


def test_the_profile_puts_a_small_instance_next_to_a_large_one(
        tmp_path, packing):
    hosts = _placements(tmp_path, packing)
    assert hosts['large'] == 'compute-0002'
    assert {hosts[vm] for vm in ('s1', 's2', 's3', 's4')} == {
        'compute-0001'}
    assert hosts['last'] == 'compute-0002'


def test_ram_first_fit_alone_takes_the_tighter_host(tmp_path, packing):
    hosts = _placements(tmp_path, packing, RAM_FIRST_FIT_ONLY)
    assert hosts['large'] == 'compute-0002'
    assert hosts['last'] == 'compute-0001'
