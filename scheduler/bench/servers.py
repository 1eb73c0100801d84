"""Private RabbitMQ, PostgreSQL and MariaDB servers on 127.0.0.1.

The one place that starts throwaway servers, for the end-to-end
benchmark (when it is not given ``--transport-url`` /
``--database-connection``) and for the test suite's session fixtures
(``tests/conftest.py``).  Each server lives in its own temporary
directory, on free ports, without touching any system service:

* RabbitMQ: its own epmd and node name, free ports for AMQP, Erlang
  distribution and epmd, its own cookie (``HOME`` is the temporary
  directory) and a configuration file that creates the user;
* PostgreSQL: ``initdb`` then ``postgres`` in the foreground, as the
  ``postgres`` OS user when run by root (PostgreSQL refuses root), with
  ``fsync`` off;
* MariaDB: ``mariadb-install-db`` then ``mariadbd``, as the ``mysql`` OS
  user when run by root; ``root`` without password over TCP.

``server.start()`` starts a server and returns its URL; ``stop()`` stops
its processes and keeps its directory, so that a second ``start()``
brings the same server back on the same ports with the same data (the
fault tests stop the broker and the database under load); ``close()``
stops it and removes the directory.  Each start is bounded in time
(``ServerError`` with the end of the server's log on failure; a server
that fails to start keeps its directory for the logs).  Processes get
SIGTERM when this process dies (``PR_SET_PDEATHSIG``), and the
directories of servers whose owner died are swept at the next start.
``LocalServers`` starts the benchmark's RabbitMQ and PostgreSQL and
closes them on exit and at interpreter exit.  ``create_database`` /
``drop_database`` make one uniquely named database on a server.

TLS, on request only (``tls=True``; the default servers are unchanged):
``make_tls_files`` writes a throwaway CA and a server certificate for
127.0.0.1 and localhost (with the ``openssl`` command, or the
``cryptography`` package when the command is missing) into the server's
directory at its first start.  RabbitMQ then also listens for AMQPS on a
second free port (``tls_port``, ``tls_url``; ``tls_only=True``: on that
port only), PostgreSQL runs with ``ssl = on`` (``tls_only=True``: its
``pg_hba.conf`` refuses TCP clients without TLS).  ``server.tls`` holds
the paths of the CA, certificate and key.
"""

import atexit
import collections
import contextlib
import ctypes
import datetime
import glob
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import tempfile
import time
import uuid

import sqlalchemy as sa

DEFAULT_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30
POLL_S = 0.2
POSTGRES_USER = 'postgres'
MARIADB_USER = 'mysql'
# Overrides the PostgreSQL binaries found under /usr/lib/postgresql.
PG_BINDIR_ENV = 'SCHEDULER_TEST_PG_BINDIR'
OWNER_FILE = 'owner.pid'
_PR_SET_PDEATHSIG = 1


class ServerError(RuntimeError):
    """A server could not be started (missing binaries, time-out...)."""


class ServerNotFound(ServerError):
    """The server's binaries (or the OS user to run it as) are missing."""


# ------------------------------------------------------------ binaries --

def find_rabbitmq():
    """``(rabbitmq-server, epmd)`` paths, or None when either is missing."""
    servers = ['/usr/lib/rabbitmq/bin/rabbitmq-server'] + sorted(
        glob.glob('/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/'
                  'rabbitmq-server'), reverse=True)
    server = next((path for path in servers if os.access(path, os.X_OK)),
                  None)
    epmd = shutil.which('epmd') or next(
        iter(sorted(glob.glob('/usr/lib/erlang/erts-*/bin/epmd'),
                    reverse=True)), None)
    return (server, epmd) if server and epmd else None


def find_postgresql():
    """The bin directory holding initdb and postgres: ``$SCHEDULER_TEST_
    PG_BINDIR`` or the newest ``/usr/lib/postgresql/<version>/bin``; or
    None."""
    def version(path):
        try:
            return int(path.rstrip('/').split('/')[-2])
        except (ValueError, IndexError):
            return 0

    override = os.environ.get(PG_BINDIR_ENV)
    dirs = [override] if override else glob.glob('/usr/lib/postgresql/*/bin')
    for bindir in sorted(dirs, key=version, reverse=True):
        if all(os.access(os.path.join(bindir, name), os.X_OK)
               for name in ('initdb', 'postgres')):
            return bindir
    return None


