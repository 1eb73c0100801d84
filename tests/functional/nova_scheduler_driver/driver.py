"""Nova 34's own scheduler and Nova's client of this service, side by side.

Run with the python of the Nova virtualenv, never with this repository on
``sys.path``: it imports Nova only.  Usage: ``python driver.py NOVA_CONF``
(``NOVA_SCHEDULER_DRIVER_PATH``, os.pathsep-separated, is appended to
``sys.path`` first: the test lends a PostgreSQL driver there when the
venv has none).  ``NOVA_CONF`` names the Nova API and cell databases,
the RabbitMQ transport of the service under test, the test Placement and
the ``[filter_scheduler]`` / ``[scheduler]`` / ``[pci]`` options; both
schedulers read the same databases and the same Placement.

One JSON request per line on stdin, one JSON answer per line on stdout
(``{"ok": result}`` or ``{"error": "..."}``; logs go to stderr):

``start``   make Nova's ``nova.scheduler.manager.SchedulerManager`` (its
            HostManager reads the cells, aggregates and instances then:
            write the fleet first) and wrap its ``_get_sorted_hosts`` to
            record, per call, the hosts that passed the filters in weight
            order (``host_subset_size = 1`` and no shuffle, so the chosen
            one is the first).
``decide``  build one RequestSpec with Nova's objects (``spec``: flavor
            ``vcpus`` / ``memory_mb`` / ``root_gb`` / ``extra_specs``,
            ``image_properties``, ``availability_zone``, ``group`` (the
            uuid of an InstanceGroup of the API database: its hosts are
            filled by Nova's conductor helper ``setup_instance_group``),
            ``port_requests`` (request groups as Neutron's ports make them)
            and ``num_instances``);
            send a copy to the service under test with Nova's
            ``SchedulerQueryClient.select_destinations`` (objects and
            alternates), delete its allocations, then let Nova's
            ``SchedulerManager.select_destinations`` decide the other copy
            and delete those allocations too; the nodes chosen report
            (``_report``); after ``settle`` seconds it answers ``{"ours":
            outcome, "nova": outcome}``, an outcome being
            ``{"novalidhost": bool, "selections": [[{host, node, uuid,
            allocations}, ...] per instance], "error": "Class: message"
            (any other exception)}``, and for Nova ``"passed": [[host,
            ...] per call of _get_sorted_hosts]``, ``"survivors"``: per
            call, each passing host's allocation candidates that Nova's
            filters kept (their providers), ``"dropped"``: the hosts
            where a candidate filter dropped some candidates but not all,
            and
            ``"placement_errors"``: Placement's 5xx answers to
            ``GET /allocation_candidates``.
"""

import copy
import json
import os
import sys
import time
import traceback
import uuid

for _path in filter(None, os.environ.get('NOVA_SCHEDULER_DRIVER_PATH',
                                         '').split(os.pathsep)):
    sys.path.append(_path)

import nova.conf  # noqa: E402
import oslo_messaging as messaging  # noqa: E402
from nova import config  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception as nova_exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.pci import request as pci_request  # noqa: E402
from nova.scheduler import filters as scheduler_filters  # noqa: E402
from nova.scheduler import manager as scheduler_manager  # noqa: E402
from nova.scheduler import utils as scheduler_utils  # noqa: E402
from nova.scheduler.client import query  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.virt import hardware  # noqa: E402
from oslo_serialization import jsonutils  # noqa: E402

CONF = nova.conf.CONF
STATE = {}


def setup(conf_path):
    """Nova's start-up from ``conf_path``: configuration, RPC, objects."""
    config.parse_args(['nova-scheduler-parity'],
                      default_config_files=[conf_path])
    objects.register_all()


def context():
    return nova_context.RequestContext(user_id='user-1',
                                       project_id='project-1',
                                       is_admin=True)


