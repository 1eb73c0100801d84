"""Drive the scheduler service with Nova's own client code.

Run with the python of a virtualenv holding Nova (``nova==34.0.0``), never
with this repository on ``sys.path``: it imports Nova only, so that what
reaches the service is exactly what Nova sends.

Usage: ``python driver.py TRANSPORT_URL [PLACEMENT_URL]`` (it writes
``nova.conf`` in the working directory; with a Placement URL, its
``[placement]`` section reaches that ``noauth2`` Placement through
``auth_type = admin_token``).  It reads one JSON request per
line on stdin and writes one JSON answer per line on stdout (logs go to
stderr).  A request is ``{"op": ..., ...}``:

``select``  builds a RequestSpec with Nova's ``RequestSpec.from_components``
            (flavor, image, NUMA constraints from ``numa_get_constraints``,
            server group, hints, ports' request groups...) and calls
            ``SchedulerQueryClient.select_destinations`` under the
            ``[upgrade_levels] scheduler`` cap ``cap`` (null: none).
``select_raw``  calls select_destinations at RPC 4.5 with ``spec_obj``
            being that spec's primitive with ``nova_object.version``
            replaced by ``version`` (what a newer Nova would send).
``update_instance_info`` / ``delete_instance_info`` /
``sync_instance_info``  the compute side's casts, with Nova's Instance
            and InstanceList objects.
``update_aggregates`` / ``delete_aggregate``  the API side's casts, with
            Nova's Aggregate objects.
``boot``  as ``select``, at RPC 4.5 with objects and alternates, and
            returns the instance uuids with the Selections and, after
            Nova's ``fill_provider_mapping`` on the first instance's
            chosen host, each request group's provider uuids; with
            ``claim_alternate``, Nova's conductor's reschedule steps on the
            first alternate of the first instance: ``claim_resources``
            with its allocation request (for a new consumer), then
            ``fill_provider_mapping``, returning the claim's outcome and
            each request group's provider uuids.
``version``  Nova's version string.

An answer is ``{"ok": result}`` or ``{"error": {...}}`` describing the
exception: its class, the Nova exception classes it is an instance of
(``caught_as``), a RemoteError's ``exc_type`` and the message.
"""

import json
import sys
import traceback
import uuid

import nova.conf
import oslo_messaging as messaging
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova import rpc
from nova import version as nova_version
from nova.scheduler import utils as scheduler_utils
from nova.scheduler.client import query
from nova.scheduler.client import report
from nova.virt import hardware
from oslo_serialization import jsonutils

CONF = nova.conf.CONF
# The nova.exception classes Nova's conductor and API catch around the
# scheduler's calls.
CAUGHT = ('NoValidHost', 'MaxRetriesExceeded', 'UnsupportedPolicyException',
          'ComputeHostNotFound', 'MigrationPreCheckError', 'Invalid',
          'NotFound', 'SelectionObjectsWithOldRPCVersionNotSupported')
TIMEOUT = 30

_CLIENTS = {}


def setup(transport_url, placement_url=None):
    """Nova's start-up: a config file (in the working directory), the
    ``nova`` exchange, the RPC transport, the objects."""
    with open('nova.conf', 'w') as conf:
        conf.write('[DEFAULT]\ntransport_url = %s\n'
                   'rpc_response_timeout = %d\nlong_rpc_timeout = %d\n'
                   '[oslo_messaging_rabbit]\n'
                   'heartbeat_timeout_threshold = 0\n'
                   % (transport_url, TIMEOUT, TIMEOUT))
        if placement_url:
            conf.write('[placement]\nauth_type = admin_token\n'
                       'endpoint = %s\ntoken = admin\n' % placement_url)
    rpc.set_defaults(control_exchange='nova')
    CONF(['--config-file', 'nova.conf'], project='nova',
         default_config_files=[], default_config_dirs=[])
    rpc.init(CONF)
    objects.register_all()


def client(cap):
    """Nova's SchedulerQueryClient under the ``[upgrade_levels]
    scheduler`` cap ``cap`` (read when the client is made)."""
    if cap not in _CLIENTS:
        CONF.set_override('scheduler', cap, group='upgrade_levels')
        _CLIENTS[cap] = query.SchedulerQueryClient()
    return _CLIENTS[cap]