def find_mariadb():
    """``(mariadbd, mariadb-install-db)`` paths, or None."""
    server = None
    for name in ('mariadbd', 'mysqld'):
        server = shutil.which(name) or (
            '/usr/sbin/' + name if os.access('/usr/sbin/' + name, os.X_OK)
            else None)
        if server:
            break
    install = (shutil.which('mariadb-install-db') or
               shutil.which('mysql_install_db'))
    return (server, install) if server and install else None


def _user_exists(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def rabbitmq_available():
    return find_rabbitmq() is not None


def postgresql_available():
    return find_postgresql() is not None and (
        os.geteuid() != 0 or _user_exists(POSTGRES_USER))


def mariadb_available():
    return find_mariadb() is not None


# ------------------------------------------------------------- helpers --

def free_ports(count):
    """``count`` distinct free TCP ports on 127.0.0.1."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(('127.0.0.1', 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_open(port):
    with contextlib.closing(socket.socket(socket.AF_INET,
                                          socket.SOCK_STREAM)) as sock:
        sock.settimeout(1)
        return sock.connect_ex(('127.0.0.1', port)) == 0


def _die_with_us(sig):
    """preexec_fn: the child gets ``sig`` when this process dies.

    Guards against leaked servers when the owner is killed hard and never
    stops them.  Runs after subprocess's uid switch (which clears it).
    """
    def preexec():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except Exception:  # not Linux: the owner's clean-up still runs
            pass
    return preexec


def _user_kwargs(user):
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {'user': entry.pw_uid, 'group': entry.pw_gid, 'extra_groups': []}


def _chown_tree(path, user):
    entry = pwd.getpwnam(user)
    for root, _dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)


def _tail(path, lines=40):
    try:
        with open(path, 'rb') as stream:
            data = stream.read()[-20000:]
    except OSError as exc:
        return '<no log: %s>' % exc
    return '\n'.join(data.decode('utf-8', 'replace').splitlines()[-lines:])


def _world_traversable(path):
    path = os.path.abspath(path)
    while True:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_dirs(base, prefix):
    """Remove the directories of servers whose owner process died (its
    servers died with it, see ``_die_with_us``)."""
    for path in glob.glob(os.path.join(base, prefix + '*')):
        try:
            with open(os.path.join(path, OWNER_FILE)) as stream:
                pid = int(stream.read().strip())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _pid_alive(pid):
            shutil.rmtree(path, ignore_errors=True)


_swept = set()


def _make_tempdir(prefix):
    """A directory an unprivileged server user can reach, with the
    owner's pid in it."""
    base = tempfile.gettempdir()
    if os.geteuid() == 0 and not _world_traversable(base):
        base = '/tmp'
    if (base, prefix) not in _swept:
        _swept.add((base, prefix))
        _sweep_stale_dirs(base, prefix)
    path = tempfile.mkdtemp(prefix=prefix, dir=base)
    os.chmod(path, 0o755)
    with open(os.path.join(path, OWNER_FILE), 'w') as stream:
        stream.write('%d\n' % os.getpid())
    return path


# ----------------------------------------------------------------- TLS --

TLSFiles = collections.namedtuple('TLSFiles', 'ca_file cert_file key_file')
TLSFiles.__doc__ = ('PEM paths: the CA certificate clients trust, the '
                    'server certificate it signed and its key.')
# The names a server certificate is made for (its subjectAltName).
TLS_HOSTS = ('127.0.0.1', 'localhost')
TLS_DAYS = 2
TLS_CA_NAME = 'scheduler throwaway CA'


def tls_backend():
    """What ``make_tls_files`` would use: ``'openssl'`` (the command),
    ``'cryptography'`` (the package), or None when neither is there."""
    if shutil.which('openssl'):
        return 'openssl'
    try:
        import cryptography.x509  # noqa: F401
    except ImportError:
        return None
    return 'cryptography'


def _subject_alt_names(hosts):
    """``[('IP', '127.0.0.1'), ('DNS', 'localhost')]`` for ``hosts``."""
    names = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            names.append(('DNS', host))
        else:
            names.append(('IP', host))
    return names


def _tls_files_openssl(directory, hosts, days, timeout_s):
    def run(*args):
        try:
            done = subprocess.run(
                ['openssl'] + list(args), cwd=directory,
                stdin=subprocess.DEVNULL, capture_output=True,
                timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ServerError('openssl %s timed out' % args[0]) from None
        if done.returncode:
            raise ServerError('openssl %s failed with status %d: %s' % (
                args[0], done.returncode,
                done.stderr.decode('utf-8', 'replace')[-2000:]))

    ec_key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
              '-nodes']
    run('req', '-x509', *ec_key, '-keyout', 'ca.key', '-out', 'ca.pem',
        '-days', str(days), '-subj', '/CN=' + TLS_CA_NAME,
        '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign')
    run('req', '-new', *ec_key, '-keyout', 'server.key', '-out',
        'server.csr', '-subj', '/CN=%s' % hosts[0])
    with open(os.path.join(directory, 'server.ext'), 'w') as stream:
        stream.write(
            'basicConstraints = critical, CA:FALSE\n'
            'keyUsage = critical, digitalSignature, keyEncipherment\n'
            'extendedKeyUsage = serverAuth\n'
            'subjectAltName = %s\n'
            'subjectKeyIdentifier = hash\n'
            'authorityKeyIdentifier = keyid\n'
            % ', '.join('%s:%s' % name for name in _subject_alt_names(hosts)))
    run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey',
        'ca.key', '-set_serial', '0x%s' % uuid.uuid4().hex, '-days',
        str(days), '-extfile', 'server.ext', '-out', 'server.pem')


