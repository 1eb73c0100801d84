"""The replay's command-line options (``REPLAY_OPTS``) and their defaults;
``register_opts`` registers them, ``options.Settings`` reads them.

Apart from ``options`` so that ``scheduler-replay --help`` and
``--version`` start without the replay's runtime: this module imports
oslo.config and the trace formats' names only, no SQLAlchemy, NumPy or
oslo.messaging.
"""

import os

from oslo_config import cfg

from scheduler.conf import CONF
from scheduler_tools.replay import formats
from scheduler_tools.replay import trace

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
DEFAULT_TRACE = os.path.join(DATA_DIR, 'azure-v1-slice.csv.gz')
# The default fleet, without --fleet, --hosts or --hosts-factor and when
# the trace brings none: DEFAULT_HOSTS_FACTOR times the trace's peak
# lower bound of hosts of DEFAULT_HOST_SHAPE (64 vCPUs, 256 GiB, 2000
# GiB).  No placement fits the trace on fewer hosts than the bound, and
# real packing needs some room above it (best-fit on the whole Azure V1
# trace needs about 1.03 x its bound to refuse nothing), so at 1.15 x a
# first run shows how tightly each policy packs, not a fleet too small
# for its trace (the shipped slice: 50 hosts against a bound of 43).
DEFAULT_HOSTS_FACTOR = 1.15
DEFAULT_HOST_SHAPE = '64:262144:2000'
# The report folder's name, from the run's start (UTC), and its files.
REPORT_DIR_FORMAT = 'replay-%Y%m%d-%H%M%S'
REPORT_JSON = 'summary.json'
REPORT_PLOT = 'replay.png'

REPLAY_OPTS = [
    cfg.StrOpt('trace', default=DEFAULT_TRACE, metavar='PATH',
               help='Trace to replay: a trace CSV (plain or .gz), an '
                    'Azure flavor-sequence folder or an Alibaba GPU '
                    'trace folder; default: the shipped Azure slice.'),
    cfg.StrOpt('trace-format', choices=formats.FORMATS,
               help='Format of --trace (default: detected from the '
                    'path).'),
    cfg.IntOpt('limit', min=1, metavar='N',
               help='Replay only the first N VMs of the trace.'),
    cfg.StrOpt('fleet', metavar='PATH',
               help='Fleet CSV, one compute node per row; default: a '
                    'generated fleet of --hosts hosts of --host-shape.'),
    cfg.IntOpt('hosts', min=1, metavar='N',
               help='Number of hosts of the generated fleet (default: '
                    'sized from the trace, see --hosts-factor).'),
    cfg.FloatOpt('hosts-factor', min=0.0, metavar='F',
                 help='Size the generated fleet at F times the peak '
                      'capacity lower bound of the trace on hosts of '
                      '--host-shape (default, without --hosts: %g).'
                      % DEFAULT_HOSTS_FACTOR),
    cfg.StrOpt('host-shape', default=DEFAULT_HOST_SHAPE,
               metavar='VCPUS:MEMORY_MB[:LOCAL_GB[:GPUS:GPU_MODEL]]',
               help='vcpus:memory_mb:local_gb of each generated host, '
                    'and its GPUs of one model (96:393216::8:G2); '
                    'without local_gb, a disk large enough for every VM '
                    'of the trace at once (disk never constrains).'),
    cfg.IntOpt('seed', default=None, metavar='N',
               help='[scheduler] random_seed of the embedded service '
                    '(default: the configured one, else 0).'),
    cfg.FloatOpt('speed', min=0.0, metavar='X',
                 help='Replay at this many times real time (sleeping '
                      'between events); default: as fast as possible.'),
    cfg.FloatOpt('group-window', default=trace.DEFAULT_BIN_S, min=0.0,
                 metavar='SECONDS',
                 help='Seconds of the bins in which consecutive VMs of '
                      'one project and flavor form one request; 0 sends '
                      'every VM alone.'),
    cfg.BoolOpt('compare', default=True,
                help='Also run the reference policies (first-fit, '
                     'best-fit) on the same trace and fleet and print '
                     'them next to the service (--nocompare: the service '
                     'alone).'),
    cfg.BoolOpt('report', default=True,
                help='Write the report: the figures as JSON (%s) and the '
                     'plot (%s) in --report-dir (--noreport: none but '
                     'what --output and --plot ask for).'
                     % (REPORT_JSON, REPORT_PLOT)),
    cfg.StrOpt('report-dir', metavar='DIR',
               help='Folder of the report (default: %s, from the start '
                    'time in UTC, in the current folder).'
                    % REPORT_DIR_FORMAT.replace('%', '%%')),
    cfg.StrOpt('output', metavar='PATH',
               help='Write the figures as JSON to this file (instead of '
                    'the report folder\'s).'),
    cfg.StrOpt('plot', metavar='PATH',
               help='Draw hosts in use against the lower bound, '
                    'utilisation, stranded capacity and NoValidHost '
                    'moments over trace time into this PNG file (instead '
                    'of the report folder\'s).'),
    cfg.StrOpt('placements', metavar='PATH',
               help='Write vm_id,host,nodename per VM (empty host: not '
                    'placed) to this CSV file.'),
    cfg.StrOpt('transport-url', dest='replay_transport_url', secret=True,
               metavar='URL',
               help='Talk to separately started scheduler services over '
                    'this transport instead of embedding one.'),
    cfg.StrOpt('database-connection', dest='replay_database_connection',
               secret=True, metavar='URL',
               help='Database URL (default: embedded, a temporary '
                    'SQLite file; external, [database] connection).'),
    cfg.BoolOpt('seed-only', default=False,
                help='Seed the database with the fleet and stop.'),
    cfg.BoolOpt('no-seed', default=False,
                help='Do not seed: replay on the compute nodes already in '
                     'the database.'),
    cfg.IntOpt('call-timeout', default=60, min=1, metavar='SECONDS',
               help='Seconds to wait for each select_destinations answer.'),
    cfg.BoolOpt('progress', default=True,
                help='Show a progress bar (--noprogress to hide it).'),
    cfg.BoolOpt('find-fleet', default=False,
                help='Capacity planning: find, for the service and each '
                     'reference policy, the fewest generated hosts of '
                     '--host-shape on which it refuses at most '
                     '--max-refused of the instances (see '
                     'scheduler_tools.replay.planning).'),
    cfg.FloatOpt('max-refused', min=0.0, max=1.0, metavar='SHARE',
                 help='With --find-fleet, the share of the instances a '
                      'fleet may refuse and still pass (default 0).'),
    cfg.BoolOpt('fill-until-failure', default=False,
                help='Capacity planning: place the trace\'s requests '
                     'without departures until the first NoValidHost, '
                     'then report what each policy placed, used and '
                     'left stranded.'),
    cfg.IntOpt('fill-seed', metavar='N',
               help='With --fill-until-failure, draw the requests at '
                    'random from the trace\'s (seeded); default: the '
                    'trace\'s order, repeated.'),
    cfg.BoolOpt('reference-only', default=False,
                help='With --find-fleet or --fill-until-failure, run the '
                     'reference policies only, not the service.'),
]


def register_opts(conf=CONF):
    """Register the replay's command-line options on ``conf`` (once)."""
    missing = [opt for opt in REPLAY_OPTS if opt.dest not in conf]
    if missing:
        conf.register_cli_opts(missing)

