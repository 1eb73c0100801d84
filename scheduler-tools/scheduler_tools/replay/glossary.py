"""The terms of the replay's table, each with its definition.

``TERMS`` is the one list: ``scheduler-replay --help`` ends with it
(``epilog``), docs/tools.rst gives the same definitions, and every row
of the table (``report.table_rows``) starts with one of the terms (the
unit tests hold both to it).  A row's label adds which figures it shows
(e.g. "peak / mean"): *peak* is the moment the fleet is fullest (the
most hosts in use, then the most RAM used); *mean* is weighted by trace
time over the arrival window, from the first arrival to the last.
"""

TERMS: tuple[tuple[str, str], ...] = (
    ('Requests',
     'select_destinations calls sent: the VMs of one project and one size '
     'arriving in the same --group-window bin form one multi-instance '
     'request, as a tenant booting several servers at once sends.'),
    ('Instances requested',
     'VMs asked for, in every request.'),
    ('Instances placed',
     'VMs that got a host.'),
    ('NoValidHost',
     'requests the scheduler refused (no hosts for every instance of the '
     'request: all or none), and their instances.'),
    ('Other errors',
     'calls that failed otherwise (time-outs, remote errors).'),
    ('Decision latency',
     'the wall time of one select_destinations call at the caller, RPC '
     'round trip included.'),
    ('Decisions per second',
     'calls divided by the time spent in them.'),
    ('Wall time',
     'how long the replay took, in seconds of real time.'),
    ('VMs per second',
     'instances requested divided by the wall time.'),
    ('Allocation ratios',
     'what the scheduler multiplies each node\'s vCPUs, RAM and disk by '
     '(the node\'s own ratio, else the [DEFAULT] option of that name, '
     'else that name with initial in front, as Nova resolves them).'),
    ('Lower bound',
     'the fewest nodes that could hold the running VMs at once, resource '
     'by resource, however the VMs were split: no placement can use '
     'fewer hosts.  The table\'s bound counts the VMs the scheduler '
     'placed; the line printed before the replay gives the bound of '
     'every VM of the trace, to size a fleet by.'),
    ('Trace time replayed',
     'hours of trace time from the first arrival to the last departure '
     'replayed, against the arrival window.'),
    ('Fleet size',
     'compute nodes in the fleet.'),
    ('Hosts in use',
     'nodes running at least one VM.'),
    ('Hosts in use / bound',
     'peak hosts in use over the peak bound, and mean over mean: 1.0 is '
     'perfect packing.'),
    ('CPU utilisation', 'vCPUs used over vCPUs x allocation ratio.'),
    ('RAM utilisation', 'RAM used over RAM x allocation ratio.'),
    ('CPU / RAM utilisation', 'the same over every node of the fleet.'),
    ('Stranded',
     'on each host in use, its free capacity times the share of the '
     'trace\'s instances whose size does not fit in that free room: '
     'capacity that VMs of the trace\'s mix could not use.'),
    ('Free where no size fits',
     'the free capacity of hosts in use where no size of the trace fits '
     'at all.'),
    ('Fleet free at NoValidHost',
     'the whole fleet\'s free capacity when a request was refused, the '
     'median over refusals: room there was, but split over nodes.'),
    ('GPUs',
     'whole GPUs the instances asked for, got and did not get, and in use '
     'against the fleet\'s GPUs (shown when the trace or the fleet has '
     'any).'),
    ('Shared-GPU VMs',
     'VMs whose source wanted part of one GPU; Nova cannot ask for part '
     'of a device, so each asks a whole GPU: the GPU thousandths they '
     'wanted and those asked beyond them.'),
    ('Nodes one instance fits at NoValidHost',
     'how many nodes could still take one instance of the refused size '
     '(a request of several instances may need more).'),
)


def term_of(label: str) -> str | None:
    """The longest term ``label`` starts with, or None."""
    matches = [term for term, _ in TERMS if label.startswith(term)]
    return max(matches, key=len) if matches else None


def epilog() -> str:
    """The glossary as the paragraph ``--help`` ends with."""
    return 'Terms of the table: ' + ' '.join(
        '%s: %s' % (term, definition) for term, definition in TERMS)