def _tls_files_cryptography(directory, hosts, days):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID
    from cryptography.x509.oid import NameOID

    def name(common_name):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                             common_name)])

    def key_usage(**wanted):
        flags = ('digital_signature', 'content_commitment',
                 'key_encipherment', 'data_encipherment', 'key_agreement',
                 'key_cert_sign', 'crl_sign', 'encipher_only',
                 'decipher_only')
        return x509.KeyUsage(**{flag: wanted.get(flag, False)
                                for flag in flags})

    def write_key(key, path):
        with open(os.path.join(directory, path), 'wb') as stream:
            stream.write(key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption()))

    def write_cert(cert, path):
        with open(os.path.join(directory, path), 'wb') as stream:
            stream.write(cert.public_bytes(serialization.Encoding.PEM))

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(
        days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder()
          .subject_name(name(TLS_CA_NAME)).issuer_name(name(TLS_CA_NAME))
          .public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0),
                         critical=True)
          .add_extension(key_usage(key_cert_sign=True, crl_sign=True),
                         critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    alt_names = [x509.IPAddress(ipaddress.ip_address(value))
                 if kind == 'IP' else x509.DNSName(value)
                 for kind, value in _subject_alt_names(hosts)]
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(name(hosts[0])).issuer_name(name(TLS_CA_NAME))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                           critical=True)
            .add_extension(key_usage(digital_signature=True,
                                     key_encipherment=True), critical=True)
            .add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(alt_names),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                    ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))
    write_key(ca_key, 'ca.key')
    write_cert(ca, 'ca.pem')
    write_key(key, 'server.key')
    write_cert(cert, 'server.pem')


def make_tls_files(directory, hosts=TLS_HOSTS, backend=None,
                   days=TLS_DAYS, timeout_s=DEFAULT_TIMEOUT_S):
    """Write a throwaway CA (``ca.pem``, ``ca.key``) and a server
    certificate it signed for ``hosts`` (``server.pem``, ``server.key``:
    EC P-256, subjectAltName IP or DNS per host, ``days`` valid) into
    ``directory`` (created if needed); return their ``TLSFiles``.

    ``backend`` is ``'openssl'`` (the command) or ``'cryptography'`` (the
    package); by default the first of the two found (``tls_backend``).
    A new directory is made reachable by its owner only; the keys are
    readable by their owner only.
    """
    backend = backend or tls_backend()
    if backend is None:
        raise ServerNotFound('the openssl command or the cryptography '
                             'package, to make TLS certificates')
    os.makedirs(directory, mode=0o700, exist_ok=True)
    if backend == 'openssl':
        _tls_files_openssl(directory, list(hosts), days, timeout_s)
    elif backend == 'cryptography':
        _tls_files_cryptography(directory, list(hosts), days)
    else:
        raise ValueError('unknown TLS backend %r' % backend)
    for name, mode in (('ca.key', 0o600), ('server.key', 0o600),
                       ('ca.pem', 0o644), ('server.pem', 0o644)):
        os.chmod(os.path.join(directory, name), mode)
    return TLSFiles(*(os.path.join(directory, name)
                      for name in ('ca.pem', 'server.pem', 'server.key')))


