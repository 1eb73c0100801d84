"""Each configuration owns the options of its groups (oslo.config shares
them between configurations that registered the same ``OptGroup``)."""

import pytest
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.conf import opts
from scheduler.conf import placement


def _configuration():
    conf = cfg.ConfigOpts()
    for module in opts._MODULES:
        module.register_opts(conf)
    scheduler_conf.register_client_opts(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    return conf


@pytest.mark.parametrize('group, name, value', [
    ('placement', 'max_candidate_combinations', 7),
    ('filter_scheduler', 'host_subset_size', 3),
    ('scheduler', 'workers', 5),
    ('notifications', 'notification_format', 'versioned'),
])
def test_an_override_stays_in_its_configuration(group, name, value):
    # Each value differs from the option's default; nothing is read
    # before the override (a configuration caches what it has read).
    first, second = _configuration(), _configuration()
    first.set_override(name, value, group)
    assert getattr(getattr(first, group), name) == value
    assert getattr(getattr(second, group), name) != value


def test_auth_plugins_loaded_in_two_configurations_do_not_meet():
    # admin_token and none each declare an ``endpoint`` option, unequal.
    first, second = _configuration(), _configuration()
    first.register_opts(ks_loading.get_auth_plugin_conf_options(
        'admin_token'), group='placement')
    second.set_override('auth_type', 'none', 'placement')
    ks_loading.load_auth_from_conf_options(second, 'placement')
    assert 'token' in first.placement
    assert 'token' not in second.placement

def test_the_group_keeps_its_title_and_help():
    conf = _configuration()
    group = conf._groups['placement']
    assert group is not placement.placement_group
    assert (group.title, group.help) == (placement.placement_group.title,
                                         placement.placement_group.help)
