"""VM traces: reading them, grouping VMs into requests, ordering events.

A trace is a CSV file (plain, or gzip-compressed when the name ends in
``.gz``) with one VM per row and a header line.  Columns:

``vm_id``
    Any unique name of the VM.
``arrival_s``
    When the VM was asked for, in seconds from the start of the trace.
``lifetime_s``
    How long it lived, in seconds; empty when it was never deleted.
``vcpus``, ``memory_mb``
    Its size: virtual CPUs, RAM in MiB.
``disk_gb`` (optional)
    Root disk in GiB (0 when missing or empty).
``project_id`` (optional)
    The tenant; VMs without one are never grouped.
``availability_zone`` (optional)
    The zone asked for (none when missing or empty).
``flavor`` (optional)
    A flavor name (default ``<vcpus>vcpu-<memory_mb>mb-<disk_gb>gb``,
    with ``-<gpus>gpu`` added for a VM with GPUs).
``gpus`` (optional)
    Whole GPUs (PCI passthrough devices) the VM asks for, 0 when missing
    or empty; ``scheduler_tools.replay.gpus`` says how they are asked.
``gpu_milli`` (optional)
    For a VM with one GPU, the thousandths of that GPU the source
    workload wanted when it shared one (1-1000; empty: the whole GPU).
    Nova cannot ask for part of a device: the VM still asks one whole
    GPU, and the report counts what that overstates.

Other columns are ignored.
``scheduler_tools/replay/data/azure-v1-slice.csv.gz`` is such a file;
``formats`` reads the foreign formats into the same VMs.

``group_requests`` turns VMs into scheduling requests: consecutive rows of
one project, with one size, zone and flavor name, arriving in the same
bin of ``bin_s`` seconds (5 minutes by default, the resolution of the
Azure trace) form one multi-instance request, as a tenant booting several
servers at once would send.  A request arrives at the arrival time of its
first VM, and each of its VMs lives ``lifetime_s`` from then.

``EventQueue`` orders the replay: arrivals and deletions by time, and at
equal times deletions first (so a VM leaving frees its room for one
arriving at the same second), then in the order they were pushed.
"""

import csv
import dataclasses
import gzip
import heapq
import io
import math

REQUIRED_COLUMNS = ('vm_id', 'arrival_s', 'lifetime_s', 'vcpus', 'memory_mb')
OPTIONAL_COLUMNS = ('disk_gb', 'project_id', 'availability_zone', 'flavor')
GPU_COLUMNS = ('gpus', 'gpu_milli')
# Thousandths of a whole GPU.
WHOLE_GPU_MILLI = 1000

# Grouping window of the Azure trace's arrival bins, in seconds.
DEFAULT_BIN_S = 300.0

# Event kinds; the smaller sorts first at equal times.
DELETION = 0
ARRIVAL = 1


class TraceError(ValueError):
    """The trace file cannot be read: a missing column or a bad value."""


@dataclasses.dataclass(frozen=True, slots=True)
class VM:
    """One row of a trace.  Times in seconds, RAM in MiB, disk in GiB;
    ``gpus`` whole GPUs, ``gpu_milli`` the thousandths of its one GPU a
    GPU-sharing source workload wanted (None: whole GPUs)."""

    vm_id: str
    arrival_s: float
    lifetime_s: float | None
    vcpus: int
    memory_mb: int
    disk_gb: int = 0
    project_id: str | None = None
    availability_zone: str | None = None
    flavor: str | None = None
    gpus: int = 0
    gpu_milli: int | None = None

    @property
    def size(self):
        """``(vcpus, memory_mb, disk_gb)``: what the flavor holds."""
        return (self.vcpus, self.memory_mb, self.disk_gb)

    @property
    def resources(self):
        """``(vcpus, memory_mb, disk_gb, gpus)``: the size and the GPUs,
        in ``capacity.RESOURCES`` order."""
        return (self.vcpus, self.memory_mb, self.disk_gb, self.gpus)

    @property
    def shares_gpu(self):
        """Whether the source wanted only part of its one GPU."""
        return (self.gpus == 1 and self.gpu_milli is not None and
                self.gpu_milli < WHOLE_GPU_MILLI)

    @property
    def flavor_name(self):
        """The trace's flavor name, else one made from the resources."""
        if self.flavor:
            return self.flavor
        name = '%dvcpu-%dmb-%dgb' % self.size
        return name + ('-%dgpu' % self.gpus if self.gpus else '')


