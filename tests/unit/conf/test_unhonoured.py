"""Options a config file sets and the service does not honour: one log
line each at start (``scheduler.conf.unhonoured``)."""

import logging
import textwrap

import pytest
from oslo_config import cfg

from scheduler.conf import opts
from scheduler.conf import unhonoured

pytestmark = pytest.mark.timeout(60)

LOGGER = 'scheduler.conf.unhonoured'


def _conf(tmp_path, *texts, config_dir_text=None):
    """A private ConfigOpts with the service's options, parsed from one
    config file per text (and a ``--config-dir`` holding one more)."""
    conf = cfg.ConfigOpts()
    for module in opts._MODULES:    # every option module, as CONF has
        module.register_opts(conf)
    args = []
    for index, text in enumerate(texts):
        path = tmp_path / ('scheduler-%d.conf' % index)
        path.write_text(textwrap.dedent(text))
        args += ['--config-file', str(path)]
    if config_dir_text is not None:
        directory = tmp_path / 'scheduler.conf.d'
        directory.mkdir()
        (directory / '10-extra.conf').write_text(
            textwrap.dedent(config_dir_text))
        args += ['--config-dir', str(directory)]
    conf(args=args, project='scheduler', default_config_files=[],
         default_config_dirs=[])
    return conf


def _lines(caplog):
    return [(record.levelname, record.getMessage())
            for record in caplog.records if record.name == LOGGER]


def test_an_unknown_and_an_ignored_option_give_one_line_each(
        tmp_path, caplog):
    conf = _conf(tmp_path, """\
        [DEFAULT]
        not_ours_to_judge = 1
        [filter_scheduler]
        host_subset_size = 2
        enabled_filter = ComputeFilter
        [api_database]
        db_max_retries = 5
        [scheduler]
        workers = 1
        """)
    caplog.set_level(logging.INFO, logger=LOGGER)
    found = unhonoured.log_unhonoured(conf)
    assert [(item.group, item.name, item.kind) for item in found] == [
        ('filter_scheduler', 'enabled_filter', 'unknown'),
        ('api_database', 'db_max_retries', 'ignored')]
    lines = _lines(caplog)
    assert len(lines) == 2
    level, message = lines[0]
    assert level == 'WARNING'
    assert message.startswith('Unknown option [filter_scheduler] '
                              'enabled_filter in ')
    level, message = lines[1]
    assert level == 'INFO'
    assert 'Option [api_database] db_max_retries' in message
    assert 'accepted and ignored: oslo.db\'s retry' in message


def test_known_names_are_not_logged(tmp_path, caplog):
    """Newton's [DEFAULT] names, a keystoneauth plug-in's options
    (registered only when it loads), dashes for underscores, [DEFAULT]
    and groups the service does not own: nothing to say."""
    conf = _conf(tmp_path, """\
        [DEFAULT]
        scheduler_driver = filter_scheduler
        scheduler_default_filters = ComputeFilter
        [filter_scheduler]
        host_subset_size = 2
        [placement]
        auth_type = password
        auth_url = http://keystone/identity
        username = placement
        password = secret
        user_domain_name = Default
        region-name = RegionOne
        [some_plugin]
        anything = 1
        [DEFAULT]
        whatever = 2
        """)
    caplog.set_level(logging.INFO, logger=LOGGER)
    assert unhonoured.log_unhonoured(conf) == []
    assert _lines(caplog) == []


def test_each_option_once_over_files_and_a_config_dir(tmp_path, caplog):
    conf = _conf(tmp_path, """\
        [filter_scheduler]
        no_such_option = 1
        """, """\
        [filter_scheduler]
        no_such_option = 2
        [upgrade_levels]
        compute = auto
        """, config_dir_text="""\
        [placement_database]
        conection = postgresql://placement
        """)
    caplog.set_level(logging.INFO, logger=LOGGER)
    found = unhonoured.log_unhonoured(conf)
    assert [(item.group, item.name, item.kind, item.path.rsplit('/')[-1])
            for item in found] == [
        ('filter_scheduler', 'no_such_option', 'unknown',
         'scheduler-0.conf'),
        ('upgrade_levels', 'compute', 'nova-only', 'scheduler-1.conf'),
        ('placement_database', 'conection', 'unknown', '10-extra.conf')]
    levels = [level for level, _ in _lines(caplog)]
    assert levels == ['WARNING', 'INFO', 'WARNING']


def test_every_ignored_option_is_registered(tmp_path):
    """The list names options the service registers, each with a
    reason; the Nova-only ones are not registered."""
    conf = _conf(tmp_path)
    for (group, name), why in unhonoured.IGNORED.items():
        assert name in conf[group], (group, name)
        assert why
    for (group, name) in unhonoured.NOVA_ONLY:
        assert name not in conf[group], (group, name)


def test_placement_options_outside_placement_mode_are_ignored(
        tmp_path, caplog):
    conf = _conf(tmp_path, """\
        [scheduler]
        limit_tenants_to_placement_aggregate = true
        max_placement_results = 50
        [filter_scheduler]
        pci_in_placement = true
        """)
    caplog.set_level(logging.INFO, logger=LOGGER)
    found = unhonoured.log_unhonoured(conf)
    assert [(item.name, item.kind) for item in found] == [
        ('limit_tenants_to_placement_aggregate', 'ignored'),
        ('max_placement_results', 'ignored'),
        ('pci_in_placement', 'ignored')]
    assert all('Placement mode only' in message
               for _, message in _lines(caplog))


def test_max_placement_results_is_honoured_only_when_applied(tmp_path):
    text = """\
        [scheduler]
        use_placement = true
        max_placement_results = 50
        limit_tenants_to_placement_aggregate = true
        [placement]
        apply_max_placement_results = %s
        """
    found = unhonoured.unhonoured(_conf(tmp_path, text % 'false'))
    assert [(item.name, item.kind) for item in found] == [
        ('max_placement_results', 'ignored')]
    assert 'apply_max_placement_results' in found[0].why
    assert unhonoured.unhonoured(_conf(tmp_path, text % 'true')) == []
