"""A scheduler deployment for functional tests.

``Deployment`` runs the real service either in this process (on the
``fake://`` in-memory transport) or as a separate ``scheduler-service``
process (on a real RabbitMQ), against a database URL the test seeded, and
gives the test a ``SchedulerAPI`` client to it.
"""

import os
import subprocess
import sys
import textwrap
import time

import oslo_messaging as messaging
import seed

from scheduler import rpc
from scheduler import rpcapi
from scheduler import service
from scheduler.conf import CONF

READY_TIMEOUT = 60
CALL_TIMEOUT = 30

# Options every deployment uses: the Newton default filters plus
# CoreFilter, and every weigher of ours.
SCHEDULER_OPTIONS = {
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

    def __init__(self, db_url, mode, transport_url, workdir, options=None):
        self.db_url = db_url
        self.mode = mode
        self.transport_url = transport_url
        self.workdir = workdir
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
        CONF.set_override('host', 'scheduler-test')
        self._overridden.append(('host', None))
        self._service = service.SchedulerService(self.transport)
        self._service.start()

    def _start_process(self):
        conf_path = os.path.join(self.workdir, 'scheduler.conf')
        with open(conf_path, 'w') as conf:
            conf.write(self._config_text())
        log = open(os.path.join(self.workdir, 'service.log'), 'w')
        self._process = subprocess.Popen(
            [sys.executable, '-m', 'scheduler.cmd.service',
             '--config-file', conf_path],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)

    def _config_text(self):
        groups = {}
        for (group, name), value in self.options.items():
            if isinstance(value, list):
                value = ','.join(value)
            groups.setdefault(group, []).append('%s = %s' % (name, value))
        text = textwrap.dedent('''\
            [DEFAULT]
            host = scheduler-test
            transport_url = %s
            [database]
            connection = %s
            [oslo_messaging_rabbit]
            heartbeat_timeout_threshold = 0
            ''') % (self.transport_url, self.db_url)
        for group, lines in groups.items():
            text += '[%s]\n%s\n' % (group, '\n'.join(lines))
        return text

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

    def _check_alive(self):
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError('scheduler-service exited with %s:\n%s'
                               % (self._process.returncode, self.log()))

    def log(self):
        path = os.path.join(self.workdir, 'service.log')
        if not os.path.exists(path):
            return ''
        with open(path) as f:
            return f.read()[-5000:]

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
