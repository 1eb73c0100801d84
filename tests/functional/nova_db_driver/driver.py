"""Write a Nova deployment's rows with Nova's own objects (Nova 34.0.0).

Run with the python of a virtualenv holding Nova, never with this
repository on ``sys.path``: it imports Nova only, so that the rows the
scheduler reads are exactly the rows Nova writes.  The databases must
have been created by Nova's own migrations (``nova-manage api_db sync``,
``nova-manage db sync``, ``nova-manage cell_v2 map_cell0 / create_cell``)
from the same configuration file.

Usage: ``python driver.py NOVA_CONF``.  Directories listed in the
environment variable ``NOVA_DB_DRIVER_PATH`` (os.pathsep-separated) are
appended to ``sys.path`` first: the test puts a PostgreSQL driver there
when the venv has none.  It reads one JSON request per line on stdin
and writes one JSON answer per line on stdout (logs go to stderr): ``{"ok":
result}`` or ``{"error": "..."}``.  A request is ``{"op": ..., ...}``:

``cells``           the cell mappings: ``[{uuid, name, id}]``;
``add_compute``     a ``nova-compute`` Service (once per host), a
                    ComputeNode and the host's HostMapping, in cell
                    ``cell`` (a name); returns ``{id, uuid}``;
``update_compute``  set ``values`` on the ComputeNode of ``host`` /
                    ``node`` and ``save()`` it (the resource tracker's
                    write);
``add_instance``    an Instance on ``host`` / ``node`` in cell ``cell``;
``add_instance_with_image``  the same, booted from an image with
                    ``image_properties`` (its ``image_*`` system
                    metadata, as Nova's compute API writes it);
``rebuild_instance``  Nova's API rebuild of an instance from another
                    image (its ``image_*`` system metadata replaced);
``image_props_weights``  Nova's own ImagePropertiesWeigher's raw weight
                    of each of ``hosts`` for ``image_properties``;
``add_aggregate``   an Aggregate ``name`` with ``metadata`` and ``hosts``;
``add_group``       an InstanceGroup ``name`` with ``policy``, ``rules``
                    and ``members``; returns its uuid;
``numa_topology``   the ``numa_topology`` column value (JSON) of a
                    ComputeNode whose NUMA cells are ``cells`` (each
                    ``{cpuset, pcpuset, memory}``, memory in MiB, 4 KiB
                    pages only, nothing used), as the libvirt driver
                    reports it: pass it to ``add_compute``;
``set_pci_pools``   set the ComputeNode of ``host`` / ``node``'s
                    ``pci_device_pools`` to ``pools`` (each ``{vendor_id,
                    product_id, numa_node, count, tags}``, ``tags`` with
                    ``dev_type`` and, with PCI in Placement, the device
                    provider's ``rp_uuid``), as the resource tracker
                    saves its PCI stats;
``services``        what ``openstack compute service list`` shows: every
                    cell's services (Nova's HostAPI, all cells) with
                    Nova's own liveness verdict ``up``;
``clear``           destroy, with Nova's objects, every compute service
                    and node, instance, aggregate, group and host mapping
                    (soft deletes in the cells, as Nova makes them).
"""

import json
import os
import sys
import traceback

for _path in filter(None, os.environ.get('NOVA_DB_DRIVER_PATH',
                                         '').split(os.pathsep)):
    sys.path.append(_path)

import nova.conf  # noqa: E402
from nova import config  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import objects  # noqa: E402
from nova import servicegroup  # noqa: E402
from nova import utils  # noqa: E402
from nova.compute import api as compute_api  # noqa: E402
from nova.db.main import api as main_db  # noqa: E402

CONF = nova.conf.CONF


def setup(conf_path):
    """Nova's own start-up: the configuration, the RPC layer (for the
    notifications of Nova's objects) and the database engines."""
    config.parse_args(['nova-db-driver'], default_config_files=[conf_path])
    objects.register_all()


def _cell(ctxt, name):
    for cell in objects.CellMappingList.get_all(ctxt):
        if cell.name == name:
            return cell
    raise LookupError('no cell %s' % name)


def op_cells(ctxt):
    return [{'uuid': cell.uuid, 'name': cell.name, 'id': cell.id}
            for cell in objects.CellMappingList.get_all(ctxt)]


def _service(cctxt, host):
    service = objects.Service.get_by_host_and_binary(cctxt, host,
                                                     'nova-compute')
    if service is None:
        service = objects.Service(context=cctxt, host=host,
                                  binary='nova-compute', topic='compute',
                                  report_count=0)
        service.create()
    return service


