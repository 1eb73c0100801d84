"""``docs/tutorial.rst``, followed to the letter.

The page is the script: its ``ini`` blocks with a ``:caption:`` are
written to the file the caption names, and the ``$`` commands of its
``console`` blocks run in order, in one ``bash`` (so ``&``, ``kill %1``
and ``wait`` work as in the operator's shell), each output compared with
the one the page shows.  Console blocks that start with the root prompt
``#`` (preparing RabbitMQ, PostgreSQL and the directories) are not run:
the session's servers stand in for them, and the test makes the
directories.

Only the page's stand-ins change (``PLACEHOLDERS``): the broker and
database URLs become the fixtures' (a fresh database), the metrics
address a free port, and ``/etc/scheduler`` and ``/var/log/scheduler``
directories under the test's own.  ``scheduler-manage``,
``scheduler-status`` and ``scheduler-service`` are this checkout's,
run with this interpreter.

Output matching, as doctest's ELLIPSIS: ``...`` in a line stands for any
text, a line of ``...`` alone for any lines; timestamps and UUIDs match
any others; a command that shows no output must print none (stdout,
then stderr), and every command must exit 0.  Beyond the output, each
step's outcome is checked (``CHECKS``).  Nova's part is the page's own
``scheduler-manage server boot`` and ``server delete``; the uuid the
page's ``server delete`` names stands for the one ``server boot``
printed (``BOOTED``), as the URLs stand for the fixtures'.
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import oslo_messaging as messaging
import psutil
import pytest
import sqlalchemy as sa
from deployment import service_environment

from scheduler import context as scheduler_context
from scheduler import rpc
from scheduler.conf import CONF
from scheduler.db import migration
from scheduler.db import models

DOC = pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'tutorial.rst'

# The page's stand-ins for the servers, the metrics address and the
# directories; see ``Tutorial.localise``.
RABBIT = 'rabbit://scheduler:RABBIT_PASS@127.0.0.1:5672/'
DATABASE = 'postgresql+psycopg2://scheduler:DB_PASS@127.0.0.1/scheduler'
METRICS = '127.0.0.1:9180'
DIRECTORIES = ('/etc/scheduler', '/var/log/scheduler')
PLACEHOLDERS = (RABBIT, DATABASE, METRICS) + DIRECTORIES
# The page's uuid of the instance ``server boot`` placed.
BOOTED = '3f2b8c71-5d0e-4a57-9a5e-0c6f1d2e4b8a'

LOG_FILE = '/var/log/scheduler/scheduler.log'
COMMANDS = {'scheduler-manage': 'scheduler.cmd.manage',
            'scheduler-status': 'scheduler.cmd.status',
            'scheduler-service': 'scheduler.cmd.service'}

pytestmark = pytest.mark.timeout(900)

COMMAND_TIMEOUT = 60    # seconds, any one command
READY_TIMEOUT = 60      # seconds, a started service answering a ping
REFUSAL_TIME = 20       # seconds a refused start may take at most
RELEASE_TIMEOUT = 10    # seconds a delete_instance_info cast may take

VOLATILE = (
    (re.compile(r'\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?'), '<time>'),
    (re.compile(r'[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}'), '<uuid>'),
)


# -- the page ------------------------------------------------------------

@dataclasses.dataclass
class Step:
    """A file to write (``path``) or a command to run, with the text
    shown: the file's content or the command's output."""

    line: int
    shown: str
    path: str = ''
    command: str = ''


_DIRECTIVE = re.compile(r'^(\s*)\.\. code-block:: (\S+)\s*$')
_OPTION = re.compile(r'^\s+:([\w-]+):\s*(.*)$')


def _blocks(text):
    """``(line, language, options, content)`` of each code block, where
    ``line`` is the number of the content's first line."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        found = _DIRECTIVE.match(lines[index])
        index += 1
        if not found:
            continue
        indent = len(found.group(1))
        options = {}
        while index < len(lines) and _OPTION.match(lines[index]):
            name, value = _OPTION.match(lines[index]).groups()
            options[name] = value
            index += 1
        body, start = [], index + 1
        while index < len(lines) and (
                not lines[index].strip()
                or len(lines[index]) - len(lines[index].lstrip()) > indent):
            body.append(lines[index])
            index += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
            start += 1
        margin = min(len(line) - len(line.lstrip())
                     for line in body if line.strip())
        yield start, found.group(2), options, [line[margin:] for line in body]


