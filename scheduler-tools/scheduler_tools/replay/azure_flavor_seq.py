"""The Azure 2017 VM trace as a flavor sequence, read into trace VMs.

Bergsma et al. ("Generating Complex, Realistic Cloud Workloads using
Recurrent Neural Networks", SOSP'21) rewrote the Azure V1 VM table
(Cortez et al., "Resource Central", SOSP'17; CC BY 4.0) as sequences.
A folder of that format holds:

``flav_map.txt``
    Lines ``<vcpus>,<memory GB> <letter>``: the Azure size each flavor
    letter stands for, e.g. ``2,3.5 g``.
``<split>.txt`` (e.g. ``v1.test.txt``), the flavor sequence
    One line per 5-minute bin, ``<t> <items>``: ``t`` the bin's start in
    seconds, the items comma-separated: a flavor letter per VM, and
    ``|`` closing a tenant batch (the VMs one tenant asked for in that
    bin).
``<split>.c<cutoff>.txt`` (e.g. ``v1.test.c2591400.txt``), the durations
    The same lines, one token per item: ``U<k>`` the VM ended before the
    cut-off with a lifetime in bin ``k``, ``C<k>`` it was still running
    at the cut-off, having lived bin ``k`` so far; ``|`` where the flavor
    sequence has one.
``<name>.interval_map.txt``
    Lines ``<seconds> <bin>``: each lifetime in 5-minute steps and its
    bin; a line stands for the lifetimes ``[seconds, seconds + 300)``.

The VMs (``read_vms``), in sequence order:

* ``vm_id`` ``azure-<n>`` and ``project_id`` ``tenant-<n>``, one per
  batch, both numbered from 0 in order (a batch's VMs of one flavor
  become one multi-instance request, ``trace.group_requests``);
* ``arrival_s``: the bin's start less the first bin's; the ``n`` VMs of a
  bin are spread evenly over its 300 seconds keeping their order, the
  ``i``-th (from 0) at ``300 i / n`` into it, rounded to 0.1 s;
* ``lifetime_s``: ``U<k>``: the midpoint of bin ``k``, halfway between
  its smallest ``seconds`` and its largest ``seconds + 300``; ``C<k>``:
  none (never deleted within the trace);
* ``vcpus`` and ``memory_mb``: the letter's size, GB counted as Azure
  counts them, 1024 MiB each (1.75 GB = 1792 MiB); no disk.

These are the rows of the trace CSV the same split was published as.
"""

import itertools
import os
import re

from scheduler_tools.replay.trace import DEFAULT_BIN_S
from scheduler_tools.replay.trace import VM
from scheduler_tools.replay.trace import TraceError

FLAVOR_MAP = 'flav_map.txt'
INTERVAL_MAP_SUFFIX = '.interval_map.txt'
BATCH_END = '|'
MIB_PER_GB = 1024
STEP_S = 300            # the interval map's lifetime step
ARRIVAL_DECIMALS = 1    # arrival times are rounded to 0.1 s
_DURATIONS = re.compile(r'^(?P<split>.+)\.c\d+\.txt$')
_DURATION_TOKEN = re.compile(r'^(?P<kind>[UC])(?P<bin>\d+)$')


def _fail(path, line, message):
    return TraceError('%s:%d: %s' % (path, line, message))


def _lines(path):
    """``(line number, stripped line)`` of the non-empty lines."""
    with open(path, encoding='utf-8') as stream:
        for number, text in enumerate(stream, start=1):
            text = text.strip()
            if text:
                yield number, text


# ------------------------------------------------------------------ maps --

def read_flavor_map(path):
    """``{letter: (vcpus, memory_mb)}`` of a ``flav_map.txt``.

    :raises TraceError: a line that is not ``<vcpus>,<GB> <letter>``.
    """
    flavors = {}
    for line, text in _lines(path):
        try:
            size, letter = text.split()
            vcpus, memory_gb = size.split(',')
            flavors[letter] = (int(vcpus),
                               round(float(memory_gb) * MIB_PER_GB))
        except ValueError:
            raise _fail(path, line, 'not "<vcpus>,<memory GB> <letter>": '
                        '%r' % text) from None
    return flavors


def read_interval_map(path):
    """``{bin: lifetime_s}`` of an interval map: each bin's midpoint
    (see the module docstring), in seconds.

    :raises TraceError: a line that is not ``<seconds> <bin>``.
    """
    bounds = {}
    for line, text in _lines(path):
        try:
            seconds, number = (int(value) for value in text.split())
        except ValueError:
            raise _fail(path, line, 'not "<seconds> <bin>": %r'
                        % text) from None
        low, high = bounds.get(number, (seconds, seconds))
        bounds[number] = (min(low, seconds), max(high, seconds))
    return {number: (low + high + STEP_S) / 2.0
            for number, (low, high) in bounds.items()}


