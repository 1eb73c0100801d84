"""The Nova virtualenv of the versus-nova mode, and Nova's databases.

``NovaVenv`` finds Nova 34's virtualenv (``--nova-venv``, else
``$SCHEDULER_NOVA_VENV``, else ``~/.cache/scheduler-tests/nova-34.0.0``
as ``tools/test-setup.sh`` builds it), runs its commands with this
interpreter's ``psycopg2`` lent when the venv has no PostgreSQL driver
(the same CPython build), and ``make_databases`` lets Nova's own
``nova-manage`` create an API database, cell0 and one cell
(``api_db sync``, ``db sync --local_cell``, ``cell_v2 map_cell0``,
``cell_v2 create_cell``) on a PostgreSQL server.

The same steps as the tests' ``tests/nova_databases.py`` (which the
tools may not import), without its template copies.
"""

import concurrent.futures
import os
import subprocess

from scheduler_tools.bench import BenchError

NOVA_VERSION = '34.0.0'
COMMAND_TIMEOUT = 600
DATABASES = ('api', 'cell0', 'cell1')


def default_venv():
    """``$SCHEDULER_NOVA_VENV``, else the test set-up's venv path."""
    cache = (os.environ.get('XDG_CACHE_HOME') or
             os.path.expanduser('~/.cache'))
    return os.environ.get('SCHEDULER_NOVA_VENV') or os.path.join(
        cache, 'scheduler-tests', 'nova-' + NOVA_VERSION)


class NovaVenv:
    """Nova's virtualenv at ``path``: ``python``, ``bin(name)``, ``env``
    (this environment without PYTHON* variables, plus the lent driver's
    directory in ``VERSUS_NOVA_PATH`` and ``PYTHONPATH``)."""

    def __init__(self, path, workdir):
        self.path = path
        self.python = self.bin('python')
        if not os.path.exists(self.python):
            raise BenchError('no Nova virtualenv in %s (give --nova-venv, '
                             'or run tools/test-setup.sh)' % path)
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith('PYTHON')}
        lent = lent_psycopg2(self.python, workdir)
        if lent:
            self.env['PYTHONPATH'] = self.env['VERSUS_NOVA_PATH'] = lent

    def bin(self, name):
        return os.path.join(self.path, 'bin', name)

    def manage(self, conf, *args):
        """``nova-manage --config-file conf args``; BenchError with its
        output when it fails."""
        result = subprocess.run(
            [self.bin('nova-manage'), '--config-file', conf] + list(args),
            capture_output=True, text=True, env=self.env,
            timeout=COMMAND_TIMEOUT, cwd=os.path.dirname(conf))
        if result.returncode:
            raise BenchError('nova-manage %s failed: %s' % (
                ' '.join(args[:2]), result.stderr[-3000:]))
        return result.stdout


def _manage_conf(path, api_url, cell_url, workdir):
    with open(path, 'w') as conf:
        conf.write('[DEFAULT]\ntransport_url = fake://\nstate_path = %s\n'
                   '[api_database]\nconnection = %s\n'
                   '[database]\nconnection = %s\n'
                   '[oslo_concurrency]\nlock_path = %s\n'
                   % (workdir, api_url, cell_url, workdir))
    return path


def make_databases(venv, admin_url, workdir):
    """Nova's API, cell0 and cell1 databases, new on the server of
    ``admin_url``, their schemas and cell mappings made by nova-manage;
    returns ``{name: URL}`` (``DATABASES``)."""
    # Imported here: scheduler-bench --help (default_venv) starts without
    # SQLAlchemy.
    from scheduler_tools import databases

    urls = {name: databases.create_database(admin_url, 'versus_' + name)
            for name in DATABASES}
    confs = {name: _manage_conf(os.path.join(workdir, 'manage-%s.conf'
                                             % name), urls['api'],
                                urls[name], workdir)
             for name in ('cell0', 'cell1')}
    try:
        venv.manage(confs['cell1'], 'api_db', 'sync')
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda name: venv.manage(
                confs[name], 'db', 'sync', '--local_cell'),
                ('cell0', 'cell1')))
        venv.manage(confs['cell1'], 'cell_v2', 'map_cell0',
                    '--database_connection', urls['cell0'])
        venv.manage(confs['cell1'], 'cell_v2', 'create_cell', '--name',
                    'cell1', '--database_connection', urls['cell1'],
                    '--transport-url', 'fake://cell1/')
    except BaseException:
        drop_databases(urls)
        raise
    return urls


def drop_databases(urls):
    # Imported here, as in make_databases.
    from scheduler_tools import databases

    for url in urls.values():
        databases.drop_database(url)


def empty_pci_stats(venv):
    """``compute_nodes.pci_stats`` as nova-compute writes it for a node
    without PCI devices (an empty PciDevicePoolList, serialised by
    Nova's own code)."""
    code = ('from nova import objects; objects.register_all(); '
            'from oslo_serialization import jsonutils; '
            'print(jsonutils.dumps(objects.PciDevicePoolList(objects=[])'
            '.obj_to_primitive()))')
    result = subprocess.run([venv.python, '-I', '-c', code],
                            capture_output=True, text=True, env=venv.env,
                            timeout=COMMAND_TIMEOUT)
    if result.returncode:
        raise BenchError('Nova could not serialise a PciDevicePoolList: %s'
                         % result.stderr[-2000:])
    return result.stdout.strip()


def lent_psycopg2(python, workdir):
    """A directory under ``workdir`` holding links to this interpreter's
    psycopg2, to put on the ``PYTHONPATH`` of a venv's ``python`` that
    has no PostgreSQL driver; None when it has one."""
    if subprocess.run([python, '-I', '-c', 'import psycopg2'],
                      capture_output=True).returncode == 0:
        return None
    import psycopg2
    site = os.path.dirname(os.path.dirname(psycopg2.__file__))
    lent = os.path.join(workdir, 'lent-site')
    os.makedirs(lent, exist_ok=True)
    for name in os.listdir(site):
        if name.startswith('psycopg2') and not name.endswith('.dist-info'):
            link = os.path.join(lent, name)
            if not os.path.exists(link):
                os.symlink(os.path.join(site, name), link)
    return lent
