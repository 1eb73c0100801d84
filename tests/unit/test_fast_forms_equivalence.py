"""Speed never changes an answer: the fast forms over a
HostTable against the per-host reference contract.

For random fleets of HostStates and random RequestSpecs, every registered
filter (alone, and the Newton default list plus CoreFilter) must let the
same hosts through, in the same order, through
``HostFilterHandler.get_filtered_rows`` as through
``get_filtered_objects``; every registered weigher (alone and all
together) must give the same order and bit-for-bit the same weights
through ``HostWeightHandler.get_weighed_rows`` as through
``get_weighed_objects``; and the limits the driver writes with
``apply_limits`` must be those ``host_passes`` writes.  The comparisons
are repeated on the same table and the same filter and weigher instances
after the hosts change (consumption, aggregates, instances, service), so
that the per-host memo caches are exercised across row versions.

Nothing is mocked: HostStates are real (built directly, or through
``HostState.update`` from a compute node row), and so are the filters,
weighers and request objects.  Filters needing outside services run with
their defaults: TrustedFilter with attestation off (every node
``unknown``), MetricsFilter with the drawn ``[metrics] weight_setting``.
The strategies draw no NUMA topology for hosts or requests (the
NUMATopologyFilter then passes every host through its per-host form)
and no PCI requests (only ``pci_stats`` pools, for the PCIWeigher).
No filter is skipped.

The discrepancies these properties found are also kept as
deterministic regression tests at the end of this module
(``test_request_dependent_ratio_hook_is_honoured``,
``test_filters_reading_limits``, ``test_non_finite_aggregate_multiplier``).
"""

import copy
import datetime
import json
import math
import uuid

import fakes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from oslo_utils import timeutils

from scheduler import exception
from scheduler import filters
from scheduler import weights
from scheduler.conf import CONF
from scheduler.filters import ram_filter
from scheduler.filters.core_filter import CoreFilter
from scheduler.filters.disk_filter import BaseDiskFilter
from scheduler.filters.ram_filter import BaseRamFilter
from scheduler.objects import cell_mapping
from scheduler.objects import instance as instance_obj
from scheduler.objects import request_spec
from scheduler.view.host_state import HostState
from scheduler.view.host_table import HostTable
from scheduler.weights import ram as ram_weigher

NEWTON_AND_CORE = ['RetryFilter', 'AvailabilityZoneFilter', 'RamFilter',
                   'DiskFilter', 'ComputeFilter',
                   'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
                   'ServerGroupAntiAffinityFilter',
                   'ServerGroupAffinityFilter', 'CoreFilter']

HOSTS = ['host%d' % i for i in range(5)]
# Instance uuids shared between the hosts' instances, the server groups'
# members, the request's instance and the different/same_host hints.
UUIDS = [str(uuid.UUID(int=i + 1)) for i in range(8)]
OTHER_CELL = str(uuid.UUID(int=999))
IMAGE = str(uuid.UUID(int=700))
ISOLATED_IMAGE = str(uuid.UUID(int=701))

# ---------------------------------------------------------------------------
# Strategies: hosts
# ---------------------------------------------------------------------------

RATIOS = st.sampled_from([None, 0.0, 0.5, 1.0, 1.5, 3.0, 16.0])
HYPERVISOR_VERSIONS = st.sampled_from(
    [None, 0, 1002003, 2011000, 6000000, 6002000, 7000000])
SUPPORTED = st.lists(st.sampled_from([
    ['x86_64', 'kvm', 'hvm'], ['x86_64', 'qemu', 'hvm'],
    ['aarch64', 'qemu', 'hvm'], ['x86_64', 'xen', 'xen'],
    ['i686', 'qemu', 'hvm'], ['X86_64', 'KVM', 'HVM']]), max_size=3)
CPU_INFO = st.sampled_from([
    None, '{"arch": "x86_64", "features": ["aes", "mmx"]}',
    '{"arch": "aarch64", "features": ["sve"]}', '{"arch": "x86_64"}',
    'not json'])
STATS = st.dictionaries(
    st.sampled_from(['cpu_arch', 'ssd', 'gpu', 'num_vf']),
    st.sampled_from(['x86_64', 'aarch64', 'true', 'false', '2', '10']),
    max_size=3)
HOST_IPS = st.sampled_from([None, '10.0.0.5', '10.0.0.200', '10.0.1.5',
                            'fe80::1', 'bogus'])
METRICS = st.one_of(st.none(), st.lists(st.fixed_dictionaries({
    'name': st.sampled_from(['cpu.percent', 'cpu.idle.time',
                             'cpu.user.time', 'numa.membw.current']),
    'value': st.one_of(st.none(), st.integers(0, 10 ** 6),
                       st.sampled_from([0.05, 0.5, 0.99, 'n/a'])),
    'source': st.just('libvirt.LibvirtDriver'),
    'timestamp': st.just('2016-01-01T00:00:00.000000')}), max_size=3))
