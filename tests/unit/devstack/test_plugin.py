"""devstack/plugin.sh and devstack/settings, run by bash as devstack runs
them (stack.sh: phases install, post-config and extra; unstack.sh;
clean.sh), against the stand-ins of devstack's functions in
devstack_stubs.sh and a ``scheduler-manage`` that records its argv.
Every call is one JSON list in the log; iniset writes a real INI file.
What only a real devstack shows (the service answering Nova's
conductor) is not tested here.

devstack is not a Python package (the ``devstack`` on PyPI is another
project) and cannot be fetched at test time, so its functions are
stand-ins.  They follow devstack master at commit 493835a6 (2026-07-17):
database_connection_url as lib/databases/mysql and
lib/databases/postgresql build it (``mysql+pymysql://...?charset=utf8``
with ``&plugin=dbcounter``, stackrc's MYSQL_GATHER_PERFORMANCE=True
default; a bare ``postgresql://...?client_encoding=utf8``);
setup_develop DIR EXTRAS, which in inc/python reads DIR/setup.cfg with
awk and so dies (errexit) on this project, which has none; and
setup_package DIR -e EXTRAS (pip install -e DIR[EXTRAS]), which the
plugin uses.  Devstack's own install_database_python installs PyMySQL
or psycopg2 (pip_install_gr); the plugin adds this service's ``mysql``
or ``postgresql`` extra.
tests/functional/test_devstack_databases.py connects with those URLs to
real PostgreSQL and MariaDB servers.
"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import textwrap
import tomllib

import pytest

from devstack.devstack_node import CELL1_UUID
from devstack.devstack_node import LINTED
from devstack.devstack_node import PLUGIN_DIR
from devstack.devstack_node import REPO
from devstack.devstack_node import STUBS
from devstack.devstack_node import Devstack


def _index(calls, wanted):
    for i, call in enumerate(calls):
        if call[:len(wanted)] == wanted:
            return i
    raise AssertionError('%r not called; calls: %r' % (wanted, calls))


def _manage(calls):
    return [call for call in calls if call[0] == 'scheduler-manage']


def _config_args(node):
    return ['--config-file', str(node.conf)]


@pytest.fixture
def standalone(tmp_path):
    return Devstack(tmp_path)


@pytest.fixture
def nova(tmp_path):
    return Devstack(tmp_path, SCHEDULER_MODE='nova')


def test_settings_take_the_scheduler_topic(standalone):
    standalone.run(('stack', 'pre-install'))
    calls = standalone.calls()
    assert ['enable_service', 'scheduler'] in calls
    assert ['disable_service', 'n-sch'] in calls
    assert ['enable_service', 'scheduler-heartbeat'] in calls


def test_standalone_config(standalone):
    standalone.stack()
    conf = standalone.config()
    assert conf['DEFAULT'] == {
        'debug': 'True',
        'host': socket.gethostname(),
        'log_file': str(standalone.logdir / 'scheduler.log'),
        'transport_url': 'rabbit://stackrabbit:secret@192.0.2.10:5672/',
    }
    assert conf['database'] == {
        'connection':
            'mysql+pymysql://root:secret@192.0.2.10/scheduler?charset=utf8'
            '&plugin=dbcounter'}
    assert 'api_database' not in conf
    assert conf['scheduler'] == {'workers': '3', 'cell_uuid': CELL1_UUID}
    assert conf['oslo_messaging_notifications'] == {
        'driver': 'messagingv2',
        'transport_url': 'rabbit://stackrabbit:secret@192.0.2.10:5672/'}
    assert 'filter_scheduler' not in conf


def test_standalone_order(standalone):
    standalone.stack()
    calls = standalone.calls()
    conf = _config_args(standalone)
    install = _index(calls, ['setup_package', REPO, '-e'])
    recreate = _index(calls, ['recreate_database', 'scheduler'])
    sync = _index(calls, ['scheduler-manage'] + conf + ['db', 'sync'])
    add = _index(calls, ['scheduler-manage'] + conf + ['host', 'add'])
    beat = _index(calls, ['scheduler-manage'] + conf
                  + ['host', 'heartbeat', '--all'])
    loop = _index(calls, ['run_process', 'scheduler-heartbeat'])
    stop_nsch = _index(calls, ['stop_process', 'n-sch'])
    start = _index(calls, ['run_process', 'scheduler'])
    assert install < recreate < sync < add < beat < loop < start
    assert stop_nsch < start
    assert calls[start] == [
        'run_process', 'scheduler',
        '%s/scheduler-service --config-file %s' % (standalone.bin,
                                                   standalone.conf)]
    assert [call[3:5] for call in _manage(calls)] == [
        ['db', 'sync'], ['host', 'add'], ['host', 'heartbeat']]
    # The config file is complete before the first scheduler-manage.
    assert max(i for i, call in enumerate(calls)
               if call[0] == 'iniset') < sync


def test_standalone_registers_the_compute_host(standalone):
    standalone.stack()
    add = [call for call in _manage(standalone.calls())
           if call[3:5] == ['host', 'add']]
    assert len(add) == 1
    args = add[0][5:]
    assert args[0] == socket.gethostname()
    options = dict(zip(args[1::2], args[2::2], strict=True))
    with open('/proc/meminfo') as f:
        memory_kib = next(int(line.split()[1]) for line in f
                          if line.startswith('MemTotal:'))
    assert options == {
        '--vcpus': str(len(os.sched_getaffinity(0))),
        '--memory-mb': str(memory_kib // 1024),
        # NOVA_INSTANCES_PATH does not exist yet: its nearest parent.
        '--disk-gb': str(shutil.disk_usage(standalone.root).total
                         // 2 ** 30),
        '--hypervisor-type': 'QEMU',
        '--cpu-arch': os.uname().machine,
        '--host-ip': '192.0.2.10',
    }


def test_standalone_host_sizes_from_settings(tmp_path):
    node = Devstack(tmp_path, SCHEDULER_HOST_VCPUS='8',
                    SCHEDULER_HOST_MEMORY_MB='16384',
                    SCHEDULER_HOST_DISK_GB='100',
                    SCHEDULER_COMPUTE_HOST='cmp1')
    node.stack()
    add = [call for call in _manage(node.calls())
           if call[3:5] == ['host', 'add']][0]
    assert add[5:12] == ['cmp1', '--vcpus', '8', '--memory-mb', '16384',
                         '--disk-gb', '100']


def test_no_host_without_nova_compute(tmp_path):
    node = Devstack(tmp_path, ENABLED_SERVICES='rabbit,mysql,n-api,n-cond')
    node.stack()
    assert [call[3:5] for call in _manage(node.calls())] == [
        ['db', 'sync'], ['host', 'heartbeat']]


def test_standalone_heartbeat_loop(standalone):
    standalone.stack()
    loop = [call for call in standalone.calls()
            if call[:2] == ['run_process', 'scheduler-heartbeat']][0]
    assert len(loop) == 3
    command = loop[2]
    # systemd splits ExecStart as the shell does, and expands "$": none.
    assert '$' not in command
    argv = shlex.split(command)
    assert argv[:2] == ['/bin/bash', '-c'] and len(argv) == 3
    script = argv[2]
    assert ('%s/scheduler-manage --config-file %s host heartbeat --all'
            % (standalone.bin, standalone.conf)) in script
    assert 'sleep 20' in script
    subprocess.run(['bash', '-n', '-c', script], check=True)


def test_nova_mode_config(nova):
    nova.stack()
    conf = nova.config()
    assert conf['api_database'] == {
        'connection':
            'mysql+pymysql://root:secret@192.0.2.10/nova_api?charset=utf8'
            '&plugin=dbcounter'}
    assert conf['database'] == {
        'connection':
            'mysql+pymysql://root:secret@192.0.2.10/scheduler?charset=utf8'
            '&plugin=dbcounter'}
    assert conf['scheduler'] == {'workers': '3', 'service_cell': 'cell0'}
    assert conf['DEFAULT']['transport_url'] == (
        'rabbit://stackrabbit:secret@192.0.2.10:5672/')


def test_nova_mode_single_conductor_service_cell(tmp_path):
    node = Devstack(tmp_path, SCHEDULER_MODE='nova',
                    CELLSV2_SETUP='singleconductor')
    node.stack()
    assert node.config()['scheduler']['service_cell'] == 'cell1'


@pytest.mark.parametrize('mode', ['standalone', 'nova'])
def test_postgresql_urls(tmp_path, mode):
    # devstack's PostgreSQL URL names no driver.
    node = Devstack(tmp_path, SCHEDULER_MODE=mode, DATABASE_TYPE='postgresql',
                    ENABLED_SERVICES='rabbit,postgresql,n-api,n-cond,n-cpu')
    node.stack()
    conf = node.config()
    assert conf['database'] == {
        'connection': 'postgresql://root:secret@192.0.2.10/scheduler'
                      '?client_encoding=utf8'}
    if mode == 'nova':
        assert conf['api_database'] == {
            'connection': 'postgresql://root:secret@192.0.2.10/nova_api'
                          '?client_encoding=utf8'}


def test_mysql_url_without_query_counting(tmp_path):
    node = Devstack(tmp_path, MYSQL_GATHER_PERFORMANCE='False')
    node.stack()
    assert node.config()['database']['connection'] == (
        'mysql+pymysql://root:secret@192.0.2.10/scheduler?charset=utf8')


@pytest.mark.parametrize('database_type, extra', [
    ('mysql', 'mysql'), ('postgresql', 'postgresql'),
    # A compute-only node of a multi-node devstack: no database here.
    ('', '')])
def test_install_with_the_driver_of_the_database(tmp_path, database_type,
                                                 extra):
    node = Devstack(tmp_path, DATABASE_TYPE=database_type)
    node.run(('stack', 'install'))
    calls = node.calls()
    assert ['setup_package', REPO, '-e', extra] in calls
    # devstack's setup_develop needs a setup.cfg this project lacks.
    assert not [call for call in calls if call[0] == 'setup_develop']


def test_database_extras_exist():
    # The extras the plugin names are this project's, and hold the
    # drivers of devstack's URLs.
    with open(os.path.join(REPO, 'pyproject.toml'), 'rb') as f:
        extras = tomllib.load(f)['project']['optional-dependencies']
    names = {extra: {re.split(r'[\[<>=!~ ;]', req)[0].lower()
                     for req in extras[extra]}
             for extra in ('mysql', 'postgresql')}
    assert names == {'mysql': {'pymysql'}, 'postgresql': {'psycopg'}}


def test_nova_mode_order(nova):
    nova.stack()
    calls = nova.calls()
    conf = _config_args(nova)
    recreate = _index(calls, ['recreate_database', 'scheduler'])
    sync = _index(calls, ['scheduler-manage'] + conf + ['db', 'sync'])
    start = _index(calls, ['run_process', 'scheduler'])
    assert recreate < sync < start
    assert _index(calls, ['stop_process', 'n-sch']) < start
    # Nova's own tables: no host registered, no heartbeat.
    assert [call[3:] for call in _manage(calls)] == [['db', 'sync']]
    assert not [call for call in calls
                if call[:2] == ['run_process', 'scheduler-heartbeat']]
    assert ['enable_service', 'scheduler-heartbeat'] not in calls
    assert ['disable_service', 'n-sch'] in calls
    assert not [call for call in calls if call[0] == 'nova-manage']


def test_former_nova_db_switch(tmp_path):
    node = Devstack(tmp_path, SCHEDULER_USE_NOVA_DB='True')
    node.stack()
    assert 'api_database' in node.config()


def test_unknown_mode_dies(tmp_path):
    node = Devstack(tmp_path, SCHEDULER_MODE='cells')
    proc = node.run(('stack', 'install'), ('stack', 'post-config'),
                    check=False)
    assert proc.returncode != 0
    assert 'use standalone or nova' in proc.stderr
    assert not _manage(node.calls())


def test_enabled_filters(tmp_path):
    node = Devstack(tmp_path, SCHEDULER_ENABLED_FILTERS='ComputeFilter '
                    'RamFilter')
    node.stack()
    assert node.config()['filter_scheduler'] == {
        'enabled_filters': 'ComputeFilter,RamFilter'}


@pytest.mark.parametrize('mode', ['standalone', 'nova'])
def test_unstack(tmp_path, mode):
    node = Devstack(tmp_path, SCHEDULER_MODE=mode)
    node.stack()
    node.log.unlink()
    node.run(('unstack',))
    calls = node.calls()
    assert ['stop_process', 'scheduler'] in calls
    assert ['stop_process', 'scheduler-heartbeat'] in calls
    assert not _manage(calls)
    assert node.conf.exists()


@pytest.mark.parametrize('mode', ['standalone', 'nova'])
def test_clean(tmp_path, mode):
    node = Devstack(tmp_path, SCHEDULER_MODE=mode)
    node.stack()
    log_file = node.logdir / 'scheduler.log'
    log_file.write_text('a line\n')
    node.log.unlink()
    node.run(('unstack',))
    node.run(('clean',))
    calls = node.calls()
    assert ['mysql', '-uroot', '-psecret', '-h192.0.2.10',
            '-e', 'DROP DATABASE IF EXISTS scheduler;'] in calls
    assert ['sudo', 'rm', '-rf', str(node.conf_dir)] in calls
    assert not node.conf_dir.exists()
    assert not log_file.exists()


def test_clean_postgresql(tmp_path):
    node = Devstack(tmp_path, DATABASE_TYPE='postgresql')
    node.run(('clean',))
    assert ['psql', '-h192.0.2.10', '-Uroot', '-dtemplate1', '-c',
            'DROP DATABASE IF EXISTS scheduler'] in node.calls()


def test_clean_without_database_warns(tmp_path):
    node = Devstack(tmp_path, DATABASE_TYPE='')
    node.run(('clean',))
    assert [call for call in node.calls() if call[0] == 'warn']


def test_nothing_when_disabled(tmp_path):
    node = Devstack(tmp_path)
    script = textwrap.dedent("""\
        set -o errexit
        source %s
        source %s
        disable_service scheduler
        for phase in "stack install" "stack post-config" "stack extra" \\
                unstack clean; do
            # shellcheck disable=SC2086
            source %s $phase
        done
        """) % (shlex.quote(STUBS),
                shlex.quote(os.path.join(PLUGIN_DIR, 'settings')),
                shlex.quote(os.path.join(PLUGIN_DIR, 'plugin.sh')))
    subprocess.run(['bash', '-c', script], env=node.env, check=True,
                   timeout=60)
    names = {call[0] for call in node.calls()}
    assert names <= {'enable_service', 'disable_service'}


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip('%s is not installed (tools/test-setup.sh installs '
                    'it; bashate: the test extra)' % name)
    return path


def test_shellcheck():
    shellcheck = _tool('shellcheck')
    proc = subprocess.run([shellcheck] + LINTED + [STUBS],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bashate():
    bashate = _tool('bashate')
    proc = subprocess.run([bashate] + LINTED + [STUBS],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'warning' not in proc.stdout + proc.stderr, proc.stdout