def _flavor(spec):
    return objects.Flavor(
        id=1, flavorid='1', name='m1.parity',
        memory_mb=spec.get('memory_mb', 512), vcpus=spec.get('vcpus', 1),
        root_gb=spec.get('root_gb', 1), ephemeral_gb=0, swap=0,
        extra_specs=dict(spec.get('extra_specs', {})), rxtx_factor=1.0,
        vcpu_weight=None, disabled=False, is_public=True, projects=[],
        description=None)


def _image(spec):
    return {'id': '155d900f-4e14-4e4c-a73d-069cbf4541e6', 'name': 'image',
            'status': 'active', 'container_format': 'bare',
            'disk_format': 'qcow2', 'min_ram': 0, 'min_disk': 0,
            'size': 1024,
            'properties': dict(spec.get('image_properties', {}))}


def _port_groups(spec):
    return [objects.RequestGroup(
        use_same_provider=True, resources=dict(port['resources']),
        required_traits=set(port.get('required', [])),
        requester_id=port['requester_id'])
        for port in spec.get('port_requests', [])]


def request_spec(ctxt, spec):
    """A RequestSpec built as Nova's API and conductor build one."""
    instance_uuid = str(uuid.uuid4())
    flavor = _flavor(spec)
    image = _image(spec)
    numa = hardware.numa_get_constraints(
        flavor, objects.ImageMeta.from_dict(image))
    pci_requests = pci_request.get_pci_requests_from_flavor(flavor)
    pci_requests.instance_uuid = instance_uuid
    group = None
    if spec.get('group'):
        group = objects.InstanceGroup.get_by_uuid(ctxt, spec['group'])
    req = objects.RequestSpec.from_components(
        ctxt, instance_uuid, image, flavor, numa, pci_requests,
        {'scheduler_hints': {}}, group, spec.get('availability_zone'),
        security_groups=objects.SecurityGroupList(objects=[]),
        port_resource_requests=_port_groups(spec))
    req.num_instances = spec.get('num_instances', 1)
    req.is_bfv = False
    req.network_metadata = objects.NetworkMetadata(physnets=set(),
                                                   tunneled=False)
    scheduler_utils.setup_instance_group(ctxt, req)
    return req


def _selections(result):
    return [[{'host': sel.service_host, 'node': sel.nodename,
              'uuid': sel.compute_node_uuid,
              'allocations': sorted(jsonutils.loads(
                  sel.allocation_request)['allocations'])
              if sel.allocation_request else []}
             for sel in picks] for picks in result]


def _novalidhost(exc):
    """Whether ``exc`` is NoValidHost: from the service (Nova's client
    raises it, or a RemoteError naming it), or from Nova's manager called
    directly (wrapped by ``messaging.expected_exceptions``)."""
    if isinstance(exc, messaging.ExpectedException):
        exc = exc.exc_info[1]
    return (isinstance(exc, nova_exception.NoValidHost) or
            getattr(exc, 'exc_type', None) == 'NoValidHost')


def _decide(call, uuids):
    """The outcome of ``call(uuids)``: NoValidHost, the selections, or
    (``error``) any other exception, described."""
    try:
        return {'novalidhost': False, 'selections': _selections(call(uuids))}
    except Exception as exc:
        if _novalidhost(exc):
            return {'novalidhost': True, 'selections': []}
        if isinstance(exc, messaging.ExpectedException):
            exc = exc.exc_info[1]
        traceback.print_exc()
        return {'novalidhost': False, 'selections': [],
                'error': '%s: %s' % (type(exc).__name__, exc)}


def _release(ctxt, uuids):
    for consumer in uuids:
        STATE['placement'].delete_allocation_for_instance(ctxt, consumer,
                                                          force=True)


def _report(ctxt, *outcomes):
    """The chosen nodes report, as nova-compute's resource tracker does
    (``ComputeNode.save()``, a new ``updated_at``): a scheduler keeps
    its own consumption of a host until the node's next report (Nova's
    ``HostState.update`` skips an older row), so without it each side
    would decide the next case on its own consumption of this one."""
    chosen = {(sel['host'], sel['node']) for outcome in outcomes
              for picks in outcome['selections'] for sel in picks[:1]}
    for host, node in sorted(chosen):
        mapping = objects.HostMapping.get_by_host(ctxt, host)
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            compute = objects.ComputeNode.get_by_host_and_nodename(
                cctxt, host, node)
            compute.free_ram_mb = compute.free_ram_mb
            compute.save()


