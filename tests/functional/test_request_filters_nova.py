"""Request filters against Nova 34's own: the root traits
``scheduler.placement.request_filters.apply`` adds for a request must be
those Nova's request filter functions add to the same request (Nova
from PyPI in its own venv, ``nova_request/request_filters.py``), or
both must refuse it with the same error.

Compared: the filters that read nothing but the flavor, the image and
the options (image type support, disabled computes, image metadata
prefilter, accelerators, packed virtqueues, ephemeral encryption,
virtio sound, vTPM secret security), and those that read Neutron, the
cells' compute versions and Placement's segment aggregates (routed
networks, remote-managed ports, ``OWNER_NOVA``), in Nova's order, so
that the first refusal is the same.  Both sides ask the same Neutron
stand-in (``tests/neutron_standin.py``), Nova through its own
``neutron.API`` and neutronclient; both get the same minimum compute
version and the same segment aggregates (``NEUTRON_WORLD``).  The
answers compared: root traits, the routed networks' ``member_of``
lists in order, the request groups given ``OWNER_NOVA``, or the error.
The aggregate filters are tested in
``tests/unit/placement/test_request_filters.py`` and
``tests/functional/test_placement_mode.py``.
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
from neutron_standin import NeutronStandin
from nova_venv import load_helper_module
from nova_venv import nova_python
from oslo_config import cfg

from scheduler import exception
from scheduler.conf import neutron as neutron_conf
from scheduler.objects import flavor as flavor_obj
from scheduler.objects import image_meta
from scheduler.objects import network as network_obj
from scheduler.objects import pci as pci_obj
from scheduler.objects import request_group
from scheduler.objects import request_spec
from scheduler.placement import hardware
from scheduler.placement import neutron
from scheduler.placement import request as request_lib
from scheduler.placement import request_filters

HELPER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'nova_request')
NOVA_FILTERS = os.path.join(HELPER_DIR, 'request_filters.py')

cases = load_helper_module(os.path.join(HELPER_DIR, 'cases.py'),
                           'nova_request_cases')
# Our classes, for ``cases.request_spec``.
OURS = types.SimpleNamespace(
    RequestSpec=request_spec.RequestSpec, Flavor=flavor_obj.Flavor,
    ImageMeta=image_meta.ImageMeta, RequestGroup=request_group.RequestGroup,
    RequestLevelParams=request_group.RequestLevelParams,
    Destination=request_spec.Destination)
# Our errors for Nova's: the scheduler manager ends a RequestFilterFailed
# as NoValidHost.
ERRORS = {'RequestFilterFailed': 'NoValidHost',
          'ResourceProviderAggregateRetrievalFailed':
              'SegmentProviderNotFound'}
# The [scheduler] options of the filters compared, Nova's defaults.
OPTIONS = {'limit_tenants_to_placement_aggregate': False,
           'placement_aggregate_required_for_tenants': False,
           'query_placement_for_image_type_support': False,
           'enable_isolated_aggregate_filtering': False,
           'image_metadata_prefilter': False,
           'query_placement_for_routed_network_aggregates': False}
TOKEN = 'request-filters-nova'


# -- the world outside the request: Neutron, Placement's segments ------------

def _uuid(n):
    return '00000000-0000-4000-8000-%012d' % n


NET_PLAIN, NET_ROUTED, NET_NO_AGGREGATE, NET_NO_PROVIDER, NET_EMPTY = (
    _uuid(n) for n in range(1, 6))
SEG_1, SEG_2, SEG_NO_AGGREGATE, SEG_NO_PROVIDER = (
    _uuid(n) for n in range(11, 15))
SUB_PLAIN, SUB_1, SUB_2, SUB_NO_AGGREGATE, SUB_NO_PROVIDER = (
    _uuid(n) for n in range(21, 26))
(PORT_FIXED, PORT_UNBOUND, PORT_REMOTE, PORT_REMOTE_ROUTED, PORT_NORMAL,
 PORT_MISSING, PORT_NO_SEGMENT) = (_uuid(n) for n in range(31, 38))
# Placement: segment provider -> its aggregates (SEG_NO_PROVIDER: none).
SEGMENT_AGGREGATES = {SEG_1: [_uuid(41), _uuid(42)], SEG_2: [_uuid(43)],
                      SEG_NO_AGGREGATE: []}


def _subnet(subnet, network, segment):
    return {'id': subnet, 'network_id': network, 'segment_id': segment}


def _port(port, network, subnet=None, vnic_type='normal'):
    return {'id': port, 'network_id': network,
            'fixed_ips': [{'subnet_id': subnet, 'ip_address': '10.0.0.9'}]
            if subnet else [], 'binding:vnic_type': vnic_type}


NEUTRON_WORLD = {
    'networks': [{'id': net} for net in (NET_PLAIN, NET_ROUTED,
                                         NET_NO_AGGREGATE, NET_NO_PROVIDER,
                                         NET_EMPTY)],
    'subnets': [_subnet(SUB_PLAIN, NET_PLAIN, None),
                _subnet(SUB_1, NET_ROUTED, SEG_1),
                _subnet(SUB_2, NET_ROUTED, SEG_2),
                _subnet(SUB_NO_AGGREGATE, NET_NO_AGGREGATE,
                        SEG_NO_AGGREGATE),
                _subnet(SUB_NO_PROVIDER, NET_NO_PROVIDER, SEG_NO_PROVIDER)],
    'segments': [{'id': SEG_1, 'network_id': NET_ROUTED},
                 {'id': SEG_2, 'network_id': NET_ROUTED},
                 {'id': SEG_NO_AGGREGATE, 'network_id': NET_NO_AGGREGATE},
                 {'id': SEG_NO_PROVIDER, 'network_id': NET_NO_PROVIDER}],
    'ports': [_port(PORT_FIXED, NET_ROUTED, SUB_1),
              _port(PORT_UNBOUND, NET_ROUTED),
              _port(PORT_REMOTE, NET_PLAIN, vnic_type='remote-managed'),
              _port(PORT_REMOTE_ROUTED, NET_ROUTED, SUB_2,
                    vnic_type='remote-managed'),
              _port(PORT_NORMAL, NET_PLAIN, SUB_PLAIN),
              _port(PORT_NO_SEGMENT, NET_PLAIN, SUB_PLAIN)],
}
NETWORKS = [NET_PLAIN, NET_ROUTED, NET_ROUTED, NET_NO_AGGREGATE,
            NET_NO_PROVIDER, NET_EMPTY]
PORTS = [PORT_FIXED, PORT_UNBOUND, PORT_REMOTE, PORT_REMOTE_ROUTED,
         PORT_NORMAL, PORT_NORMAL, PORT_MISSING, PORT_NO_SEGMENT]


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    """The Neutron stand-in serving ``NEUTRON_WORLD`` and our client of
    it (a ConfigOpts of its own: ``[neutron] auth_type = admin_token``)."""
    with NeutronStandin(token=TOKEN, **NEUTRON_WORLD) as standin:
        path = tmp_path_factory.mktemp('neutron') / 'neutron.conf'
        path.write_text('[neutron]\nauth_type = admin_token\n'
                        'token = %s\nendpoint = %s\n' % (TOKEN, standin.url))
        conf = cfg.ConfigOpts()
        neutron_conf.register_opts(conf)
        conf(['--config-file', str(path)], project='neutron-world',
             default_config_files=[], default_config_dirs=[])
        yield types.SimpleNamespace(standin=standin,
                                    client=neutron.NeutronClient(conf))


# -- Nova's side --------------------------------------------------------------

def nova_answers(cases, world):
    python = nova_python()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith('PYTHON')}
    env.update(NEUTRON_URL=world.standin.url, NEUTRON_TOKEN=TOKEN,
               SEGMENT_AGGREGATES=json.dumps(SEGMENT_AGGREGATES))
    done = subprocess.run([python, '-I', NOVA_FILTERS],
                          input=json.dumps(cases), capture_output=True,
                          text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# -- ours ---------------------------------------------------------------------

def our_spec(case):
    spec = cases.request_spec(case, OURS)
    spec.image.disk_format = case['disk_format']
    if case.get('requested_networks') is not None:
        spec.requested_networks = network_obj.NetworkRequestList(objects=[
            network_obj.NetworkRequest(network_id=network, port_id=port)
            for network, port in case['requested_networks']])
    if case.get('pci_requests') is not None:
        spec.pci_requests = pci_obj.InstancePCIRequests(requests=[
            pci_obj.InstancePCIRequest(count=1, spec=[{}], **request)
            for request in case['pci_requests']])
    return spec


def _aggregates(uuid):
    found = SEGMENT_AGGREGATES.get(uuid)
    return None if found is None else frozenset(found)


def our_answer(case, world=None):
    spec = our_spec(case)
    conf = types.SimpleNamespace(scheduler=types.SimpleNamespace(
        **{**OPTIONS, **case['options']}))
    query = request_lib.ResourceRequest()
    for group in spec.obj_get('requested_resources') or ():
        query.add_outside_group(group)
    version = case.get('min_compute_version', 0)
    lookups = request_filters.Lookups(
        min_compute_version=lambda: version,
        neutron=world.client if world is not None else None,
        provider_aggregates=_aggregates)
    try:
        request_filters.apply(query, spec, (), conf, lookups)
    except hardware.HardwareRequestError as error:
        return {'error': error.nova_exception}
    except exception.SchedulerException as error:
        return {'error': type(error).__name__}
    return {'root_required': sorted(query.root_required),
            'root_forbidden': sorted(query.root_forbidden),
            'member_of': [sorted(entry) for entry in query.group().member_of],
            'owner_groups': sorted(
                suffix for suffix, group in query.groups.items()
                if suffix and 'OWNER_NOVA' in group.required)}


# -- generated requests -------------------------------------------------------

# Flavor extra specs and their values: valid, empty, invalid.
EXTRA_SPECS = {
    'hw:virtio_packed_ring': ['true', 'True', 'yes', '1', 'false', 'no', '',
                              'bogus'],
    'hw:ephemeral_encryption': ['true', 'on', 'false', '0', '', 'bogus'],
    'hw:ephemeral_encryption_format': ['luks', 'luksv2', 'plain', '',
                                       'aes'],
    'hw:sound_model': ['virtio', 'virtio', 'sb16', 'usb', '', 'bogus'],
    'hw:tpm_version': ['1.2', '2.0', '2.0', '', '3.0'],
    'hw:tpm_model': ['tpm-tis', 'tpm-crb', '', 'bogus'],
    'hw:tpm_secret_security': ['user', 'host', 'deployment', '',
                               'image'],
    'accel:device_profile': ['gpu', ''],
}
# Image properties and their values, as Nova's ImageMetaProps fields
# accept them (Nova refuses other values before its filters run).
IMAGE_PROPERTIES = {
    'hw_virtio_packed_ring': [True, False],
    'hw_ephemeral_encryption': [True, False],
    'hw_ephemeral_encryption_format': ['luks', 'luksv2', 'plain'],
    'hw_sound_model': ['virtio', 'sb16', 'ich9'],
    'hw_tpm_version': ['1.2', '2.0'],
    'hw_tpm_model': ['tpm-tis', 'tpm-crb'],
    'hw_disk_bus': ['virtio', 'scsi'],
    'hw_vif_model': ['e1000', 'virtio'],
    'hw_architecture': ['x86_64', 'aarch64'],
}
DISK_FORMATS = ['qcow2', 'raw', 'iso', 'ploop', 'vhdx', 'bogus']


def settings_of(rng, table, most):
    """Up to ``most`` settings of ``table``, each with one of its values
    (``rng``: a random.Random)."""
    keys = rng.sample(sorted(table), rng.randint(0, most))
    return {key: rng.choice(table[key]) for key in keys}


def random_networks(rng):
    """Requested networks (None: the field unset), ports and networks
    of ``NEUTRON_WORLD``, and a missing port now and then."""
    if rng.random() < 0.2:
        return None
    return [[rng.choice(NETWORKS), None] if rng.random() < 0.5
            else [None, rng.choice(PORTS)]
            for _ in range(rng.randint(0, 3))]


def random_pci(rng):
    """PCI requests (from a flavor alias or a port) and the request
    groups Nova names after them (``<request_id>-<n>``), plus a group of
    a port."""
    requests, groups = [], []
    for n in range(rng.randint(0, 2)):
        request_id = _uuid(100 + n)
        requests.append({'request_id': request_id,
                         'alias_name': rng.choice(['gpu', None])})
        groups.append({'requester_id': '%s-0' % request_id,
                       'resources': {'CUSTOM_PCI_%d' % n: 1}})
    if rng.random() < 0.3:
        groups.append({'requester_id': PORT_NORMAL,
                       'resources': {'NET_BW_EGR_KILOBIT_PER_SEC': 10}})
    return requests, groups


def random_request(rng):
    """The keyword arguments of ``request_case`` for one request."""
    requests, groups = random_pci(rng)
    return {'extra_specs': settings_of(rng, EXTRA_SPECS, 5),
            'image_properties': settings_of(rng, IMAGE_PROPERTIES, 4),
            'disk_format': rng.choice(DISK_FORMATS),
            'is_bfv': rng.random() < 0.5,
            'options': {
                'query_placement_for_image_type_support':
                    rng.random() < 0.5,
                'image_metadata_prefilter': rng.random() < 0.5,
                'query_placement_for_routed_network_aggregates':
                    rng.random() < 0.7},
            'requested_networks': random_networks(rng),
            'pci_requests': requests, 'requested_resources': groups,
            'min_compute_version': rng.choice([0, 72, 73, 80])}


# Cases of each rule that generation may miss.
KNOWN_REQUESTS = [
    {'extra_specs': {'hw:virtio_packed_ring': ''},
     'image_properties': {'hw_virtio_packed_ring': True}},
    {'extra_specs': {'hw:virtio_packed_ring': 'bogus'},
     'image_properties': {'hw_virtio_packed_ring': False}},
    {'extra_specs': {'hw:ephemeral_encryption': 'true',
                     'hw:ephemeral_encryption_format': ''},
     'image_properties': {'hw_ephemeral_encryption_format': 'luksv2'}},
    {'extra_specs': {'hw:ephemeral_encryption': 'false',
                     'hw:ephemeral_encryption_format': 'aes'},
     'image_properties': {}},
    {'extra_specs': {'hw:sound_model': ''},
     'image_properties': {'hw_sound_model': 'virtio'}},
    {'extra_specs': {'hw:sound_model': 'virtio'},
     'image_properties': {'hw_sound_model': 'sb16'}},
    {'extra_specs': {'hw:tpm_secret_security': 'deployment'},
     'image_properties': {'hw_tpm_version': '2.0',
                          'hw_tpm_model': 'tpm-crb'}},
    {'extra_specs': {'hw:tpm_version': '2.0',
                     'hw:tpm_secret_security': 'image'},
     'image_properties': {}},
    {'extra_specs': {'hw:tpm_version': '', 'hw:tpm_secret_security': 'x'},
     'image_properties': {}},
    {'extra_specs': {'hw:virtio_packed_ring': 'no',
                     'hw:sound_model': 'bogus',
                     'hw:tpm_version': '3.0'},
     'image_properties': {'hw_virtio_packed_ring': True}},
    {'extra_specs': {'hw:sound_model': 'bogus', 'hw:tpm_version': '2.0',
                     'hw:tpm_secret_security': 'image'},
     'image_properties': {}},
]


# Cases of the filters that read outside the request, and what each
# gives here (and, in the differential test, in Nova).
ROUTED = {'query_placement_for_routed_network_aggregates': True}
ALIAS = _uuid(100)
KNOWN_OUTSIDE = [
    ({'requested_networks': [[NET_ROUTED, None]], 'options': ROUTED},
     {'member_of': [sorted(SEGMENT_AGGREGATES[SEG_1] +
                           SEGMENT_AGGREGATES[SEG_2])]}),
    ({'requested_networks': [[None, PORT_FIXED], [NET_PLAIN, None]],
      'options': ROUTED},
     {'member_of': [SEGMENT_AGGREGATES[SEG_1]]}),
    ({'requested_networks': [[NET_ROUTED, None]]}, {}),
    ({'requested_networks': [[NET_NO_AGGREGATE, None]], 'options': ROUTED},
     {'error': 'NoValidHost'}),
    ({'requested_networks': [[NET_NO_PROVIDER, None]], 'options': ROUTED},
     {'error': 'SegmentProviderNotFound'}),
    ({'requested_networks': [[None, PORT_MISSING]]},
     {'error': 'PortNotFound'}),
    ({'requested_networks': [[None, PORT_REMOTE_ROUTED]],
      'options': ROUTED},
     {'member_of': [SEGMENT_AGGREGATES[SEG_2]],
      'root_required': ['COMPUTE_REMOTE_MANAGED_PORTS']}),
    ({'min_compute_version': 72}, {}),
    ({'min_compute_version': 73,
      'pci_requests': [{'request_id': ALIAS, 'alias_name': 'gpu'}],
      'requested_resources': [{'requester_id': '%s-0' % ALIAS,
                               'resources': {'CUSTOM_PCI_0': 1}}]},
     {'root_required': ['OWNER_NOVA'], 'owner_groups': ['%s-0' % ALIAS]}),
]


def request_case(extra_specs, image_properties, disk_format='qcow2',
                 is_bfv=False, options=None, **outside):
    """A request case of a flavor with these extra specs and an image
    with these properties (the other fields fixed); ``outside``:
    ``requested_networks``, ``pci_requests``, ``requested_resources``,
    ``min_compute_version``."""
    return {'flavor': {'name': 'flavor', 'vcpus': 1, 'memory_mb': 512,
                       'root_gb': 1, 'ephemeral_gb': 0, 'swap': 0,
                       'extra_specs': extra_specs},
            'image_properties': image_properties,
            'disk_format': disk_format, 'is_bfv': is_bfv,
            'options': options or {}, **outside}


def assert_as_nova(cases, world):
    """Our answer to each case is Nova's; else the first three that
    differ."""
    differ = []
    for case, nova in zip(cases, nova_answers(cases, world), strict=True):
        if 'error' in nova:
            nova = {'error': ERRORS.get(nova['error'], nova['error'])}
        ours = our_answer(case, world)
        if ours != nova:
            differ.append({'case': case, 'ours': ours, 'nova': nova})
    assert not differ, json.dumps(differ[:3], indent=1)


def test_known_cases_answer_as_expected():
    """The known cases, by hand: what each rule gives here (and, in the
    test below, in Nova)."""
    answers = [_traits(our_answer(request_case(**case)))
               for case in KNOWN_REQUESTS]
    disabled = ['COMPUTE_STATUS_DISABLED']
    assert answers == [
        {'error': 'FlavorImageConflict'},
        {'root_required': [], 'root_forbidden': disabled},
        {'root_required': ['COMPUTE_EPHEMERAL_ENCRYPTION',
                           'COMPUTE_EPHEMERAL_ENCRYPTION_LUKSV2'],
         'root_forbidden': disabled},
        {'root_required': [], 'root_forbidden': disabled},
        {'root_required': ['COMPUTE_SOUND_MODEL_VIRTIO'],
         'root_forbidden': disabled},
        {'error': 'FlavorImageConflict'},
        {'root_required': [
            'COMPUTE_SECURITY_TPM_SECRET_SECURITY_DEPLOYMENT'],
         'root_forbidden': disabled},
        {'error': 'NoValidHost'},
        {'root_required': [], 'root_forbidden': disabled},
        {'error': 'FlavorImageConflict'},
        {'error': 'Invalid'},
    ]


def _traits(answer):
    """An answer without the routed networks and OWNER_NOVA groups."""
    return {key: value for key, value in answer.items()
            if key not in ('member_of', 'owner_groups')}


def _outside_case(fields):
    return request_case({}, {}, **fields)


def test_known_outside_cases_answer_as_expected(world):
    """The known cases of the filters that read Neutron, the versions
    and the segments, by hand (and, in the test below, in Nova)."""
    for fields, expected in KNOWN_OUTSIDE:
        answer = our_answer(_outside_case(fields), world)
        if 'error' not in expected:
            expected = {'root_required': [], 'member_of': [],
                        'owner_groups': [],
                        'root_forbidden': ['COMPUTE_STATUS_DISABLED'],
                        **expected}
            expected['root_required'] = sorted(expected['root_required'])
        assert answer == expected, fields


# Each example is a batch of requests for one Nova process, drawn by a
# random.Random of the example's seed: Hypothesis's own first example
# of a list of dictionaries is a list of empty ones, and a batch this
# large overflows its buffer, which fills the rest with empty ones too.
# A failure lists the requests that differ.
@pytest.mark.timeout(240)
@settings(max_examples=3, deadline=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=2 ** 64))
def test_our_request_filters_are_novas(world, seed):
    rng = random.Random(seed)
    requests = [request_case(**case) for case in KNOWN_REQUESTS] + [
        _outside_case(fields) for fields, _ in KNOWN_OUTSIDE] + [
        request_case(**random_request(rng)) for _ in range(100)]
    assert_as_nova(requests, world)
