"""One devstack node for the tests of devstack/plugin.sh: bash sources
the stand-ins of devstack's functions (devstack_stubs.sh), the plugin's
settings and plugin.sh once per phase, as stack.sh, unstack.sh and
clean.sh do, with the variables devstack would have set.

Used by test_plugin.py and tests/functional/test_devstack_databases.py.
"""

import configparser
import json
import os
import shlex
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
PLUGIN_DIR = os.path.join(REPO, 'devstack')
STUBS = os.path.join(HERE, 'devstack_stubs.sh')
LINTED = [os.path.join(PLUGIN_DIR, 'plugin.sh'),
          os.path.join(PLUGIN_DIR, 'settings')]

MANAGE_STUB = """#!/bin/bash
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \\
    scheduler-manage "$@" >> "$STUB_LOG"
"""

CELL1_UUID = '5d1b7d4c-0c54-4b3e-9f7e-0f1a2b3c4d5e'
NOVA_MANAGE_STUB = """#!/bin/bash
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \\
    nova-manage "$@" >> "$STUB_LOG"
cat <<EOF
+-------+--------------------------------------+
|  Name |                 UUID                 |
+-------+--------------------------------------+
| cell0 | 00000000-0000-0000-0000-000000000000 |
| cell1 | %s |
+-------+--------------------------------------+
EOF
""" % CELL1_UUID


class Devstack:
    """One devstack node in a temporary directory.

    ``exec_prefix``: the directory devstack's get_python_exec_prefix
    names (where pip put the console scripts); None: a directory whose
    ``scheduler-manage`` only records its argv.  ``settings``: devstack
    variables (local.conf and stackrc), strings.
    """

    def __init__(self, tmp_path, exec_prefix=None, **settings):
        self.root = tmp_path
        self.log = tmp_path / 'calls.log'
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        for name, text in (('scheduler-manage', MANAGE_STUB),
                           ('nova-manage', NOVA_MANAGE_STUB)):
            path = self.bin / name
            path.write_text(text)
            path.chmod(0o755)
        self.conf_dir = tmp_path / 'etc' / 'scheduler'
        self.conf = self.conf_dir / 'scheduler.conf'
        self.logdir = tmp_path / 'logs'
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(('SCHEDULER_', 'OMP_'))}
        env.update({
            'STUB_LOG': str(self.log),
            'STUB_BIN': str(exec_prefix or self.bin),
            'PATH': '%s:%s' % (self.bin, os.environ.get('PATH', '')),
            'ENABLED_SERVICES': 'rabbit,mysql,key,placement-api,n-api,'
                                'n-cond,n-sch,n-cpu',
            'DEST': str(tmp_path / 'opt'),
            'LOGDIR': str(self.logdir),
            'STACK_USER': 'stack',
            'API_WORKERS': '3',
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'HOST_IP': '192.0.2.10',
            'DATABASE_TYPE': 'mysql',
            'DATABASE_USER': 'root',
            'DATABASE_PASSWORD': 'secret',
            'DATABASE_HOST': '192.0.2.10',
            'NOVA_BIN_DIR': str(self.bin),
            'NOVA_CONF': str(tmp_path / 'etc' / 'nova' / 'nova.conf'),
            'NOVA_INSTANCES_PATH': str(tmp_path / 'opt' / 'data' / 'nova'
                                       / 'instances'),
            'SCHEDULER_CONF_DIR': str(self.conf_dir),
        })
        env.update(settings)
        self.env = env

    def run(self, *phases, check=True):
        """Source the settings, then plugin.sh once per phase (a tuple
        of its arguments), in one bash, as stack.sh does."""
        lines = ['set -o errexit -o pipefail',
                 'source %s' % shlex.quote(STUBS),
                 'source %s' % shlex.quote(
                     os.path.join(PLUGIN_DIR, 'settings'))]
        for phase in phases:
            lines.append('source %s %s' % (
                shlex.quote(os.path.join(PLUGIN_DIR, 'plugin.sh')),
                ' '.join(phase)))
        proc = subprocess.run(['bash', '-c', '\n'.join(lines)],
                              env=self.env, cwd=self.root,
                              capture_output=True, text=True, timeout=60)
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def stack(self):
        return self.run(('stack', 'install'), ('stack', 'post-config'),
                        ('stack', 'extra'))

    def calls(self):
        if not self.log.exists():
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def config(self):
        # [DEFAULT] as a section of its own: no inherited keys.
        parser = configparser.RawConfigParser(default_section='-')
        parser.optionxform = str
        assert parser.read(self.conf)
        return {section: dict(parser.items(section))
                for section in parser.sections()}