def op_start(ctxt):
    manager = scheduler_manager.SchedulerManager()
    original = manager._get_sorted_hosts
    passed = STATE['passed'] = []
    survivors = STATE['survivors'] = []

    def recorded(spec_obj, host_states, index):
        hosts = original(spec_obj, host_states, index)
        passed.append([host.host for host in hosts])
        # The allocation candidates that Nova 34's candidate filters
        # (NUMATopologyFilter, PciPassthroughFilter) left to each host.
        survivors.append({host.host: [
            sorted(candidate['allocations'])
            for candidate in host.allocation_candidates] for host in hosts})
        return hosts

    manager._get_sorted_hosts = recorded
    dropped = STATE['dropped'] = []
    filter_candidates = scheduler_filters.CandidateFilterMixin.\
        filter_candidates

    def counted(self, host_state, filter_func):
        before = len(host_state.allocation_candidates)
        kept = filter_candidates(self, host_state, filter_func)
        if 0 < len(kept) < before:
            dropped.append(host_state.host)
        return kept

    scheduler_filters.CandidateFilterMixin.filter_candidates = counted
    placement = report.report_client_singleton()
    get = placement.get
    failures = STATE['placement_errors'] = []

    def recorded_get(url, *args, **kwargs):
        response = get(url, *args, **kwargs)
        if url.startswith('/allocation_candidates') and \
                response.status_code >= 500:
            failures.append('GET %s: %d %s' % (
                url, response.status_code, response.text[:600]))
        return response

    placement.get = recorded_get
    STATE.update(manager=manager, client=query.SchedulerQueryClient(),
                 placement=placement)
    return {'filters': CONF.filter_scheduler.enabled_filters,
            'weighers': CONF.filter_scheduler.weight_classes}


def op_decide(ctxt, spec, settle=0.0):
    req = request_spec(ctxt, spec)
    ours_req, nova_req = req, copy.deepcopy(req)
    count = req.num_instances
    ours_uuids = [str(uuid.uuid4()) for _ in range(count)]
    nova_uuids = [str(uuid.uuid4()) for _ in range(count)]
    for one, uuids in ((ours_req, ours_uuids), (nova_req, nova_uuids)):
        if one.instance_group:
            # nova-api adds each new instance to its group before the
            # conductor asks the scheduler (InstanceGroup.add_members).
            one.instance_group.members.extend(uuids)
    ours = _decide(lambda uuids: STATE['client'].select_destinations(
        ctxt, ours_req, uuids, True, True), ours_uuids)
    _release(ctxt, ours_uuids)
    del STATE['passed'][:]
    del STATE['survivors'][:]
    del STATE['dropped'][:]
    del STATE['placement_errors'][:]
    nova = _decide(lambda uuids: STATE['manager'].select_destinations(
        ctxt, spec_obj=nova_req, instance_uuids=uuids, return_objects=True,
        return_alternates=True), nova_uuids)
    nova['passed'] = list(STATE['passed'])
    nova['survivors'] = list(STATE['survivors'])
    nova['dropped'] = list(STATE['dropped'])
    nova['placement_errors'] = list(STATE['placement_errors'])
    _release(ctxt, nova_uuids)
    _report(ctxt, ours, nova)
    time.sleep(settle)
    return {'ours': ours, 'nova': nova}


def serve():
    ctxt = context()
    print(json.dumps({'ok': 'ready'}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        op = globals()['op_' + request.pop('op')]
        try:
            answer = {'ok': op(ctxt, **request)}
        except Exception as exc:
            traceback.print_exc()
            answer = {'error': '%s: %s' % (type(exc).__name__, exc)}
        print(json.dumps(answer), flush=True)


if __name__ == '__main__':
    setup(sys.argv[1])
    serve()
