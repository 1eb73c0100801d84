"""A real Nova 34.0.0 control plane around this scheduler, for tests.

``NovaCloud(...).start()`` brings up, on 127.0.0.1, from the Nova venv
(``tests/nova_venv.py``): nova-api (``nova.wsgi.osapi_compute`` under
gunicorn, no Keystone: ``functional/real_nova/api-paste.ini``), one
conductor for the API and cell1 and one for cell2, three nova-compute in
cell1 and one in cell2 (``fake.FakeDriverWithoutFakeNodes``, one node
named after its host); Glance 33.0.0 from its venv (file store, no
Keystone); a Neutron stand-in (``functional/real_nova/neutron_stub.py``);
and, as Nova's scheduler, ``scheduler-service`` in Nova database mode and
Placement mode (``deployment.Deployment``).  Placement, RabbitMQ and
PostgreSQL are the caller's (the session's servers); the cloud makes its
own vhosts and databases there and removes them in ``close()``.  Nova's
databases are made by ``nova-manage`` (``nova_databases.NovaDatabases``).

Every process logs into the cloud's directory (``<name>.log``), which
the caller keeps.  The helpers are what the tests need: Nova's REST API
(``api``), server waits, Placement's allocations and usages, and the
scheduler's decision log lines (``decision``).
"""

import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import requests
import servers
import sqlalchemy as sa
from deployment import Deployment
from nova_databases import NovaDatabases
from nova_venv import nova_venv
from placement_api import PlacementAPI

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'functional',
                    'real_nova')
MICROVERSION = '2.94'           # before evacuate stops the server (2.95)
CELL1_HOSTS = ('rn-cmp1', 'rn-cmp2', 'rn-cmp3')
CELL2_HOSTS = ('rn-cmp4',)
# Every fake node has 800000 MiB (nova.virt.fake.FakeDriver.memory_mb);
# all but HOST_ROOM_MB of it is reserved, at a RAM ratio of 1.0.
FAKE_NODE_MB = 800000
HOST_ROOM_MB = 16384
FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
           'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
           'ServerGroupAffinityFilter']
# Both schedulers: Nova 34's default filters and weighers, one host per
# choice, and a soft group's members weighing more than the RAM
# weigher's spreading (at 1.0 each, the two normalised weights tie).
FILTER_SCHEDULER = {'enabled_filters': FILTERS, 'host_subset_size': 1,
                    'soft_affinity_weight_multiplier': 2.0,
                    'soft_anti_affinity_weight_multiplier': 2.0}
START_TIMEOUT = 180
WAIT_TIMEOUT = 120
GLANCE_VERSION = os.environ.get('SCHEDULER_GLANCE_VERSION', '33.0.0')
DECISION = re.compile(
    r'Selected destinations for request (?P<request>\S+) in [\d.]+ ms: '
    r'(?P<items>.*)$')
ITEM = re.compile(r'(\S+) on (\S+?):(\S+) \((\d+) alternates\)')
REFUSAL = re.compile(
    r'No valid host for request (?P<request>\S+) in [\d.]+ ms, '
    r'instances (?P<uuids>.*?): (?P<reason>.*)$')


class CloudError(AssertionError):
    """The cloud, or one of its waits, failed."""


def ini(groups):
    """The text of a config file: ``{section: {option: value}}``; lists
    are written comma-separated."""
    return ''.join('[%s]\n%s\n' % (section, ''.join(
        '%s = %s\n' % (name, ','.join(map(str, value))
                       if isinstance(value, (list, tuple)) else value)
        for name, value in options.items()))
        for section, options in groups.items())


def wait_for(predicate, what, timeout=WAIT_TIMEOUT, interval=0.5,
             check=None):
    """``predicate()``'s first true value, polled for ``timeout`` seconds;
    ``check()`` (if given) runs first each time and may raise."""
    deadline = time.monotonic() + timeout
    while True:
        if check:
            check()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CloudError('%s: not within %ss' % (what, timeout))
        time.sleep(interval)


