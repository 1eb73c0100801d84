"""What the benchmark schedules on: a varied fleet and a request mix.

The fleet (``generate_hosts``) is deterministic for a seed.  Each host is
a ``scheduler_tools.seed.HostSpec`` (size, zone, aggregates, allocation
ratios, hypervisor type) plus what the replay's fleets do not vary:

* sizes: 16 to 128 vCPUs, 64 to 512 GiB of RAM, 500 to 4,000 GiB of disk,
  already 0 to 50% used (so the weighers see different hosts);
* zones: ``az1`` to ``az4`` (the ``az-<zone>`` aggregates of
  ``seed.aggregate_members``), and 10% of the hosts in no zone (the
  default zone);
* other aggregates: ``bench-ssd`` and ``bench-gpu`` hosts, and a
  ``bench-dense`` aggregate that sets ``ram_weight_multiplier`` (so the
  weighers read aggregate metadata);
* hypervisors: x86_64 KVM (QEMU 2.11 to 6.2), aarch64 KVM and x86_64 Xen,
  with their ``supported_instances``, ``cpu_info`` JSON (arch, model,
  vendor, features) and capability ``stats`` (``cpu_gen``, ``storage``,
  ``gpu``);
* 30% of the rows carry their own allocation ratios (4.0 CPU, 1.0 RAM);
* 1% of the services are disabled and 0.5% are forced down.

``seed_hosts`` writes a fleet into an empty database with the fleet
seeder's bulk inserts (``seed.bulk_seed``: one service per host, one
compute node per host, the aggregates), so 100,000 hosts take seconds;
``seed.remove_seeded`` deletes exactly those rows again.

The requests (``Workload.requests``) are a deterministic mix, each with
``instances`` instance uuids: plain boots (35%), an availability zone
(15%), flavor extra specs for ComputeCapabilitiesFilter (15%), image
properties for ImagePropertiesFilter (15%), an anti-affinity group whose
members already run on 2 to 8 hosts (10%) and an affinity group, new or
with its members on one live host (10%).  Every request carries an
image, as a boot does.  The specs are fresh objects: the driver writes
the hosts it picks into their server group.
"""

import dataclasses
import random
import uuid

from oslo_serialization import jsonutils
from oslo_utils import timeutils

from scheduler.db import api as db
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import instance_group as group_obj
from scheduler.objects import request_spec
from scheduler_tools import seed
from scheduler_tools import writers

HOST_NAME = 'bench-%06d'

# (weight, vcpus, memory_mb in MiB, local_gb in GiB)
SHAPES = ((20, 16, 65536, 500), (40, 32, 131072, 1000),
          (30, 64, 262144, 2000), (10, 128, 524288, 4000))
# (weight, zone); None: no zone aggregate, the default zone.
ZONES = ((35, 'az1'), (30, 'az2'), (20, 'az3'), (5, 'az4'), (10, None))
REQUEST_ZONES = ('az1', 'az2', 'az3', 'az4')
X86_FEATURES = ('sse4.1', 'sse4.2', 'avx', 'avx2', 'aes', 'pclmuldq',
                'popcnt', 'vmx', 'x2apic', 'rdrand')
# (weight, hypervisor_type, hypervisor_version, supported_instances,
#  arch, [(cpu model, cpu_gen, vendor)])
HYPERVISORS = (
    (80, 'QEMU', (2011000, 4002000, 6002000),
     (('x86_64', 'kvm', 'hvm'), ('i686', 'kvm', 'hvm')), 'x86_64',
     (('Skylake-Server', 'skylake', 'Intel'),
      ('Cascadelake-Server', 'cascadelake', 'Intel'),
      ('Icelake-Server', 'icelake', 'Intel'),
      ('EPYC-Rome', 'rome', 'AMD'))),
    (10, 'QEMU', (6002000,), (('aarch64', 'kvm', 'hvm'),), 'aarch64',
     (('Neoverse-N1', 'neoverse', 'ARM'),)),
    (10, 'Xen', (4011000, 4014000),
     (('x86_64', 'xen', 'xen'), ('x86_64', 'xen', 'hvm')), 'x86_64',
     (('Cascadelake-Server', 'cascadelake', 'Intel'),)),
)
DENSE_AGGREGATE = 'bench-dense'
DENSE_METADATA = {'ram_weight_multiplier': '2.0'}
DISABLED_EVERY = 100   # host i is disabled when i % 100 == 1
FORCED_DOWN_EVERY = 200   # and forced down when i % 200 == 2