@dataclasses.dataclass(slots=True)
class Request:
    """One ``select_destinations`` call: ``vms`` share size, GPUs,
    project, zone and flavor name; ``time_s`` is when it is sent (seconds)."""

    index: int
    time_s: float
    vms: list

    @property
    def first(self):
        return self.vms[0]

    @property
    def num_instances(self):
        return len(self.vms)


# ----------------------------------------------------------------- read --

def open_text(path):
    """Open ``path`` for reading text; ``.gz`` files are decompressed."""
    if str(path).endswith('.gz'):
        return io.TextIOWrapper(gzip.open(path, 'rb'), encoding='utf-8',
                                newline='')
    return open(path, encoding='utf-8', newline='')


def _optional(row, name):
    value = (row.get(name) or '').strip()
    return value or None


def _number(row, name, kind, line):
    text = (row.get(name) or '').strip()
    try:
        value = kind(text)
    except ValueError:
        raise TraceError('line %d: %s %r is not a number'
                         % (line, name, text)) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise TraceError('line %d: %s %r is not finite' % (line, name, text))
    if value < 0:
        raise TraceError('line %d: %s %r is negative' % (line, name, text))
    return value


def _optional_number(row, name, kind, line, default=None):
    if _optional(row, name) is None:
        return default
    return _number(row, name, kind, line)


def _gpu_milli(row, gpus, line):
    """The ``gpu_milli`` cell: None, or 1-1000 on a one-GPU VM."""
    milli = _optional_number(row, 'gpu_milli', int, line)
    if milli is None:
        return None
    if gpus != 1 or not 0 < milli <= WHOLE_GPU_MILLI:
        raise TraceError('line %d: gpu_milli %r needs gpus 1 and a value '
                         'from 1 to %d' % (line, milli, WHOLE_GPU_MILLI))
    return milli


def parse_vm(row, line=0):
    """Build a VM from a CSV row dict; ``line`` numbers error messages.

    :raises TraceError: a required value is missing or not a
        non-negative number.
    """
    vm_id = _optional(row, 'vm_id')
    if vm_id is None:
        raise TraceError('line %d: vm_id is empty' % line)
    gpus = _optional_number(row, 'gpus', int, line, 0)
    return VM(vm_id=vm_id,
              arrival_s=_number(row, 'arrival_s', float, line),
              lifetime_s=_optional_number(row, 'lifetime_s', float, line),
              vcpus=_number(row, 'vcpus', int, line),
              memory_mb=_number(row, 'memory_mb', int, line),
              disk_gb=_optional_number(row, 'disk_gb', int, line, 0),
              project_id=_optional(row, 'project_id'),
              availability_zone=_optional(row, 'availability_zone'),
              flavor=_optional(row, 'flavor'),
              gpus=gpus, gpu_milli=_gpu_milli(row, gpus, line))


def csv_rows(path, columns, error=TraceError):
    """Yield ``(line number, row dict)`` of the CSV file ``path`` (plain
    or ``.gz``) once its header is checked.

    :raises error: the header lacks one of ``columns``.
    :raises OSError: the file cannot be read.
    """
    with open_text(path) as stream:
        reader = csv.DictReader(stream)
        missing = [name for name in columns
                   if name not in (reader.fieldnames or ())]
        if missing:
            raise error('%s: missing column(s) %s'
                        % (path, ', '.join(missing)))
        for row in reader:
            yield reader.line_num, row


def iter_trace(path, limit=None):
    """Yield the VMs of the trace file ``path`` in file order, at most
    ``limit`` of them (all when None).  Reading stops at the limit, so
    the first VMs of a large file come quickly.

    :raises TraceError: a missing column or a bad value.
    """
    for count, (line, row) in enumerate(csv_rows(path, REQUIRED_COLUMNS)):
        if limit is not None and count >= limit:
            return
        yield parse_vm(row, line=line)


