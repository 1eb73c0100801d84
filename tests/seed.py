"""Helpers that put compute nodes, services and aggregates in a database.

Shared by unit and functional tests.  ``use_database(url)`` points
``scheduler.db.api`` at ``url``, creates the schema and returns an admin
context; the ``add_*`` helpers write rows the way a compute service and the
API would.
"""

import uuid

from oslo_utils import timeutils

from scheduler import context as scheduler_context
from scheduler import objects
from scheduler.db import api as db
from scheduler.db import migration
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import request_spec


def use_database(url):
    """Point the DB API at ``url``, sync the schema, return a context."""
    objects.register_all()
    db.reset_for_tests(url)
    migration.db_sync(db.get_engine())
    return scheduler_context.get_admin_context()


def add_compute(ctx, host, node=None, vcpus=8, memory_mb=16384,
                local_gb=200, vcpus_used=0, memory_mb_used=0,
                local_gb_used=0, service=True, disabled=False,
                last_seen_up=None, **extra):
    """Add a compute node (and its nova-compute service row) to the DB.

    Free RAM and disk are derived from the totals and the used amounts.
    Returns the compute node row dict.
    """
    if service:
        db.service_create(ctx, {
            'host': host, 'binary': 'nova-compute', 'topic': 'compute',
            'report_count': 1, 'disabled': disabled,
            'last_seen_up': last_seen_up or timeutils.utcnow()})
    values = {
        'host': host, 'hypervisor_hostname': node or host,
        'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb,
        'vcpus_used': vcpus_used, 'memory_mb_used': memory_mb_used,
        'local_gb_used': local_gb_used,
        'free_ram_mb': memory_mb - memory_mb_used,
        'free_disk_gb': local_gb - local_gb_used,
        'hypervisor_type': 'QEMU', 'hypervisor_version': 2011000,
        'cpu_info': '{"arch": "x86_64"}',
        'supported_instances': '[["x86_64", "kvm", "hvm"]]',
        'host_ip': '10.0.0.1', 'stats': '{}'}
    values.update(extra)
    return db.compute_node_create(ctx, values)


def add_aggregate(ctx, name, hosts=(), metadata=None):
    """Create an aggregate with ``hosts`` and ``metadata``; return its dict."""
    agg = db.aggregate_create(ctx, name, metadata=metadata or {})
    for host in hosts:
        db.aggregate_add_host(ctx, agg['id'], host)
    return db.aggregate_get(ctx, agg['id'])


def make_flavor(memory_mb=512, vcpus=1, root_gb=1, ephemeral_gb=0, swap=0,
                extra_specs=None, name='m1.test', flavor_id=1):
    return flavor_obj.Flavor(
        id=flavor_id, name=name, flavorid=str(flavor_id),
        memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
        ephemeral_gb=ephemeral_gb, swap=swap, extra_specs=extra_specs or {},
        is_public=True, disabled=False, projects=[], rxtx_factor=1.0)


def make_spec(num_instances=1, **kwargs):
    """A RequestSpec with defaults; flavor keywords go to ``make_flavor``."""
    flavor_keys = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap',
                   'extra_specs')
    flavor = make_flavor(**{k: kwargs.pop(k) for k in flavor_keys
                            if k in kwargs})
    spec = request_spec.RequestSpec(
        flavor=flavor, num_instances=num_instances,
        instance_uuid=kwargs.pop('instance_uuid', str(uuid.uuid4())),
        project_id=kwargs.pop('project_id', 'project-1'), **kwargs)
    return spec.ensure_defaults()