def _host_mapping(ctxt, cell, host):
    try:
        objects.HostMapping.get_by_host(ctxt, host)
    except Exception:
        objects.HostMapping(context=ctxt, host=host,
                            cell_mapping=cell).create()


def op_add_compute(ctxt, cell, host, node=None, vcpus=8, memory_mb=16384,
                   local_gb=200, vcpus_used=0, memory_mb_used=0,
                   local_gb_used=0, **extra):
    mapping = _cell(ctxt, cell)
    with nova_context.target_cell(ctxt, mapping) as cctxt:
        service = _service(cctxt, host)
        values = dict(
            host=host, hypervisor_hostname=node or host, service_id=service.id,
            vcpus=vcpus, memory_mb=memory_mb, local_gb=local_gb,
            vcpus_used=vcpus_used, memory_mb_used=memory_mb_used,
            local_gb_used=local_gb_used,
            free_ram_mb=memory_mb - memory_mb_used,
            free_disk_gb=local_gb - local_gb_used,
            current_workload=0, running_vms=0, disk_available_least=None,
            hypervisor_type='QEMU', hypervisor_version=8002000,
            cpu_info='{"arch": "x86_64"}', host_ip='10.0.0.1',
            supported_hv_specs=[objects.HVSpec(
                arch='x86_64', hv_type='kvm', vm_mode='hvm')],
            stats={}, cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
            disk_allocation_ratio=1.0)
        values.update(extra)
        compute = objects.ComputeNode(context=cctxt, **values)
        compute.create()
    _host_mapping(ctxt, mapping, host)
    return {'id': compute.id, 'uuid': compute.uuid}


def op_update_compute(ctxt, cell, host, node, values):
    with nova_context.target_cell(ctxt, _cell(ctxt, cell)) as cctxt:
        compute = objects.ComputeNode.get_by_host_and_nodename(
            cctxt, host, node)
        for name, value in values.items():
            setattr(compute, name, value)
        compute.save()
        return {'updated_at': compute.updated_at.isoformat()}


def op_add_instance(ctxt, cell, uuid, host, node=None, vcpus=1,
                    memory_mb=512, root_gb=1):
    with nova_context.target_cell(ctxt, _cell(ctxt, cell)) as cctxt:
        compute = objects.ComputeNode.get_by_host_and_nodename(
            cctxt, host, node or host)
        instance = objects.Instance(
            context=cctxt, uuid=uuid, host=host, node=compute.
            hypervisor_hostname, compute_id=compute.id,
            vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb,
            ephemeral_gb=0, project_id='project', user_id='user',
            vm_state='active')
        instance.create()
        return {'id': instance.id}


def op_add_aggregate(ctxt, name, hosts=(), metadata=None):
    aggregate = objects.Aggregate(context=ctxt, name=name,
                                  metadata=metadata or {})
    aggregate.create()
    for host in hosts:
        aggregate.add_host(host)
    return {'id': aggregate.id, 'uuid': aggregate.uuid}


def op_add_group(ctxt, name, policy, members=(), rules=None):
    group = objects.InstanceGroup(context=ctxt, name=name, policy=policy,
                                  rules=rules or {}, members=list(members),
                                  project_id='project', user_id='user')
    group.create()
    return {'uuid': group.uuid}


def op_numa_topology(ctxt, cells):
    return objects.NUMATopology(cells=[objects.NUMACell(
        id=index, cpuset=set(cell['cpuset']), pcpuset=set(cell['pcpuset']),
        memory=cell['memory'], cpu_usage=0, memory_usage=0,
        pinned_cpus=set(), socket=0,
        siblings=[{cpu} for cpu in sorted(set(cell['cpuset']) |
                                          set(cell['pcpuset']))],
        mempages=[objects.NUMAPagesTopology(
            size_kb=4, total=cell['memory'] * 256, used=0)],
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False))
        for index, cell in enumerate(cells)])._to_json()


def op_set_pci_pools(ctxt, cell, host, node, pools):
    with nova_context.target_cell(ctxt, _cell(ctxt, cell)) as cctxt:
        compute = objects.ComputeNode.get_by_host_and_nodename(
            cctxt, host, node)
        compute.pci_device_pools = objects.PciDevicePoolList(objects=[
            objects.PciDevicePool(**pool) for pool in pools])
        compute.save()
        return {}


def op_services(ctxt):
    api = servicegroup.API()
    return [{'binary': svc.binary, 'host': svc.host, 'topic': svc.topic,
             'version': svc.version, 'report_count': svc.report_count,
             'up': api.service_is_up(svc)}
            for svc in compute_api.HostAPI().service_get_all(
                ctxt, all_cells=True)]


