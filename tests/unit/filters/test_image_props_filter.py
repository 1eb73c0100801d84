"""ImagePropertiesFilter: architecture, hypervisor, VM mode and version."""

import fakes
import pytest

from scheduler.filters import image_props_filter as ipf

X86_KVM = ['x86_64', 'kvm', 'hvm']


def _passes(image_props, supported=(X86_KVM,), version=2011000,
            with_image=True):
    host = fakes.fake_host_state(
        supported_instances=[list(entry) for entry in supported],
        hypervisor_version=version)
    if with_image:
        spec = fakes.fake_spec(image_props=image_props)
    else:
        spec = fakes.fake_spec()
    return ipf.ImagePropertiesFilter().host_passes(host, spec)


def test_image_properties_filter_passes_same_inst_props_and_version():
    assert _passes({'hw_architecture': 'x86_64', 'img_hv_type': 'kvm',
                    'hw_vm_mode': 'hvm',
                    'img_hv_requested_version': '>=2.11,<2.12'})


def test_image_properties_filter_fails_different_inst_props():
    assert not _passes({'hw_architecture': 'armv7l', 'img_hv_type': 'qemu',
                        'hw_vm_mode': 'hvm'})


def test_image_properties_filter_fails_different_hyper_version():
    assert not _passes({'hw_architecture': 'x86_64', 'img_hv_type': 'kvm',
                        'hw_vm_mode': 'hvm',
                        'img_hv_requested_version': '>=5.0'})


def test_image_properties_filter_passes_partial_inst_props():
    assert _passes({'hw_architecture': 'x86_64', 'hw_vm_mode': 'hvm'})


def test_image_properties_filter_fails_partial_inst_props():
    assert not _passes({'hw_architecture': 'x86_64', 'hw_vm_mode': 'hvm'},
                       supported=[['x86_64', 'xen', 'xen']])


def test_image_properties_filter_passes_without_inst_props():
    assert _passes({}, supported=())
    assert _passes(None, supported=(), with_image=False)


def test_image_properties_filter_fails_without_host_props():
    assert not _passes({'hw_architecture': 'x86_64'}, supported=())


def test_image_properties_filter_passes_without_hyper_version():
    assert _passes({'hw_architecture': 'x86_64',
                    'img_hv_requested_version': '>=6.0'}, version=None)


def test_image_properties_filter_fails_with_unsupported_hyper_ver():
    assert not _passes({'hw_architecture': 'x86_64',
                        'img_hv_requested_version': '>=6.0'},
                       version=5000)


def test_version_requirement_alone_is_not_checked():
    # As Nova: only checked together with a matching triple.
    assert _passes({'img_hv_requested_version': '>=99.0'}, supported=())


@pytest.mark.parametrize('prop, value, supported', [
    ('hw_vm_mode', 'pv', ['x86_64', 'xen', 'xen']),
    ('hw_vm_mode', 'hv', ['x86_64', 'kvm', 'hvm']),
    ('hw_vm_mode', 'baremetal', ['x86_64', 'kvm', 'hvm']),
    ('hw_vm_mode', 'HVM', ['x86_64', 'kvm', 'hvm']),
    ('hw_architecture', 'x86_32', ['i686', 'xen', 'hvm']),
    ('hw_architecture', 'i386', ['i686', 'kvm', 'hvm']),
    ('hw_architecture', 'AMD64', ['x86_64', 'kvm', 'hvm']),
    ('img_hv_type', 'xapi', ['x86_64', 'xen', 'hvm']),
    ('img_hv_type', 'KVM', ['x86_64', 'kvm', 'hvm']),
])
def test_image_properties_filter_compat_names(prop, value, supported):
    assert _passes({prop: value}, supported=[supported])


def test_legacy_property_names_are_read():
    assert _passes({'architecture': 'x86_64', 'hypervisor_type': 'kvm',
                    'vm_mode': 'hvm',
                    'hypervisor_version_requires': '>=2.0'})
    assert not _passes({'architecture': 'x86_64',
                        'hypervisor_version_requires': '>=3.0'})


