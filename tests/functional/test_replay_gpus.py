"""``scheduler-replay`` of an Alibaba-format GPU trace, end to end.

A tiny folder in the format of Alibaba's GPU cluster trace (a node list
of 2 CPU-only nodes and 4 nodes of 2 GPUs, 30 pods, two thirds of them
asking GPUs, some sharing one) replays through the real embedded
service with its node list as the fleet: the GPUs are PCI passthrough
devices (pools in ``pci_stats``, the flavor's alias, the RequestSpec's
``pci_requests``, PciPassthroughFilter), so GPU pods land on GPU nodes
only and no node's GPUs are ever used twice over; the pods that find no
free GPU meet NoValidHost.
"""

import csv
import json
import subprocess
import sys

NODES = [('cpu-0', 32000, 131072, 0, ''), ('cpu-1', 32000, 131072, 0, ''),
         ('gpu-0', 32000, 131072, 2, 'T4'), ('gpu-1', 32000, 131072, 2, 'T4'),
         ('gpu-2', 64000, 262144, 2, 'V100M16'),
         ('gpu-3', 64000, 262144, 2, 'V100M16')]
PODS = 30
ARRIVAL_STEP_S = 10
GPU_LIFETIME_S = 150
COMMAND_TIMEOUT = 180


def _pod(number):
    """Every third pod asks no GPU; of the others, one in four asks 2
    GPUs, the rest one, every other one of those sharing it."""
    gpus = 0 if number % 3 == 0 else (2 if number % 4 == 1 else 1)
    milli = 0 if not gpus else (500 if gpus == 1 and number % 2 else 1000)
    created = number * ARRIVAL_STEP_S
    lifetime = GPU_LIFETIME_S if gpus else 30
    return {'name': 'pod-%02d' % number, 'cpu_milli': 2500,
            'memory_mib': 4096, 'num_gpu': gpus, 'gpu_milli': milli,
            'gpu_spec': '', 'qos': 'LS', 'pod_phase': 'Running',
            'creation_time': created, 'deletion_time': created + lifetime,
            'scheduled_time': created}


def _write(folder):
    folder.mkdir()
    with open(folder / 'openb_node_list_all_node.csv', 'w',
              newline='') as out:
        writer = csv.writer(out)
        writer.writerow(('sn', 'cpu_milli', 'memory_mib', 'gpu', 'model'))
        writer.writerows(NODES)
    pods = [_pod(number) for number in range(PODS)]
    with open(folder / 'openb_pod_list_default.csv', 'w', newline='') as out:
        writer = csv.DictWriter(out, fieldnames=list(pods[0]))
        writer.writeheader()
        writer.writerows(pods)
    return {pod['name']: pod for pod in pods}


def _max_gpus_in_use(placements, pods):
    """``{node: most GPUs its pods held at once}`` (departures first at
    equal times, as the replay)."""
    events = {}
    for name, node in placements.items():
        pod = pods[name]
        if node and pod['num_gpu']:
            events.setdefault(node, []).extend([
                (pod['creation_time'], 1, pod['num_gpu']),
                (pod['deletion_time'], 0, -pod['num_gpu'])])
    peaks = {}
    for node, changes in events.items():
        held = peak = 0
        for _, _, change in sorted(changes):
            held += change
            peak = max(peak, held)
        peaks[node] = peak
    return peaks


def test_gpu_pods_use_only_the_free_gpus_of_gpu_nodes(tmp_path):
    pods = _write(tmp_path / 'openb')
    output, placements = tmp_path / 'out.json', tmp_path / 'placed.csv'
    result = subprocess.run(
        [sys.executable, '-m', 'scheduler_tools.cmd.replay', '--noprogress',
         '--trace', str(tmp_path / 'openb'), '--compare', '--output',
         str(output), '--placements', str(placements)],
        cwd=tmp_path, capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT)
    assert result.returncode == 0, result.stderr[-5000:]
    assert 'PciPassthroughFilter added' in result.stderr
    assert 'GPUs requested / placed / refused' in result.stdout
    with open(placements, newline='') as stream:
        chosen = {row['vm_id']: row['host'] for row in csv.DictReader(stream)}
    assert set(chosen) == set(pods)
    gpu_nodes = {name: gpus for name, _, _, gpus, _ in NODES if gpus}
    for name, node in chosen.items():
        if pods[name]['num_gpu'] and node:
            assert node in gpu_nodes, (name, node)
    peaks = _max_gpus_in_use(chosen, pods)
    assert peaks and all(peak <= gpu_nodes[node]
                         for node, peak in peaks.items()), peaks
    summary = json.loads(output.read_text())
    assert summary['settings']['fleet_nodes'] == len(NODES)
    assert summary['errors'] == 0
    figures = summary['gpus']
    asked = sum(pod['num_gpu'] for pod in pods.values())
    assert figures['total'] == 8 and figures['requested'] == asked
    assert figures['placed'] + figures['refused'] == asked
    assert figures['refused'] > 0 and summary['no_valid_host'] > 0
    assert figures['in_use']['peak'] <= 8 and figures['in_use']['end'] == 0
    # Pods without GPUs all fit.
    assert all(node for name, node in chosen.items()
               if not pods[name]['num_gpu'])
    sharing = figures['sharing']
    assert sharing['shared_vms'] == sum(
        1 for pod in pods.values() if 0 < pod['gpu_milli'] < 1000)
    assert sharing['gpu_milli_overstated'] == 500 * sharing['shared_vms']
    for policy in ('first-fit', 'best-fit'):
        assert summary['reference_runs'][policy]['gpus']['in_use'][
            'peak'] <= 8