def parse(text):
    """The page's steps, in order."""
    steps = []
    for line, language, options, body in _blocks(text):
        if language == 'ini' and 'caption' in options:
            steps.append(Step(line, '\n'.join(body), path=options['caption']))
        elif language == 'console' and not body[0].startswith('# '):
            assert body[0].startswith('$ '), (
                'line %d: a console block starts with a prompt' % line)
            lines = enumerate(body, line)
            for number, text_line in lines:
                if not text_line.startswith('$ '):
                    steps[-1].shown += text_line + '\n'
                    continue
                command = text_line[2:]
                while command.endswith('\\'):
                    command = command[:-1] + next(lines)[1].strip()
                steps.append(Step(number, '', command=command))
    return steps


def normalise(text):
    for pattern, token in VOLATILE:
        text = pattern.sub(token, text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return ''.join(line + '\n' for line in lines)


def matches(shown, output):
    """Whether ``output`` is what the page shows (see the docstring)."""
    pattern = ''.join(
        r'(?:[^\n]*\n)*?' if line.strip() == '...' else
        r'[^\n]*'.join(map(re.escape, line.split('...'))) + r'\n'
        for line in normalise(shown).splitlines())
    return re.fullmatch(pattern, normalise(output)) is not None


# -- one shell -----------------------------------------------------------

@dataclasses.dataclass
class Result:
    command: str
    status: int
    output: str         # stdout, then stderr
    seconds: float
    log_before: str     # the log file before the command


class Shell:
    """One ``bash`` reading the commands one by one; ``close`` stops the
    process trees of its jobs, then the shell."""

    def __init__(self, workdir, env):
        self.dir = workdir / 'shell'
        self.dir.mkdir()
        self.count = 0
        with open(self.dir / 'bash.err', 'w') as errors:
            self.proc = subprocess.Popen(
                ['bash', '--noprofile', '--norc', '-s'],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=errors, cwd=workdir, env=env, text=True,
                start_new_session=True)

    def run(self, command, timeout=COMMAND_TIMEOUT):
        """``(status, stdout + stderr)`` of ``command``."""
        self.count += 1
        out, err, status, done = (
            self.dir / ('%d.%s' % (self.count, name))
            for name in ('out', 'err', 'status', 'done'))
        # Builtins only after the command (no process of the harness's
        # own is left for a check of the shell's children to see): the
        # status, then the file that says it is complete.
        self.proc.stdin.write(
            '{ %s\n} >%s 2>%s </dev/null\necho $? >%s\n: >%s\n'
            % (command, out, err, status, done))
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while not done.exists():
            assert self.proc.poll() is None, (
                'bash exited: %s' % (self.dir / 'bash.err').read_text())
            assert time.monotonic() < deadline, (
                '%r still runs after %d s; output so far:\n%s%s' % (
                    command, timeout, out.read_text(), err.read_text()))
            time.sleep(0.05)
        return int(status.read_text()), out.read_text() + err.read_text()

    def children(self):
        return psutil.Process(self.proc.pid).children(recursive=True)

    def running(self, module):
        """The shell's processes of ``module``'s command: the manage
        command's by their command line (``python -m`` or the entry
        point's ``from module import main``), the service's as every
        other (it sets its process titles)."""
        manage = COMMANDS['scheduler-manage']
        found = []
        for process in self.children():
            with contextlib.suppress(psutil.NoSuchProcess):
                if any(manage in word for word in process.cmdline()) == (
                        module == manage):
                    found.append(process)
        return found

    def close(self):
        """Stop the shell's jobs (SIGTERM: a service stops gracefully;
        SIGKILL for what is left after 30 s), then the shell."""
        everything = self.children()
        jobs = psutil.Process(self.proc.pid).children()
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            for process in jobs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.send_signal(sig)
            _, jobs = psutil.wait_procs(everything, timeout=wait)
            everything = jobs
            if not jobs:
                break
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the operator, and Nova ----------------------------------------------

class Tutorial:
    """The page's steps in a shell of their own, the checks, and an RPC
    client on the broker (to ping the service)."""

    def __init__(self, workdir, rabbit_url, db_url):
        self.root = workdir
        self.rabbit_url = rabbit_url
        self.db_url = db_url
        self.metrics = '127.0.0.1:%d' % _free_port()
        self.starts = 0
        self.instance = BOOTED      # the uuid server boot printed
        self.checked = set()
        for directory in DIRECTORIES:     # the root block's last line
            pathlib.Path(self.localise(directory)).mkdir(parents=True)
        bin_dir = workdir / 'bin'
        bin_dir.mkdir()
        for name, module in COMMANDS.items():     # as the entry points
            _script(bin_dir / name, "exec '%s' -c 'import sys; from %s "
                    "import main; sys.argv[0] = \"%s\"; sys.exit(main())' "
                    "\"$@\"\n" % (sys.executable, module, name))
        if shutil.which('curl') is None:
            _script(bin_dir / 'curl', "exec '%s' -c 'import sys, urllib."
                    "request; sys.stdout.write(urllib.request.urlopen("
                    "sys.argv[-1]).read().decode())' \"$@\"\n"
                    % sys.executable)
        self.transport = rpc.get_transport(CONF, url=rabbit_url)
        self.ctx = scheduler_context.get_admin_context()
        env = service_environment()
        env.update(PATH=os.pathsep.join([str(bin_dir), env['PATH']]),
                   LC_ALL='C')
        self.shell = Shell(workdir, env)

    def close(self):
        try:
            self.shell.close()
        finally:
            self.transport.cleanup()

    def localise(self, text):
        """The page's stand-ins replaced by this test's values."""
        text = text.replace(RABBIT, self.rabbit_url).replace(
            DATABASE, self.db_url).replace(METRICS, self.metrics).replace(
            BOOTED, self.instance)
        for directory in DIRECTORIES:
            text = text.replace(directory, str(self.root) + directory)
        return text

    def generalise(self, text):
        """The reverse of ``localise``, for outputs."""
        return text.replace(self.rabbit_url, RABBIT).replace(
            self.db_url, DATABASE).replace(self.metrics, METRICS).replace(
            str(self.root), '')

    def log(self):
        path = pathlib.Path(self.localise(LOG_FILE))
        return path.read_text() if path.exists() else ''

    def do(self, step):
        if step.path:
            path = pathlib.Path(self.localise(step.path))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.localise(step.shown) + '\n')
            return
        log_before = self.log()
        started = time.monotonic()
        status, output = self.shell.run(self.localise(step.command))
        result = Result(step.command, status, self.generalise(output),
                        time.monotonic() - started, log_before)
        where = 'docs/tutorial.rst line %d: $ %s' % (step.line, step.command)
        assert status == 0, '%s\nexit status %d:\n%s%s' % (
            where, status, result.output, self.log_tail())
        assert matches(step.shown, result.output), (
            '%s\nshown:\n%s\nprinted:\n%s' % (where, step.shown,
                                              result.output))
        for pattern, check in CHECKS:
            if re.search(pattern, step.command):
                check(self, result)
                self.checked.add(check.__name__)

    def claims(self):
        """The instance uuids of the open claims."""
        engine = sa.create_engine(self.db_url)
        try:
            with engine.connect() as connection:
                table = models.SchedulerClaim.__table__
                return sorted(connection.execute(
                    sa.select(table.c.instance_uuid)).scalars())
        finally:
            engine.dispose()

    def log_tail(self):
        return '\nlog:\n' + ''.join(self.log().splitlines(True)[-20:])

    def wait_ready(self):
        """Ping the service through RabbitMQ until it answers (bounded);
        fail at once when the shell has no process left."""
        client = rpc.get_client(self.transport, messaging.Target(
            topic=rpc.TOPIC, namespace='baseapi', version='1.1'), timeout=2)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            assert self.shell.running(COMMANDS['scheduler-service']), (
                'the service exited' + self.log_tail())
            try:
                return client.call(self.ctx, 'ping', arg='ready')
            except messaging.MessagingTimeout:
                assert time.monotonic() < deadline, (
                    'no answer in %d s%s' % (READY_TIMEOUT, self.log_tail()))