# -------------------------------------------------------------- server --

class _Server:
    """A server process tree we own, with its directory.

    ``timeout_s`` bounds each start (and each set-up command);
    ``prefix`` starts the temporary directory's name.
    """

    name = 'server'
    stop_signal = signal.SIGTERM

    def __init__(self, timeout_s=DEFAULT_TIMEOUT_S, prefix='scheduler-'):
        self.timeout_s = timeout_s
        self.tempdir = _make_tempdir('%s%s-' % (prefix, self.name))
        self.log_path = os.path.join(self.tempdir, 'server.log')
        self.procs = []     # (Popen, stop signal), stopped newest first
        self.url = None
        self.port = None
        self.startup_s = None
        self._prepared = False

    # -- processes --------------------------------------------------------

    def spawn(self, cmd, env, user=None):
        """Start a long-running process of the server (own session)."""
        with open(self.log_path, 'ab') as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=self.tempdir,
                start_new_session=True,
                preexec_fn=_die_with_us(self.stop_signal),
                **_user_kwargs(user))
        self.procs.append((proc, self.stop_signal))
        return proc

    def run(self, cmd, env, user=None):
        """Run a set-up command to completion (bounded)."""
        with open(self.log_path, 'ab') as log:
            log.write(('$ %s\n' % ' '.join(cmd)).encode())
            log.flush()
            try:
                status = subprocess.call(
                    cmd, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, env=env, cwd='/',
                    timeout=self.timeout_s, **_user_kwargs(user))
            except subprocess.TimeoutExpired:
                raise ServerError('%s timed out\n%s' % (
                    cmd[0], _tail(self.log_path))) from None
        if status:
            raise ServerError('%s failed with status %d\n%s' % (
                ' '.join(cmd), status, _tail(self.log_path)))

    def wait_until(self, ready, proc, what):
        """Poll ``ready()`` until it is true, within the time-out; fail
        early when ``proc`` exits."""
        deadline = time.monotonic() + self.timeout_s
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError('%s exited with status %s while starting'
                                  '\n%s' % (what, proc.returncode,
                                            _tail(self.log_path)))
            try:
                if ready():
                    return
            except Exception as exc:  # not ready yet
                last = exc
            time.sleep(POLL_S)
        raise ServerError('%s was not ready within %.0f s (last error: %r);'
                          ' see %s\n%s' % (what, self.timeout_s, last,
                                           self.log_path,
                                           _tail(self.log_path)))

    # -- life cycle -------------------------------------------------------

    @property
    def running(self):
        """Whether every process of the server is alive."""
        return bool(self.procs) and all(proc.poll() is None
                                        for proc, _ in self.procs)

    def start(self):
        """Start the server (the first time: create it; after ``stop()``:
        the same server again, same ports and data); return its URL.

        On failure what was started is stopped, the directory is kept
        for its logs, and ServerError is raised.
        """
        if self.running:
            raise ServerError('%s is already running' % self.name)
        self.stop()     # what is left of a server that died
        started = time.monotonic()
        try:
            if not self._prepared:
                self._prepare()
                self._prepared = True
            self._launch()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self.url

    def _prepare(self):
        """Once: find the binaries, choose ports, initialise the data."""
        raise NotImplementedError

    def _launch(self):
        """Each start: spawn the processes and wait until ready."""
        raise NotImplementedError

    def stop(self):
        """Stop the processes (newest first); keep the directory."""
        while self.procs:
            proc, sig = self.procs.pop()
            if proc.poll() is None:
                # Only the main process: it shuts its children down.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STOP_TIMEOUT_S)
            # What is left of its session (the server's children) goes.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)

    def close(self):
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.tempdir, ignore_errors=True)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info):
        self.close()