def by_arrival(vms):
    """``vms`` (an iterable of VMs) as a list sorted by arrival time;
    VMs arriving at the same time keep their order."""
    return sorted(vms, key=lambda vm: vm.arrival_s)


def read_trace(path, limit=None):
    """The VMs of ``path`` (see ``iter_trace``), sorted by arrival time;
    VMs arriving at the same time keep their file order."""
    return by_arrival(iter_trace(path, limit))


def write_trace(path, vms):
    """Write ``vms`` as a trace CSV with every column (the GPU columns
    only when a VM has GPUs; ``.gz`` to compress, with a zero timestamp
    so equal input gives equal bytes)."""
    vms = list(vms)
    with_gpus = any(vm.gpus for vm in vms)
    columns = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
    buffer = io.StringIO(newline='')
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow(columns + (GPU_COLUMNS if with_gpus else ()))
    for vm in vms:
        row = [vm.vm_id, repr(vm.arrival_s),
               '' if vm.lifetime_s is None else repr(vm.lifetime_s),
               vm.vcpus, vm.memory_mb, vm.disk_gb, vm.project_id or '',
               vm.availability_zone or '', vm.flavor or '']
        if with_gpus:
            row += [vm.gpus, '' if vm.gpu_milli is None else vm.gpu_milli]
        writer.writerow(row)
    data = buffer.getvalue().encode('utf-8')
    if str(path).endswith('.gz'):
        data = gzip.compress(data, mtime=0)
    with open(path, 'wb') as out:
        out.write(data)


# ---------------------------------------------------------------- group --

def _group_key(vm, bin_s):
    """What consecutive VMs must share to be one request; None: alone."""
    if vm.project_id is None or not bin_s:
        return None
    return (vm.project_id, vm.resources, vm.availability_zone,
            vm.flavor_name, math.floor(vm.arrival_s / bin_s))


def group_requests(vms, bin_s=DEFAULT_BIN_S):
    """Group consecutive ``vms`` into Requests (see the module doc).

    ``bin_s`` is the grouping window in seconds; 0 or None sends every VM
    alone.  Requests come in arrival order, indexed from 0.
    """
    requests = []
    last_key = None
    for vm in vms:
        key = _group_key(vm, bin_s)
        if key is not None and key == last_key:
            requests[-1].vms.append(vm)
        else:
            requests.append(Request(len(requests), vm.arrival_s, [vm]))
        last_key = key
    return requests


# --------------------------------------------------------------- events --

@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """``kind`` ARRIVAL (``payload`` a Request) or DELETION (``payload``
    whatever the replay pushed) at ``time_s`` seconds."""

    time_s: float
    kind: int
    payload: object


class EventQueue:
    """A time-ordered queue of Events: by time, deletions before arrivals
    at equal times, then first pushed first."""

    def __init__(self, requests=()):
        self._heap = []
        self._pushed = 0
        for request in requests:
            self.push_arrival(request)

    def _push(self, time_s, kind, payload):
        heapq.heappush(self._heap, (time_s, kind, self._pushed,
                                    Event(time_s, kind, payload)))
        self._pushed += 1

    def push_arrival(self, request):
        """Queue a Request at its ``time_s``."""
        self._push(request.time_s, ARRIVAL, request)

    def push_deletion(self, time_s, payload):
        """Queue the deletion of ``payload`` at ``time_s`` seconds."""
        self._push(time_s, DELETION, payload)

    def pop(self):
        """Remove and return the next Event (IndexError when empty)."""
        return heapq.heappop(self._heap)[-1]

    def peek(self):
        """The next Event, left in the queue, or None when empty."""
        return self._heap[0][-1] if self._heap else None

    def peek_time(self):
        """Time of the next Event, or None when empty."""
        return self._heap[0][0] if self._heap else None

    def __len__(self):
        return len(self._heap)