PCI_STATS = st.one_of(
    st.none(), st.just('garbage'), st.just({'no': 'objects'}),
    st.lists(st.fixed_dictionaries({
        'vendor_id': st.just('8086'), 'product_id': st.just('1520'),
        'numa_node': st.sampled_from([0, 1, None]),
        'count': st.integers(0, 150), 'dev_type': st.just('type-VF')}),
        max_size=2))
INSTANCE = st.fixed_dictionaries({
    'instance_type_id': st.sampled_from([None, 1, 2]),
    'architecture': st.sampled_from([None, 'x86_64', 'aarch64']),
    'os_type': st.sampled_from([None, 'linux', 'windows']),
    'vm_mode': st.sampled_from([None, 'hvm'])})
INSTANCES = st.dictionaries(st.sampled_from(UUIDS), INSTANCE, max_size=4)
# Heartbeats relative to now, far from the 60 s service_down_time bound
# (the filter and its vectorised form read the clock separately).
HEARTBEATS = st.sampled_from([
    ('naive', 0), ('naive', -20), ('naive', -45), ('naive', -600),
    ('naive', -86400), ('naive', 30), ('naive', 3600), ('aware', -10),
    ('aware', -3600), ('iso', -5), ('iso', -7200), ('none', 0),
    ('created', -5), ('created', -3600)])
SERVICES = st.one_of(st.none(), st.fixed_dictionaries({
    'disabled': st.sampled_from([False, False, False, True]),
    'forced_down': st.sampled_from([False, False, False, True, None]),
    'heartbeat': HEARTBEATS}))


@st.composite
def host_descriptions(draw, index):
    """A plain description of one compute node (a dict), built into a
    HostState by ``build_state``."""
    return {
        'host': draw(st.sampled_from(HOSTS)),
        'node': 'node%d' % index,
        'via_update': draw(st.booleans()),
        'never_reported': draw(st.sampled_from([False] * 9 + [True])),
        'cell_uuid': draw(st.sampled_from(
            [None, cell_mapping.SINGLE_CELL_UUID, OTHER_CELL])),
        'total_ram': draw(st.sampled_from([0, 512, 2048, 8192, 32768])),
        'free_ram': draw(st.one_of(
            st.integers(-4096, 32768),
            st.sampled_from([0, 512, 1024, 2048, 4096]))),
        'disk_gb': draw(st.sampled_from([0, 1, 10, 40, 200])),
        'free_disk_gb': draw(st.integers(-20, 200)),
        'disk_least': draw(st.one_of(st.none(), st.integers(-5, 200))),
        'vcpus': draw(st.sampled_from([0, 1, 2, 4, 8, 64])),
        'vcpus_used': draw(st.integers(0, 100)),
        'cpu_ratio': draw(RATIOS),
        'ram_ratio': draw(RATIOS),
        'disk_ratio': draw(RATIOS),
        'num_instances': draw(st.integers(0, 60)),
        'io_ops': draw(st.integers(0, 12)),
        'failed_builds': draw(st.sampled_from([0, 0, 1, 3])),
        'hypervisor_version': draw(HYPERVISOR_VERSIONS),
        'supported': draw(SUPPORTED),
        'cpu_info': draw(CPU_INFO),
        'stats': draw(STATS),
        'host_ip': draw(HOST_IPS),
        'metrics': draw(METRICS),
        'pci_stats': draw(PCI_STATS),
        'instances': draw(INSTANCES),
        'service': draw(SERVICES),
    }


AGG_METADATA = st.dictionaries(st.sampled_from([
    'availability_zone', 'ram_allocation_ratio', 'cpu_allocation_ratio',
    'disk_allocation_ratio', 'ram_weight_multiplier',
    'cpu_weight_multiplier', 'disk_weight_multiplier',
    'io_ops_weight_multiplier', 'build_failure_weight_multiplier',
    'num_instances_weight_multiplier', 'pci_weight_multiplier',
    'hypervisor_version_weight_multiplier',
    'soft_affinity_weight_multiplier',
    'soft_anti_affinity_weight_multiplier',
    'image_props_weight_multiplier', 'cross_cell_move_weight_multiplier',
    'metrics_weight_multiplier', 'max_io_ops_per_host',
    'max_instances_per_host', 'filter_tenant_id', 'filter_tenant_id2',
    'instance_type', 'ssd', 'hw_architecture', 'os_type']),
    st.sampled_from([
        'az1', 'az2', 'az1, az2', 'nova', '0', '1', '2', '3', '0.5', '1.5',
        '2.0', '-1', '-2.5', '', 'abc', 'p1', 'p1,p2', 'm1.small',
        'm1.small, m1.big', 'true', 'false', 'x86_64', 'aarch64,x86_64',
        'linux', 'nan', 'inf', '-inf']),
    max_size=4)


@st.composite
def aggregate_descriptions(draw):
    count = draw(st.integers(0, 4))
    return [{'id': agg_id + 1,
             'hosts': draw(st.sets(st.sampled_from(HOSTS), max_size=3)),
             'metadata': draw(AGG_METADATA)}
            for agg_id in range(count)]


@st.composite
def fleets(draw, min_size=1, max_size=8):
    size = draw(st.integers(min_size, max_size))
    return {'hosts': [draw(host_descriptions(i)) for i in range(size)],
            'aggregates': draw(aggregate_descriptions())}


