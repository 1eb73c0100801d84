"""Options: help text, Nova's Ocata names and defaults, the Newton
``[DEFAULT]`` aliases read from a real config file, and the sample file
generator."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from oslo_config import cfg
from oslo_db import options as oslo_db_options

from scheduler.conf import compute
from scheduler.conf import database
from scheduler.conf import opts
from scheduler.conf import scheduler
from scheduler.conf import upgrade_levels

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GENERATOR_CONF = os.path.join(REPO, 'etc', 'scheduler',
                              'scheduler-config-generator.conf')

NEWTON_DEFAULT_FILTERS = [
    'RetryFilter', 'AvailabilityZoneFilter', 'RamFilter', 'DiskFilter',
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
]
# Nova 34's default (nova/conf/scheduler.py), the default since issue 32.
NOVA_DEFAULT_FILTERS = [
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
]


def _group_name(group):
    return group if isinstance(group, str) else group.name


def _options_without_help(listing):
    """``group.name`` of every option in a list_opts() result whose help
    text is missing or blank."""
    return ['%s.%s' % (_group_name(group), opt.name)
            for group, group_opts in listing
            for opt in group_opts
            if not (opt.help and opt.help.strip())]


def _fresh_conf(config_text=None, tmp_path=None):
    """A private ConfigOpts with every module's options, parsed from a
    config file holding ``config_text`` (or from nothing)."""
    conf = cfg.ConfigOpts()
    for module in (compute, database, scheduler, upgrade_levels):
        module.register_opts(conf)
    files = []
    if config_text is not None:
        path = tmp_path / 'scheduler.conf'
        path.write_text(textwrap.dedent(config_text))
        files = [str(path)]
    conf(args=[], project='scheduler', default_config_files=files,
         default_config_dirs=[])
    return conf


# -- help text ----------------------------------------------------------------

def test_list_opts_is_not_empty():
    listing = opts.list_opts()
    groups = {_group_name(group) for group, _ in listing}
    assert {'DEFAULT', 'scheduler', 'filter_scheduler', 'metrics',
            'upgrade_levels'} <= groups
    assert sum(len(group_opts) for _, group_opts in listing) >= 40


def test_every_option_has_help_text():
    assert _options_without_help(opts.list_opts()) == []


def test_help_check_catches_a_missing_help():
    listing = [('DEFAULT', [cfg.StrOpt('documented', help='Some help.'),
                            cfg.StrOpt('undocumented'),
                            cfg.StrOpt('blank', help='   ')])]
    assert _options_without_help(listing) == ['DEFAULT.undocumented',
                                              'DEFAULT.blank']


def test_every_group_has_help_text():
    for group, _ in opts.list_opts():
        if not isinstance(group, str):
            assert group.help and group.help.strip(), group.name


def test_no_option_is_listed_twice():
    for group, group_opts in opts.list_opts():
        names = [opt.name for opt in group_opts]
        assert len(names) == len(set(names)), _group_name(group)


# -- Ocata names and defaults -------------------------------------------------

@pytest.mark.parametrize('group,name,default', [
    ('scheduler', 'driver', 'filter_scheduler'),
    ('scheduler', 'host_manager', 'host_manager'),
    ('scheduler', 'max_attempts', 3),
    ('scheduler', 'periodic_task_interval', 60),
    ('scheduler', 'discover_hosts_in_cells_interval', -1),
    ('filter_scheduler', 'host_subset_size', 1),
    ('filter_scheduler', 'enabled_filters', NOVA_DEFAULT_FILTERS),
    ('scheduler', 'workers', None),
    ('DEFAULT', 'initial_cpu_allocation_ratio', 4.0),
    ('DEFAULT', 'initial_ram_allocation_ratio', 1.0),
    ('DEFAULT', 'initial_disk_allocation_ratio', 1.0),
    ('filter_scheduler', 'weight_classes',
     ['scheduler.weights.all_weighers']),
    ('filter_scheduler', 'available_filters',
     ['scheduler.filters.all_filters']),
    ('filter_scheduler', 'track_instance_changes', True),
    ('filter_scheduler', 'use_baremetal_filters', False),
    ('filter_scheduler', 'ram_weight_multiplier', 1.0),
    ('filter_scheduler', 'disk_weight_multiplier', 1.0),
    ('filter_scheduler', 'io_ops_weight_multiplier', -1.0),
    ('filter_scheduler', 'soft_affinity_weight_multiplier', 1.0),
    ('filter_scheduler', 'soft_anti_affinity_weight_multiplier', 1.0),
    ('filter_scheduler', 'max_io_ops_per_host', 8),
    ('filter_scheduler', 'max_instances_per_host', 50),
    ('filter_scheduler', 'isolated_images', []),
    ('filter_scheduler', 'isolated_hosts', []),
    ('filter_scheduler', 'restrict_isolated_hosts_to_isolated_images', True),
    ('filter_scheduler', 'aggregate_image_properties_isolation_namespace',
     None),
    ('filter_scheduler', 'aggregate_image_properties_isolation_separator',
     '.'),
    ('metrics', 'weight_multiplier', 1.0),
    ('metrics', 'weight_setting', []),
    ('metrics', 'required', True),
    ('metrics', 'weight_of_unavailable', -10000.0),
    ('DEFAULT', 'service_down_time', 60),
    ('DEFAULT', 'report_interval', 10),
    ('DEFAULT', 'cpu_allocation_ratio', 0.0),
    ('DEFAULT', 'ram_allocation_ratio', 0.0),
    ('DEFAULT', 'disk_allocation_ratio', 0.0),
    ('DEFAULT', 'default_availability_zone', 'nova'),
    ('upgrade_levels', 'scheduler', None),
])
def test_ocata_names_and_defaults(group, name, default):
    conf = _fresh_conf()
    value = (getattr(conf, name) if group == 'DEFAULT'
             else getattr(getattr(conf, group), name))
    assert value == default


def test_enabled_filters_default_order():
    conf = _fresh_conf()
    assert list(conf.filter_scheduler.enabled_filters) == (
        NOVA_DEFAULT_FILTERS)
    # The Newton/Ocata list stays available, as documented.
    from scheduler.conf import scheduler as scheduler_opts
    assert scheduler_opts.NEWTON_DEFAULT_FILTERS == NEWTON_DEFAULT_FILTERS


def test_global_conf_has_the_same_defaults():
    from scheduler.conf import CONF
    assert CONF.scheduler.max_attempts == 3
    assert CONF.filter_scheduler.host_subset_size == 1
    assert CONF.service_down_time == 60


@pytest.mark.parametrize('group,name,value', [
    ('scheduler', 'max_attempts', 0),
    ('filter_scheduler', 'host_subset_size', 0),
    ('scheduler', 'discover_hosts_in_cells_interval', -2),
])
def test_minimum_values_are_enforced(group, name, value, tmp_path):
    with pytest.raises((ValueError, cfg.ConfigFileValueError)):
        conf = _fresh_conf('[%s]\n%s = %s\n' % (group, name, value),
                           tmp_path)
        getattr(getattr(conf, group), name)


# -- Newton [DEFAULT] aliases in a config file --------------------------------

@pytest.mark.parametrize('old_name,text,group,name,expected', [
    ('scheduler_driver', 'chance_scheduler', 'scheduler', 'driver',
     'chance_scheduler'),
    ('scheduler_host_manager', 'host_manager', 'scheduler', 'host_manager',
     'host_manager'),
    ('scheduler_max_attempts', '7', 'scheduler', 'max_attempts', 7),
    ('scheduler_driver_task_period', '120', 'scheduler',
     'periodic_task_interval', 120),
    ('scheduler_host_subset_size', '4', 'filter_scheduler',
     'host_subset_size', 4),
    ('scheduler_available_filters', 'my.filters.all', 'filter_scheduler',
     'available_filters', ['my.filters.all']),
    ('scheduler_default_filters', 'RamFilter, ComputeFilter',
     'filter_scheduler', 'enabled_filters', ['RamFilter', 'ComputeFilter']),
    ('baremetal_scheduler_default_filters', 'ExactRamFilter',
     'filter_scheduler', 'baremetal_enabled_filters', ['ExactRamFilter']),
    ('scheduler_use_baremetal_filters', 'true', 'filter_scheduler',
     'use_baremetal_filters', True),
    ('scheduler_weight_classes', 'nova.scheduler.weights.ram.RAMWeigher',
     'filter_scheduler', 'weight_classes',
     ['nova.scheduler.weights.ram.RAMWeigher']),
    ('scheduler_tracks_instance_changes', 'false', 'filter_scheduler',
     'track_instance_changes', False),
    ('isolated_images', 'img1,img2', 'filter_scheduler', 'isolated_images',
     ['img1', 'img2']),
    ('isolated_hosts', 'h1', 'filter_scheduler', 'isolated_hosts', ['h1']),
    ('restrict_isolated_hosts_to_isolated_images', 'false',
     'filter_scheduler', 'restrict_isolated_hosts_to_isolated_images',
     False),
    ('max_io_ops_per_host', '3', 'filter_scheduler', 'max_io_ops_per_host',
     3),
    ('max_instances_per_host', '20', 'filter_scheduler',
     'max_instances_per_host', 20),
    ('aggregate_image_properties_isolation_namespace', 'ns',
     'filter_scheduler', 'aggregate_image_properties_isolation_namespace',
     'ns'),
    ('aggregate_image_properties_isolation_separator', ':',
     'filter_scheduler', 'aggregate_image_properties_isolation_separator',
     ':'),
    ('ram_weight_multiplier', '-2.5', 'filter_scheduler',
     'ram_weight_multiplier', -2.5),
    ('disk_weight_multiplier', '3.0', 'filter_scheduler',
     'disk_weight_multiplier', 3.0),
    ('io_ops_weight_multiplier', '2.0', 'filter_scheduler',
     'io_ops_weight_multiplier', 2.0),
    ('soft_affinity_weight_multiplier', '4.0', 'filter_scheduler',
     'soft_affinity_weight_multiplier', 4.0),
    ('soft_anti_affinity_weight_multiplier', '5.0', 'filter_scheduler',
     'soft_anti_affinity_weight_multiplier', 5.0),
])
def test_newton_default_name_in_a_config_file(old_name, text, group, name,
                                              expected, tmp_path):
    conf = _fresh_conf('[DEFAULT]\n%s = %s\n' % (old_name, text), tmp_path)
    assert getattr(getattr(conf, group), name) == expected


def test_newton_multi_valued_available_filters(tmp_path):
    conf = _fresh_conf("""
        [DEFAULT]
        scheduler_available_filters = scheduler.filters.all_filters
        scheduler_available_filters = my.filters.ExtraFilter
        """, tmp_path)
    assert conf.filter_scheduler.available_filters == [
        'scheduler.filters.all_filters', 'my.filters.ExtraFilter']


def test_new_name_wins_over_the_newton_name(tmp_path):
    conf = _fresh_conf("""
        [DEFAULT]
        scheduler_max_attempts = 7
        scheduler_host_subset_size = 4

        [scheduler]
        max_attempts = 2

        [filter_scheduler]
        host_subset_size = 3
        """, tmp_path)
    assert conf.scheduler.max_attempts == 2
    assert conf.filter_scheduler.host_subset_size == 3


def test_a_whole_newton_scheduler_section(tmp_path):
    conf = _fresh_conf("""
        [DEFAULT]
        scheduler_driver = filter_scheduler
        scheduler_default_filters = RetryFilter,RamFilter,ComputeFilter
        scheduler_weight_classes = nova.scheduler.weights.all_weighers
        ram_allocation_ratio = 1.0
        cpu_allocation_ratio = 4.0
        service_down_time = 120

        [upgrade_levels]
        scheduler = newton
        """, tmp_path)
    assert conf.scheduler.driver == 'filter_scheduler'
    assert conf.filter_scheduler.enabled_filters == [
        'RetryFilter', 'RamFilter', 'ComputeFilter']
    assert conf.filter_scheduler.weight_classes == [
        'nova.scheduler.weights.all_weighers']
    assert conf.ram_allocation_ratio == 1.0
    assert conf.cpu_allocation_ratio == 4.0
    assert conf.service_down_time == 120
    assert conf.upgrade_levels.scheduler == 'newton'


def test_database_connection_default_and_secret():
    conf = _fresh_conf()
    assert conf.database.connection == database.DEFAULT_CONNECTION
    [opt] = [o for o in oslo_db_options.database_opts
             if o.name == 'connection']
    assert opt.secret


# -- the sample file ----------------------------------------------------------

def _generator_command():
    beside_python = os.path.join(os.path.dirname(sys.executable),
                                 'oslo-config-generator')
    if os.access(beside_python, os.X_OK):
        return [beside_python]
    found = shutil.which('oslo-config-generator')
    assert found, 'oslo-config-generator is not installed'
    return [found]


def test_config_generator_writes_the_sample(tmp_path):
    output = tmp_path / 'scheduler.conf.sample'
    result = subprocess.run(
        _generator_command() + ['--config-file', GENERATOR_CONF,
                                '--output-file', str(output)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    sample = output.read_text()
    for expected in ('[DEFAULT]', '[scheduler]', '[filter_scheduler]',
                     '[metrics]', '[upgrade_levels]', '[database]',
                     'enabled_filters', 'transport_url', 'max_attempts',
                     'scheduler_default_filters', 'connection'):
        assert expected in sample, expected
    # Deprecated Newton names are documented next to their new option.
    assert 'Deprecated group/name - [DEFAULT]/scheduler_max_attempts' in (
        sample)
