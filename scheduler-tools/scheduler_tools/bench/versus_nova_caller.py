"""The versus-nova mode's caller: Nova's own client of a scheduler.

Run with the python of the Nova virtualenv (``python -I
versus_nova_caller.py NOVA_CONF``); it imports Nova and the standard
library only, never this repository (``VERSUS_NOVA_PATH``,
os.pathsep-separated, is appended to ``sys.path`` first: the benchmark
lends a PostgreSQL driver there when the venv has none).  ``NOVA_CONF``
names the RabbitMQ transport of the scheduler under test, Nova's API and
cell databases and the Placement.

One JSON request per line on stdin, one JSON answer per line on stdout
(``{"ok": result}`` or ``{"error": "..."}``), and during ``run`` also
``{"placed": [[node uuid, instance uuid, vcpus, memory_mb, root_gb],
...]}`` lines, one per answered request, for the benchmark's resource
tracker (logs go to stderr):

``run``    ``callers`` threads, each calling Nova's
           ``SchedulerQueryClient.select_destinations`` (Selection
           objects, alternates) in a loop with requests of ``instances``
           instances built as Nova's conductor builds them
           (``request_spec``; the flavors of ``flavors`` in turn), for
           ``duration`` seconds or ``max_calls`` calls; the calls in
           flight then get ``grace`` more seconds.  Answers the counts,
           the latencies (ms) of the answered calls and the instance
           uuids of every call (``consumers``).
``agree``  ``requests`` requests of ``instances`` instances (no new one
           after ``duration`` seconds, at least one), each
           decided by Nova 34's ``SchedulerManager`` in this process and
           then by the service over RPC, on the same state: each side's
           allocations are deleted after its decision and the chosen
           nodes report (``ComputeNode.save``) so that neither keeps its
           own consumption; answers the chosen hosts of both.
"""

import json
import os
import sys
import threading
import time
import traceback
import uuid

for _path in filter(None, os.environ.get('VERSUS_NOVA_PATH',
                                         '').split(os.pathsep)):
    sys.path.append(_path)

import oslo_messaging as messaging  # noqa: E402
from nova import config  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception as nova_exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import manager as scheduler_manager  # noqa: E402
from nova.scheduler.client import query  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.virt import hardware  # noqa: E402

OUT = threading.Lock()
STATE = {}
IMAGE = {'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6', 'name': 'cirros',
         'status': 'active', 'container_format': 'bare',
         'disk_format': 'qcow2', 'min_ram': 0, 'min_disk': 0,
         'size': 21430272, 'properties': {}}


def emit(message):
    with OUT:
        print(json.dumps(message), flush=True)


def context():
    return nova_context.RequestContext(user_id='bench-user',
                                       project_id='bench-project',
                                       is_admin=True)


def flavor(shape):
    vcpus, memory_mb, root_gb = shape
    return objects.Flavor(
        id=1, flavorid='bench-%d-%d-%d' % (vcpus, memory_mb, root_gb),
        name='bench', memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
        ephemeral_gb=0, swap=0, extra_specs={}, rxtx_factor=1.0,
        vcpu_weight=None, disabled=False, is_public=True, projects=[],
        description=None)


def request_spec(ctxt, shape, count):
    """A RequestSpec as Nova's conductor builds one for a boot of
    ``count`` instances of flavor ``shape`` (vcpus, MiB, GiB) from an
    image (not boot-from-volume)."""
    one = flavor(shape)
    image = objects.ImageMeta.from_dict(IMAGE)
    spec = objects.RequestSpec.from_components(
        ctxt, str(uuid.uuid4()), IMAGE, one,
        hardware.numa_get_constraints(one, image), None,
        {'scheduler_hints': {}}, None, None,
        security_groups=objects.SecurityGroupList(objects=[]),
        port_resource_requests=[])
    spec.num_instances = count
    spec.is_bfv = False
    spec.network_metadata = objects.NetworkMetadata(physnets=set(),
                                                    tunneled=False)
    return spec


def novalidhost(exc):
    if isinstance(exc, messaging.ExpectedException):
        exc = exc.exc_info[1]
    return (isinstance(exc, nova_exception.NoValidHost) or
            getattr(exc, 'exc_type', None) == 'NoValidHost')


def chosen(result, uuids, shape):
    """``[node uuid, instance uuid, vcpus, MiB, GiB]`` per instance."""
    return [[picks[0].compute_node_uuid, instance] + list(shape)
            for picks, instance in zip(result, uuids, strict=True)]