class RabbitMQServer(_Server):
    """A private RabbitMQ node with its own epmd, on loopback only.

    Everything that could clash with another run (AMQP, Erlang
    distribution and epmd ports, node name, cookie in ``$HOME``, mnesia
    and log directories) is private.  The user is created by the
    configuration file, so rabbitmqctl is never needed.  ``url`` is
    ``rabbit://user:password@127.0.0.1:PORT/``.

    ``tls=True`` adds an AMQPS listener on a second free port
    (``tls_port``; ``tls_url`` is its ``rabbit://`` URL, for clients with
    ``[oslo_messaging_rabbit] ssl``), with a certificate of a throwaway CA
    (``tls.ca_file``); client certificates are not asked for.
    ``tls_only=True`` (implies ``tls``) leaves out the plain listener:
    ``amqp_port`` is None and ``url`` is ``tls_url``.  ``ctl(*args)``
    runs ``rabbitmqctl`` against the node.
    """

    name = 'rabbitmq'

    def __init__(self, timeout_s=DEFAULT_TIMEOUT_S, prefix='scheduler-',
                 user='scheduler', password='secret', tls=False,
                 tls_only=False):
        super().__init__(timeout_s, prefix)
        self.user = user
        self.password = password
        self.amqp_port = self._epmd_port = None
        self._epmd_cmd = self._server_cmd = self._env = None
        self.tls_only = tls_only
        self.want_tls = tls or tls_only
        self.tls = self.tls_port = self.tls_url = None
        self._ctl = None

    def _prepare(self):
        found = find_rabbitmq()
        if found is None:
            raise ServerNotFound('RabbitMQ (rabbitmq-server, epmd)')
        server, epmd = found
        amqp_port, dist_port, epmd_port, *tls_port = free_ports(
            4 if self.want_tls else 3)
        listeners = 'listeners.tcp.default = 127.0.0.1:%d\n' % amqp_port
        if self.want_tls:
            self.tls = make_tls_files(os.path.join(self.tempdir, 'tls'),
                                      timeout_s=self.timeout_s)
            if self.tls_only:
                listeners = 'listeners.tcp = none\n'
            listeners += (
                'listeners.ssl.default = 127.0.0.1:%d\n'
                'ssl_options.cacertfile = %s\n'
                'ssl_options.certfile = %s\n'
                'ssl_options.keyfile = %s\n'
                'ssl_options.verify = verify_none\n'
                'ssl_options.fail_if_no_peer_cert = false\n'
                % (tls_port[0], *self.tls))
        config = os.path.join(self.tempdir, 'rabbitmq.conf')
        with open(config, 'w') as stream:
            stream.write(
                listeners +
                'loopback_users = none\n'
                'default_user = %s\ndefault_pass = %s\n'
                'default_vhost = /\n'
                'default_permissions.configure = .*\n'
                'default_permissions.read = .*\n'
                'default_permissions.write = .*\n'
                'log.console = true\nlog.console.level = info\n'
                'log.file = false\n'
                % (self.user, self.password))
        self._env = {
            'PATH': os.pathsep.join([os.path.dirname(server),
                                     os.path.dirname(epmd),
                                     os.environ.get('PATH', os.defpath)]),
            'HOME': self.tempdir,     # .erlang.cookie goes here
            'LANG': 'C.UTF-8', 'LC_ALL': 'C.UTF-8',
            'ERL_EPMD_PORT': str(epmd_port),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODENAME': 'scheduler-%s@localhost'
                                 % uuid.uuid4().hex[:8],
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(amqp_port),
            'RABBITMQ_DIST_PORT': str(dist_port),
            'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
                '-kernel inet_dist_use_interface {127,0,0,1}',
            'RABBITMQ_CONFIG_FILE': config,
            'RABBITMQ_ADVANCED_CONFIG_FILE':
                os.path.join(self.tempdir, 'advanced.config'),
            'RABBITMQ_CONF_ENV_FILE':
                os.path.join(self.tempdir, 'rabbitmq-env.conf'),
            'RABBITMQ_ENABLED_PLUGINS_FILE':
                os.path.join(self.tempdir, 'enabled_plugins'),
            'RABBITMQ_ENABLED_PLUGINS': '',
            'RABBITMQ_MNESIA_BASE': os.path.join(self.tempdir, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(self.tempdir, 'log'),
            'RABBITMQ_LOGS': '-',
            'RABBITMQ_PID_FILE': os.path.join(self.tempdir, 'rabbit.pid'),
        }
        if self.tls_only:
            # These would add a plain listener (on 5672 without the port).
            del self._env['RABBITMQ_NODE_IP_ADDRESS']
            del self._env['RABBITMQ_NODE_PORT']
        # Our own epmd in the foreground, so that we own and stop it; the
        # node registers with it instead of spawning a global daemon.
        self._epmd_cmd = [epmd, '-port', str(epmd_port), '-address',
                          '127.0.0.1']
        self._epmd_port = epmd_port
        self._server_cmd = [server]
        self._ctl = os.path.join(os.path.dirname(server), 'rabbitmqctl')
        if self.want_tls:
            (self.tls_port,) = tls_port
            self.tls_url = 'rabbit://%s:%s@127.0.0.1:%d/' % (
                self.user, self.password, self.tls_port)
        if self.tls_only:
            self.port = self.tls_port
            self.url = self.tls_url
            return
        self.amqp_port = self.port = amqp_port
        self.url = 'rabbit://%s:%s@127.0.0.1:%d/' % (
            self.user, self.password, amqp_port)

    def _launch(self):
        epmd = self.spawn(self._epmd_cmd, self._env)
        self.wait_until(lambda: port_open(self._epmd_port), epmd, 'epmd')
        proc = self.spawn(self._server_cmd, self._env)

        def connect(port, ssl_options=None):
            import amqp
            connection = amqp.Connection(
                '127.0.0.1:%d' % port, userid=self.user,
                password=self.password, connect_timeout=2,
                ssl=ssl_options or False)
            connection.connect()
            connection.close()

        def ready():
            if self.amqp_port:
                connect(self.amqp_port)
            if self.tls_port:
                # What oslo.messaging passes with ssl_ca_file (amqp
                # ignores an SSLContext given as ``ssl``).
                connect(self.tls_port, {'ca_certs': self.tls.ca_file,
                                        'cert_reqs': ssl.CERT_REQUIRED,
                                        'server_hostname': '127.0.0.1'})
            return True

        self.wait_until(ready, proc, 'rabbitmq-server')

    def ctl(self, *args, timeout_s=None):
        """Run ``rabbitmqctl ARGS`` against this (running) node; return
        its standard output.  ServerError when it fails."""
        if self._ctl is None:
            raise ServerError('%s was never started' % self.name)
        cmd = [self._ctl, '-n', self._env['RABBITMQ_NODENAME']] + list(args)
        try:
            done = subprocess.run(
                cmd, stdin=subprocess.DEVNULL, capture_output=True,
                env=self._env, cwd=self.tempdir,
                timeout=timeout_s or self.timeout_s)
        except subprocess.TimeoutExpired:
            raise ServerError('rabbitmqctl %s timed out' % args[0]) from None
        if done.returncode:
            raise ServerError('rabbitmqctl %s failed with status %d: %s' % (
                ' '.join(args), done.returncode,
                (done.stdout + done.stderr).decode('utf-8', 'replace')))
        return done.stdout.decode('utf-8', 'replace')


class PostgreSQLServer(_Server):
    """``initdb`` + ``postgres``; ``url`` is the superuser's URL on the
    ``postgres`` database.

    ``tls=True`` runs it with ``ssl = on`` and a server certificate of a
    throwaway CA (``tls.ca_file``); ``url`` is unchanged (libpq's default
    ``sslmode=prefer`` uses TLS without checking the certificate).
    ``tls_only=True`` (implies ``tls``) also refuses TCP clients that do
    not use TLS (``hostnossl ... reject`` in its own ``pg_hba.conf``).
    """

    name = 'postgresql'
    stop_signal = signal.SIGINT   # "fast" shutdown: clients disconnected

    def __init__(self, timeout_s=DEFAULT_TIMEOUT_S, prefix='scheduler-',
                 tls=False, tls_only=False):
        super().__init__(timeout_s, prefix)
        self._cmd = self._env = self._user = None
        self.tls_only = tls_only
        self.want_tls = tls or tls_only
        self.tls = None

    def _prepare(self):
        bindir = find_postgresql()
        if bindir is None:
            raise ServerNotFound('PostgreSQL server '
                                 '(/usr/lib/postgresql/*/bin/initdb)')
        if os.geteuid() == 0:
            if not _user_exists(POSTGRES_USER):
                raise ServerNotFound('OS user %r to run PostgreSQL as'
                                     % POSTGRES_USER)
            self._user = POSTGRES_USER
        datadir = os.path.join(self.tempdir, 'data')
        sockdir = os.path.join(self.tempdir, 'sock')
        os.mkdir(sockdir)
        if self.want_tls:
            self.tls = make_tls_files(os.path.join(self.tempdir, 'tls'),
                                      timeout_s=self.timeout_s)
        hba_file = os.path.join(self.tempdir, 'pg_hba.conf')
        if self.tls_only:
            with open(hba_file, 'w') as stream:
                stream.write('local all all trust\n'
                             'hostssl all all 127.0.0.1/32 trust\n'
                             'hostnossl all all all reject\n')
        if self._user:
            _chown_tree(self.tempdir, self._user)
        self._env = {'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
                     'LANG': 'C', 'LC_ALL': 'C', 'TZ': 'UTC'}
        self.run([os.path.join(bindir, 'initdb'), '-D', datadir, '-U',
                  POSTGRES_USER, '-A', 'trust', '-E', 'UTF8', '--locale=C',
                  '--no-sync', '--no-instructions'], self._env, self._user)
        (self.port,) = free_ports(1)
        options = {'listen_addresses': '127.0.0.1', 'port': str(self.port),
                   'unix_socket_directories': sockdir,
                   'max_connections': '200', 'fsync': 'off',
                   'synchronous_commit': 'off', 'full_page_writes': 'off',
                   'logging_collector': 'off',
                   'log_min_messages': 'warning', 'timezone': 'UTC',
                   'log_timezone': 'UTC'}
        if self.want_tls:
            options.update(ssl='on', ssl_cert_file=self.tls.cert_file,
                           ssl_key_file=self.tls.key_file)
        if self.tls_only:
            options['hba_file'] = hba_file
        self._cmd = [os.path.join(bindir, 'postgres'), '-D', datadir]
        for key, value in options.items():
            self._cmd += ['-c', '%s=%s' % (key, value)]
        self.url = 'postgresql+psycopg2://%s@127.0.0.1:%d/postgres' % (
            POSTGRES_USER, self.port)

    def _launch(self):
        proc = self.spawn(self._cmd, self._env, self._user)

        def ready():
            import psycopg2
            tls = {} if self.tls is None else {
                'sslmode': 'verify-full', 'sslrootcert': self.tls.ca_file}
            psycopg2.connect(host='127.0.0.1', port=self.port,
                             user=POSTGRES_USER, dbname='postgres',
                             connect_timeout=2, **tls).close()
            return True

        self.wait_until(ready, proc, 'postgres')


class MariaDBServer(_Server):
    """``mariadb-install-db`` + ``mariadbd``; ``url`` is
    ``mysql+pymysql://root@127.0.0.1:PORT/`` (no database); ``socket``
    its Unix socket."""

    name = 'mariadb'

    def __init__(self, timeout_s=DEFAULT_TIMEOUT_S, prefix='scheduler-'):
        super().__init__(timeout_s, prefix)
        self.socket = os.path.join(self.tempdir, 'mysqld.sock')
        self._cmd = self._env = self._user = None

    def _prepare(self):
        found = find_mariadb()
        if found is None:
            raise ServerNotFound('MariaDB server (mariadbd, '
                                 'mariadb-install-db)')
        server, install = found
        if os.geteuid() == 0 and _user_exists(MARIADB_USER):
            self._user = MARIADB_USER
        datadir = os.path.join(self.tempdir, 'data')
        tmpdir = os.path.join(self.tempdir, 'tmp')
        os.mkdir(datadir)
        os.mkdir(tmpdir)
        common = ['--datadir=' + datadir, '--tmpdir=' + tmpdir,
                  '--skip-name-resolve', '--innodb-buffer-pool-size=64M',
                  '--innodb-log-file-size=16M',
                  '--innodb-flush-log-at-trx-commit=0',
                  '--innodb-doublewrite=0', '--innodb-use-native-aio=0',
                  '--character-set-server=utf8mb4',
                  '--collation-server=utf8mb4_general_ci']
        if os.geteuid() == 0 and self._user is None:
            common.append('--user=root')
        if self._user:
            _chown_tree(self.tempdir, self._user)
        self._env = dict(os.environ, LANG='C', LC_ALL='C', TZ='UTC')
        self._env['PATH'] = '/usr/sbin:/usr/bin:' + self._env.get('PATH', '')
        self.run([install, '--no-defaults',
                  '--auth-root-authentication-method=normal',
                  '--skip-test-db'] + common, self._env, self._user)
        (self.port,) = free_ports(1)
        self._cmd = [server, '--no-defaults', '--bind-address=127.0.0.1',
                     '--port=%d' % self.port, '--socket=' + self.socket,
                     '--pid-file=' + os.path.join(self.tempdir,
                                                  'mysqld.pid'),
                     '--log-error=' + self.log_path + '.err',
                     '--max-connections=300', '--skip-log-bin',
                     '--loose-skip-symbolic-links'] + common
        self.url = 'mysql+pymysql://root@127.0.0.1:%d/' % self.port

    def _launch(self):
        proc = self.spawn(self._cmd, self._env, self._user)

        def ready():
            import pymysql
            connection = pymysql.connect(unix_socket=self.socket,
                                         user='root', connect_timeout=2)
            try:
                with connection.cursor() as cursor:
                    # root without password over TCP from loopback (the
                    # bootstrap only makes root@localhost: the socket).
                    cursor.execute("CREATE USER IF NOT EXISTS "
                                   "'root'@'127.0.0.1'")
                    cursor.execute("GRANT ALL PRIVILEGES ON *.* TO "
                                   "'root'@'127.0.0.1' WITH GRANT OPTION")
            finally:
                connection.close()
            pymysql.connect(host='127.0.0.1', port=self.port, user='root',
                            connect_timeout=2).close()
            return True

        try:
            self.wait_until(ready, proc, 'mariadbd')
        except ServerError as exc:
            raise ServerError('%s\nerror log:\n%s' % (
                exc, _tail(self.log_path + '.err'))) from None


SERVERS = {cls.name: cls
           for cls in (RabbitMQServer, PostgreSQLServer, MariaDBServer)}


class LocalServers:
    """Context manager: start RabbitMQ and/or PostgreSQL on entry, close
    them on exit (and at interpreter exit, whatever happens)."""

    def __init__(self, rabbitmq=True, postgresql=True, timeout_s=120.0):
        self.wanted = {'rabbitmq': rabbitmq, 'postgresql': postgresql}
        self.timeout_s = timeout_s
        self.rabbit_url = None
        self.postgresql_url = None
        self.startup_s = {}
        self._servers = []

    def __enter__(self):
        atexit.register(self.stop)
        try:
            if self.wanted['rabbitmq']:
                self.rabbit_url = self._start(RabbitMQServer)
            if self.wanted['postgresql']:
                self.postgresql_url = self._start(PostgreSQLServer)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, cls):
        server = cls(self.timeout_s, prefix='scheduler-bench-')
        self._servers.append(server)
        url = server.start()
        self.startup_s[cls.name] = server.startup_s
        return url

    def stop(self):
        while self._servers:
            self._servers.pop().close()

    def __exit__(self, *exc_info):
        self.stop()
        atexit.unregister(self.stop)


