"""Request translation against Nova 34's own: the allocation candidates
query ``scheduler.placement.request.for_scheduling`` builds from a
RequestSpec must be the query string Nova's
``resources_from_request_spec`` builds from the same request (Nova from
PyPI in its own venv, ``nova_request/translate.py``), or both must
refuse it with the same error.
"""

import json
import os
import random
import subprocess
import types

import pytest
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from nova_venv import load_helper_module
from nova_venv import nova_python

from scheduler import exception
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import request_group
from scheduler.objects import request_spec
from scheduler.placement import hardware
from scheduler.placement import request as placement_request

HELPER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'nova_request')
TRANSLATE = os.path.join(HELPER_DIR, 'translate.py')


cases = load_helper_module(os.path.join(HELPER_DIR, 'cases.py'),
                           'nova_request_cases')
# Our classes, for ``cases.request_spec``.
OURS = types.SimpleNamespace(
    RequestSpec=request_spec.RequestSpec, Flavor=flavor_obj.Flavor,
    ImageMeta=image_meta.ImageMeta, RequestGroup=request_group.RequestGroup,
    RequestLevelParams=request_group.RequestLevelParams,
    Destination=request_spec.Destination)
NODES = (
    {'uuid': '11111111-1111-4111-8111-111111111111', 'host': 'host1',
     'hypervisor_hostname': 'node1'},
    {'uuid': '22222222-2222-4222-8222-22222222222a', 'host': 'host2',
     'hypervisor_hostname': 'node2a'},
    {'uuid': '22222222-2222-4222-8222-22222222222b', 'host': 'host2',
     'hypervisor_hostname': 'node2b'},
)
# Our errors for Nova's: Nova raises ValueError for a requested group
# without requester_id or asking for nothing.
ERRORS = {'ValueError': 'InvalidRequestSpec'}


# -- Nova's side --------------------------------------------------------------

