"""The systemd units shipped in ``etc/systemd/``: ``systemd-analyze
verify`` accepts them, and they match the service (its console script
and configuration file, SIGHUP reload, a stop timeout above its graceful
shutdown).

``verify`` checks that ExecStart names an executable file, and the
units name ``/usr/bin/scheduler-service`` (a distribution's path), which
a test machine may not have: each unit is verified as a copy whose
ExecStart names the console script installed for this interpreter, all
else unchanged."""

import configparser
import pathlib
import shutil
import subprocess
import sysconfig

import pytest
from oslo_service import service as oslo_service

UNITS = pathlib.Path(__file__).parents[2] / 'etc' / 'systemd'
SHIPPED_PATH = '/usr/bin/scheduler-service'
CONFIG = '--config-file=/etc/scheduler/scheduler.conf'
SYSTEMD_ANALYZE = shutil.which('systemd-analyze')


def _console_script():
    """The installed ``scheduler-service`` of this interpreter (else the
    one on PATH), or None."""
    beside = pathlib.Path(sysconfig.get_path('scripts')) / 'scheduler-service'
    return str(beside) if beside.exists() else shutil.which(
        'scheduler-service')


def _service_section(path):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(path)
    return parser['Service']


def _graceful_shutdown_default():
    return next(opt.default for _, opts in oslo_service.list_opts()
                for opt in opts if opt.name == 'graceful_shutdown_timeout')


@pytest.mark.parametrize('name', ['scheduler-service.service',
                                  'scheduler-service@.service'])
def test_units_match_the_service(name):
    service = _service_section(UNITS / name)
    start = service['ExecStart'].split()
    assert start[:2] == [SHIPPED_PATH, CONFIG]
    if '@' in name:
        assert start[2:] == ['--config-file=/etc/scheduler/%i.conf']
    assert service['ExecReload'] == '/bin/kill -HUP $MAINPID'
    assert service['Type'] == 'notify'
    assert service['KillMode'] == 'mixed'
    assert int(service['TimeoutStopSec']) > _graceful_shutdown_default()
    assert service['Restart'] == 'on-failure'


def _verify(tmp_path, source, instance=None):
    """``systemd-analyze verify`` of a copy of the unit file ``source``
    whose ExecStart is the installed console script (of instance
    ``instance`` of a template); its exit status and output."""
    script = _console_script()
    if script is None:
        pytest.skip('scheduler-service is not installed (pip install .): '
                    'systemd-analyze verify needs ExecStart to exist')
    name = source.name
    text = source.read_text()
    assert text.count('ExecStart=%s ' % SHIPPED_PATH) == 1
    (tmp_path / name).write_text(text.replace(
        'ExecStart=%s ' % SHIPPED_PATH, 'ExecStart=%s ' % script))
    target = tmp_path / (name.replace('@', '@%s' % instance)
                         if instance else name)
    done = subprocess.run(
        [SYSTEMD_ANALYZE, 'verify', '--man=no', str(target)],
        capture_output=True, text=True, timeout=30, cwd=tmp_path)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(SYSTEMD_ANALYZE is None,
                    reason='systemd-analyze is not installed (systemd)')
@pytest.mark.timeout(60)
@pytest.mark.parametrize('name, instance', [
    ('scheduler-service.service', None),
    ('scheduler-service@.service', 'region-one')])
def test_systemd_analyze_verify_accepts_the_units(tmp_path, name,
                                                  instance):
    assert _verify(tmp_path, UNITS / name, instance) == (0, '')


@pytest.mark.skipif(SYSTEMD_ANALYZE is None,
                    reason='systemd-analyze is not installed (systemd)')
@pytest.mark.timeout(60)
def test_verify_would_catch_a_bad_unit(tmp_path):
    """The check has teeth: a misspelt setting is reported."""
    name = 'scheduler-service.service'
    bad = tmp_path / 'bad'
    bad.mkdir()
    (bad / name).write_text((UNITS / name).read_text().replace(
        'KillMode=mixed', 'KillMode=mixd'))
    _, output = _verify(tmp_path, bad / name)
    assert 'Failed to parse kill mode specification' in output, output
