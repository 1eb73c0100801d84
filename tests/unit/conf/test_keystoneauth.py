"""keystoneauth1's options of [placement] and [neutron] are registered
when a client needs them, not when the configuration is imported."""

import subprocess
import sys

import pytest
from oslo_config import cfg

from scheduler.conf import keystoneauth
from scheduler.conf import neutron
from scheduler.conf import opts
from scheduler.conf import placement


def test_importing_the_configuration_imports_no_keystoneauth():
    code = ('import sys\n'
            'from scheduler.conf import CONF\n'
            'print("auth_type" in CONF.placement, "auth_type" in CONF.neutron,'
            ' sorted(m for m in sys.modules'
            ' if m.startswith(("keystoneauth1", "requests"))))')
    result = subprocess.run([sys.executable, '-c', code], check=True,
                            capture_output=True, text=True)
    assert result.stdout.split() == ['False', 'False', '[]']


@pytest.mark.parametrize('module, group, service_type', [
    (placement, 'placement', 'placement'),
    (neutron, 'neutron', 'network'),
])
def test_a_client_group_gets_nova_s_defaults_and_a_timeout(
        module, group, service_type, tmp_path):
    path = tmp_path / 'scheduler.conf'
    path.write_text('[%s]\nauth_type = none\nregion_name = Region9\n'
                    % group)
    conf = cfg.ConfigOpts()
    module.register_opts(conf)
    # Read before the options are registered, as a service does.
    conf([], default_config_files=[str(path)], default_config_dirs=[])
    module.register_client_opts(conf)
    module.register_client_opts(conf)  # a second call changes nothing
    values = conf[group]
    assert (values.auth_type, values.region_name) == ('none', 'Region9')
    assert values.service_type == service_type
    assert values.valid_interfaces == ['internal', 'public']
    assert values.timeout == module.DEFAULT_TIMEOUT


def test_the_sample_lists_what_a_client_registers():
    conf = cfg.ConfigOpts()
    placement.register_opts(conf)
    placement.register_client_opts(conf)
    listed = {opt.dest for opt in dict(
        (getattr(group, 'name', group), group_opts)
        for group, group_opts in opts.list_opts())['placement']}
    assert set(conf.placement) <= listed
    # The sample also names the password plug-in's options.
    assert {'username', 'password', 'auth_url'} <= listed
    assert not {'username', 'password'} & set(conf.placement)
    assert keystoneauth.all_opts()[0].dest in listed