# ---------------------------------------------------------------- folder --

def find_files(path):
    """``(sequence, durations, flavor map, interval map)`` paths of the
    folder ``path``, or of the flavor sequence file ``path`` (the other
    files next to it).

    :raises TraceError: a file is missing, or a folder holds several
        splits (give the sequence file then).
    """
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    names = sorted(os.listdir(folder))
    splits = [match.group('split') for match in map(_DURATIONS.match, names)
              if match and match.group('split') + '.txt' in names]
    if not os.path.isdir(path):
        wanted = os.path.basename(path)[:-len('.txt')]
        splits = [split for split in splits if split == wanted]
    maps = [name for name in names if name.endswith(INTERVAL_MAP_SUFFIX)]
    if len(splits) != 1 or len(maps) != 1 or FLAVOR_MAP not in names:
        raise TraceError(
            '%s: an Azure flavor sequence needs %s, one *%s and one '
            '<split>.txt with its <split>.c<cutoff>.txt (found %d '
            'split(s): give the <split>.txt file to choose one)'
            % (path, FLAVOR_MAP, INTERVAL_MAP_SUFFIX, len(splits)))
    durations = next(name for name in names
                     if _DURATIONS.match(name) and
                     _DURATIONS.match(name).group('split') == splits[0])
    return tuple(os.path.join(folder, name) for name in (
        splits[0] + '.txt', durations, FLAVOR_MAP, maps[0]))


def _split_line(path, line, text):
    """``(t, items)`` of a sequence line."""
    head, _, rest = text.partition(' ')
    try:
        start = int(head)
    except ValueError:
        raise _fail(path, line, 'the bin time %r is not an integer'
                    % head) from None
    return start, [item.strip() for item in rest.split(',') if item.strip()]


def _bins(sequence, durations):
    """``(line, t, flavor items, duration items)`` per bin, the two files
    read together.

    :raises TraceError: their lines do not match.
    """
    with open(sequence, encoding='utf-8') as flavors, \
            open(durations, encoding='utf-8') as lifetimes:
        for line, (text, other) in enumerate(
                itertools.zip_longest(flavors, lifetimes), start=1):
            if text is None or other is None:
                raise _fail(durations, line, 'one of it and %s ends before '
                            'the other' % os.path.basename(sequence))
            start, items = _split_line(sequence, line, text.strip())
            other_start, other_items = _split_line(durations, line,
                                                   other.strip())
            if other_start != start or len(other_items) != len(items):
                raise _fail(durations, line, 'does not match line %d of '
                            '%s (bin %d, %d items)' % (
                                line, os.path.basename(sequence), start,
                                len(items)))
            yield line, start, items, other_items


def _lifetime(token, lifetimes, path, line):
    match = _DURATION_TOKEN.match(token)
    if not match or int(match.group('bin')) not in lifetimes:
        raise _fail(path, line, 'duration %r is not U<bin> or C<bin> of '
                    'the interval map' % token)
    if match.group('kind') == 'C':
        return None
    return lifetimes[int(match.group('bin'))]


def iter_vms(path, limit=None):
    """Yield the VMs of the flavor-sequence folder (or sequence file)
    ``path`` in sequence order (arrival order), at most ``limit``.

    :raises TraceError: a missing file, or a malformed line (its file and
        line number in the message).
    """
    sequence, durations, flavor_map, interval_map = find_files(path)
    flavors = read_flavor_map(flavor_map)
    lifetimes = read_interval_map(interval_map)
    count = batch = 0
    first = None
    for line, start, items, tokens in _bins(sequence, durations):
        first = start if first is None else first
        in_bin = max(1, sum(item != BATCH_END for item in items))
        position = 0
        for item, token in zip(items, tokens, strict=True):
            if (item == BATCH_END) != (token == BATCH_END):
                raise _fail(durations, line, 'a batch ends where %s has '
                            'none' % os.path.basename(sequence))
            if item == BATCH_END:
                batch += 1
                continue
            if limit is not None and count >= limit:
                return
            if item not in flavors:
                raise _fail(sequence, line, 'flavor %r is not in %s'
                            % (item, FLAVOR_MAP))
            vcpus, memory_mb = flavors[item]
            yield VM('azure-%d' % count,
                     round(start - first + DEFAULT_BIN_S * position / in_bin,
                           ARRIVAL_DECIMALS),
                     _lifetime(token, lifetimes, durations, line),
                     vcpus, memory_mb, project_id='tenant-%d' % batch)
            count += 1
            position += 1
        if items and items[-1] != BATCH_END:
            batch += 1      # a line's last batch ends with the line