# ---------------------------------------------------------------------------
# Strategies: requests
# ---------------------------------------------------------------------------

EXTRA_SPECS = st.dictionaries(st.sampled_from([
    'capabilities:cpu_info:arch', 'capabilities:cpu_info:features',
    'capabilities:hypervisor_version', 'hypervisor_version',
    'free_ram_mb', 'capabilities:free_disk_mb', 'cpu_arch', 'ssd',
    'capabilities:stats:ssd', 'capabilities:num_io_ops', 'num_instances',
    'capabilities:host_ip', 'capabilities:service:disabled',
    'capabilities:availability_zone', 'capabilities:nosuch:thing',
    'capabilities:limits:memory_mb', 'capabilities:limits:vcpu',
    'nosuchattr', 'aggregate_instance_extra_specs:ssd',
    'aggregate_instance_extra_specs:os_type', 'trust:trusted_host',
    'hw:cpu_policy', 'quota:disk_read_bytes_sec']),
    st.sampled_from([
        'x86_64', 'true', 'false', '<or> x86_64 <or> aarch64',
        's== aarch64', 's!= x86_64', '>= 2000000', '>= 6000000', '<= 10',
        '= 1024', '== 2', '!= 0', '<in> 10.0.0', '<all-in> aes',
        '<all-in> aes mmx', '<in> sve', 'False', 'trusted', 'unknown',
        'shared', 'linux', 'az1', '>=', '1000']),
    max_size=3)
IMAGE_PROPS = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    'hw_architecture': st.sampled_from(
        ['x86_64', 'aarch64', 'i386', 'AMD64', 'sparcv99']),
    'img_hv_type': st.sampled_from(['kvm', 'qemu', 'xapi', 'bogus']),
    'hw_vm_mode': st.sampled_from(['hvm', 'xen', 'pv', 'weird']),
    'img_hv_requested_version': st.sampled_from(
        ['>=6.0', '>=2.0,<7', '==2.11.0', '<1', 'garbage']),
    'os_type': st.sampled_from(['linux', 'windows'])}))
QUERIES = st.sampled_from([
    '[">=", "$free_ram_mb", 1024]',
    '["and", [">=", "$free_disk_mb", 10240], ["<", "$num_io_ops", 5]]',
    '["=", "$stats.ssd", "true"]', '["or", ["=", "$host", "host1"], '
    '["not", ["<", "$vcpus_total", 4]]]', '["in", "$host", "host0", '
    '"host3"]', '["=", "$service.disabled", false]', 'not json', '[]',
    '["<", "$host", 1]', '["frob", 1]',
    '[">=", "$limits.memory_mb", 2048]'])
HINTS = st.fixed_dictionaries({}, optional={
    'different_host': st.lists(st.sampled_from(UUIDS), min_size=1,
                               max_size=2),
    'same_host': st.lists(st.sampled_from(UUIDS), min_size=1, max_size=2),
    'build_near_host_ip': st.sampled_from(['10.0.0.1', 'fe80::2', 'x']),
    'cidr': st.sampled_from(['/24', '24', '/16', '/33', 'abc']),
    'query': QUERIES,
    '_nova_check_type': st.sampled_from(['rebuild', 'resize']),
})
GROUPS = st.one_of(st.none(), st.fixed_dictionaries({
    'policy': st.sampled_from(['affinity', 'anti-affinity',
                               'soft-affinity', 'soft-anti-affinity']),
    'legacy': st.booleans(),
    'members': st.lists(st.sampled_from(UUIDS), unique=True, max_size=5),
    'hosts': st.lists(st.sampled_from(HOSTS + ['gone']), unique=True,
                      max_size=3),
    'rules': st.one_of(st.just({}), st.fixed_dictionaries({
        'max_server_per_host': st.sampled_from(['1', '2', '3', '0', '-1',
                                                'abc'])}))}))
RETRIES = st.one_of(st.none(), st.lists(st.tuples(
    st.sampled_from(HOSTS + ['gone']),
    st.sampled_from(['node%d' % i for i in range(8)] + ['gone'])),
    max_size=4))
DESTINATIONS = st.one_of(st.none(), st.fixed_dictionaries({
    'cell': st.sampled_from([None, cell_mapping.SINGLE_CELL_UUID,
                             OTHER_CELL]),
    'allow_cross_cell_move': st.booleans()}))


@st.composite
def spec_descriptions(draw):
    """A plain description of a request, built by ``build_spec``."""
    return {
        'vcpus': draw(st.sampled_from([0, 1, 2, 4, 8, 65])),
        'memory_mb': draw(st.one_of(
            st.sampled_from([0, 1, 512, 2048, 4096, 8192, 40000]),
            st.integers(0, 20000))),
        'root_gb': draw(st.sampled_from([0, 1, 10, 20, 80, 300])),
        'ephemeral_gb': draw(st.sampled_from([0, 0, 1, 5])),
        'swap': draw(st.sampled_from([0, 0, 512, 1024])),
        'flavor_id': draw(st.sampled_from([1, 2])),
        'flavor_name': draw(st.sampled_from(['m1.small', 'm1.big'])),
        'extra_specs': draw(EXTRA_SPECS),
        'image': draw(IMAGE_PROPS),
        'image_id': draw(st.sampled_from([IMAGE, ISOLATED_IMAGE])),
        'availability_zone': draw(st.sampled_from(
            [None, 'nova', 'az1', 'az2', 'az3'])),
        'project_id': draw(st.sampled_from([None, 'p1', 'p2'])),
        'retry': draw(RETRIES),
        'group': draw(GROUPS),
        'instance_uuid': draw(st.sampled_from(
            UUIDS + [str(uuid.UUID(int=500))])),
        'hints': draw(HINTS),
        'destination': draw(DESTINATIONS),
    }