def context():
    return nova_context.RequestContext(user_id='user-1',
                                       project_id='project-1',
                                       is_admin=True)


# -- building Nova's objects ----------------------------------------------

def flavor(spec):
    return objects.Flavor(
        id=1, flavorid='1', name='m1.driver',
        memory_mb=spec.get('memory_mb', 512), vcpus=spec.get('vcpus', 1),
        root_gb=spec.get('root_gb', 1),
        ephemeral_gb=spec.get('ephemeral_gb', 0), swap=spec.get('swap', 0),
        extra_specs=dict(spec.get('extra_specs', {})), rxtx_factor=1.0,
        vcpu_weight=None, disabled=False, is_public=True, projects=[],
        description=None)


def image(spec):
    return {'id': str(uuid.uuid4()), 'name': 'image', 'status': 'active',
            'container_format': 'bare', 'disk_format': 'qcow2',
            'min_ram': 0, 'min_disk': 0, 'size': 1024,
            'properties': dict(spec.get('image_properties', {}))}


def group(spec):
    values = spec.get('group')
    if not values:
        return None
    return objects.InstanceGroup(
        uuid=str(uuid.uuid4()), name='group', user_id='user-1',
        project_id='project-1', policy=values['policy'],
        members=list(values.get('members', [])),
        hosts=list(values.get('hosts', [])),
        _rules=dict(values.get('rules', {})))


def filter_properties(spec):
    props = {key: spec[key] for key in ('ignore_hosts', 'force_hosts',
                                        'force_nodes') if key in spec}
    props['scheduler_hints'] = dict(spec.get('hints', {}))
    if 'destination' in spec:
        props['requested_destination'] = objects.Destination(
            **spec['destination'])
    return props


def port_groups(spec):
    return [objects.RequestGroup(
        use_same_provider=True, resources=dict(port['resources']),
        required_traits=set(port.get('required', [])),
        requester_id=str(uuid.uuid4()))
        for port in spec.get('port_requests', [])]


def request_spec(ctxt, spec):
    """A RequestSpec built as Nova's API and conductor build one."""
    instance_uuid = str(uuid.uuid4())
    the_flavor = flavor(spec)
    the_image = image(spec)
    numa = hardware.numa_get_constraints(
        the_flavor, objects.ImageMeta.from_dict(the_image))
    params = None
    if spec.get('root_required'):
        params = objects.RequestLevelParams(
            root_required=set(spec['root_required']), root_forbidden=set())
    req = objects.RequestSpec.from_components(
        ctxt, instance_uuid, the_image, the_flavor, numa,
        objects.InstancePCIRequests(instance_uuid=instance_uuid,
                                    requests=[]),
        filter_properties(spec), group(spec),
        spec.get('availability_zone'),
        security_groups=objects.SecurityGroupList(objects=[]),
        port_resource_requests=port_groups(spec),
        request_level_params=params)
    req.num_instances = spec.get('num_instances', 1)
    req.is_bfv = bool(spec.get('is_bfv', False))
    req.network_metadata = objects.NetworkMetadata(
        physnets={'physnet1'}, tunneled=False)
    req.requested_networks = objects.NetworkRequestList(objects=[
        objects.NetworkRequest(network_id=str(uuid.uuid4()),
                               port_id=str(uuid.uuid4()), tag=None)])
    return req


def instance(values):
    the_flavor = flavor(values)
    return objects.Instance(
        uuid=values['uuid'], host=values.get('host'),
        node=values.get('node', values.get('host')),
        project_id='project-1', user_id='user-1', vm_state='active',
        task_state=None, memory_mb=the_flavor.memory_mb,
        vcpus=the_flavor.vcpus, root_gb=the_flavor.root_gb,
        ephemeral_gb=the_flavor.ephemeral_gb, flavor=the_flavor,
        availability_zone=values.get('availability_zone'),
        numa_topology=None, pci_requests=None)


def aggregate(values):
    return objects.Aggregate(
        id=values['id'], uuid=values['uuid'], name=values['name'],
        hosts=list(values.get('hosts', [])),
        metadata=dict(values.get('metadata', {})))


# -- results ----------------------------------------------------------------

def selection(sel):
    result = {'version': sel.VERSION}
    for name in sel.fields:
        if name in sel:
            value = getattr(sel, name)
            result[name] = (value.to_dict() if name == 'limits' and value
                            else value)
    return result


