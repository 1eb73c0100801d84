"""The versus-nova mode's contestants and the Nova-side caller process.

Three schedulers take turns on the same RabbitMQ vhost (one at a time:
they serve the same ``scheduler`` topic), the same Nova API and cell
databases and the same Placement:

``nova``           Nova 34.0.0's own ``nova-scheduler`` (the console
                   script of the Nova venv) on a nova.conf of Nova's
                   defaults (``nova_conf``): only the databases, the
                   transport, the ``[placement]`` noauth endpoint
                   (``auth_type = admin_token``), a lock path and the
                   host name are set; ``[scheduler] workers`` (the CPU
                   count) and ``max_placement_results`` (1000) are
                   Nova's defaults.
``ours-placement`` this ``scheduler-service`` in Nova database mode
                   (``[api_database] connection``) and Placement mode
                   (``[scheduler] use_placement``, ``[placement]``,
                   ``[placement_database]``), its own defaults otherwise;
``ours-sql``       the same without Placement: its claims in its own
                   database (``[database] connection``).

``Caller`` runs ``versus_nova_caller.py`` in the Nova venv and speaks its
JSON-lines protocol; the ``placed`` lines it prints while a phase runs
go to a callback (the benchmark's resource tracker).
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading

from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend

NOVA = 'nova'
OURS_PLACEMENT = 'ours-placement'
OURS_SQL = 'ours-sql'
CONTESTANTS = (NOVA, OURS_PLACEMENT, OURS_SQL)
CALLER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'versus_nova_caller.py')
# Seconds the caller may take to start (imports of Nova).
CALLER_START_S = 120
DB_SYNC_TIMEOUT_S = 300
# Seconds a stopped contestant has to end before its session is killed.
STOP_S = 10


def _ini(sections):
    return ''.join('[%s]\n%s\n' % (name, ''.join(
        '%s = %s\n' % item for item in values.items()))
        for name, values in sections.items())


def nova_conf(path, workdir, urls, transport_url, placement_url,
              long_rpc_timeout=None):
    """A nova.conf of Nova's defaults but for what a deployment must set
    (see the module); ``long_rpc_timeout``: the caller's wait for a
    ``select_destinations`` answer."""
    default = {'host': 'versus-nova', 'transport_url': transport_url,
               'state_path': workdir}
    if long_rpc_timeout:
        default['long_rpc_timeout'] = long_rpc_timeout
    with open(path, 'w') as stream:
        stream.write(_ini({
            'DEFAULT': default,
            'api_database': {'connection': urls['api']},
            'database': {'connection': urls['cell0']},
            'oslo_concurrency': {'lock_path': workdir},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': placement_url},
        }))
    return path


def ours_conf(name, own_db, urls, transport_url, placement_url,
              placement_database, log_file):
    """``scheduler-service``'s configuration: Nova database mode, with
    Placement mode for ``ours-placement``; the service's defaults
    otherwise."""
    sections = {
        'DEFAULT': {'host': 'versus-' + name, 'transport_url': transport_url,
                    'debug': 'false', 'log_file': log_file},
        'database': {'connection': own_db},
        'api_database': {'connection': urls['api']},
    }
    if name == OURS_PLACEMENT:
        sections.update({
            'scheduler': {'use_placement': 'true'},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': placement_url},
            'placement_database': {'connection': placement_database},
        })
    return _ini(sections)


class _Stopped:
    """``stop``: SIGTERM, then after ``STOP_S`` seconds SIGKILL to the
    whole session (the workers too): what it was doing is abandoned."""

    def stop(self):
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        return self.process.returncode


class OursService(_Stopped, endtoend.ServiceProcess):
    """``scheduler-service`` as one contestant, in a session of its own."""

    new_session = True


class NovaScheduler(_Stopped, endtoend.ServiceProcess):
    """Nova 34's ``nova-scheduler`` on ``conf_path``; ``wait_ready``
    pings its ``baseapi`` endpoint (Nova's ``BaseRPCAPI.ping``)."""

    new_session = True

    def __init__(self, venv, workdir, conf_path):
        self.venv = venv
        self.workdir = workdir
        self.config_path = conf_path
        self.log_path = os.path.join(workdir, 'nova-scheduler.log')
        self.process = None

    def start(self):
        with open(self.log_path, 'wb') as log:
            self.process = subprocess.Popen(
                [self.venv.bin('nova-scheduler'), '--config-file',
                 self.config_path], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, cwd=self.workdir, env=self.venv.env,
                start_new_session=True)


class Caller:
    """The caller process (see the module).  ``request(op, **args)``
    returns its ``ok`` answer; BenchError on its ``error``, or when it
    ends; ``on_placed(picks)`` gets each ``placed`` line."""

    def __init__(self, venv, conf_path, log_path, on_placed):
        self.log_path = log_path
        self.on_placed = on_placed
        with open(log_path, 'w') as log:
            self.process = subprocess.Popen(
                [venv.python, '-I', CALLER, conf_path],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                text=True, env=venv.env)
        self._within(CALLER_START_S)

    def _log(self):
        with open(self.log_path, errors='replace') as log:
            return log.read()[-4000:]

    def _answer(self):
        for line in self.process.stdout:
            message = json.loads(line)
            if 'placed' in message:
                self.on_placed(message['placed'])
            elif 'ok' in message:
                return message['ok']
            else:
                raise BenchError('the Nova caller failed: %s\n%s' % (
                    message.get('error'), self._log()))
        raise BenchError('the Nova caller ended:\n%s' % self._log())

    def request(self, op, timeout_s, **args):
        """Send one request; its answer within ``timeout_s`` seconds (the
        caller is killed past that)."""
        print(json.dumps(dict(args, op=op)), file=self.process.stdin,
              flush=True)
        return self._within(timeout_s)

    def _within(self, timeout_s):
        timer = threading.Timer(timeout_s, self.process.kill)
        timer.start()
        try:
            return self._answer()
        finally:
            timer.cancel()

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def python_path_env():
    """This environment with the ``scheduler`` checkout on PYTHONPATH (a
    service run from the checkout in use, installed or not)."""
    import scheduler

    root = os.path.dirname(os.path.dirname(os.path.abspath(
        scheduler.__file__)))
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [root] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                  if p])
    return env


def start_ours(name, workdir, own_db, urls, transport_url, placement_url,
               placement_database):
    """Start ``scheduler-service`` as contestant ``name``, after
    ``scheduler-manage db sync`` of its own database."""
    os.makedirs(workdir, exist_ok=True)
    service = OursService(workdir, ours_conf(
        name, own_db, urls, transport_url, placement_url,
        placement_database, os.path.join(workdir, 'scheduler.log')))
    env = python_path_env()
    synced = subprocess.run(
        [sys.executable, '-m', 'scheduler.cmd.manage', '--config-file',
         service.config_path, 'db', 'sync'], capture_output=True,
        text=True, cwd=workdir, env=env, timeout=DB_SYNC_TIMEOUT_S)
    if synced.returncode:
        raise BenchError('scheduler-manage db sync failed: %s'
                         % synced.stderr[-3000:])
    with open(service.log_path, 'wb') as log:
        service.process = subprocess.Popen(
            [sys.executable, '-m', 'scheduler.cmd.service', '--config-file',
             service.config_path], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd=workdir, env=env,
            start_new_session=True)
    return service
