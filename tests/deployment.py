"""A scheduler deployment for functional tests.

``Deployment`` runs the real service either in this process (on the
``fake://`` in-memory transport) or as a separate ``scheduler-service``
process (on a real RabbitMQ), against a database URL the test seeded, and
gives the test a ``SchedulerAPI`` client to it.  Several process
deployments with different ``host`` names can share one broker and one
database; ``pid``, ``worker_pids()`` and ``returncode`` let fault tests
kill and watch the service's processes.
"""

import os
import subprocess
import sys
import time

import oslo_messaging as messaging
import psutil

import scheduler
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.server import rpcapi
from scheduler.server import service
from scheduler_tools import seed

READY_TIMEOUT = 60
CALL_TIMEOUT = 30

# Options every deployment uses: the Newton default filters plus
# CoreFilter, and every weigher of ours; the Newton/Ocata single process
# and fallback allocation ratios (16.0 CPU, 1.5 RAM) the tests were
# written against, now that the defaults are Nova 34's (CPU count, 4.0,
# 1.0).
SCHEDULER_OPTIONS = {
    (None, 'initial_cpu_allocation_ratio'): 16.0,
    (None, 'initial_ram_allocation_ratio'): 1.5,
    ('scheduler', 'workers'): 1,
    ('filter_scheduler', 'enabled_filters'): [
        'RetryFilter', 'AvailabilityZoneFilter', 'RamFilter', 'CoreFilter',
        'DiskFilter', 'ComputeFilter', 'ComputeCapabilitiesFilter',
        'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
        'ServerGroupAffinityFilter'],
    ('scheduler', 'max_attempts'): 3,
    ('scheduler', 'periodic_task_interval'): -1,
}


class Deployment:
    """A running scheduler service plus a client and a database context.

    ``mode`` is ``in-process`` (transport ``fake://``) or ``process``
    (``scheduler-service`` on ``transport_url``).
    """

    def __init__(self, db_url, mode, transport_url, workdir, options=None,
                 host='scheduler-test'):
        self.db_url = db_url
        self.mode = mode
        self.transport_url = transport_url
        self.workdir = workdir
        self.host = host
        self.options = {**SCHEDULER_OPTIONS, **(options or {})}
        self.ctx = seed.use_database(db_url)
        self.transport = rpc.get_transport(CONF, url=transport_url)
        self.api = rpcapi.SchedulerAPI(self.transport, timeout=CALL_TIMEOUT)
        self._service = None
        self._process = None
        self._overridden = []

    # -- life cycle ------------------------------------------------------

    def start(self):
        if self.mode == 'in-process':
            self._start_in_process()
        else:
            self._start_process()
        self.wait_ready()
        return self

    def _start_in_process(self):
        for (group, name), value in self.options.items():
            CONF.set_override(name, value, group)
            self._overridden.append((name, group))
        CONF.set_override('host', self.host)
        self._overridden.append(('host', None))
        self._service = service.SchedulerService(self.transport)
        self._service.start()

    def _start_process(self):
        conf_path = os.path.join(self.workdir, 'scheduler.conf')
        with open(conf_path, 'w') as conf:
            conf.write(self._config_text())
        with open(os.path.join(self.workdir, 'service.log'), 'w') as log:
            # ``scheduler-service``, run from this checkout's package
            # whether or not it is installed.
            self._process = subprocess.Popen(
                [sys.executable, '-m', 'scheduler.cmd.service',
                 '--config-file', conf_path],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                env=service_environment())

    def _config_text(self):
        """The config file: ``[DEFAULT] host``, ``transport_url``,
        ``[database] connection``, no AMQP heartbeats, then the options
        (group ``None`` is ``DEFAULT``), one section per group."""
        groups = {
            'DEFAULT': {'host': self.host,
                        'transport_url': self.transport_url},
            'database': {'connection': self.db_url},
            'oslo_messaging_rabbit': {'heartbeat_timeout_threshold': 0},
        }
        for (group, name), value in self.options.items():
            if isinstance(value, list):
                value = ','.join(value)
            groups.setdefault(group or 'DEFAULT', {})[name] = value
        return ''.join(
            '[%s]\n%s\n' % (group, ''.join('%s = %s\n' % item
                                            for item in values.items()))
            for group, values in groups.items())

    def wait_ready(self):
        """Ping the service until it answers (bounded)."""
        client = rpc.get_client(
            self.transport, messaging.Target(topic=rpc.TOPIC,
                                             namespace='baseapi',
                                             version='1.1'), timeout=2)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            self._check_alive()
            try:
                return client.call(self.ctx, 'ping', arg='ready')
            except messaging.MessagingTimeout as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError('scheduler did not answer in %ds:\n%s'
                                       % (READY_TIMEOUT, self.log())) from exc

    @property
    def pid(self):
        """Process mode: the pid of the ``scheduler-service`` process
        (with workers, the parent that launches them)."""
        return self._process.pid

    @property
    def returncode(self):
        """Process mode: None while the service runs, else its status."""
        return self._process.poll()

    def worker_pids(self, count, timeout=30):
        """Process mode with workers: the pids of the ``count`` worker
        processes (waits until there are that many, bounded)."""
        parent = psutil.Process(self.pid)
        deadline = time.monotonic() + timeout
        while True:
            pids = sorted(child.pid for child in parent.children())
            if len(pids) >= count or time.monotonic() > deadline:
                return pids
            time.sleep(0.1)

    def _check_alive(self):
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError('scheduler-service exited with %s:\n%s'
                               % (self._process.returncode, self.log()))

    def log(self, tail=5000):
        """The service's log: its last ``tail`` characters (for a
        failure's message), or all of it with ``tail=None`` (to look for
        a line: every decision writes one)."""
        path = os.path.join(self.workdir, 'service.log')
        if not os.path.exists(path):
            return ''
        with open(path) as f:
            text = f.read()
        return text if tail is None else text[-tail:]

    def stop(self):
        """Stop the service; return the process exit status (0 for an
        in-process service or a clean shutdown on SIGTERM)."""
        status = 0
        if self._service is not None:
            self._service.stop()
            self._service = None
        if self._process is not None:
            self._process.terminate()
            try:
                status = self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                status = self._process.wait()
            self._process = None
        for name, group in self._overridden:
            CONF.clear_override(name, group)
        self._overridden = []
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None
        return status

    # -- helpers for tests -------------------------------------------------

    def wait_for(self, predicate, timeout=20, interval=0.2):
        """Poll ``predicate()`` until true (fanout casts are asynchronous)."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError('condition not met in %ss' % timeout)
            time.sleep(interval)


def service_environment():
    """The environment of a ``scheduler-service`` child: this one, with
    the directory of the imported ``scheduler`` package first on
    ``PYTHONPATH``."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(
        scheduler.__file__)))
    env['PYTHONPATH'] = os.pathsep.join(
        [root] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep)
                  if p])
    return env