# ----------------------------------------------------------- databases --

def _admin_engine(url):
    return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def create_database(admin_url, prefix='test'):
    """Create an empty, uniquely named database; return its URL.

    ``admin_url`` is a URL with the right to CREATE DATABASE on a
    PostgreSQL or MySQL/MariaDB server; the returned URL keeps its
    driver, credentials, host and port.  A ``sqlite`` URL gets a new file
    name in the temporary directory.
    """
    url = sa.engine.make_url(admin_url)
    name = '%s_%s' % (prefix, uuid.uuid4().hex[:12])
    backend = url.get_backend_name()
    if backend == 'sqlite':
        path = os.path.join(tempfile.gettempdir(), name + '.sqlite')
        return url.set(database=path).render_as_string(hide_password=False)
    if backend == 'postgresql':
        statement = ('CREATE DATABASE "%s" ENCODING \'UTF8\' '
                     'TEMPLATE template0' % name)
    elif backend in ('mysql', 'mariadb'):
        statement = ('CREATE DATABASE `%s` CHARACTER SET utf8mb4 '
                     'COLLATE utf8mb4_general_ci' % name)
    else:
        raise ServerError('cannot create databases on %s' % backend)
    engine = _admin_engine(url)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(statement))
    finally:
        engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def drop_database(db_url):
    """Drop a database made by ``create_database``, even if in use."""
    url = sa.engine.make_url(db_url)
    backend = url.get_backend_name()
    name = url.database
    if backend == 'sqlite':
        for suffix in ('', '-journal', '-wal', '-shm'):
            with contextlib.suppress(OSError):
                os.unlink((name or '') + suffix)
        return
    if backend == 'postgresql':
        admin = url.set(database='postgres')
        statements = ['DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name]
    else:
        admin = url.set(database=None)
        statements = ['SET SESSION lock_wait_timeout = 10',
                      'DROP DATABASE IF EXISTS `%s`' % name]
    engine = _admin_engine(admin)
    try:
        with engine.connect() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
    finally:
        engine.dispose()
