"""The replay's options: how the fleet is sized, where the report goes,
the options that exclude each other."""

import os

import pytest
from oslo_config import cfg

from scheduler_tools.replay import cli_options
from scheduler_tools.replay import options
from scheduler_tools.replay.replayer import ReplayError


def _parsed(*args):
    conf = cfg.ConfigOpts()
    cli_options.register_opts(conf)
    conf(['--seed', '0'] + list(args), project='scheduler-replay-test')
    return options.Settings(conf)


@pytest.mark.parametrize('args, message', [
    (['--hosts', '10', '--hosts-factor', '1.2'], 'give one'),
    (['--hosts', '10', '--fleet', 'f.csv'], 'do not apply with --fleet'),
    (['--hosts-factor', '1.2', '--no-seed'], 'do not apply with --fleet or '
                                             '--no-seed'),
    (['--find-fleet', '--hosts', '10'], 'does not apply with --fleet, '
                                        '--hosts'),
])
def test_fleet_sizes_that_exclude_each_other(args, message):
    with pytest.raises(ReplayError, match=message):
        _parsed(*args)


def test_a_fleet_is_sized_by_the_default_factor_unless_told():
    default = _parsed()
    assert (default.hosts, default.hosts_given) == (None, False)
    assert default.factor == options.DEFAULT_HOSTS_FACTOR
    assert default.needs_trace
    told = _parsed('--hosts', '7')
    assert (told.hosts, told.hosts_given) == (7, True)
    assert _parsed('--hosts-factor', '1.5').factor == 1.5


def test_the_report_goes_to_a_folder_named_from_the_start():
    settings = _parsed()
    folder = settings.report_dir
    assert folder.startswith('replay-') and len(folder) == len(
        'replay-YYYYmmdd-HHMMSS')
    assert settings.output == os.path.join(folder, options.REPORT_JSON)
    assert settings.plot == os.path.join(folder, options.REPORT_PLOT)


def test_report_options_choose_the_files(tmp_path):
    named = _parsed('--report-dir', str(tmp_path / 'here'),
                    '--plot', str(tmp_path / 'p.png'))
    assert named.output == str(tmp_path / 'here' / options.REPORT_JSON)
    assert named.plot == str(tmp_path / 'p.png')
    assert named.outputs() == [named.output, named.plot]
    assert (tmp_path / 'here').is_dir()     # created for the writers
    none = _parsed('--noreport')
    assert (none.report_dir, none.output, none.plot) == (None, None, None)
    assert none.outputs() == []
    asked = _parsed('--noreport', '--output', str(tmp_path / 'o.json'))
    assert asked.outputs() == [str(tmp_path / 'o.json')]


# -- the planning modes' options -------------------------------------------

@pytest.mark.parametrize('args, message', [
    (['--find-fleet', '--fill-until-failure'], 'exclude each other'),
    (['--find-fleet', '--fleet', 'f.csv'], 'does not apply with --fleet'),
    (['--find-fleet', '--hosts-factor', '1.2'], '--hosts-factor'),
    (['--max-refused', '0.01'], '--max-refused applies only with '
                                '--find-fleet'),
    (['--fill-until-failure', '--max-refused', '0.01'], '--max-refused'),
    (['--fill-seed', '3'], 'only with --fill-until-failure'),
    (['--reference-only'], 'only with --find-fleet or --fill-until'),
    (['--fill-until-failure', '--transport-url', 'rabbit://x'],
     'does not apply with --transport-url'),
    (['--find-fleet', '--no-seed', '--speed', '2'],
     'does not apply with --no-seed, --speed'),
    (['--fill-until-failure', '--placements', 'p.csv'], '--placements'),
])
def test_planning_options_that_exclude_each_other(args, message):
    with pytest.raises(ReplayError, match=message):
        _parsed(*args)


def test_planning_options_that_go_together():
    found = _parsed('--find-fleet', '--max-refused', '0.01',
                    '--reference-only')
    assert found.planning == 'find-fleet' and found.max_refused == 0.01
    filled = _parsed('--fill-until-failure', '--hosts-factor', '1.2',
                     '--fill-seed', '4')
    assert filled.planning == 'fill-until-failure'
    assert filled.fill_seed == 4 and not filled.reference_only
    assert _parsed('--fill-until-failure', '--fleet', 'f.csv').fleet
    assert _parsed().planning is None