def _script(path, body):
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(0o755)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


# -- what each step must have done ----------------------------------------

CHECKS = []


def check(pattern):
    """Register a check of the commands matching ``pattern``."""
    def register(function):
        CHECKS.append((pattern, function))
        return function
    return register


@check(r'db version$')
def schema_at_head(tutorial, result):
    assert result.output.split() == [migration.head_revision()]


@check(r'upgrade check$')
def checks_pass(tutorial, result):
    checks = result.output.count('| Check: ')
    assert checks >= 5
    assert result.output.count('| Result: Success ') == checks


@check(r'^scheduler-service --config-file \S+ &$')
def service_answers(tutorial, result):
    """Started: it answers through RabbitMQ."""
    tutorial.wait_ready()
    tutorial.starts += 1


@check(r'host heartbeat --all --every')
def heartbeats_run(tutorial, result):
    """The heartbeats go on in the background."""
    assert tutorial.shell.running(COMMANDS['scheduler-manage'])


@check(r'server boot --vcpus 2 ')
def booted(tutorial, result):
    """Placed on cmp1 (though cmp2 has twice its free RAM and the RAM
    weigher spreads), claimed; the uuid printed is the page's stand-in's
    for the ``server delete`` below."""
    (row,) = [line for line in result.output.splitlines()
              if 'cmp1' in line]
    instance, host, node = row.split('|')[1:4]
    tutorial.instance = instance.strip()
    assert (host.strip(), node.strip()) == ('cmp1', 'cmp1')
    assert tutorial.claims() == [tutorial.instance]


