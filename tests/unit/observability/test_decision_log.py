"""One INFO line per select_destinations call, through the endpoint on a
real SQLite database: the request id, each instance with its host, node
and alternates, the time; NoValidHost with its reason; no refusal line
for a request that was met, no ``None:None`` destination line."""

import logging
import re
import uuid

import oslo_messaging as messaging
import pytest

from scheduler import context as scheduler_context
from scheduler.db import source
from scheduler.objects import cell_mapping
from scheduler.objects import instance_group
from scheduler.objects import request_spec
from scheduler.server import manager
from scheduler_tools import seed

SELECTED = re.compile(
    r'Selected destinations for request (\S+) in ([\d.]+) ms: (.*)$')
ITEM = re.compile(r'(\S+) on ([^:]+):(\S+) \((\d+) alternates\)')


@pytest.fixture
def endpoint(tmp_path, conf):
    conf.set_override('enabled_filters', [
        'RamFilter', 'ComputeFilter', 'ServerGroupAntiAffinityFilter'],
        group='filter_scheduler')
    conf.set_override('weight_classes', ['RAMWeigher'],
                      group='filter_scheduler')
    conf.set_override('max_attempts', 3, group='scheduler')
    ctx = seed.use_database('sqlite:///%s' % (tmp_path / 'log.sqlite'))
    for name, memory_mb in (('h1', 4096), ('h2', 8192), ('h3', 2048)):
        seed.add_compute(ctx, name, memory_mb=memory_mb)
    context = scheduler_context.RequestContext(
        request_id='req-4d6b1c3e-0000-4000-8000-000000000001',
        is_admin=True, overwrite=False)
    return context, manager.SchedulerManager(ctx)


def _lines(caplog, pattern):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.INFO and pattern in r.getMessage()]


def test_one_line_names_each_instance_its_host_and_alternates(endpoint,
                                                              caplog):
    context, mgr = endpoint
    uuids = [str(uuid.uuid4()) for _ in range(2)]
    with caplog.at_level(logging.INFO):
        answer = mgr.select_destinations(
            context, spec_obj=seed.make_spec(num_instances=2,
                                             instance_uuid=uuids[0],
                                             memory_mb=1024),
            instance_uuids=uuids, return_objects=True,
            return_alternates=True)
    [line] = _lines(caplog, 'Selected destinations')
    request_id, ms, items = SELECTED.match(line).groups()
    assert request_id == context.request_id
    assert float(ms) > 0
    logged = [ITEM.match(item).groups() for item in items.split(', ')]
    assert logged == [
        (instance, picks[0].service_host, picks[0].nodename,
         str(len(picks) - 1))
        for instance, picks in zip(uuids, answer, strict=True)]
    assert [len(picks) for picks in answer] == [3, 3]
    assert not _lines(caplog, 'Filtering removed all hosts')


def test_no_refusal_line_when_the_last_instance_took_the_last_host(
        endpoint, caplog):
    """Anti-affinity over three hosts, three instances with alternates:
    every host is chosen, none is left to be an alternate; the request
    was met, so nothing says the filters removed every host."""
    context, mgr = endpoint
    uuids = [str(uuid.uuid4()) for _ in range(3)]
    group = instance_group.InstanceGroup(
        uuid=str(uuid.uuid4()), policies=['anti-affinity'],
        members=list(uuids), hosts=[])
    with caplog.at_level(logging.INFO):
        answer = mgr.select_destinations(
            context, spec_obj=seed.make_spec(
                num_instances=3, instance_uuid=uuids[0], memory_mb=512,
                instance_group=group),
            instance_uuids=uuids, return_objects=True,
            return_alternates=True)
    assert sorted(picks[0].service_host for picks in answer) == [
        'h1', 'h2', 'h3']
    assert not _lines(caplog, 'Filtering removed all hosts')
    assert not _lines(caplog, 'returned 0 hosts')
    [line] = _lines(caplog, 'Selected destinations')
    assert line.count('(0 alternates)') == 3


def test_no_valid_host_is_one_line_with_the_reason(endpoint, caplog):
    context, mgr = endpoint
    instance = str(uuid.uuid4())
    with caplog.at_level(logging.INFO), \
            pytest.raises(messaging.ExpectedException):
        mgr.select_destinations(
            context, spec_obj=seed.make_spec(instance_uuid=instance,
                                             memory_mb=65536),
            instance_uuids=[instance], return_objects=True)
    [line] = _lines(caplog, 'No valid host for request')
    assert line.startswith('No valid host for request %s in '
                           % context.request_id)
    assert line.endswith('ms, instances %s: No valid host was found. '
                         'There are not enough hosts available.'
                         % instance)
    # Nova's line naming the filter that left no host.
    [refusal] = _lines(caplog, 'Filtering removed all hosts')
    assert "instance ID '%s'" % instance in refusal
    assert '0/3 hosts available: 3 ClaimCapacityFilter' in refusal
    assert not _lines(caplog, 'Selected destinations')


def test_no_destination_line_without_a_requested_host(endpoint, caplog):
    """A move names its cell in ``requested_destination`` (Nova since
    Pike), not a host: nothing about a ``None:None`` destination."""
    context, mgr = endpoint
    spec = seed.make_spec(memory_mb=512)
    spec.requested_destination = request_spec.Destination(
        cell=cell_mapping.CellMapping(uuid=source.standalone_cell_uuid()))
    with caplog.at_level(logging.INFO):
        mgr.select_destinations(context, spec_obj=spec,
                                return_objects=True)
    assert _lines(caplog, 'Selected destinations')
    assert not _lines(caplog, 'None:None')
    assert not _lines(caplog, 'Requested destination')


def test_a_requested_host_is_logged(endpoint, caplog):
    context, mgr = endpoint
    spec = seed.make_spec(memory_mb=512)
    spec.requested_destination = request_spec.Destination(host='h1')
    with caplog.at_level(logging.INFO):
        mgr.select_destinations(context, spec_obj=spec,
                                return_objects=True)
    assert _lines(caplog, 'Requested destination h1:None matched 1 node')


class _Untouchable:
    """A value whose every attribute read fails the test."""

    def __getattr__(self, name):
        raise AssertionError('read %s with INFO off' % name)


def test_nothing_is_formatted_when_info_is_off(caplog):
    from scheduler.observability import decision_log

    caplog.set_level(logging.WARNING, logger=decision_log.__name__)
    spec = _Untouchable()
    decision_log.selected(None, spec, None, [[_Untouchable()]], 0.001)
    decision_log.refused(None, spec, None, 'reason', 0.001)
    assert caplog.records == []
