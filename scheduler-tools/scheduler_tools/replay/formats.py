"""Trace formats: which one a path holds, its VMs and its own fleet.

``FORMATS``:

``csv``
    The replay's trace CSV, plain or ``.gz`` (``trace``).
``azure-flavor-seq``
    The Azure 2017 trace as a flavor sequence: a folder with
    ``flav_map.txt``, or its ``<split>.txt`` sequence file
    (``azure_flavor_seq``).
``alibaba-gpu``
    The Alibaba GPU cluster trace: a folder with its node list, or one
    of its pod list CSVs (``alibaba_gpu``).  It brings its fleet: the
    node list.

``detect_format`` tells them apart by the path: a folder by the files it
holds, a ``.txt`` file by a ``flav_map.txt`` next to it, a CSV by its
header (a pod list's columns, else a trace CSV).
"""

import os

from scheduler_tools.replay import alibaba_gpu
from scheduler_tools.replay import azure_flavor_seq
from scheduler_tools.replay import trace
from scheduler_tools.replay.trace import TraceError

CSV = 'csv'
AZURE_FLAVOR_SEQ = 'azure-flavor-seq'
ALIBABA_GPU = 'alibaba-gpu'
FORMATS = (CSV, AZURE_FLAVOR_SEQ, ALIBABA_GPU)

_READERS = {CSV: trace.iter_trace, AZURE_FLAVOR_SEQ: azure_flavor_seq.iter_vms,
            ALIBABA_GPU: alibaba_gpu.iter_vms}


def _csv_header(path):
    """The column names of the CSV ``path`` (plain or ``.gz``)."""
    with trace.open_text(path) as stream:
        return [name.strip() for name in stream.readline().split(',')]


def detect_format(path):
    """The FORMATS name of the trace at ``path`` (see the module).

    :raises TraceError: no such path, or none of the formats.
    """
    path = str(path)
    if os.path.isdir(path):
        names = set(os.listdir(path))
        if azure_flavor_seq.FLAVOR_MAP in names:
            return AZURE_FLAVOR_SEQ
        if alibaba_gpu.NODE_LIST in names:
            return ALIBABA_GPU
        raise TraceError('%s: a folder of no known trace format (one with '
                         '%s or %s)' % (path, azure_flavor_seq.FLAVOR_MAP,
                                        alibaba_gpu.NODE_LIST))
    if not os.path.isfile(path):
        raise TraceError('%s: no such file or folder' % path)
    if path.endswith('.txt'):
        return AZURE_FLAVOR_SEQ
    if alibaba_gpu.has_pod_columns(_csv_header(path)):
        return ALIBABA_GPU
    return CSV


def iter_vms(path, fmt=None, limit=None):
    """Yield the VMs of the trace ``path`` in its order, at most
    ``limit``; ``fmt`` a FORMATS name, None to detect it."""
    return _READERS[fmt or detect_format(path)](str(path), limit)


def read_vms(path, fmt=None, limit=None):
    """The VMs of ``path`` (see ``iter_vms``), sorted by arrival time;
    VMs arriving at the same time keep their order."""
    return trace.by_arrival(iter_vms(path, fmt, limit))


def trace_fleet(path, fmt=None):
    """The fleet the trace ``path`` brings (HostSpecs: the Alibaba node
    list), or None when it brings none."""
    if (fmt or detect_format(path)) == ALIBABA_GPU:
        return alibaba_gpu.read_fleet(str(path))
    return None