def test_membership_not_position():
    # Nova's test is membership in the triple, not positional.
    assert _passes({'hw_architecture': 'x86_64'},
                   supported=[['kvm', 'hvm', 'x86_64']])


def test_any_supported_entry_may_match():
    supported = [['i686', 'kvm', 'hvm'], ['x86_64', 'qemu', 'hvm']]
    assert _passes({'hw_architecture': 'x86_64', 'img_hv_type': 'qemu'},
                   supported=supported)
    assert not _passes({'hw_architecture': 'x86_64', 'img_hv_type': 'kvm'},
                       supported=supported)


def test_default_architecture_option(conf):
    conf.set_override('image_properties_default_architecture', 'aarch64',
                      'filter_scheduler')
    assert not _passes({})
    assert _passes({}, supported=[['aarch64', 'kvm', 'hvm']])
    assert _passes({'hw_architecture': 'x86_64'})


@pytest.mark.parametrize('props', [{'hw_architecture': 'pdp11'},
                                   {'img_hv_type': 'bochs'},
                                   {'hw_vm_mode': 'paravirt'}])
def test_invalid_values_fail_the_host(props):
    assert not _passes(props)


def test_malformed_version_requirement_fails():
    assert not _passes({'hw_architecture': 'x86_64',
                        'img_hv_requested_version': 'latest'})


def test_runs_on_rebuild_and_once_per_request():
    assert ipf.ImagePropertiesFilter.RUN_ON_REBUILD
    assert ipf.ImagePropertiesFilter.run_filter_once_per_request
    host = fakes.fake_host_state(supported_instances=[X86_KVM])
    spec = fakes.fake_spec(image_props={'hw_architecture': 'armv7l'},
                           scheduler_hints={'_nova_check_type': 'rebuild'})
    assert not list(ipf.ImagePropertiesFilter().filter_all([host], spec))


@pytest.mark.parametrize('name, canonical', [
    ('i386', 'i686'), ('i486', 'i686'), ('i586', 'i686'),
    ('x86_32', 'i686'), ('x86_32p', 'i686'), ('amd64', 'x86_64'),
    ('X86_64', 'x86_64'), ('PPC64LE', 'ppc64le'), (None, None)])
def test_canonicalize_arch(name, canonical):
    assert ipf.canonicalize_arch(name) == canonical


def test_canonicalize_hv_type_and_vm_mode():
    assert ipf.canonicalize_hv_type('XAPI') == 'xen'
    assert ipf.canonicalize_hv_type('QEMU') == 'qemu'
    assert ipf.canonicalize_vm_mode('PV') == 'xen'
    assert ipf.canonicalize_vm_mode('hv') == 'hvm'
    assert ipf.canonicalize_vm_mode('baremetal') == 'hvm'
    with pytest.raises(ipf.InvalidImageProperty):
        ipf.canonicalize_vm_mode('bogus')


@pytest.mark.parametrize('value, version', [
    (2011000, (2, 11, 0)), (6002000, (6, 2, 0)), (1002003, (1, 2, 3)),
    (5000, (0, 5, 0)), ('7000001', (7, 0, 1))])
def test_version_from_int(value, version):
    assert ipf.version_from_int(value) == version


@pytest.mark.parametrize('version, predicate, ok', [
    ((6, 2, 0), '>=6.0', True),
    ((6, 2, 0), '>=6.0,<6.2', False),
    ((6, 1, 9), '>=6.0,<6.2', True),
    ((6, 2, 0), '==6.2', True),
    ((6, 2, 0), '==6.2.0', True),
    ((6, 2, 1), '!=6.2.0', True),
    ((6, 2, 0), '> 6.1.99', True),
    ((6, 2, 0), '<= 6', False),
])
def test_version_satisfies(version, predicate, ok):
    assert ipf.version_satisfies(version, predicate) is ok


@pytest.mark.parametrize('predicate', ['6.0', '>=', '~=6.0', '>=6.x', ''])
def test_version_satisfies_rejects_malformed(predicate):
    with pytest.raises(ValueError):
        ipf.version_satisfies((6, 0, 0), predicate)