def op_clear(ctxt):
    for aggregate in objects.AggregateList.get_all(ctxt):
        for host in list(aggregate.hosts or []):
            aggregate.delete_host(host)
        aggregate.destroy()
    for cell in objects.CellMappingList.get_all(ctxt):
        if cell.is_cell0():
            continue
        with nova_context.target_cell(ctxt, cell) as cctxt:
            for instance in objects.InstanceList.get_all(cctxt):
                main_db.instance_destroy(cctxt, instance.uuid)
            for service in objects.ServiceList.get_by_binary(
                    cctxt, 'nova-compute'):
                for compute in objects.ComputeNodeList.get_all_by_host(
                        cctxt, service.host):
                    compute.destroy()
                service.destroy()
        for mapping in objects.HostMappingList.get_by_cell_id(ctxt, cell.id):
            mapping.destroy()
    return {}


def op_add_instance_with_image(ctxt, cell, uuid, host, node=None,
                               image_ref='image', image_properties=None):
    """An Instance booted from an image with ``image_properties``: its
    system metadata is what Nova's compute API stores at boot
    (``get_system_metadata_from_image``, ``image_base_image_ref``)."""
    system_metadata = utils.get_system_metadata_from_image(
        _image(image_ref, image_properties))
    system_metadata.setdefault('image_base_image_ref', image_ref)
    with nova_context.target_cell(ctxt, _cell(ctxt, cell)) as cctxt:
        compute = objects.ComputeNode.get_by_host_and_nodename(
            cctxt, host, node or host)
        instance = objects.Instance(
            context=cctxt, uuid=uuid, host=host,
            node=compute.hypervisor_hostname, compute_id=compute.id,
            vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0,
            project_id='project', user_id='user', vm_state='active',
            image_ref=image_ref, system_metadata=system_metadata)
        instance.create()
        return {'id': instance.id}


def _image(image_ref, image_properties):
    return {'id': image_ref, 'min_ram': 0, 'min_disk': 0,
            'disk_format': 'qcow2', 'container_format': 'bare',
            'properties': image_properties or {}}


def op_rebuild_instance(ctxt, cell, uuid, image_ref, image_properties):
    """What Nova's compute API writes when it rebuilds an instance from
    another image (``_reset_image_metadata``): the ``image_*`` system
    metadata replaced, ``image_ref`` set, the instance saved."""
    with nova_context.target_cell(ctxt, _cell(ctxt, cell)) as cctxt:
        instance = objects.Instance.get_by_uuid(
            cctxt, uuid, expected_attrs=['system_metadata'])
        for key in list(instance.system_metadata):
            if key.startswith(utils.SM_IMAGE_PROP_PREFIX):
                del instance.system_metadata[key]
        new = utils.get_system_metadata_from_image(
            _image(image_ref, image_properties))
        new['image_base_image_ref'] = image_ref
        instance.system_metadata.update(new)
        instance.image_ref = image_ref
        instance.save()
        return {'image_ref': instance.image_ref}


def op_image_props_weights(ctxt, hosts, image_properties, multiplier=1.0,
                           setting=()):
    """Nova's own ImagePropertiesWeigher's raw weight of each of
    ``hosts`` (``[[host, node]]``) for an image with
    ``image_properties``: HostStates with the cell and the instances
    Nova's HostManager gives them (``_get_instances_by_host``)."""
    from nova.scheduler import host_manager
    from nova.scheduler.weights import image_props
    CONF.set_override('image_props_weight_multiplier', multiplier,
                      'filter_scheduler')
    CONF.set_override('image_props_weight_setting', list(setting),
                      'filter_scheduler')
    # Only its instance reads are used: no filters, weighers nor casts.
    manager = host_manager.HostManager.__new__(host_manager.HostManager)
    manager.host_to_cell_uuid, manager.cells = {}, {}
    spec = objects.RequestSpec(image=objects.ImageMeta.from_dict(
        {'properties': image_properties}))
    weigher = image_props.ImagePropertiesWeigher()
    weights = {}
    for host, node in hosts:
        cell = objects.HostMapping.get_by_host(ctxt, host).cell_mapping
        state = host_manager.HostState(host, node, cell.uuid)
        state.instances = manager._get_instances_by_host(ctxt, host)
        weights[host] = weigher._weigh_object(state, spec)
    return weights


def serve():
    ctxt = nova_context.get_admin_context()
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