def glance_venv():
    cache = (os.environ.get('XDG_CACHE_HOME') or
             os.path.expanduser('~/.cache'))
    venv = os.environ.get('SCHEDULER_GLANCE_VENV') or os.path.join(
        cache, 'scheduler-tests', 'glance-' + GLANCE_VERSION)
    if not os.path.exists(os.path.join(venv, 'scheduler-glance-version')):
        raise CloudError('no glance==%s venv in %s: run tools/test-setup.sh'
                         % (GLANCE_VERSION, venv))
    return venv


class Service(servers._Server):
    """One process of the cloud: ``servers._Server``'s spawning, waiting
    and stopping, in the cloud's directory (log ``<name>.log``) rather
    than a temporary one of its own."""

    def __init__(self, name, cmd, env, workdir, ready=None,
                 timeout_s=START_TIMEOUT):
        # Not _Server.__init__, which makes a temporary directory.
        self.name = name
        self.timeout_s = timeout_s
        self.tempdir = workdir
        self.log_path = os.path.join(workdir, name + '.log')
        self.procs = []
        self.url = self.port = self.startup_s = None
        self._prepared = True
        self._cmd, self._env, self._ready = cmd, env, ready

    def _launch(self):
        proc = self.spawn(self._cmd, self._env)
        if self._ready:
            self.wait_until(self._ready, proc, self.name)

    def check(self):
        """CloudError with the end of its log if the process ended."""
        for proc, _ in self.procs:
            if proc.poll() is not None:
                raise CloudError('%s exited with %s:\n%s' % (
                    self.name, proc.returncode, servers._tail(self.log_path)))

    def kill(self):
        """SIGKILL, as a crash (``start()`` brings it back)."""
        for proc, _ in self.procs:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self.procs = []


class NovaAPI:
    """Nova's compute API as an admin of one project (identity headers:
    no Keystone), at ``MICROVERSION`` unless told."""

    def __init__(self, url):
        self.url = url
        self.project_id = uuid.uuid4().hex
        self.session = requests.Session()
        self.session.headers.update({
            'X-Auth-Token': 'admin', 'X-User-Id': uuid.uuid4().hex,
            'X-Project-Id': self.project_id,
            'X-Roles': 'admin,member,reader'})

    def call(self, method, path, body=None, expected=(200, 201, 202, 204),
             microversion=MICROVERSION):
        """``(status, json body or None, request id)``; CloudError when the
        status is not ``expected``."""
        reply = self.session.request(
            method, self.url + path, json=body, timeout=60,
            headers={'OpenStack-API-Version': 'compute ' + microversion})
        data = reply.json() if reply.content else None
        if reply.status_code not in expected:
            raise CloudError('%s %s: %s %s' % (method, path,
                                               reply.status_code, data))
        return (reply.status_code, data,
                reply.headers.get('x-openstack-request-id') or
                reply.headers.get('x-compute-request-id'))

    def get(self, path):
        return self.call('GET', path)[1]


