"""The Alibaba GPU cluster trace, read into trace VMs and a fleet.

Alibaba's ``cluster-trace-gpu-v2023`` ("openb"; Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC'23) is a real node list and the pods asked
of it.  A folder of that format holds ``NODE_LIST`` and the pod list
``DEFAULT_POD_LIST`` (another pod list of the same columns is read when
its file is given instead of the folder).

Node list columns, one node per row: ``sn`` (its name), ``cpu_milli``
(thousandths of a CPU), ``memory_mib``, ``gpu`` (GPUs, 0 for none) and
``model`` (the GPU model, empty without GPUs).  Each node is a fleet
node (``read_fleet``): host and node name ``sn``, ``cpu_milli / 1000``
vCPUs (whole CPUs, rounded down), ``memory_mib`` MiB, no disk (the
source has none and no pod asks any), ``gpu`` GPUs of ``model``.

Pod list columns, one pod per row: ``name``, ``cpu_milli``,
``memory_mib``, ``num_gpu`` (whole GPUs), ``gpu_milli`` (for a one-GPU
pod, the thousandths of that GPU it wants: below 1000 it shares the
GPU), ``gpu_spec`` (the GPU models allowed, ``|``-separated; empty: any),
``qos``, ``pod_phase``, ``creation_time``, ``deletion_time`` and
``scheduled_time`` (seconds from the trace's start).  Each pod is a VM
(``iter_vms``), whatever its final phase (Pending and Failed pods were
real requests too): ``vm_id`` its name, ``arrival_s`` its creation,
``lifetime_s`` deletion less creation (the pods still running when the
trace ends are deleted at its end, as the source records them),
``vcpus`` ``cpu_milli / 1000`` rounded up (Nova has whole vCPUs),
``memory_mb`` ``memory_mib``, ``gpus`` ``num_gpu``, and for a one-GPU
pod ``gpu_milli``.  Pods have no project, so each is a request of its
own.  A pod restricted to some GPU models (a ``gpu_spec``) is refused:
the replay's GPU alias matches any model (``gpus``).
"""

import math
import os

from scheduler_tools.replay.trace import VM
from scheduler_tools.replay.trace import WHOLE_GPU_MILLI
from scheduler_tools.replay.trace import TraceError
from scheduler_tools.replay.trace import csv_rows

NODE_LIST = 'openb_node_list_all_node.csv'
DEFAULT_POD_LIST = 'openb_pod_list_default.csv'
NODE_COLUMNS = ('sn', 'cpu_milli', 'memory_mib', 'gpu', 'model')
POD_COLUMNS = ('name', 'cpu_milli', 'memory_mib', 'num_gpu', 'gpu_milli',
               'gpu_spec', 'creation_time', 'deletion_time')
MILLI = 1000


def pod_list_path(path):
    """The pod list of the folder (or pod list file) ``path``."""
    if os.path.isdir(path):
        return os.path.join(path, DEFAULT_POD_LIST)
    return path


def node_list_path(path):
    """The node list next to the pod list ``path`` (or in the folder)."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    return os.path.join(folder, NODE_LIST)


def has_pod_columns(fieldnames):
    """Whether a CSV header is a pod list's."""
    return set(POD_COLUMNS) <= set(fieldnames or ())


def _integer(row, name, path, line, error):
    text = (row.get(name) or '').strip()
    try:
        value = int(text)
    except ValueError:
        raise error('%s:%d: %s %r is not an integer'
                    % (path, line, name, text)) from None
    if value < 0:
        raise error('%s:%d: %s %r is negative' % (path, line, name, text))
    return value


# ------------------------------------------------------------------ pods --

def parse_pod(row, path='', line=0):
    """The VM of a pod list row (see the module docstring).

    :raises TraceError: a bad value (file and line in the message).
    """
    def number(name):
        return _integer(row, name, path, line, TraceError)

    where = '%s:%d' % (path, line)
    if (row.get('gpu_spec') or '').strip():
        raise TraceError('%s: gpu_spec %r: pods restricted to GPU models '
                         'are not supported (any model only)'
                         % (where, row['gpu_spec']))
    created, deleted = number('creation_time'), number('deletion_time')
    if deleted < created:
        raise TraceError('%s: deletion_time %d is before creation_time %d'
                         % (where, deleted, created))
    gpus, milli = number('num_gpu'), number('gpu_milli')
    if gpus == 1 and not 0 < milli <= WHOLE_GPU_MILLI:
        raise TraceError('%s: gpu_milli %d of a one-GPU pod is not 1-%d'
                         % (where, milli, WHOLE_GPU_MILLI))
    return VM(vm_id=(row.get('name') or '').strip() or 'pod-%d' % line,
              arrival_s=float(created), lifetime_s=float(deleted - created),
              vcpus=math.ceil(number('cpu_milli') / MILLI),
              memory_mb=number('memory_mib'), gpus=gpus,
              gpu_milli=milli if gpus == 1 else None)


def iter_vms(path, limit=None):
    """Yield the VMs of the pod list of ``path`` (a folder or a pod list
    file) in file order, at most ``limit``.

    :raises TraceError: a missing file or column, or a bad value.
    """
    pods = pod_list_path(path)
    for count, (line, row) in enumerate(csv_rows(pods, POD_COLUMNS)):
        if limit is not None and count >= limit:
            return
        yield parse_pod(row, pods, line)


# ----------------------------------------------------------------- nodes --

def parse_node(row, path='', line=0):
    """The HostSpec of a node list row (see the module docstring).

    :raises FleetError: a bad value, or GPUs without a model.
    """
    # Imported here: scheduler-replay --help loads this module, not seed.
    from scheduler_tools.seed import FleetError
    from scheduler_tools.seed import HostSpec

    def number(name):
        return _integer(row, name, path, line, FleetError)

    name = (row.get('sn') or '').strip()
    if not name:
        raise FleetError('%s:%d: sn is empty' % (path, line))
    gpus = number('gpu')
    model = (row.get('model') or '').strip() or None
    if gpus and model is None:
        raise FleetError('%s:%d: %d GPUs of no model' % (path, line, gpus))
    return HostSpec(name, name, number('cpu_milli') // MILLI,
                    number('memory_mib'), 0, gpus=gpus,
                    gpu_model=model if gpus else None)


def read_fleet(path):
    """The HostSpecs of the node list next to the pod list ``path`` (or
    in the folder ``path``), in file order.

    :raises FleetError: a missing file or column, a bad value, a node
        listed twice.
    """
    # Imported here: scheduler-replay --help loads this module, not seed.
    from scheduler_tools.seed import FleetError
    from scheduler_tools.seed import check_fleet

    nodes = node_list_path(path)
    hosts = [parse_node(row, nodes, line)
             for line, row in csv_rows(nodes, NODE_COLUMNS, FleetError)]
    check_fleet(hosts)
    return hosts