@check(r'server boot --vcpus 8 ')
def boot_refused(tutorial, result):
    assert result.output.endswith('exit status 3\n')
    assert tutorial.claims() == [tutorial.instance]


@check(r'server delete cmp1 ')
def claim_released(tutorial, result):
    """The cast released the claim (within ``RELEASE_TIMEOUT``: a cast
    is not answered, and the next step lists the claims)."""
    deadline = time.monotonic() + RELEASE_TIMEOUT
    while tutorial.claims():
        assert time.monotonic() < deadline, tutorial.claims()
        time.sleep(0.1)


@check(r'^kill %scheduler-service && wait %scheduler-service$')
def service_stopped(tutorial, result):
    """Stopped gracefully (``wait`` gave its exit status 0), workers
    included; the heartbeats go on."""
    assert tutorial.shell.running(COMMANDS['scheduler-service']) == []
    assert tutorial.shell.running(COMMANDS['scheduler-manage'])


@check(r'host list --format json$')
def hosts_listed(tutorial, result):
    nodes = json.loads(result.output)
    assert [(node['Host'], node['State'], node['Status']) for node in nodes
            ] == [('cmp1', 'up', 'enabled'), ('cmp2', 'up', 'enabled')]


@check(r'host list -c Host -c Zone')
def zone_kept(tutorial, result):
    assert re.search(r'\| cmp1 +\| az1 +\|', result.output)
    assert re.search(r'\| cmp2 +\| nova +\|', result.output)


@check(r'explain .*--memory-mb 65536')
def failure_explained(tutorial, result):
    """Explained on stdout, nothing on stderr (the warnings in the log
    file), exit status 3."""
    assert '0/2 hosts available' in result.output
    assert result.output.endswith('\nexit status 3\n')
    assert 'cmp1: claim refused: memory_mb' in result.output
    assert 'cmp2: in availability zone nova, az1 asked' in result.output


@check(r'grep .Filtering removed all hosts')
def failure_logged(tutorial, result):
    assert result.output.count('\n') == 1
    assert '0/2 hosts available' in result.output


@check(r'^curl .*/metrics')
def metrics_scraped(tutorial, result):
    if 'decisions_total' in result.command:
        assert 'scheduler_decisions_total{outcome="success"} 1.0' in (
            result.output)
        assert 'scheduler_decisions_total{outcome="no_valid_host"} 1.0' in (
            result.output)
    else:
        assert 'scheduler_no_valid_host_total{filter=' in result.output


@check(r'^scheduler-status .*filters\.conf upgrade check')
def check_refuses(tutorial, result):
    assert 'Result: Failure' in result.output
    assert 'ImagePropertiesFiltre' in result.output
    assert result.output.endswith('exit status 2\n')


@check(r'^scheduler-service .*filters\.conf')
def start_refused(tutorial, result):
    """Refused at once, without a respawn loop: exit status 1, one line
    in the log, no process left."""
    assert result.output == 'exit status 1\n'
    assert result.seconds < REFUSAL_TIME
    log = tutorial.log()
    assert log.startswith(result.log_before)
    (line,) = log[len(result.log_before):].splitlines()
    assert ' ERROR scheduler.cmd.service ' in line
    assert 'Cannot start: [filter_scheduler]' in line
    assert 'ImagePropertiesFiltre' in line
    assert tutorial.shell.running(COMMANDS['scheduler-service']) == []


# -- the test ---------------------------------------------------------------

def test_the_operator_tutorial(tmp_path, rabbit_url, postgresql_db_url):
    text = DOC.read_text()
    for placeholder in PLACEHOLDERS:
        assert placeholder in text, placeholder
    steps = parse(text)
    tutorial = Tutorial(tmp_path, rabbit_url, postgresql_db_url)
    try:
        for step in steps:
            tutorial.do(step)
    finally:
        tutorial.close()
    assert tutorial.checked == {check.__name__ for _, check in CHECKS}
    assert tutorial.starts == 3