class NovaCloud:
    """See the module.  ``rabbitmq``, ``postgresql_url`` and
    ``placement`` are the session's servers; ``workdir`` is kept."""

    def __init__(self, rabbitmq, postgresql_url, placement, workdir):
        self.rabbitmq = rabbitmq
        self.postgresql_url = postgresql_url
        self.placement = placement
        self.workdir = str(workdir)
        self.venv = nova_venv()
        self.glance_venv = glance_venv()
        self.services = {}
        self.vhosts = []
        self.databases = []
        self.nova_dbs = None
        self.scheduler = None
        self.nova_scheduler = None
        self.placement_api = PlacementAPI(placement.url)
        self.api = None
        self.flavors = {}
        self.images = []
        self.providers = {}
        self.cells = {}

    # -- life cycle ------------------------------------------------------

    def start(self):
        """Everything, in order; ``close()`` undoes what was done."""
        self._transports()
        self.nova_dbs = NovaDatabases(self.postgresql_url, self.workdir)
        self._glance()
        self._neutron()
        self._cells()
        self._nova_services()
        self._discover()
        self.start_scheduler()
        self._fleet()
        return self

    def close(self):
        """Stop every process, drop the vhosts and the databases; the
        directory and its logs stay."""
        self.stop_scheduler()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda service: service.stop(),
                          self.services.values()))
        for vhost in self.vhosts:
            try:
                self.rabbitmq.ctl('delete_vhost', vhost)
            except servers.ServerError:
                pass
        if self.nova_dbs is not None:
            self.nova_dbs.close()
        from scheduler_tools import databases
        for url in self.databases:
            databases.drop_database(url)

    def check(self):
        """CloudError if any process of the cloud ended."""
        for service in self.services.values():
            if service.procs:
                service.check()
        if self.scheduler is not None and self.scheduler.returncode \
                is not None:
            raise CloudError('scheduler-service exited:\n%s'
                             % self.scheduler.log())

    def _service(self, name, cmd, env=None, ready=None, start=True):
        service = Service(name, cmd, env or self._env(), self.workdir, ready)
        self.services[name] = service
        if start:
            service.start()
        return service

    def _env(self, **extra):
        env = {key: value for key, value in os.environ.items()
               if not key.startswith('PYTHON')}
        env.update(LANG='C.UTF-8', TZ='UTC', **extra)
        return env

    def _database(self, prefix):
        from scheduler_tools import databases
        url = databases.create_database(self.postgresql_url, prefix)
        self.databases.append(url)
        return url

    # -- RabbitMQ ----------------------------------------------------------

    def _transports(self):
        """A vhost for the API and cell1, another for cell2."""
        base = self.rabbitmq.url.rstrip('/')
        self.transport = {}
        for name in ('top', 'cell2'):
            vhost = 'real-nova-%s-%s' % (name, uuid.uuid4().hex[:8])
            self.rabbitmq.ctl('add_vhost', vhost)
            self.vhosts.append(vhost)
            self.rabbitmq.ctl('set_permissions', '-p', vhost,
                              self.rabbitmq.user, '.*', '.*', '.*')
            self.transport[name] = '%s/%s' % (base, vhost)
        self.transport['cell1'] = self.transport['top']

    # -- Glance and Neutron ------------------------------------------------

    def _glance(self):
        directory = os.path.join(self.workdir, 'glance')
        os.makedirs(directory)
        conf = ini({
            'DEFAULT': {'enabled_backends': 'fs:file', 'debug': False},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir':
                   os.path.join(directory, 'images')},
            'os_glance_staging_store': {
                'filesystem_store_datadir':
                    os.path.join(directory, 'staging')},
            'os_glance_tasks_store': {
                'filesystem_store_datadir': os.path.join(directory, 'tasks')},
            'database': {'connection': self._database('glance')},
            # The unauthenticated context has no role: Glance's legacy
            # rules, which let it do anything.
            'oslo_policy': {'enforce_new_defaults': False,
                            'enforce_scope': False},
            'paste_deploy': {'config_file': os.path.join(
                self.glance_venv, 'etc', 'glance', 'glance-api-paste.ini')},
        })
        conf_path = os.path.join(directory, 'glance-api.conf')
        with open(conf_path, 'w') as stream:
            stream.write(conf)
        env = self._env(OS_GLANCE_CONFIG_DIR=directory)
        self._run([os.path.join(self.glance_venv, 'bin', 'glance-manage'),
                   '--config-file', conf_path, 'db_sync'], env)
        (port,) = servers.free_ports(1)
        self.glance_url = 'http://127.0.0.1:%d' % port
        self._service('glance-api', [
            os.path.join(self.glance_venv, 'bin', 'gunicorn'),
            '--bind', '127.0.0.1:%d' % port, '--workers', '1',
            '--threads', '4', '--timeout', '120',
            'glance.wsgi.api:application'], env,
            ready=lambda: requests.get(self.glance_url + '/versions',
                                       timeout=2).ok)
        self.images = [self._image('real-nova-%d' % n) for n in (1, 2)]

    def _image(self, name):
        """A raw image of a few bytes (Glance without Keystone lets
        anybody see it); its id."""
        reply = requests.post(self.glance_url + '/v2/images', json={
            'name': name, 'disk_format': 'raw', 'container_format': 'bare',
            }, timeout=30)
        if not reply.ok:
            raise CloudError('Glance refused image %s: %s %s'
                             % (name, reply.status_code, reply.text))
        image_id = reply.json()['id']
        requests.put(
            '%s/v2/images/%s/file' % (self.glance_url, image_id),
            data=b'not a real disk', timeout=30,
            headers={'Content-Type': 'application/octet-stream'},
        ).raise_for_status()
        wait_for(lambda: requests.get(
            '%s/v2/images/%s' % (self.glance_url, image_id),
            timeout=10).json()['status'] == 'active', 'image %s' % name)
        return image_id

    def _neutron(self):
        (port,) = servers.free_ports(1)
        self.neutron_url = 'http://127.0.0.1:%d' % port
        self._service('neutron-stub', [
            shutil.which('python3') or 'python3',
            os.path.join(HERE, 'neutron_stub.py'), str(port)],
            ready=lambda: servers.port_open(port))

    # -- Nova --------------------------------------------------------------

    def _nova_conf(self, name, transport, **groups):
        """Write ``<name>.conf``: what every Nova service shares, then
        ``groups``; its path."""
        conf = {
            'DEFAULT': {'debug': True, 'transport_url': transport,
                        'my_ip': '127.0.0.1', 'graceful_shutdown_timeout': 5,
                        'state_path': os.path.join(self.workdir, name),
                        'heal_instance_info_cache_interval': -1},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': self.placement.url},
            'glance': {'endpoint_override': self.glance_url},
            'neutron': {'auth_type': 'admin_token', 'token': 'admin',
                        'endpoint': self.neutron_url,
                        'endpoint_override': self.neutron_url},
            'quota': {'driver': 'nova.quota.NoopQuotaDriver'},
            'oslo_concurrency': {'lock_path': os.path.join(self.workdir,
                                                           'locks')},
        }
        for group, options in groups.items():
            conf.setdefault(group, {}).update(options)
        os.makedirs(conf['DEFAULT']['state_path'], exist_ok=True)
        path = os.path.join(self.workdir, name + '.conf')
        with open(path, 'w') as stream:
            stream.write(ini(conf))
        return path

    def _control_conf(self, name, transport, cell_db, **groups):
        return self._nova_conf(
            name, transport,
            api_database={'connection': self.nova_dbs.urls['api']},
            database={'connection': cell_db}, **groups)

    def _run(self, cmd, env=None):
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env=env or self._env(), cwd=self.workdir,
                              timeout=START_TIMEOUT)
        if done.returncode:
            raise CloudError('%s: %s\n%s' % (' '.join(cmd), done.returncode,
                                             done.stderr[-5000:]))
        return done.stdout

    def manage(self, *args):
        """``nova-manage`` with the API's configuration; its output."""
        return self._run([os.path.join(self.venv, 'bin', 'nova-manage'),
                          '--config-file', self.api_conf] + list(args))

    def _cells(self):
        """Nova's schemas, cell0 and the two cells, by nova-manage."""
        urls = self.nova_dbs.urls
        self.api_conf = self._control_conf('nova-api', self.transport['top'],
                                           urls['cell0'])
        self.manage('api_db', 'sync')
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            list(pool.map(
                lambda name: self.nova_dbs.manage(name, 'db', 'sync',
                                                  '--local_cell'),
                ('cell0', 'cell1', 'cell2')))
        self.manage('cell_v2', 'map_cell0', '--database_connection',
                    urls['cell0'])
        for name in ('cell1', 'cell2'):
            self.manage('cell_v2', 'create_cell', '--name', name,
                        '--database_connection', urls[name],
                        '--transport-url', self.transport[name])
        for line in self.manage('cell_v2', 'list_cells').splitlines():
            parts = [p.strip() for p in line.split('|')]
            if len(parts) > 3 and parts[1] in ('cell0', 'cell1', 'cell2'):
                self.cells[parts[1]] = parts[2]

    def _nova_bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def _nova_services(self):
        """The conductors, the API and the computes."""
        urls = self.nova_dbs.urls
        for cell in ('cell1', 'cell2'):
            conf = self._control_conf('nova-conductor-' + cell,
                                      self.transport[cell], urls[cell],
                                      conductor={'workers': 1})
            self._service('nova-conductor-' + cell,
                          [self._nova_bin('nova-conductor'),
                           '--config-file', conf])
        (port,) = servers.free_ports(1)
        self.api = NovaAPI('http://127.0.0.1:%d/v2.1' % port)
        self._service('nova-api', [
            self._nova_bin('gunicorn'), '--bind', '127.0.0.1:%d' % port,
            '--workers', '1', '--threads', '8', '--timeout', '120',
            '--pythonpath', HERE, 'nova_api_wsgi:application'],
            self._env(OS_NOVA_CONFIG_DIR=self.workdir,
                      OS_NOVA_CONFIG_FILES='%s;%s' % (
                          os.path.join(HERE, 'api-paste.ini'),
                          self.api_conf)), start=False)
        for cell, hosts in (('cell1', CELL1_HOSTS), ('cell2', CELL2_HOSTS)):
            for host in hosts:
                self._compute(host, cell)
        self.services['nova-api'].start()
        wait_for(self._api_ready, 'nova-api answers', check=self.check)

    def _api_ready(self):
        try:
            return self.api.call('GET', '/flavors')[0] == 200
        except (requests.RequestException, CloudError):
            return False

    def _compute(self, host, cell):
        conf = self._nova_conf(
            'nova-compute-' + host, self.transport[cell],
            DEFAULT={'host': host,
                     'compute_driver': 'fake.FakeDriverWithoutFakeNodes',
                     'reserved_host_memory_mb': FAKE_NODE_MB - HOST_ROOM_MB,
                     'ram_allocation_ratio': 1.0,
                     'shelved_offload_time': -1,
                     'sync_power_state_interval': -1})
        self._service('nova-compute-' + host,
                      [self._nova_bin('nova-compute'), '--config-file', conf])

    def compute(self, host):
        """The nova-compute Service of ``host`` (stop, start, kill)."""
        return self.services['nova-compute-' + host]

    def _registered(self, cell):
        """The hosts with a compute node in ``cell``'s database."""
        engine = sa.create_engine(self.nova_dbs.urls[cell],
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                return set(connection.execute(sa.text(
                    'SELECT host FROM compute_nodes WHERE deleted = 0'
                )).scalars())
        finally:
            engine.dispose()

    def _discover(self):
        """Wait for the computes' nodes, then map them to their cells."""
        for cell, hosts in (('cell1', CELL1_HOSTS), ('cell2', CELL2_HOSTS)):
            wait_for(lambda cell=cell, hosts=hosts:
                     self._registered(cell) >= set(hosts),
                     '%s compute nodes' % cell, timeout=START_TIMEOUT,
                     check=self.check)
        self.manage('cell_v2', 'discover_hosts')

    # -- the schedulers ----------------------------------------------------

    def start_scheduler(self):
        """``scheduler-service`` (Nova database mode, Placement mode), on
        its own database, logging into ``scheduler.log``."""
        if not hasattr(self, 'scheduler_db'):
            self.scheduler_db = self._database('real_nova_scheduler')
        directory = os.path.join(self.workdir, 'scheduler-service')
        os.makedirs(directory, exist_ok=True)
        self.scheduler_log = os.path.join(self.workdir, 'scheduler.log')
        options = {
            ('DEFAULT', 'debug'): True,
            ('DEFAULT', 'log_file'): self.scheduler_log,
            ('api_database', 'connection'): self.nova_dbs.urls['api'],
            ('scheduler', 'use_placement'): True,
            ('scheduler', 'periodic_task_interval'): 60,
            ('placement_database', 'connection'):
                self.placement.database_url,
            ('placement', 'auth_type'): 'admin_token',
            ('placement', 'token'): 'admin',
            ('placement', 'endpoint'): self.placement.url,
            **{('filter_scheduler', name): value
               for name, value in FILTER_SCHEDULER.items()},
        }
        self.scheduler = Deployment(self.scheduler_db, 'process',
                                    self.transport['top'], directory,
                                    options, host='real-nova-scheduler')
        try:
            self.scheduler.start()
        except BaseException:
            self.stop_scheduler()
            raise

    def stop_scheduler(self):
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None

    def start_nova_scheduler(self):
        """Nova 34's own nova-scheduler, on the same topic."""
        conf = self._control_conf(
            'nova-scheduler', self.transport['top'],
            self.nova_dbs.urls['cell0'],
            scheduler={'workers': 1}, filter_scheduler=FILTER_SCHEDULER)
        name = 'nova-scheduler'
        if name not in self.services:
            self._service(name, [self._nova_bin('nova-scheduler'),
                                 '--config-file', conf], start=False)
        service = self.services[name]
        service.start()
        wait_for(lambda: 'Starting scheduler node' in self.log(name) or
                 'Creating RPC server' in self.log(name),
                 'nova-scheduler started', check=self.check)
        return service

    # -- the fleet ---------------------------------------------------------

    def _fleet(self):
        """Each compute's provider (with its inventory), the flavors, and
        cell2's compute disabled until a test enables it."""
        for host in CELL1_HOSTS + CELL2_HOSTS:
            self.providers[host] = wait_for(
                lambda host=host: self._provider(host),
                'the provider of %s' % host, timeout=START_TIMEOUT,
                check=self.check)
        for name, ram in (('tiny', 512), ('small', 1024), ('medium', 6144),
                          ('big', 12288), ('huge', 2 * HOST_ROOM_MB)):
            flavor = {'name': 'rn-' + name, 'ram': ram, 'vcpus': 1,
                      'disk': 1, 'id': 'rn-' + name}
            self.api.call('POST', '/flavors', {'flavor': flavor})
            self.flavors[name] = flavor
        for host in CELL2_HOSTS:
            self.set_service(host, status='disabled')

    def _provider(self, host):
        found = self.placement_api._json(
            'GET', '/resource_providers', params={'name': host})
        for provider in found['resource_providers']:
            inventory = self.placement_api._json(
                'GET', '/resource_providers/%s/inventories'
                % provider['uuid'])['inventories']
            if 'MEMORY_MB' in inventory:
                return provider['uuid']
        return None

    # -- helpers for the tests ---------------------------------------------

    def log(self, name):
        path = os.path.join(self.workdir, name + '.log')
        with open(path, errors='replace') as stream:
            return stream.read()

    def service_id(self, host, binary='nova-compute'):
        services = self.api.get('/os-services?host=%s&binary=%s'
                                % (host, binary))['services']
        return services[0]['id']

    def set_service(self, host, **body):
        """``PUT /os-services/{id}`` of ``host``'s compute service
        (``status='disabled'``, ``forced_down=True``, ...)."""
        return self.api.call('PUT', '/os-services/%s'
                             % self.service_id(host), body)[1]

    def boot(self, name, flavor='tiny', image=0, count=1, **extra):
        """``POST /servers`` without networks; ``(reply, request id)``."""
        server = {'name': name, 'flavorRef': self.flavors[flavor]['id'],
                  'imageRef': self.images[image], 'networks': 'none'}
        hints = extra.pop('hints', None)
        if count > 1:
            server.update(min_count=count, max_count=count,
                          return_reservation_id=True)
        server.update(extra)
        body = {'server': server}
        if hints:
            body['os:scheduler_hints'] = hints
        _, data, request_id = self.api.call('POST', '/servers', body)
        return data, request_id

    def servers_of(self, reservation_id):
        return self.api.get('/servers/detail?reservation_id=%s'
                            % reservation_id)['servers']

    def server(self, server_id):
        return self.api.get('/servers/%s' % server_id)['server']

    def action(self, server_id, body, expected=(202,)):
        """A server action; its request id."""
        return self.api.call('POST', '/servers/%s/action' % server_id, body,
                             expected=expected)[2]

    def wait_server(self, server_id, status, timeout=WAIT_TIMEOUT):
        """The server once its status is ``status`` (or one of a tuple)
        and no task runs; a CloudError (with its fault) when it goes
        ERROR unasked."""
        wanted = (status,) if isinstance(status, str) else status

        def settled():
            server = self.server(server_id)
            if server['status'] == 'ERROR' and 'ERROR' not in wanted:
                raise CloudError('server %s went ERROR: %s' % (
                    server_id, server.get('fault')))
            if server['status'] in wanted and \
                    server.get('OS-EXT-STS:task_state') is None:
                return server
            return None
        return wait_for(settled, 'server %s %s' % (server_id, status),
                        timeout=timeout, check=self.check)

    def delete_servers(self, server_ids=None):
        """Delete servers (all by default) and wait until they are gone
        and hold no allocation."""
        if server_ids is None:
            server_ids = [s['id'] for s in
                          self.api.get('/servers?all_tenants=1')['servers']]
        for server_id in server_ids:
            self.api.call('DELETE', '/servers/%s' % server_id,
                          expected=(204, 404))

        def gone():
            return all(self.api.call('GET', '/servers/%s' % server_id,
                                     expected=(200, 404))[0] == 404 and
                       not self.allocations(server_id)
                       for server_id in server_ids)
        wait_for(gone, 'servers deleted', check=self.check)

    def host_of(self, server):
        return server['OS-EXT-SRV-ATTR:host']

    def allocations(self, consumer):
        """``{host or provider uuid: resources}`` of a consumer."""
        hosts = {uuid_: host for host, uuid_ in self.providers.items()}
        found = self.placement_api.allocations(consumer)['allocations']
        return {hosts.get(rp, rp): alloc['resources']
                for rp, alloc in found.items()}

    def usage(self, host):
        return self.placement_api.usages(self.providers[host])

    def capacity(self, host, resource='MEMORY_MB'):
        """What Placement lets ``host`` hold: (total - reserved) * ratio."""
        inventory = self.placement_api._json(
            'GET', '/resource_providers/%s/inventories/%s'
            % (self.providers[host], resource))
        return int((inventory['total'] - inventory['reserved']) *
                   inventory['allocation_ratio'])

    def decision(self, request_id, timeout=15):
        """The scheduler's line for ``request_id``, parsed: ``{instance
        uuid: (host, node, alternates)}`` for a selection, or
        ``('refused', [uuids], reason)``.  CloudError if none is logged."""
        def find():
            with open(self.scheduler_log, errors='replace') as stream:
                for line in stream:
                    parsed = parse_decision(line, request_id)
                    if parsed is not None:
                        return parsed
            return None
        return wait_for(find, 'the scheduler log line of %s' % request_id,
                        timeout=timeout, interval=0.5)


def parse_decision(line, request_id):
    """``line``'s decision for ``request_id`` (see ``decision``), or None
    when it is not that request's decision line."""
    found = DECISION.search(line)
    if found and found['request'] == request_id:
        return {uuid_: (host, node, int(alternates)) for uuid_, host, node,
                alternates in ITEM.findall(found['items'])}
    found = REFUSAL.search(line)
    if found and found['request'] == request_id:
        return ('refused', found['uuids'].split(', '), found['reason'])
    return None