def op_run(ctxt, callers, instances, duration, max_calls, grace, flavors):
    client = STATE.setdefault('client', query.SchedulerQueryClient())
    tally = {'calls': 0, 'answered': 0, 'novalidhost': 0, 'errors': 0,
             'placed': 0, 'first_error': None, 'latencies_ms': [],
             'consumers': [], 'failed_consumers': []}
    lock = threading.Lock()
    started = time.monotonic()
    stop_at = started + duration

    def one(number):
        shape = flavors[number % len(flavors)]
        spec = request_spec(ctxt, shape, instances)
        uuids = [str(uuid.uuid4()) for _ in range(instances)]
        with lock:
            tally['consumers'].extend(uuids)
        began = time.monotonic()
        try:
            result = client.select_destinations(ctxt, spec, uuids, True,
                                                True)
        except Exception as exc:
            with lock:
                if novalidhost(exc):
                    tally['novalidhost'] += 1
                    tally['answered'] += 1
                    tally['latencies_ms'].append(
                        (time.monotonic() - began) * 1000.0)
                    return
                tally['errors'] += 1
                tally['failed_consumers'].extend(uuids)
                tally['first_error'] = tally['first_error'] or (
                    '%s: %s' % (type(exc).__name__, str(exc)[:300]))
            return
        took = (time.monotonic() - began) * 1000.0
        emit({'placed': chosen(result, uuids, shape)})
        with lock:
            tally['answered'] += 1
            tally['placed'] += len(result)
            tally['latencies_ms'].append(took)

    def caller():
        while time.monotonic() < stop_at:
            with lock:
                if tally['calls'] >= max_calls:
                    return
                tally['calls'] += 1
                number = tally['calls']
            one(number)

    threads = [threading.Thread(target=caller, daemon=True)
               for _ in range(callers)]
    for thread in threads:
        thread.start()
    deadline = stop_at + grace
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        tally['unfinished'] = sum(thread.is_alive() for thread in threads)
        tally['elapsed_s'] = time.monotonic() - started
        return dict(tally, latencies_ms=list(tally['latencies_ms']),
                    consumers=list(tally['consumers']),
                    failed_consumers=list(tally['failed_consumers']))


def _release(ctxt, uuids):
    for consumer in uuids:
        STATE['placement'].delete_allocation_for_instance(ctxt, consumer,
                                                          force=True)


def _report(ctxt, nodes):
    """The chosen nodes report as nova-compute's resource tracker does
    (``ComputeNode.save()``: a new ``updated_at``)."""
    for node in sorted(set(nodes)):
        compute = objects.ComputeNode.get_by_uuid(ctxt, node)
        compute.free_ram_mb = compute.free_ram_mb
        compute.save()


def _hosts(decide, uuids):
    try:
        return [picks[0].compute_node_uuid for picks in decide(uuids)]
    except Exception as exc:
        if novalidhost(exc):
            return []
        traceback.print_exc()
        return None


def _agree_one(ctxt, manager, client, shape, instances):
    """One request decided by Nova's manager, then by the service; each
    side's allocations deleted after its decision."""
    spec = request_spec(ctxt, shape, instances)
    nova_uuids = [str(uuid.uuid4()) for _ in range(instances)]
    nova = _hosts(lambda uuids: manager.select_destinations(
        ctxt, spec_obj=spec, instance_uuids=uuids, return_objects=True,
        return_alternates=True), nova_uuids)
    _release(ctxt, nova_uuids)
    ours_spec = request_spec(ctxt, shape, instances)
    ours_uuids = [str(uuid.uuid4()) for _ in range(instances)]
    ours = _hosts(lambda uuids: client.select_destinations(
        ctxt, ours_spec, uuids, True, True), ours_uuids)
    _release(ctxt, ours_uuids)
    return {'nova': nova, 'ours': ours}


def op_agree(ctxt, requests, instances, flavors, settle, duration):
    if 'manager' not in STATE:
        STATE['manager'] = scheduler_manager.SchedulerManager()
        STATE['placement'] = report.report_client_singleton()
    client = STATE.setdefault('client', query.SchedulerQueryClient())
    cells = [mapping for mapping in objects.CellMappingList.get_all(ctxt)
             if mapping.uuid != objects.CellMapping.CELL0_UUID]
    pairs = []
    stop_at = time.monotonic() + duration
    for number in range(requests):
        if pairs and time.monotonic() > stop_at:
            break
        pair = _agree_one(ctxt, STATE['manager'], client,
                          flavors[number % len(flavors)], instances)
        for mapping in cells:
            with nova_context.target_cell(ctxt, mapping) as cctxt:
                _report(cctxt, (pair['nova'] or []) + (pair['ours'] or []))
        pairs.append(pair)
        time.sleep(settle)
    return pairs


def serve():
    ctxt = context()
    emit({'ok': 'ready'})
    for line in sys.stdin:
        request = json.loads(line)
        op = globals()['op_' + request.pop('op')]
        try:
            answer = {'ok': op(ctxt, **request)}
        except Exception as exc:
            traceback.print_exc()
            answer = {'error': '%s: %s' % (type(exc).__name__, exc)}
        emit(answer)


if __name__ == '__main__':
    config.parse_args(['scheduler-bench-versus-nova'],
                      default_config_files=[sys.argv[1]])
    objects.register_all()
    serve()