def jsonable(value):
    if isinstance(value, objects.NUMATopologyLimits):
        return {'cpu_allocation_ratio': value.cpu_allocation_ratio,
                'ram_allocation_ratio': value.ram_allocation_ratio}
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def describe(exc):
    return {
        'class': '%s.%s' % (type(exc).__module__, type(exc).__name__),
        'caught_as': [name for name in CAUGHT
                      if isinstance(exc, getattr(nova_exception, name))],
        'remote_exc_type': getattr(exc, 'exc_type', None),
        'message': (getattr(exc, 'value', None) or str(exc))[:3000],
    }


# -- operations ---------------------------------------------------------------

def op_select(ctxt, request):
    spec = request.get('spec', {})
    req = request_spec(ctxt, spec)
    uuids = [str(uuid.uuid4()) for _ in range(req.num_instances)]
    result = client(request.get('cap')).select_destinations(
        ctxt, req, uuids, request.get('return_objects', False),
        request.get('return_alternates', False))
    if request.get('return_objects'):
        return [[selection(sel) for sel in picks] for picks in result]
    return result


def op_boot(ctxt, request):
    req = request_spec(ctxt, request.get('spec', {}))
    uuids = [str(uuid.uuid4()) for _ in range(req.num_instances)]
    result = client(None).select_destinations(ctxt, req, uuids, True, True)
    scheduler_utils.fill_provider_mapping(req, result[0][0])
    answer = {'instance_uuids': uuids,
              'selections': [[selection(sel) for sel in picks]
                             for picks in result],
              'mappings': {group.requester_id: group.provider_uuids
                           for group in req.requested_resources}}
    if request.get('claim_alternate'):
        alternate = result[0][1]
        consumer = str(uuid.uuid4())
        claimed = scheduler_utils.claim_resources(
            ctxt, report.report_client_singleton(), req, consumer,
            jsonutils.loads(alternate.allocation_request),
            alternate.allocation_request_version)
        scheduler_utils.fill_provider_mapping(req, alternate)
        answer['alternate'] = {
            'consumer': consumer, 'claimed': claimed,
            'compute_node_uuid': alternate.compute_node_uuid,
            'mappings': {group.requester_id: group.provider_uuids
                         for group in req.requested_resources}}
    return answer


def op_select_raw(ctxt, request):
    req = request_spec(ctxt, request.get('spec', {}))
    primitive = req.obj_to_primitive()
    primitive['nova_object.version'] = request['version']
    cctxt = client(None).scheduler_rpcapi.client.prepare(version='4.5',
                                                         timeout=TIMEOUT)
    return cctxt.call(ctxt, 'select_destinations', spec_obj=primitive,
                      instance_uuids=[req.instance_uuid],
                      return_objects=False, return_alternates=False)


def op_update_instance_info(ctxt, request):
    instances = objects.InstanceList(
        objects=[instance(values) for values in request['instances']])
    client(None).update_instance_info(ctxt, request['host'], instances)


def op_delete_instance_info(ctxt, request):
    client(None).delete_instance_info(ctxt, request['host'],
                                      request['instance_uuid'])


def op_sync_instance_info(ctxt, request):
    client(None).sync_instance_info(ctxt, request['host'],
                                    request['instance_uuids'])


def op_update_aggregates(ctxt, request):
    client(None).update_aggregates(
        ctxt, [aggregate(values) for values in request['aggregates']])


def op_delete_aggregate(ctxt, request):
    client(None).delete_aggregate(ctxt, aggregate(request['aggregate']))


def op_version(ctxt, request):
    return nova_version.version_string()


OPS = {name[3:]: func for name, func in globals().items()
       if name.startswith('op_')}


def answer(request):
    try:
        result = OPS[request['op']](context(), request)
    except (nova_exception.NovaException, messaging.MessagingException,
            ValueError, KeyError, TypeError) as exc:
        traceback.print_exc(file=sys.stderr)
        return {'error': describe(exc)}
    return {'ok': jsonable(result)}


def main():
    setup(*sys.argv[1:3])
    print(json.dumps({'ok': 'ready'}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(answer(json.loads(line)), default=str),
                  flush=True)


if __name__ == '__main__':
    main()