def nova_answers(cases):
    python = nova_python()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith('PYTHON')}
    done = subprocess.run([python, '-I', TRANSLATE], input=json.dumps(cases),
                          capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# -- ours ---------------------------------------------------------------------

def find_nodes(host, node, cell):
    return [types.SimpleNamespace(**found)
            for found in cases.nodes_named(NODES, host, node)]


def our_answer(case):
    spec = cases.request_spec(case, OURS)
    try:
        request = placement_request.for_scheduling(
            spec, case['max_placement_results'], find_nodes)
    except hardware.HardwareRequestError as error:
        return {'error': error.nova_exception}
    except exception.SchedulerException as error:
        return {'error': type(error).__name__}
    destination = spec.obj_get('requested_destination')
    if destination is not None:
        destination = [destination.obj_get('host'),
                       destination.obj_get('node')]
    return {'query': request.querystring(), 'destination': destination}


# -- generated requests -------------------------------------------------------

SUFFIXES = st.sampled_from([None, '1', '2', '_NET', 'abc'])
RESOURCE_CLASSES = st.sampled_from([
    'VCPU', 'MEMORY_MB', 'DISK_GB', 'PCPU', 'VGPU', 'SRIOV_NET_VF',
    'CUSTOM_GOLD', 'custom_lower', 'BOGUS'])
AMOUNTS = st.sampled_from(['0', '1', '2', '4', '16', '-1', 'x', '1.5'])
TRAITS = st.sampled_from(['HW_CPU_X86_AVX512F', 'CUSTOM_T',
                          'COMPUTE_STATUS_DISABLED', 'HW_CPU_HYPERTHREADING'])
AGGREGATES = st.sampled_from(['agg-a', 'agg-b', 'agg-c'])


@st.composite
def extra_specs(draw):
    specs = {}
    for _ in range(draw(st.integers(0, 6))):
        suffix = draw(SUFFIXES) or ''
        kind = draw(st.sampled_from(['resources', 'trait', 'policy', 'hw',
                                     'other']))
        if kind == 'resources':
            specs['resources%s:%s' % (suffix, draw(RESOURCE_CLASSES))] = \
                draw(AMOUNTS)
        elif kind == 'trait':
            specs['trait%s:%s' % (suffix, draw(TRAITS))] = draw(
                st.sampled_from(['required', 'forbidden', 'maybe']))
        elif kind == 'policy':
            specs['group_policy'] = draw(
                st.sampled_from(['none', 'isolate', 'bogus']))
        elif kind == 'hw':
            key, values = draw(st.sampled_from([
                ('hw:cpu_policy', ['shared', 'dedicated']),
                ('hw:cpu_thread_policy', ['prefer', 'isolate', 'require']),
                ('hw:emulator_threads_policy', ['share', 'isolate']),
                ('os:secure_boot', ['required', 'disabled']),
                ('hw:pci_numa_affinity_policy', ['socket', 'legacy']),
            ]))
            specs[key] = draw(st.sampled_from(values))
        else:
            specs['aggregate_instance_extra_specs:x'] = 'y'
    return specs


@st.composite
def outside_groups(draw):
    groups = []
    for _ in range(draw(st.integers(0, 2))):
        group = {'requester_id': draw(st.sampled_from(
            [None, '1', 'port-a', 'port-b']))}
        group['resources'] = draw(st.dictionaries(
            st.sampled_from(['NET_BW_EGR_KILOBIT_PER_SEC',
                             'NET_BW_IGR_KILOBIT_PER_SEC', 'CUSTOM_GOLD']),
            st.integers(0, 1000), max_size=2))
        group['required_traits'] = draw(st.sets(TRAITS, max_size=1))
        if draw(st.booleans()):
            group['aggregates'] = [[draw(AGGREGATES)]]
        groups.append(group)
    return groups


@st.composite
def destinations(draw):
    destination = {}
    if draw(st.booleans()):
        destination['host'] = draw(st.sampled_from(['host1', 'host2',
                                                    'host9']))
    if draw(st.booleans()):
        destination['node'] = draw(st.sampled_from(['node1', 'node2b',
                                                    'node9']))
    if draw(st.booleans()):
        destination['aggregates'] = draw(st.lists(st.sampled_from(
            ['agg-a', 'agg-b,agg-c', 'agg-c']), min_size=1, max_size=2))
    if draw(st.booleans()):
        destination['forbidden_aggregates'] = draw(
            st.lists(AGGREGATES, min_size=1, max_size=2, unique=True))
    return destination


@st.composite
def requests(draw):
    case = {
        'flavor': {
            'vcpus': draw(st.integers(1, 8)),
            'memory_mb': draw(st.sampled_from([512, 2048, 8192])),
            'root_gb': draw(st.integers(0, 40)),
            'ephemeral_gb': draw(st.integers(0, 10)),
            'swap': draw(st.sampled_from([0, 512, 1024, 1025])),
            'extra_specs': draw(extra_specs()),
        },
        'max_placement_results': draw(st.sampled_from([1000, 5])),
    }
    optional = {
        'image_properties': st.fixed_dictionaries({}, optional={
            'trait:HW_CPU_X86_AVX512F': st.sampled_from(['required', 'x']),
            'trait:CUSTOM_T': st.just('required'),
            'hw_cpu_policy': st.sampled_from(['shared', 'dedicated']),
        }),
        'is_bfv': st.booleans(),
        'requested_resources': outside_groups(),
        'request_level_params': st.fixed_dictionaries({}, optional={
            'root_required': st.sets(TRAITS, max_size=2),
            'root_forbidden': st.sets(TRAITS, max_size=1),
            'same_subtree': st.lists(st.lists(
                st.sampled_from(['_NET', 'port-a', '1']), min_size=1,
                max_size=2, unique=True), max_size=1),
        }),
        'destination': destinations(),
        'force_hosts': st.lists(st.sampled_from(['host1', 'host2']),
                                min_size=1, max_size=1),
        'force_nodes': st.lists(st.sampled_from(['node1', 'node2a']),
                                min_size=1, max_size=1),
        'scheduler_hints': st.sampled_from([{'group': ['g']},
                                            {'same_host': ['u']},
                                            {'foo': ['bar']}]),
    }
    for name, strategy in optional.items():
        if draw(st.integers(0, 3)) == 0:
            case[name] = draw(strategy)
    if case.get('request_level_params'):
        params = case['request_level_params']
        for name in ('root_required', 'root_forbidden'):
            if name in params:
                params[name] = sorted(params[name])
    for group in case.get('requested_resources') or ():
        group['required_traits'] = sorted(group['required_traits'])
    case['nodes'] = list(NODES)
    return case


def _jsonable(case):
    return json.loads(json.dumps(case))


# Each example is a batch of requests for one Nova process; a failure
# lists the requests that differ instead of shrinking the batch.
@settings(max_examples=4, deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(st.lists(requests(), min_size=80, max_size=80))
def test_our_query_is_novas(generated):
    assert_as_nova([_jsonable(case) for case in generated])


def assert_as_nova(cases):
    """Our answer to each case is Nova's; else the first three that
    differ."""
    differ = []
    for case, nova in zip(cases, nova_answers(cases), strict=True):
        if 'error' in nova:
            nova = {'error': ERRORS.get(nova['error'], nova['error'])}
        ours = our_answer(case)
        if ours != nova:
            differ.append({'case': case, 'ours': ours, 'nova': nova})
    assert not differ, json.dumps(differ[:3], indent=1)


@pytest.mark.parametrize('case, query', [
    ({'flavor': {'vcpus': 2, 'memory_mb': 4096, 'root_gb': 20,
                 'ephemeral_gb': 0, 'swap': 0,
                 'extra_specs': {'resources:VGPU': '1',
                                 'trait:HW_CPU_X86_AVX512F': 'required'}},
      'is_bfv': True, 'max_placement_results': 1000},
     'limit=1000&required=HW_CPU_X86_AVX512F'
     '&resources=MEMORY_MB%3A4096%2CVCPU%3A2%2CVGPU%3A1'),
    ({'flavor': {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1,
                 'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}},
      'requested_resources': [{
          'requester_id': 'port-a',
          'resources': {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}],
      'destination': {'aggregates': ['agg-a,agg-b']},
      'max_placement_results': 1000},
     'limit=1000&member_of=in%3Aagg-a%2Cagg-b'
     '&resources=DISK_GB%3A1%2CMEMORY_MB%3A512%2CVCPU%3A1'
     '&resourcesport-a=NET_BW_EGR_KILOBIT_PER_SEC%3A1000'),
])
def test_examples(case, query):
    case['nodes'] = list(NODES)
    assert our_answer(case)['query'] == query
    assert nova_answers([case]) == [our_answer(case)]


# -- hw: and os: settings -----------------------------------------------------

# Flavor extra specs and their values: valid, empty, invalid.
EXTRA_SPECS = {
    'hw:cpu_policy': ['dedicated', 'shared', 'mixed', 'mixed', '', 'bogus'],
    'hw:cpu_thread_policy': ['prefer', 'isolate', 'require', '', 'bogus'],
    'hw:emulator_threads_policy': ['share', 'isolate', '', 'bogus'],
    'hw:cpu_dedicated_mask': ['0', '^0', '1-2', '0-3,^1', '^0-1', ' 1 ,',
                              '7', '', 'x', '2-1', '0,^0', '-1', '^'],
    'hw:cpu_realtime': ['yes', 'true', 'True', 'no', '1', 'bogus', ''],
    'hw:cpu_realtime_mask': ['^0', '0-1', '^0-1', '1', '5', '', 'a', '^x',
                             '0-', ' ^1'],
    'hw:mem_encryption': ['true', 'True', 'yes', 'on', 'false', 'no', '0',
                          'bogus', ''],
    'hw:mem_encryption_model': ['amd-sev', 'amd-sev-es', 'amd-sev-snp',
                                'intel-tdx', '', 'bogus'],
    'hw:pmem': ['small', 'small,large', 'small, small ,', ' ,', '',
                '4GB,4gb', 'a.b,a_b'],
    'hw:tpm_version': ['1.2', '2.0', '2.0', '', '3.0'],
    'hw:tpm_model': ['tpm-tis', 'tpm-crb', '', 'bogus'],
    'hw:pci_numa_affinity_policy': ['required', 'legacy', 'preferred',
                                    'socket', '', 'bogus'],
    'os:secure_boot': ['required', 'disabled', 'optional', '', 'bogus'],
    'hw:maxphysaddr_mode': ['passthrough', 'emulate', '', 'bogus'],
    'resources:VCPU': ['0', '2'],
    'resources:PCPU': ['0', '3'],
    'resources:CUSTOM_PMEM_NAMESPACE_SMALL': ['5'],
    'resources:MEM_ENCRYPTION_CONTEXT': ['2'],
    'trait:HW_CPU_HYPERTHREADING': ['required', 'forbidden'],
    'trait:COMPUTE_SECURITY_TPM_2_0': ['forbidden'],
}
# Image properties and their values, typed as ImageMetaProps holds them.
IMAGE_PROPERTIES = {
    'hw_cpu_policy': ['dedicated', 'shared', 'mixed'],
    'hw_cpu_thread_policy': ['prefer', 'isolate', 'require'],
    'hw_cpu_realtime_mask': ['^0', '0-1', '2', '', 'x', '9'],
    'hw_mem_encryption': [True, False],
    'hw_mem_encryption_model': ['amd-sev', 'amd-sev-es', 'amd-sev-snp',
                                'intel-tdx'],
    'hw_firmware_type': ['uefi', 'uefi', 'bios'],
    'hw_firmware_stateless': [True, False],
    'hw_machine_type': ['q35', 'pc-q35-8.2', 'pc', ''],
    'hw_video_model': ['none', 'virtio'],
    'hw_tpm_version': ['1.2', '2.0'],
    'hw_tpm_model': ['tpm-tis', 'tpm-crb'],
    'hw_pci_numa_affinity_policy': ['required', 'legacy', 'preferred',
                                    'socket'],
    'os_secure_boot': ['required', 'disabled', 'optional'],
    'hw_maxphysaddr_mode': ['passthrough', 'emulate'],
}


def settings_of(rng, table, most):
    """Up to ``most`` settings of ``table``, each with one of its values,
    drawn with ``rng`` (a ``random.Random``)."""
    keys = rng.sample(sorted(table), rng.randint(0, most))
    return {key: rng.choice(table[key]) for key in keys}


# The seed of the generated hw: cases (printed; a seeded random.Random:
# a derandomized hypothesis run of one example gives only its minimal,
# empty, cases).
HARDWARE_SEED = int(os.environ.get('SCHEDULER_HARDWARE_SEED', '2032'))


def hardware_cases(seed, count):
    """``count`` generated hw: cases: up to 5 flavor extra specs and 4
    image properties each, from ``EXTRA_SPECS`` and ``IMAGE_PROPERTIES``."""
    rng = random.Random(seed)
    return [{'vcpus': rng.randint(1, 6),
             'extra_specs': settings_of(rng, EXTRA_SPECS, 5),
             'image_properties': settings_of(rng, IMAGE_PROPERTIES, 4)}
            for _ in range(count)]


# hw: cases of each rule that generation may miss.
KNOWN_HARDWARE_CASES = [
    {'vcpus': 4, 'extra_specs': {'hw:cpu_policy': 'mixed',
                                 'hw:cpu_dedicated_mask': '^0',
                                 'hw:emulator_threads_policy': 'isolate'},
     'image_properties': {}},
    {'vcpus': 4, 'extra_specs': {'hw:cpu_policy': 'mixed',
                                 'hw:cpu_realtime': 'yes',
                                 'hw:cpu_realtime_mask': '^0'},
     'image_properties': {'hw_cpu_realtime_mask': '^0-2'}},
    {'vcpus': 2, 'extra_specs': {'hw:cpu_policy': 'dedicated',
                                 'resources:VCPU': '2'},
     'image_properties': {'hw_cpu_thread_policy': 'require'}},
    {'vcpus': 2, 'extra_specs': {'hw:mem_encryption': 'true',
                                 'hw:pmem': 'a,b,a'},
     'image_properties': {'hw_firmware_type': 'uefi',
                          'hw_mem_encryption_model': 'intel-tdx',
                          'hw_firmware_stateless': True,
                          'hw_video_model': 'none',
                          'hw_machine_type': 'q35'}},
    {'vcpus': 2, 'extra_specs': {'hw:tpm_version': '2.0',
                                 'os:secure_boot': 'required',
                                 'hw:pci_numa_affinity_policy': 'socket'},
     'image_properties': {'hw_tpm_model': 'tpm-crb',
                          'hw_maxphysaddr_mode': 'passthrough',
                          'hw_firmware_type': 'uefi',
                          'hw_firmware_stateless': True}},
    {'vcpus': 2, 'extra_specs': {'hw:cpu_thread_policy': ''},
     'image_properties': {'hw_cpu_thread_policy': 'isolate'}},
    {'vcpus': 2, 'extra_specs': {'hw:cpu_thread_policy': 'prefer'},
     'image_properties': {'hw_cpu_thread_policy': 'isolate'}},
    {'vcpus': 4, 'extra_specs': {'hw:cpu_policy': 'mixed',
                                 'hw:cpu_dedicated_mask': '0-3'},
     'image_properties': {}},
    {'vcpus': 4, 'extra_specs': {'hw:cpu_policy': 'mixed',
                                 'hw:cpu_dedicated_mask': '0',
                                 'hw:cpu_realtime': 'on'},
     'image_properties': {'hw_cpu_realtime_mask': '4'}},
    {'vcpus': 2, 'extra_specs': {'hw:mem_encryption': 'true'},
     'image_properties': {'hw_firmware_type': 'uefi',
                          'hw_machine_type': 'pc-i440fx'}},
    {'vcpus': 2, 'extra_specs': {'hw:mem_encryption': 'true',
                                 'hw:mem_encryption_model': 'intel-tdx'},
     'image_properties': {'hw_firmware_type': 'uefi',
                          'hw_firmware_stateless': True}},
]


def hardware_case(vcpus, extra_specs, image_properties):
    """A request case of a flavor of ``vcpus`` with these extra specs and
    an image with these properties."""
    return {'flavor': {'name': 'flavor', 'vcpus': vcpus, 'memory_mb': 512,
                       'root_gb': 1,
                       'ephemeral_gb': 0, 'swap': 0,
                       'extra_specs': extra_specs},
            'image_properties': image_properties,
            'max_placement_results': 1000, 'nodes': list(NODES)}


def test_hardware_settings_as_nova():
    """CPU pinning, memory encryption, persistent memory, vTPM, PCI NUMA
    affinity, secure boot, maxphysaddr and stateless firmware: the
    resources and traits they add, and the conflicts Nova refuses (the
    known cases, then 150 generated from ``HARDWARE_SEED``)."""
    print('hw: cases seed %d' % HARDWARE_SEED)
    generated = hardware_cases(HARDWARE_SEED, 150)
    assert sum(bool(case['extra_specs'] or case['image_properties'])
               for case in generated) > 120
    generated = [hardware_case(**case)
                 for case in KNOWN_HARDWARE_CASES + generated]
    assert_as_nova(generated)