# Configuration the filters and weighers read, drawn per example.
FILTER_CONF = st.fixed_dictionaries({
    'max_io_ops_per_host': st.sampled_from([0, 2, 8]),
    'max_instances_per_host': st.sampled_from([1, 5, 50]),
    'isolated_hosts': st.sampled_from([[], ['host1'], ['host0', 'host3']]),
    'isolated_images': st.sampled_from([[], [ISOLATED_IMAGE]]),
    'restrict_isolated_hosts_to_isolated_images': st.booleans(),
    'aggregate_image_properties_isolation_namespace': st.sampled_from(
        [None, 'hw', 'os']),
    'aggregate_image_properties_isolation_separator': st.sampled_from(
        ['.', '_']),
    'image_properties_default_architecture': st.sampled_from(
        [None, 'x86_64']),
    'image_props_weight_setting': st.sampled_from(
        [[], ['os_type=2.0'], ['hw_architecture=1', 'bad', 'os_type=-1']]),
})
SIGNED = st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
NON_NEGATIVE = st.sampled_from([0.0, 0.5, 1.0, 2.5])
MULTIPLIER_CONF = st.fixed_dictionaries({
    'ram_weight_multiplier': SIGNED,
    'cpu_weight_multiplier': SIGNED,
    'disk_weight_multiplier': SIGNED,
    'io_ops_weight_multiplier': SIGNED,
    'build_failure_weight_multiplier': st.sampled_from(
        [-1.0, 0.0, 1.0, 1000000.0]),
    'cross_cell_move_weight_multiplier': st.sampled_from(
        [-1.0, 1.0, 1000000.0]),
    'hypervisor_version_weight_multiplier': SIGNED,
    'num_instances_weight_multiplier': SIGNED,
    'image_props_weight_multiplier': SIGNED,
    'pci_weight_multiplier': NON_NEGATIVE,
    'soft_affinity_weight_multiplier': NON_NEGATIVE,
    'soft_anti_affinity_weight_multiplier': NON_NEGATIVE,
})
METRICS_CONF = st.fixed_dictionaries({
    'weight_setting': st.sampled_from(
        [[], ['cpu.percent=1.0'], ['cpu.percent=-1', 'cpu.idle.time=2'],
         ['cpu.user.time=0', 'bogus'], ['numa.membw.current=1']]),
    'required': st.booleans(),
    'weight_multiplier': st.sampled_from([-1.0, 0.0, 1.0, 2.0]),
})
DEFAULT_CONF = st.fixed_dictionaries({
    'default_availability_zone': st.sampled_from(['nova', 'az1']),
})


class configured:
    """Every override of a drawn configuration, for one example."""

    def __init__(self, filter_conf=None, multipliers=None, metrics=None,
                 defaults=None):
        fs = dict(filter_conf or {})
        fs.update(multipliers or {})
        self.managers = [fakes.conf_overrides('filter_scheduler', **fs),
                         fakes.conf_overrides('metrics', **(metrics or {})),
                         fakes.conf_overrides(None, **(defaults or {}))]

    def __enter__(self):
        for manager in self.managers:
            manager.__enter__()

    def __exit__(self, *exc_info):
        for manager in reversed(self.managers):
            manager.__exit__(*exc_info)


# ---------------------------------------------------------------------------
# Building real objects from the descriptions
# ---------------------------------------------------------------------------