# (weight, kind)
KINDS = ((35, 'plain'), (15, 'az'), (15, 'extra_specs'), (15, 'image'),
         (10, 'anti_affinity'), (10, 'affinity'))
# (name, memory_mb in MiB, vcpus, root_gb in GiB)
FLAVORS = (('m1.tiny', 512, 1, 1), ('m1.small', 2048, 1, 20),
           ('m1.medium', 4096, 2, 40), ('m1.large', 8192, 4, 80))
# Affinity requests put every instance on one host: small flavors only.
AFFINITY_FLAVORS = FLAVORS[:2]
EXTRA_SPECS = (
    {'capabilities:hypervisor_type': 'QEMU'},
    {'capabilities:cpu_info:arch': 'x86_64', 'hw:cpu_policy': 'shared'},
    {'cpu_gen': '<in> lake'},
    {'capabilities:vcpus_total': '>= 32'},
    {'capabilities:storage': 's== ssd', 'quota:disk_read_iops_sec': '500'},
)
IMAGE_PROPERTIES = (
    {'hw_architecture': 'x86_64'},
    {'hw_architecture': 'x86_64', 'img_hv_type': 'kvm',
     'hw_vm_mode': 'hvm'},
    {'hw_architecture': 'aarch64'},
    {'img_hv_type': 'xen', 'hw_vm_mode': 'xen'},
    {'hw_architecture': 'x86_64', 'img_hv_requested_version': '>=4.0'},
)
PROJECTS = 20


class WorkloadError(RuntimeError):
    """The fleet cannot be seeded."""


@dataclasses.dataclass(frozen=True)
class BenchHost:
    """One generated compute node: the replay's HostSpec plus the columns
    it leaves constant.  ``*_used`` in vCPUs, MiB and GiB."""

    spec: seed.HostSpec
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    hypervisor_version: int
    supported_instances: tuple
    cpu_info: dict
    stats: dict
    host_ip: str
    disabled: bool = False
    forced_down: bool = False

    @property
    def host(self):
        return self.spec.host

    @property
    def up(self):
        """Enabled and not forced down: ComputeFilter keeps it."""
        return not (self.disabled or self.forced_down)


@dataclasses.dataclass
class BenchRequest:
    """One select_destinations call: its kind, spec and instance uuids."""

    kind: str
    spec: request_spec.RequestSpec
    instance_uuids: list


def _weighted(rng, table):
    """Pick the rest of a ``(weight, ...)`` row of ``table``."""
    total = sum(row[0] for row in table)
    point = rng.random() * total
    for row in table:
        point -= row[0]
        if point < 0:
            return row[1:] if len(row) > 2 else row[1]
    return table[-1][1:] if len(table[-1]) > 2 else table[-1][1]


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# ------------------------------------------------------------------ hosts --

def generate_hosts(count, seed=0):
    """``count`` BenchHosts named ``bench-000001``..., the same for the
    same ``count`` and ``seed``."""
    if count < 1:
        raise WorkloadError('the benchmark needs at least one host')
    rng = random.Random('hosts:%s' % seed)
    return [_host(rng, index) for index in range(1, count + 1)]


