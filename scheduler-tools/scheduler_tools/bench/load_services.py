"""The scheduler services under load: their configuration
(``service_config``), the ``LoadService`` process (its log file, its
readiness, its stop) and ``settle``, which waits until they are idle."""

import contextlib
import os
import shutil
import signal
import time

from scheduler.drivers import filter_scheduler
from scheduler_tools.bench import BenchError
from scheduler_tools.bench import endtoend
from scheduler_tools.bench import report

# The driver's INFO line on a lost race.
LOST_RACE_MARKER = filter_scheduler.LOST_RACE
# SchedulerService.start's INFO line, once per worker.
SERVING_MARKER = ' serving topic '
ERROR_MARKER = ' ERROR '
# Loggers the services log at INFO whatever QUIET_LOG_LEVELS say.
SERVICE_LOG_LEVELS = ['scheduler.drivers.filter_scheduler=INFO',
                      'scheduler.server.service=INFO']
LOG_FILE = 'scheduler.log'
POLL_S = 0.5
# The services are idle when their CPU time grows by less than this
# share of one core over SETTLE_POLL_S.
IDLE_CPU_SHARE = 0.05
SETTLE_POLL_S = 0.5


def service_config(transport_url, db_url, host, exchange, workers,
                   log_file):
    """The configuration file text of one service under load: the
    benchmark's filters and weighers, ``workers`` workers, claims on,
    INFO log of the claim loop in ``log_file``."""
    return endtoend.service_config(
        transport_url, db_url, host, exchange,
        scheduler_lines=['workers = %d' % workers, 'claim_resources = True'],
        log_file=log_file, log_levels=SERVICE_LOG_LEVELS)


class LoadService(endtoend.ServiceProcess):
    """A ``scheduler-service`` of ``workers`` workers in its own session
    (``stop`` also kills what is left of its process group), logging to
    ``log_file``; stdout and stderr go to ``log_path``."""

    new_session = True

    def __init__(self, workdir, transport_url, db_url, host, exchange,
                 workers):
        self.host = host
        self.workers = workers
        self.log_file = os.path.join(workdir, LOG_FILE)
        super().__init__(workdir, service_config(
            transport_url, db_url, host, exchange, workers, self.log_file))

    def log_text(self):
        try:
            with open(self.log_file, errors='replace') as stream:
                return stream.read()
        except OSError:
            return ''

    def count(self, marker):
        """Lines of the log file holding ``marker``."""
        return sum(marker in line for line in self.log_text().splitlines())

    def log_tail(self, chars=4000):
        return (super().log_tail(chars) + '\n' +
                self.log_text()[-chars:]).strip()

    def wait_ready(self, transport, ctx, timeout_s):
        """Every worker logged that it serves the topic, and the topic
        answers a ping.

        :raises BenchError: it exited or was not ready in ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        while self.count(SERVING_MARKER) < self.workers:
            if self.process.poll() is not None:
                raise BenchError('scheduler-service exited with status %s:'
                                 '\n%s' % (self.process.returncode,
                                           self.log_tail()))
            if time.monotonic() > deadline:
                raise BenchError('%d worker(s) of scheduler-service did not '
                                 'start within %.0f s:\n%s' % (
                                     self.workers, timeout_s,
                                     self.log_tail()))
            time.sleep(POLL_S / 5)
        return super().wait_ready(transport, ctx, max(
            1.0, deadline - time.monotonic()))

    @property
    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        status = super().stop()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        return status


def stop_all(services, keep=False):
    """Stop ``services``; remove their work directories (logs, config)
    unless ``keep``."""
    for service in services:
        service.stop()
        if not keep:
            shutil.rmtree(service.workdir, ignore_errors=True)


def settle(services, timeout_s, poll_s=SETTLE_POLL_S,
           idle_share=IDLE_CPU_SHARE):
    """Wait until the services are idle: their CPU time (processes and
    children) grew by less than ``idle_share`` of a core over ``poll_s``,
    or ``timeout_s`` passed.  Returns the seconds waited."""
    started = time.monotonic()
    before = _cpu_s(services)
    while before is not None:
        time.sleep(poll_s)
        now = _cpu_s(services)
        if now is None or now - before < idle_share * poll_s:
            break
        if time.monotonic() - started >= timeout_s:
            break
        before = now
    return time.monotonic() - started


def _cpu_s(services):
    """The CPU seconds of the live services, or None when none can be
    read."""
    found = [report.cpu_s(service.process.pid) for service in services
             if service.alive]
    found = [value for value in found if value is not None]
    return sum(found) if found else None