def _heartbeat_service(desc, host, now):
    kind, offset = desc['heartbeat']
    when = now + datetime.timedelta(seconds=offset)
    service = fakes.fake_service(host=host, disabled=desc['disabled'],
                                 forced_down=desc['forced_down'])
    if kind == 'naive':
        service['last_seen_up'] = when
    elif kind == 'aware':
        service['last_seen_up'] = (when + datetime.timedelta(hours=2)) \
            .replace(tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    elif kind == 'iso':
        service['last_seen_up'] = when.isoformat() + 'Z'
    elif kind == 'none':
        service['last_seen_up'] = None
        service['created_at'] = None
    else:  # 'created': no heartbeat yet, created_at counts
        service['last_seen_up'] = None
        service['created_at'] = when
    return service


def build_instances(descs):
    return {instance_uuid: instance_obj.Instance(uuid=instance_uuid, **desc)
            for instance_uuid, desc in descs.items()}


def build_aggregates(agg_descs):
    return [fakes.fake_aggregate(desc['id'], sorted(desc['hosts']),
                                 desc['metadata'])
            for desc in agg_descs]


def aggregates_of(host, aggregates):
    return [agg for agg in aggregates if host in agg.hosts]


def _compute_row(desc, index):
    stats = dict(desc['stats'], num_instances=desc['num_instances'],
                 io_workload=desc['io_ops'],
                 failed_builds=desc['failed_builds'])
    row = {
        'id': index + 1, 'host': desc['host'],
        'hypervisor_hostname': desc['node'],
        'memory_mb': desc['total_ram'], 'free_ram_mb': desc['free_ram'],
        'local_gb': desc['disk_gb'],
        'free_disk_gb': (None if desc['never_reported']
                         else desc['free_disk_gb']),
        'disk_available_least': desc['disk_least'],
        'local_gb_used': max(desc['disk_gb'] - desc['free_disk_gb'], 0),
        'vcpus': desc['vcpus'], 'vcpus_used': desc['vcpus_used'],
        'stats': json.dumps(stats), 'hypervisor_type': 'QEMU',
        'hypervisor_version': desc['hypervisor_version'],
        'cpu_info': desc['cpu_info'],
        'supported_instances': json.dumps(desc['supported']),
        'metrics': (json.dumps(desc['metrics'])
                    if desc['metrics'] is not None else None),
        'pci_stats': (json.dumps(desc['pci_stats'])
                      if desc['pci_stats'] is not None else None),
        'host_ip': desc['host_ip'],
        'cpu_allocation_ratio': desc['cpu_ratio'],
        'ram_allocation_ratio': desc['ram_ratio'],
        'disk_allocation_ratio': desc['disk_ratio'],
    }
    return row


def build_state(desc, index, aggregates, now):
    """A HostState from a host description."""
    state = HostState(desc['host'], desc['node'], cell_uuid=desc['cell_uuid'])
    service = (_heartbeat_service(desc['service'], desc['host'], now)
               if desc['service'] is not None else None)
    instances = build_instances(desc['instances'])
    host_aggs = aggregates_of(desc['host'], aggregates)
    if desc['via_update']:
        state.update(_compute_row(desc, index), service, host_aggs,
                     instances)
        return state
    state.update(aggregates=host_aggs, instances=instances)
    state.service = service
    if desc['never_reported']:
        return state   # zero resources and no ratios (None)
    state.compute_id = index + 1
    state.total_usable_ram_mb = desc['total_ram']
    state.free_ram_mb = desc['free_ram']
    state.total_usable_disk_gb = desc['disk_gb']
    state.free_disk_mb = desc['free_disk_gb'] * 1024
    state.vcpus_total = desc['vcpus']
    state.vcpus_used = desc['vcpus_used']
    state.cpu_allocation_ratio = desc['cpu_ratio']
    state.ram_allocation_ratio = desc['ram_ratio']
    state.disk_allocation_ratio = desc['disk_ratio']
    state.num_instances = desc['num_instances']
    state.num_io_ops = desc['io_ops']
    state.failed_builds = desc['failed_builds']
    state.stats = dict(desc['stats'])
    state.hypervisor_version = desc['hypervisor_version']
    state.supported_instances = [list(e) for e in desc['supported']]
    state.cpu_info = desc['cpu_info']
    state.host_ip = desc['host_ip']
    state.metrics = copy.deepcopy(desc['metrics'])
    state.pci_stats = copy.deepcopy(desc['pci_stats'])
    return state


def build_fleet(fleet):
    now = timeutils.utcnow()
    aggregates = build_aggregates(fleet['aggregates'])
    return [build_state(desc, i, aggregates, now)
            for i, desc in enumerate(fleet['hosts'])]


def build_spec(desc):
    kwargs = {
        'vcpus': desc['vcpus'], 'memory_mb': desc['memory_mb'],
        'root_gb': desc['root_gb'], 'ephemeral_gb': desc['ephemeral_gb'],
        'swap': desc['swap'], 'extra_specs': desc['extra_specs'],
        'name': desc['flavor_name'],
        'instance_uuid': desc['instance_uuid'],
        'availability_zone': desc['availability_zone'],
        'project_id': desc['project_id'],
    }
    if desc['hints']:
        kwargs['scheduler_hints'] = desc['hints']
    if desc['retry'] is not None:
        kwargs['retry'] = fakes.fake_retry(desc['retry'])
    group = desc['group']
    if group is not None:
        kwargs['instance_group'] = fakes.fake_group(
            group['policy'], group['members'], group['hosts'],
            group['rules'], legacy=group['legacy'])
    destination = desc['destination']
    if destination is not None:
        cell = (cell_mapping.CellMapping(uuid=destination['cell'])
                if destination['cell'] else None)
        kwargs['requested_destination'] = request_spec.Destination(
            host='host0', cell=cell,
            allow_cross_cell_move=destination['allow_cross_cell_move'])
    spec = fakes.fake_spec(**kwargs)
    spec.flavor.id = desc['flavor_id']
    if desc['image'] is not None:
        spec.image = fakes.fake_image(**desc['image'])
        spec.image.id = desc['image_id']
    return spec


# ---------------------------------------------------------------------------
# Comparing the two paths
# ---------------------------------------------------------------------------


def _clone(state):
    """A copy of ``state`` with limits of its own."""
    clone = copy.copy(state)
    clone.limits = dict(state.limits)
    return clone


def _keys(states):
    return [(s.host, s.nodename) for s in states]


def _same_float(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def _filter_instances(names=None):
    classes = {cls.__name__: cls for cls in filters.all_filters()}
    if names is None:
        return [cls() for cls in classes.values()]
    return [classes[name]() for name in names]


def check_filters(host_filters, table, rows, spec, index):
    """``get_filtered_rows`` gives the hosts ``get_filtered_objects``
    gives, in order; ``apply_limits`` of the filters that ran as
    ``host_mask`` gives the limits ``host_passes`` writes.  Both paths
    start from empty limits."""
    handler = filters.HostFilterHandler()
    names = [type(f).__name__ for f in host_filters]
    for row in rows.tolist():
        table.states[row].limits = {}
    reference = [_clone(table.states[row]) for row in rows.tolist()]
    passed_ref = handler.get_filtered_objects(host_filters, reference, spec,
                                              index)
    passed_rows, ran, _ = handler.get_filtered_rows(host_filters, table,
                                                    rows, spec, index)
    fast = table.states_at(passed_rows.tolist())
    assert _keys(fast) == _keys(passed_ref), (names, index)
    for host_filter in ran:
        assert host_filter in host_filters
        for state in fast:
            host_filter.apply_limits(state, spec)
    for fast_state, ref_state in zip(fast, passed_ref, strict=True):
        assert fast_state.limits == ref_state.limits, (
            names, index, fast_state)


def _weigh_reference(weighers, states, spec):
    try:
        return weights.HostWeightHandler().get_weighed_objects(
            weighers, states, spec), None
    except exception.ComputeHostMetricNotFound as exc:
        return None, exc


def check_weighers(weighers, table, rows, spec):
    """Same order and bit-for-bit the same weights."""
    names = [type(w).__name__ for w in weighers]
    states = table.states_at(rows.tolist())
    reference, error = _weigh_reference(weighers, states, spec)
    if error is not None:
        with pytest.raises(type(error)):
            weights.HostWeightHandler().get_weighed_rows(
                weighers, table, rows, spec)
        return
    fast_rows, fast_weights = weights.HostWeightHandler().get_weighed_rows(
        weighers, table, rows, spec)
    assert _keys(table.states_at(fast_rows.tolist())) == _keys(
        [w.obj for w in reference]), names
    assert len(fast_weights) == len(reference)
    for weighed, fast_weight in zip(reference, fast_weights.tolist(),
                                    strict=True):
        assert isinstance(fast_weight, float)
        assert _same_float(weighed.weight, fast_weight), (
            names, weighed, fast_weight)


def _candidate_rows(data, table):
    """A random subset of the table's rows, in random order (the driver
    filters and weighs rows in the order of the previous weighing)."""
    order = data.draw(st.permutations(range(len(table))), label='order')
    keep = data.draw(st.integers(1, len(table)), label='keep')
    return np.asarray(order[:keep], dtype=np.intp)


# ---------------------------------------------------------------------------
# Mutations between comparisons (cache invalidation)
# ---------------------------------------------------------------------------

MUTATIONS = st.lists(st.one_of(
    st.tuples(st.just('consume'), st.integers(0, 7), spec_descriptions()),
    st.tuples(st.just('aggregates'), st.integers(0, 7),
              aggregate_descriptions()),
    st.tuples(st.just('instances'), st.integers(0, 7), INSTANCES),
    st.tuples(st.just('service'), st.integers(0, 7), SERVICES),
    st.tuples(st.just('compute'), st.integers(0, 7), host_descriptions(0)),
), min_size=1, max_size=3)


def mutate(table, mutation):
    """Change one HostState the way the HostManager does, and sync."""
    kind, index, payload = mutation
    state = table.states[index % len(table)]
    if kind == 'consume':
        state.consume_from_request(build_spec(payload))
        table.sync([state])
    elif kind == 'aggregates':
        state.update(aggregates=aggregates_of(
            state.host, build_aggregates(payload)))
        table.sync([state], part='aggregates')
    elif kind == 'instances':
        state.update(instances=build_instances(payload))
        table.sync([state])
    elif kind == 'service':
        service = (_heartbeat_service(payload, state.host,
                                      timeutils.utcnow())
                   if payload is not None else None)
        # HostState.update(service=None) leaves it unchanged.
        state.service = service
        table.sync([state], part='service')
    else:
        desc = dict(payload, host=state.host, node=state.nodename)
        state.updated = None
        state.update(compute=_compute_row(desc, index))
        table.sync([state])


# ---------------------------------------------------------------------------
# The properties
# ---------------------------------------------------------------------------


@settings(max_examples=400)
@given(fleet=fleets(), specs=st.lists(spec_descriptions(), min_size=1,
                                      max_size=2),
       mutations=MUTATIONS, filter_conf=FILTER_CONF,
       metrics_conf=METRICS_CONF, defaults=DEFAULT_CONF, data=st.data())
def test_filters_match_reference(fleet, specs, mutations, filter_conf,
                                 metrics_conf, defaults, data):
    """Every filter alone, and the Newton list + CoreFilter, on index 0
    and 1, before and after each change of the hosts."""
    with configured(filter_conf, metrics=metrics_conf, defaults=defaults):
        table = HostTable(build_fleet(fleet))
        singles = [[f] for f in _filter_instances()]
        combined = _filter_instances(NEWTON_AND_CORE)
        filter_lists = singles + [combined]
        specs = [build_spec(desc) for desc in specs]
        for step in range(len(mutations) + 1):
            if step:
                mutate(table, mutations[step - 1])
            rows = _candidate_rows(data, table)
            for spec in specs:
                for index in (0, 1):
                    for host_filters in filter_lists:
                        check_filters(host_filters, table, rows, spec,
                                      index)


@settings(max_examples=300)
@given(fleet=fleets(), specs=st.lists(spec_descriptions(), min_size=1,
                                      max_size=2),
       mutations=MUTATIONS, filter_conf=FILTER_CONF,
       multipliers=MULTIPLIER_CONF, metrics_conf=METRICS_CONF,
       data=st.data())
def test_weighers_match_reference(fleet, specs, mutations, filter_conf,
                                  multipliers, metrics_conf, data):
    """Every weigher alone and all together: same order, bit-for-bit
    the same weights, before and after each change of the hosts."""
    with configured(filter_conf, multipliers, metrics_conf):
        table = HostTable(build_fleet(fleet))
        classes = weights.all_weighers()
        weigher_lists = [[cls()] for cls in classes]
        weigher_lists.append([cls() for cls in classes])
        specs = [build_spec(desc) for desc in specs]
        for step in range(len(mutations) + 1):
            if step:
                mutate(table, mutations[step - 1])
            rows = _candidate_rows(data, table)
            for spec in specs:
                for weighers in weigher_lists:
                    check_weighers(weighers, table, rows, spec)


def test_every_registered_plugin_is_covered():
    """The properties above loop over the registries: make sure they
    are not empty (a broken entry point would silently shrink them)."""
    assert len(filters.all_filters()) >= 30
    assert len(weights.all_weighers()) >= 13


# ---------------------------------------------------------------------------
# Plug-ins overriding the per-host methods
# ---------------------------------------------------------------------------


class NeverRamFilter(ram_filter.RamFilter):
    """A third-party RamFilter whose host_passes says no."""

    def host_passes(self, host_state, spec_obj):
        return False


class HalfRamWeigher(ram_weigher.RAMWeigher):
    """A third-party RAMWeigher weighing the RAM of odd nodes half."""

    def _weigh_object(self, host_state, weight_properties):
        free = host_state.free_ram_mb
        return free / 2 if host_state.nodename.endswith(
            ('1', '3', '5', '7')) else free


class FlavorRatioRamFilter(BaseRamFilter):
    """A third-party RAM filter whose ratio comes from the request (the
    hook takes ``spec_obj`` for that): the flavor's ``ram_ratio``."""

    def _get_ram_allocation_ratio(self, host_state, spec_obj):
        return float(spec_obj.flavor.extra_specs.get('ram_ratio', '1.0'))


class FlavorRatioDiskFilter(BaseDiskFilter):
    """The same for disk: ``disk_ratio`` of the flavor."""

    def _get_disk_allocation_ratio(self, host_state, spec_obj):
        return float(spec_obj.flavor.extra_specs.get('disk_ratio', '1.0'))


class GrudgeCoreFilter(CoreFilter):
    """A CoreFilter subclass adding a per-host check of its own."""

    def host_passes(self, host_state, spec_obj):
        if host_state.nodename == 'node0':
            return False
        return super().host_passes(host_state, spec_obj)


@settings(max_examples=100)
@given(fleet=fleets(min_size=2), spec=spec_descriptions(), data=st.data())
def test_plugin_overrides_are_honoured(fleet, spec, data):
    table = HostTable(build_fleet(fleet))
    spec = build_spec(spec)
    rows = _candidate_rows(data, table)
    for host_filters in ([NeverRamFilter()], [GrudgeCoreFilter()],
                         [ram_filter.RamFilter(), NeverRamFilter()]):
        check_filters(host_filters, table, rows, spec, 0)
    rows_out, _, _ = filters.HostFilterHandler().get_filtered_rows(
        [NeverRamFilter()], table, rows, spec)
    if spec.get_scheduler_hint('_nova_check_type') != 'rebuild':
        assert len(rows_out) == 0
    for weighers in ([HalfRamWeigher()],
                     [HalfRamWeigher(), ram_weigher.RAMWeigher()]):
        check_weighers(weighers, table, rows, spec)


@pytest.mark.parametrize('host_filter', [FlavorRatioRamFilter(),
                                         FlavorRatioDiskFilter()],
                         ids=lambda f: type(f).__name__)
def test_request_dependent_ratio_hook_is_honoured(host_filter):
    """``_get_<resource>_allocation_ratio(host_state, spec_obj)`` may read
    the request (that is why it takes ``spec_obj``): successive requests
    with different ratios on the same table must each get their own
    answer.  Host: 4096 MiB RAM with 1024 free, 10 GiB disk with 2 GiB
    free; request: 2048 MiB RAM, 4 GiB root disk.  Ratio 1.0 fails,
    ratio 2.0 passes (usable RAM 8192 - 3072 = 5120 MiB, usable disk
    20 - 8 = 12 GiB)."""
    state = fakes.fake_host_state('host1', 'node1', total_usable_ram_mb=4096,
                                  free_ram_mb=1024, total_usable_disk_gb=10,
                                  free_disk_mb=2048)
    table = HostTable([state])
    for ratio in ('1.0', '2.0', '1.0'):
        spec = fakes.fake_spec(memory_mb=2048, root_gb=4, extra_specs={
            'ram_ratio': ratio, 'disk_ratio': ratio})
        check_filters([host_filter], table, table.all_rows, spec, 0)


# ---------------------------------------------------------------------------
# Discrepancies found by the properties, kept as deterministic examples
# ---------------------------------------------------------------------------


@pytest.mark.parametrize('host_filters, spec_kwargs', [
    (['RamFilter', 'ComputeCapabilitiesFilter'],
     {'extra_specs': {'capabilities:limits:memory_mb': '>= 1'}}),
    (NEWTON_AND_CORE,
     {'extra_specs': {'capabilities:limits:memory_mb': '>= 1'}}),
    (['RamFilter', 'JsonFilter'],
     {'scheduler_hints': {'query': '[">=", "$limits.memory_mb", 1]'}}),
], ids=['ram+capabilities', 'newton+core', 'ram+json'])
def test_filters_reading_limits(host_filters, spec_kwargs):
    """A filter reading ``host_state.limits`` (a public HostState
    attribute, readable by ComputeCapabilitiesFilter's
    ``capabilities:limits:...`` extra specs and JsonFilter's
    ``$limits...`` variables) sees the limits an earlier filter's
    ``host_passes`` wrote on the reference path; on the fast path the
    earlier filter ran as ``host_mask`` and writes them only later,
    through ``apply_limits``.  One host that passes everything."""
    state = fakes.fake_host_state(
        'host1', 'node1', total_usable_ram_mb=4096, free_ram_mb=4096,
        ram_allocation_ratio=1.0, total_usable_disk_gb=100,
        free_disk_mb=102400, disk_allocation_ratio=1.0, vcpus_total=8,
        cpu_allocation_ratio=1.0, service=fakes.fake_service(),
        supported_instances=[['x86_64', 'kvm', 'hvm']])
    table = HostTable([state])
    spec = fakes.fake_spec(memory_mb=512, **spec_kwargs)
    check_filters(_filter_instances(host_filters), table, table.all_rows,
                  spec, 0)


@pytest.mark.parametrize('value, free_ram', [('nan', 1024), ('inf', 0)])
def test_non_finite_aggregate_multiplier(value, free_ram):
    """An aggregate's ``ram_weight_multiplier`` of ``nan`` (or ``inf``,
    times a normalised 0) makes the host's weight NaN.  The reference
    sort (``sorted(..., reverse=True)``) leaves a NaN where it was; the
    fast sort (``np.argsort(-total, kind='stable')``) puts it last."""
    first = fakes.fake_host_state('host0', 'node0', free_ram_mb=free_ram)
    first.aggregates = [fakes.fake_aggregate(
        1, ['host0'], {'ram_weight_multiplier': value})]
    second = fakes.fake_host_state('host1', 'node1', free_ram_mb=1024)
    table = HostTable([first, second])
    check_weighers([ram_weigher.RAMWeigher()], table, table.all_rows,
                   fakes.fake_spec())


def test_fast_form_applies_to_the_plugins():
    """The fall-back decision itself, for the plug-ins above."""
    from scheduler import loadables
    from scheduler.filters import _REFERENCE as FILTER_REFERENCE
    from scheduler.weights import _REFERENCE as WEIGHER_REFERENCE

    assert loadables.fast_form_applies(ram_filter.RamFilter(), 'host_mask',
                                       FILTER_REFERENCE)
    assert not loadables.fast_form_applies(NeverRamFilter(), 'host_mask',
                                           FILTER_REFERENCE)
    assert not loadables.fast_form_applies(NeverRamFilter(), 'memo_key',
                                           FILTER_REFERENCE)
    assert not loadables.fast_form_applies(GrudgeCoreFilter(), 'host_mask',
                                           FILTER_REFERENCE)
    assert loadables.fast_form_applies(ram_weigher.RAMWeigher(), 'column',
                                       WEIGHER_REFERENCE)
    assert not loadables.fast_form_applies(HalfRamWeigher(), 'column',
                                           WEIGHER_REFERENCE)
    assert not loadables.fast_form_applies(HalfRamWeigher(), 'memo_key',
                                           WEIGHER_REFERENCE)


def test_conf_is_clean_after_the_properties():
    """The drawn overrides are cleared after each example."""
    assert CONF.filter_scheduler.ram_weight_multiplier == 1.0
    assert CONF.metrics.weight_setting == []
    assert CONF.default_availability_zone == 'nova'