def _host(rng, index):
    name = HOST_NAME % index
    vcpus, memory_mb, local_gb = _weighted(rng, SHAPES)
    zone = _weighted(rng, ZONES)
    hv_type, versions, supported, arch, cpus = _weighted(rng, HYPERVISORS)
    model, cpu_gen, vendor = rng.choice(cpus)
    storage = 'ssd' if rng.random() < 0.4 else 'hdd'
    gpu = rng.random() < 0.05
    aggregates = [name for name, member in (
        ('bench-ssd', storage == 'ssd'), ('bench-gpu', gpu),
        (DENSE_AGGREGATE, rng.random() < 0.2)) if member]
    own_ratios = rng.random() < 0.3
    spec = seed.HostSpec(
        host=name, nodename=name, vcpus=vcpus, memory_mb=memory_mb,
        local_gb=local_gb, availability_zone=zone,
        aggregates=tuple(aggregates),
        cpu_allocation_ratio=4.0 if own_ratios else None,
        ram_allocation_ratio=1.0 if own_ratios else None,
        hypervisor_type=hv_type)
    load = rng.random() * 0.5
    features = (list(X86_FEATURES) if arch == 'x86_64'
                else ['fp', 'asimd', 'aes', 'crc32'])
    if cpu_gen in ('skylake', 'cascadelake', 'icelake'):
        features.append('avx512f')
    return BenchHost(
        spec=spec, vcpus_used=int(vcpus * load),
        memory_mb_used=int(memory_mb * load),
        local_gb_used=int(local_gb * load),
        hypervisor_version=rng.choice(versions),
        supported_instances=supported,
        cpu_info={'arch': arch, 'model': model, 'vendor': vendor,
                  'topology': {'sockets': 2, 'cores': vcpus // 4,
                               'threads': 2},
                  'features': features},
        stats={'cpu_gen': cpu_gen, 'storage': storage,
               'gpu': 'true' if gpu else 'false'},
        host_ip='10.%d.%d.%d' % (index // 65536 % 256, index // 256 % 256,
                                 index % 256),
        disabled=index % DISABLED_EVERY == 1,
        forced_down=index % FORCED_DOWN_EVERY == 2)


