"""A configuration that cannot work stops ``scheduler-service`` at once:
exit status 1, one "Cannot start:" line in its log file saying why, and
no worker forked (``scheduler.server.preflight``); ``scheduler-status upgrade
check`` reports the same checks."""

import os
import subprocess
import sys
import time

import pytest
from deployment import service_environment

from scheduler.db import migration
from scheduler_tools import seed

# Most seconds the refusal may take.
BOUND = 20
# The example plug-in's module, importable by the service.
EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                       'free_ram_filter')


def _synced(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'synced.sqlite')
    seed.use_database(url)      # creates the schema at head
    return url


CASES = {
    'no database connection': (
        {('database', 'connection'): None},
        'no [database] connection is set'),
    'unknown filter': (
        {('filter_scheduler', 'enabled_filters'): 'RamFilter,NoSuchFilter'},
        'NoSuchFilter could not be found'),
    'unknown weigher': (
        {('filter_scheduler', 'weight_classes'): 'NoSuchWeigher'},
        'NoSuchWeigher'),
    'unknown driver': (
        {('scheduler', 'driver'): 'no_such_driver'},
        "no driver named 'no_such_driver' (there are: chance_scheduler, "
        "filter_scheduler)"),
    'database not synced': (
        {('database', 'connection'): 'sqlite:///{tmp}/empty.sqlite'},
        'this release needs %s: run "scheduler-manage db sync"'
        % migration.head_revision()),
    'placement without its database': (
        {('scheduler', 'use_placement'): 'true'},
        'use_placement needs [placement_database] connection'),
    'placement database not placement': (
        {('scheduler', 'use_placement'): 'true',
         ('placement_database', 'connection'):
         'sqlite:///{tmp}/empty.sqlite'},
        'cannot be read as Placement\'s database'),
    'placement with the chance scheduler': (
        {('scheduler', 'use_placement'): 'true',
         ('scheduler', 'driver'): 'chance_scheduler'},
        'use_placement needs the filter_scheduler driver'),
    'bad option value': (
        {('filter_scheduler', 'ram_weight_multiplier'): 'heavy'},
        "[filter_scheduler] ram_weight_multiplier (in {tmp}/scheduler.conf):"
        " invalid value: could not convert string to float: 'heavy'"),
    # The example plug-in registers [free_ram_threshold] at import: its
    # option is checked once it is loaded (by class path here).
    'plug-in option out of range': (
        {('filter_scheduler', 'available_filters'):
         'free_ram_filter.FreeRamThresholdFilter',
         ('filter_scheduler', 'enabled_filters'): 'FreeRamThresholdFilter',
         ('free_ram_threshold', 'min_free_ram_mb'): '-512'},
        '[free_ram_threshold] min_free_ram_mb (in {tmp}/scheduler.conf): '
        'invalid value: Should be greater than or equal to 0'),
    'database unreachable': (
        {('database', 'connection'):
         'postgresql+psycopg2://scheduler:secret@127.0.0.1:9/scheduler'},
        'postgresql+psycopg2://scheduler:***@127.0.0.1:9/scheduler) '
        'cannot be used'),
}


def _config(tmp_path, options):
    """A config file: a synced SQLite database, the fake transport, two
    workers, a log file, then ``options`` (a value of None removes the
    option)."""
    groups = {'DEFAULT': {'transport_url': 'fake:/',
                          'log_file': str(tmp_path / 'service.log')},
              'database': {'connection': _synced(tmp_path)},
              'scheduler': {'workers': '2'}}
    for (group, name), value in options.items():
        if value is None:
            del groups[group][name]
        else:
            groups.setdefault(group, {})[name] = value.format(tmp=tmp_path)
    conf = tmp_path / 'scheduler.conf'
    conf.write_text(''.join(
        '[%s]\n%s' % (group, ''.join('%s = %s\n' % item
                                     for item in values.items()))
        for group, values in groups.items()))
    return conf


def _run(*args, cwd):
    env = service_environment()
    env['PYTHONPATH'] += os.pathsep + EXAMPLE
    return subprocess.run([sys.executable, '-m', *args],
                          capture_output=True, text=True, timeout=BOUND,
                          env=env, cwd=cwd)


@pytest.mark.parametrize('case', sorted(CASES))
def test_a_configuration_that_cannot_work_stops_the_service(case, tmp_path):
    options, expected = CASES[case]
    conf = _config(tmp_path, options)
    started = time.monotonic()
    done = _run('scheduler.cmd.service', '--config-file', str(conf),
                cwd=tmp_path)
    took = time.monotonic() - started
    log = (tmp_path / 'service.log').read_text()
    refusals = [line for line in log.splitlines() if 'Cannot start:' in line]
    assert done.returncode == 1, (done.stderr[-2000:], log[-2000:])
    assert len(refusals) == 1, log[-3000:]
    assert expected.format(tmp=tmp_path) in refusals[0]
    assert 'secret' not in log
    assert 'Forking' not in log and 'Traceback' not in log
    assert took < BOUND
    assert not os.path.exists(tmp_path / 'scheduler.sqlite')


@pytest.mark.parametrize('case', ['good', 'database not synced',
                                  'unknown driver',
                                  'placement database not placement',
                                  'plug-in option out of range'])
def test_upgrade_check(case, tmp_path):
    """``scheduler-status upgrade check``: 0 and five successes on a
    good configuration (Placement mode not checked when off); 2 and the
    reason otherwise."""
    options, expected = CASES.get(case, ({}, 'Success'))
    conf = _config(tmp_path, options)
    done = _run('scheduler.cmd.status', '--config-file', str(conf),
                'upgrade', 'check', cwd=tmp_path)
    text = ' '.join(done.stdout.replace('|', ' ').split())
    if case == 'good':
        assert done.returncode == 0, done.stdout + done.stderr
        assert text.count('Result: Success') == 5
        assert 'use_placement is off' in text
    else:
        assert done.returncode == 2, done.stdout + done.stderr
        assert 'Result: Failure' in text
        # The table wraps long lines anywhere, paths included.
        assert (''.join(expected.format(tmp=tmp_path).split()) in
                ''.join(text.split()))
