"""Request filters against Nova 34's own: the root traits
``scheduler.placement.request_filters.apply`` adds for a request must be
those Nova's request filter functions add to the same request (Nova
from PyPI in its own venv, ``nova_request/request_filters.py``), or
both must refuse it with the same error.

Compared: the filters that read nothing but the flavor, the image and
the options (image type support, disabled computes, image metadata
prefilter, accelerators, packed virtqueues, ephemeral encryption,
virtio sound, vTPM secret security), in Nova's order, so that the first
refusal is the same.  The aggregate filters are tested in
``tests/unit/placement/test_request_filters.py`` and
``tests/functional/test_placement_mode.py``.
"""

import json
import os
import random
import subprocess
import types

import pytest
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
ERRORS = {'RequestFilterFailed': 'NoValidHost'}
# The [scheduler] options of the filters compared, Nova's defaults.
OPTIONS = {'limit_tenants_to_placement_aggregate': False,
           'placement_aggregate_required_for_tenants': False,
           'query_placement_for_image_type_support': False,
           'enable_isolated_aggregate_filtering': False,
           'image_metadata_prefilter': False}


# -- Nova's side --------------------------------------------------------------

def nova_answers(cases):
    python = nova_python()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith('PYTHON')}
    done = subprocess.run([python, '-I', NOVA_FILTERS],
                          input=json.dumps(cases), capture_output=True,
                          text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# -- ours ---------------------------------------------------------------------

def our_answer(case):
    spec = cases.request_spec(case, OURS)
    spec.image.disk_format = case['disk_format']
    conf = types.SimpleNamespace(scheduler=types.SimpleNamespace(
        **{**OPTIONS, **case['options']}))
    query = request_lib.ResourceRequest()
    try:
        request_filters.apply(query, spec, (), conf)
    except hardware.HardwareRequestError as error:
        return {'error': error.nova_exception}
    except exception.SchedulerException as error:
        return {'error': type(error).__name__}
    return {'root_required': sorted(query.root_required),
            'root_forbidden': sorted(query.root_forbidden)}


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


def random_request(rng):
    """The keyword arguments of ``request_case`` for one request."""
    return {'extra_specs': settings_of(rng, EXTRA_SPECS, 5),
            'image_properties': settings_of(rng, IMAGE_PROPERTIES, 4),
            'disk_format': rng.choice(DISK_FORMATS),
            'is_bfv': rng.random() < 0.5,
            'options': {
                'query_placement_for_image_type_support':
                    rng.random() < 0.5,
                'image_metadata_prefilter': rng.random() < 0.5}}


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


def request_case(extra_specs, image_properties, disk_format='qcow2',
                 is_bfv=False, options=None):
    """A request case of a flavor with these extra specs and an image
    with these properties (the other fields fixed)."""
    return {'flavor': {'name': 'flavor', 'vcpus': 1, 'memory_mb': 512,
                       'root_gb': 1, 'ephemeral_gb': 0, 'swap': 0,
                       'extra_specs': extra_specs},
            'image_properties': image_properties,
            'disk_format': disk_format, 'is_bfv': is_bfv,
            'options': options or {}}


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


def test_known_cases_answer_as_expected():
    """The known cases, by hand: what each rule gives here (and, in the
    test below, in Nova)."""
    answers = [our_answer(request_case(**case)) for case in KNOWN_REQUESTS]
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


# Each example is a batch of requests for one Nova process, drawn by a
# random.Random of the example's seed: Hypothesis's own first example
# of a list of dictionaries is a list of empty ones, and a batch this
# large overflows its buffer, which fills the rest with empty ones too.
# A failure lists the requests that differ.
@pytest.mark.timeout(240)
@settings(max_examples=3, deadline=None, phases=[Phase.generate])
@given(st.integers(min_value=0, max_value=2 ** 64))
def test_our_request_filters_are_novas(seed):
    rng = random.Random(seed)
    requests = [request_case(**case) for case in KNOWN_REQUESTS] + [
        request_case(**random_request(rng)) for _ in range(100)]
    assert_as_nova(requests)