def compute_node_row(host, service_id, now):
    """The ``compute_nodes`` row of ``host`` (every column a bulk insert
    needs, JSON columns as text): ``seed.compute_node_values`` with the
    used amounts and the capabilities of the BenchHost."""
    values = seed.compute_node_values(host.spec)
    for name in seed.RATIO_NAMES:
        values.setdefault(name, None)
    spec = host.spec
    instances = max(0, host.vcpus_used // 2)
    stats = dict(host.stats, num_instances=instances, io_workload=0)
    values.update(
        service_id=service_id, uuid=str(uuid.uuid5(uuid.NAMESPACE_DNS,
                                                   spec.host)),
        vcpus_used=host.vcpus_used, memory_mb_used=host.memory_mb_used,
        local_gb_used=host.local_gb_used,
        free_ram_mb=spec.memory_mb - host.memory_mb_used,
        free_disk_gb=spec.local_gb - host.local_gb_used,
        disk_available_least=spec.local_gb - host.local_gb_used,
        running_vms=instances, hypervisor_version=host.hypervisor_version,
        cpu_info=host.cpu_info,
        supported_instances=[list(entry)
                             for entry in host.supported_instances],
        stats=stats, host_ip=host.host_ip, created_at=now, deleted=0)
    for name in writers.COMPUTE_NODE_JSON_COLUMNS.intersection(values):
        if values[name] is not None and not isinstance(values[name], str):
            values[name] = jsonutils.dumps(values[name])
    return values


def _service_row(host, now):
    return {'uuid': str(uuid.uuid5(uuid.NAMESPACE_URL, host.host)),
            'host': host.host, 'binary': seed.COMPUTE_BINARY,
            'topic': seed.COMPUTE_TOPIC, 'report_count': 1,
            'disabled': host.disabled,
            'disabled_reason': 'benchmark' if host.disabled else None,
            'forced_down': host.forced_down, 'last_seen_up': now,
            'created_at': now, 'deleted': 0, 'version': 22}


def seed_hosts(ctx, hosts):
    """Write ``hosts`` (BenchHosts) into the empty database of ``ctx``:
    services, compute nodes (ids in list order) and aggregates, in one
    transaction (``seed.bulk_seed``).  Returns a ``seed.Seeded`` record.

    :raises WorkloadError: the database already has compute nodes.
    """
    seed.check_fleet([host.spec for host in hosts])
    existing = len(db.compute_node_get_ids(ctx))
    if existing:
        raise WorkloadError('the database already has %d compute node(s); '
                            'the benchmark needs an empty one' % existing)
    now = timeutils.utcnow()
    aggregates = seed.aggregate_members([host.spec for host in hosts])
    if DENSE_AGGREGATE in aggregates:
        aggregates[DENSE_AGGREGATE] = (DENSE_METADATA,
                                       aggregates[DENSE_AGGREGATE][1])
    return seed.bulk_seed(
        ctx, [_service_row(host, now) for host in hosts],
        [compute_node_row(host, None, now) for host in hosts],
        aggregates, now)


# --------------------------------------------------------------- requests --

class Workload:
    """The request mix on a fleet of BenchHosts, deterministic for a
    seed: ``requests(instances, count, stream)`` gives the same requests
    for the same arguments."""

    def __init__(self, hosts, seed=0):
        self.hosts = [host.host for host in hosts]
        self.live_hosts = [host.host for host in hosts if host.up] or \
            self.hosts
        self.seed = seed

    def requests(self, instances, count, stream='measure', kind=None):
        """``count`` BenchRequests of ``instances`` instances each;
        ``stream`` names an independent sequence (warm-up, measure...);
        ``kind`` (e.g. ``'plain'``) replaces the mix by one kind."""
        rng = random.Random('requests:%s:%s:%d' % (self.seed, stream,
                                                   instances))
        return [self._request(rng, instances, kind)
                for _ in range(count)]

    def warmup_requests(self, count):
        """Single-instance requests that warm the scheduler up: one of
        every shape of the mix (each kind, and each zone, extra spec set
        and image property set of its kind), so that what a service
        computes once per shape is done before measuring, then ``count``
        requests of a warm-up stream."""
        rng = random.Random('requests:%s:shapes' % self.seed)
        shapes = [self._request(rng, 1, kind, variant)
                  for kind, variants in (
                      ('plain', [None]), ('az', REQUEST_ZONES),
                      ('extra_specs', EXTRA_SPECS),
                      ('image', IMAGE_PROPERTIES),
                      ('anti_affinity', [None]), ('affinity', [None]))
                  for variant in variants]
        return shapes + self.requests(1, count, 'warmup')

    def _request(self, rng, instances, kind=None, variant=None):
        """A request of ``kind`` (default: drawn from the mix); its zone,
        extra specs or image properties are ``variant`` when given."""
        kind = kind or _weighted(rng, KINDS)
        uuids = [_uuid(rng) for _ in range(instances)]
        flavors = AFFINITY_FLAVORS if kind == 'affinity' else FLAVORS

        def pick(choices):
            return rng.choice(choices) if variant is None else variant

        extra_specs = (dict(pick(EXTRA_SPECS))
                       if kind == 'extra_specs' else {})
        properties = (dict(pick(IMAGE_PROPERTIES))
                      if kind == 'image' else {})
        spec = request_spec.RequestSpec(
            flavor=_flavor(rng.choice(flavors), extra_specs),
            image=image_meta.ImageMeta.from_dict(
                {'id': _uuid(rng), 'name': 'bench-image',
                 'status': 'active', 'properties': properties}),
            num_instances=instances, instance_uuid=uuids[0],
            project_id='project-%d' % rng.randrange(PROJECTS),
            availability_zone=(pick(REQUEST_ZONES)
                               if kind == 'az' else None),
            instance_group=self._group(rng, kind),
            scheduler_hints={})
        return BenchRequest(kind, spec.ensure_defaults(), uuids)

    def _group(self, rng, kind):
        if kind == 'anti_affinity':
            hosts = rng.sample(self.hosts, min(len(self.hosts),
                                               rng.randint(2, 8)))
            policy = 'anti-affinity'
        elif kind == 'affinity':
            hosts = ([rng.choice(self.live_hosts)]
                     if rng.random() < 0.5 else [])
            policy = 'affinity'
        else:
            return None
        return group_obj.InstanceGroup(
            uuid=_uuid(rng), name='bench-%s' % policy,
            project_id='project-%d' % rng.randrange(PROJECTS),
            user_id='bench', policies=[policy],
            members=[_uuid(rng) for _ in hosts], hosts=hosts)


def _flavor(shape, extra_specs):
    name, memory_mb, vcpus, root_gb = shape
    flavor_id = [row[0] for row in FLAVORS].index(name) + 1
    return flavor_obj.Flavor(
        id=flavor_id, name=name, flavorid=str(flavor_id),
        memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb, ephemeral_gb=0,
        swap=0, extra_specs=extra_specs, is_public=True, disabled=False,
        projects=[], rxtx_factor=1.0)
